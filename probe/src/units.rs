//! Human-readable numbers shared by every renderer (terminal summaries, the timeline, HTML
//! reports): durations, sizes, bandwidths, shares, bucket caps and counts. The one place
//! that decides how a number prints, so it prints the same everywhere.

/// A duration in nanoseconds as `"12.3 ms"`, `"450 µs"`, `"1.20 s"`...
pub fn ns(v: f64) -> String {
    let a = v.abs();
    if !v.is_finite() {
        "-".to_owned()
    } else if a >= 1e9 {
        format!("{:.2} s", v / 1e9)
    } else if a >= 1e8 {
        format!("{:.0} ms", v / 1e6)
    } else if a >= 1e6 {
        format!("{:.1} ms", v / 1e6)
    } else if a >= 1e5 {
        format!("{:.0} µs", v / 1e3)
    } else if a >= 1e3 {
        format!("{:.1} µs", v / 1e3)
    } else {
        format!("{v:.0} ns")
    }
}

/// A signed duration with an explicit sign: `"−7.9 ms"`, `"+1.2 ms"`.
pub fn signed_ns(v: f64) -> String {
    if v.abs() < 0.5 {
        "0 ns".to_owned()
    } else if v < 0.0 {
        format!("−{}", ns(-v))
    } else {
        format!("+{}", ns(v))
    }
}

/// A byte count in binary units: `"4.0 MiB"`, `"512 B"`.
pub fn bytes(v: f64) -> String {
    const K: f64 = 1024.0;
    let a = v.abs();
    if !v.is_finite() {
        "-".to_owned()
    } else if a >= K * K * K {
        format!("{:.1} GiB", v / (K * K * K))
    } else if a >= K * K {
        format!("{:.1} MiB", v / (K * K))
    } else if a >= K {
        format!("{:.1} KiB", v / K)
    } else {
        format!("{v:.0} B")
    }
}

/// A bandwidth in bytes per second, in decimal GB/s as nccl-tests prints
/// it (`"1.23 GB/s"`), MB/s below 1 GB/s.
pub fn rate(bytes_per_s: f64) -> String {
    if !bytes_per_s.is_finite() {
        "-".to_owned()
    } else if bytes_per_s >= 1e9 {
        format!("{:.2} GB/s", bytes_per_s / 1e9)
    } else {
        format!("{:.1} MB/s", bytes_per_s / 1e6)
    }
}

/// A share as a percentage: `"12%"`, `"0.4%"`.
pub fn pct(share: f64) -> String {
    if !share.is_finite() {
        "-".to_owned()
    } else if share.abs() < 0.1 && share != 0.0 {
        format!("{:.1}%", share * 100.0)
    } else {
        format!("{:.0}%", share * 100.0)
    }
}

/// A signed share: `"+3.1%"`, `"−12%"`.
pub fn signed_pct(share: f64) -> String {
    if share < 0.0 {
        format!("−{}", pct(-share))
    } else {
        format!("+{}", pct(share))
    }
}

/// A bucket cap in MiB without needless digits: `25`, `0.5`, `2.25`.
pub fn mib(v: f64) -> String {
    if !v.is_finite() {
        "-".to_owned()
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{v:.0}")
    } else {
        let s = format!("{v:.4}");
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    }
}

/// A rate of steps or samples: `"12.3"`, `"1,234"`.
pub fn count_rate(v: f64) -> String {
    if !v.is_finite() {
        "-".to_owned()
    } else if v == 0.0 {
        "0".to_owned()
    } else if v.abs() >= 1000.0 {
        group_thousands(v.round() as i64)
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else if v.abs() >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}

/// An integer with thin groups of three digits: `"1,234,567"`.
pub fn group_thousands(v: i64) -> String {
    let digits = v.unsigned_abs().to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3 + 1);
    if v < 0 {
        out.push('-');
    }
    let lead = match digits.len() % 3 {
        0 => 3,
        r => r,
    };
    out.push_str(&digits[..lead]);
    for chunk in digits.as_bytes()[lead..].chunks(3) {
        out.push(',');
        out.push_str(std::str::from_utf8(chunk).unwrap_or(""));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_read_well() {
        assert_eq!(ns(12_345_678.0), "12.3 ms");
        assert_eq!(ns(450_000.0), "450 µs");
        assert_eq!(ns(f64::NAN), "-");
        assert_eq!(signed_ns(-7.9e6), "−7.9 ms");
        assert_eq!(signed_ns(-0.2), "0 ns");
        assert_eq!(bytes(4.0 * 1024.0 * 1024.0), "4.0 MiB");
        assert_eq!(rate(1.234e9), "1.23 GB/s");
        assert_eq!(pct(0.123), "12%");
        assert_eq!(pct(0.004), "0.4%");
        assert_eq!(signed_pct(-0.12), "−12%");
        assert_eq!(mib(25.0), "25");
        assert_eq!(mib(0.5), "0.5");
        assert_eq!(mib(2.25), "2.25");
        assert_eq!(group_thousands(1_234_567), "1,234,567");
        assert_eq!(group_thousands(-999), "-999");
        assert_eq!(group_thousands(0), "0");
        assert_eq!(group_thousands(123_456), "123,456");
        assert_eq!(count_rate(1234.4), "1,234");
        assert_eq!(count_rate(4.256), "4.26");
    }
}
