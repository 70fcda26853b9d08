//! The report in a real browser: headless Chromium renders a report (wide
//! and phone-narrow) to a screenshot without console errors. Skipped, with a
//! message, when no Chromium is installed (`apt-get install chromium`).

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{append_line, edit_traces};
use probe::synth::{generate_run, SynthConfig};
use probe_reports::{load_runs, render, write_html, ReportOptions};

/// Chromium from `$DDP_PROBE_CHROMIUM`, else the usual names on `PATH`.
fn chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("DDP_PROBE_CHROMIUM") {
        return Some(PathBuf::from(p));
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in [
            "chromium",
            "chromium-browser",
            "google-chrome",
            "google-chrome-stable",
        ] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// Renders `page` at `size` into `shot`; returns Chromium's stderr.
fn screenshot(browser: &Path, page: &Path, shot: &Path, size: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut child = Command::new(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--no-first-run",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg(format!("--screenshot={}", shot.display()))
        .arg(format!("--window-size={size}"))
        .arg(format!("file://{}", page.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("chromium starts");
    let started = Instant::now();
    loop {
        if child.try_wait().unwrap().is_some() {
            break;
        }
        if started.elapsed() > Duration::from_secs(180) {
            let _ = child.kill();
            panic!("chromium did not finish within 180 s");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn chromium_renders_the_report_without_console_errors() {
    let Some(browser) = chromium() else {
        eprintln!(
            "skipping chromium_renders_the_report_without_console_errors: no chromium on PATH \
             (install it with `apt-get install chromium`, or set DDP_PROBE_CHROMIUM)"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let series = dir.path().join("series");
    for n in [1u32, 2, 4] {
        let mut c = SynthConfig::new(n, 30, 3);
        c.run_id = format!("n{n}");
        if n == 4 {
            c.straggler = Some((2, 1.2));
        }
        generate_run(&c, &series.join(format!("n{n}"))).unwrap();
    }
    let failed = series.join("n2-failed");
    let mut c = SynthConfig::new(2, 5, 2);
    c.run_id = "failed".into();
    c.end_status = None;
    generate_run(&c, &failed).unwrap();
    edit_traces(
        &failed,
        "\"program\":\"synthetic\"",
        "\"program\":\"<script>alert(1)</script>\"",
    );
    append_line(
        &failed,
        0,
        r#"{"type":"log","t":1700000000000950000,"level":"error","message":"<img src=x onerror=alert(2)>"}"#,
    );
    let runs = load_runs(&[series]).unwrap();
    let html = render(&runs, None, &ReportOptions::default()).html;
    let page = dir.path().join("report.html");
    write_html(&page, &html).unwrap();
    for (size, name) in [("1280,2400", "wide.png"), ("390,2400", "narrow.png")] {
        let shot = dir.path().join(name);
        let log = screenshot(&browser, &page, &shot, size);
        // The report has no script: any console message at all (Chromium
        // logs them as `INFO:CONSOLE` or `ERROR:CONSOLE`) is a fault.
        for bad in ["Uncaught", ":CONSOLE", "alert("] {
            assert!(
                !log.lines().any(|l| l.contains(bad) && !l.contains("dbus")),
                "chromium reported {bad:?} at {size}:\n{log}"
            );
        }
        let png = fs::read(&shot).expect("a screenshot");
        assert!(png.starts_with(b"\x89PNG\r\n\x1a\n"), "not a PNG");
        assert!(
            png.len() > 20_000,
            "a suspiciously small screenshot: {} bytes",
            png.len()
        );
    }
}
