//! The report in a real browser: headless Chromium renders a report (wide
//! and phone-narrow) to a screenshot without console errors, and at 420 and
//! 1280 px every chart lies within the page with legible text. Skipped, with
//! a message, when no Chromium is installed (`apt-get install chromium`),
//! unless `DDP_PROBE_REQUIRE_CHROMIUM` is set (`scripts/test` sets it where it
//! could install Chromium).

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

/// Chromium headless, offline (no background networking, updates or first-run work), with a
/// fresh profile in `profile`.
fn headless(browser: &Path, profile: &Path) -> Command {
    let mut cmd = Command::new(browser);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--no-first-run",
        // Containers often give /dev/shm 64 MB, too little for Chromium's renderer.
        "--disable-dev-shm-usage",
    ])
    .arg(format!("--user-data-dir={}", profile.display()));
    cmd
}

/// Renders `page` at `size` into `shot`; returns Chromium's stderr.
fn screenshot(browser: &Path, page: &Path, shot: &Path, size: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let mut child = headless(browser, profile.path())
        .args(["--enable-logging=stderr", "--v=0"])
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
        assert!(
            std::env::var_os("DDP_PROBE_REQUIRE_CHROMIUM").is_none(),
            "DDP_PROBE_REQUIRE_CHROMIUM is set but no chromium is on PATH"
        );
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

/// A page that shows `report` (its HTML) in a frame `width` px wide, then measures it from
/// outside (Chromium's headless window is at least 500 px wide, so a phone width needs the
/// frame), as the text of `<pre id="measure">`: the frame's and the page's widths, and per
/// visible chart (SVG) its left and right edges and the height of its smallest text, all in
/// CSS pixels.
fn measuring_page(report: &str, width: u32) -> String {
    let escaped = report
        .replace('&', "&amp;")
        .replace('"', "&quot;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    format!(
        r#"<!doctype html><html><body style="margin:0">
<iframe id="f" style="width:{width}px;height:40000px;border:0" srcdoc="{escaped}"></iframe>
<pre id="measure"></pre><script>
document.getElementById('f').addEventListener('load', () => {{
  const d = document.getElementById('f').contentDocument;
  const W = d.documentElement.clientWidth;
  const svgs = [];
  for (const svg of d.querySelectorAll('svg')) {{
    const r = svg.getBoundingClientRect();
    if (r.width === 0) continue;
    let text = 1e9;
    for (const t of svg.querySelectorAll('text')) {{
      const h = t.getBoundingClientRect().height;
      if (h > 0 && t.textContent.trim() !== '') text = Math.min(text, h);
    }}
    svgs.push({{label: svg.getAttribute('aria-label'), cls: svg.getAttribute('class'),
               left: r.left, right: r.right, text: text}});
  }}
  document.getElementById('measure').textContent =
    JSON.stringify({{width: W, page: d.documentElement.scrollWidth, svgs: svgs}});
}});
</script></body></html>"#
    )
}

/// The page's DOM after Chromium laid it out at `width` px.
fn dump_dom(browser: &Path, page: &Path, width: u32) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = headless(browser, profile.path())
        .args(["--hide-scrollbars", "--dump-dom"])
        .arg(format!("--window-size={},2000", width.max(500) + 40))
        .arg(format!("file://{}", page.display()))
        .stderr(Stdio::null())
        .output()
        .expect("chromium starts");
    assert!(out.status.success(), "chromium failed at {width} px");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// At 420 px (a phone) and 1280 px, every chart of a report lies within the page, the page
/// does not scroll sideways, and the smallest text of every chart is at least 11 px tall
/// (before the narrow drawings, the charts of a 420 px page ran off its right edge and their
/// text was 5-7 px).
#[test]
fn at_420_and_1280_px_every_chart_fits_the_page_with_legible_text() {
    let Some(browser) = chromium() else {
        assert!(
            std::env::var_os("DDP_PROBE_REQUIRE_CHROMIUM").is_none(),
            "DDP_PROBE_REQUIRE_CHROMIUM is set but no chromium is on PATH"
        );
        eprintln!(
            "skipping at_420_and_1280_px_every_chart_fits_the_page_with_legible_text: no \
             chromium on PATH (install it with `apt-get install chromium`, or set \
             DDP_PROBE_CHROMIUM)"
        );
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let series = dir.path().join("series");
    for n in [1u32, 2, 8] {
        let mut c = SynthConfig::new(n, 30, 4);
        c.run_id = format!("n{n}");
        generate_run(&c, &series.join(format!("n{n}"))).unwrap();
    }
    let one = dir.path().join("one");
    let mut c = SynthConfig::new(8, 30, 4);
    c.run_id = "one".into();
    c.straggler = Some((5, 1.3));
    generate_run(&c, &one).unwrap();
    for (name, inputs) in [("series", series), ("run", one)] {
        let runs = load_runs(&[inputs]).unwrap();
        let html = render(&runs, None, &ReportOptions::default()).html;
        for width in [420u32, 1280] {
            let page = dir.path().join(format!("{name}-{width}.html"));
            write_html(&page, &measuring_page(&html, width)).unwrap();
            let dom = dump_dom(&browser, &page, width);
            let json = dom
                .split("<pre id=\"measure\">")
                .nth(1)
                .and_then(|s| s.split("</pre>").next())
                .unwrap_or_else(|| panic!("no measurement in the {name} page at {width} px"));
            let m: serde_json::Value =
                serde_json::from_str(&json.replace("&quot;", "\"").replace("&amp;", "&"))
                    .unwrap_or_else(|e| panic!("{e}: {json}"));
            let w = m["width"].as_f64().unwrap();
            assert!(
                (w - f64::from(width)).abs() < 20.0,
                "laid out at {w} px, not {width}"
            );
            assert!(
                m["page"].as_f64().unwrap() <= w + 0.5,
                "the {name} page scrolls sideways at {width} px: {m}"
            );
            let svgs = m["svgs"].as_array().unwrap();
            assert!(svgs.len() >= 2, "charts drawn in the {name} page: {m}");
            let want = if width < 640 { "narrow" } else { "wide" };
            for s in svgs {
                let label = s["label"].as_str().unwrap_or("?");
                if s["cls"].as_str().is_some() {
                    assert_eq!(s["cls"], want, "{label} at {width} px");
                }
                assert!(
                    s["left"].as_f64().unwrap() >= -0.5 && s["right"].as_f64().unwrap() <= w + 0.5,
                    "{label} runs off the {width} px page: {s}"
                );
                let text = s["text"].as_f64().unwrap();
                assert!(
                    text >= 11.0 || text >= 1e9,
                    "{label}: text {text:.1} px tall at {width} px"
                );
            }
        }
    }
}
