//! Human-readable numbers shared by every renderer (terminal summaries, the timeline, HTML
//! reports): durations, sizes, bandwidths and shares.

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
