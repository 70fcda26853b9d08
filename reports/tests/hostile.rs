//! Hostile strings in a run's traces (terminal escapes, carriage returns,
//! markup, bidirectional overrides, a log line of megabytes) in the HTML
//! report: escaped, never markup, never a raw control or bidi character,
//! long text cut, and the document still well-formed.

mod common;

use std::path::Path;

use common::{all_text, append_line, check_report, edit_traces};
use probe::synth::{generate_run, SynthConfig};
use probe_reports::{load_runs, render, ReportOptions};

/// Bytes of the hostile log message.
const LONG: usize = 3 << 20;

fn hostile_run(dir: &Path) -> std::path::PathBuf {
    let run = dir.join("hostile");
    generate_run(&SynthConfig::new(2, 10, 2), &run).unwrap();
    edit_traces(
        &run,
        "\"hostname\":\"node0\"",
        r#""hostname":"node0\u001b]0;pwned\u0007<script>alert(1)</script>\u202e""#,
    );
    edit_traces(
        &run,
        "\"argv\":[\"synthetic\"",
        r#""argv":["synthetic","\r\u001b[2K<img src=x onerror=alert(1)>","\u200fevil""#,
    );
    let message = format!(
        "50%\\r100%\\u001b[1A\\u001b[2K</code><script>alert(3)</script>\\u202e{}",
        "y".repeat(LONG)
    );
    append_line(
        &run,
        1,
        &format!(
            r#"{{"type":"log","t":1700000000000950000,"level":"error","message":"{message}"}}"#
        ),
    );
    run
}

#[test]
fn hostile_strings_are_escaped_and_long_ones_cut() {
    let dir = tempfile::tempdir().unwrap();
    let run = hostile_run(dir.path());
    let runs = load_runs(&[run]).unwrap();
    let html = render(&runs, None, &ReportOptions::default()).html;
    // Well-formed, and no markup came from the traces.
    let doc = check_report(&html);
    assert!(!html.contains("<script"), "a raw <script in the report");
    // The report's own images are the heatmaps' inline PNGs; the trace's `<img src=x ...>`
    // must not become one.
    assert!(
        html.match_indices("<img")
            .all(|(i, _)| html[i..].starts_with("<img src=\"data:image/png;base64,")),
        "a raw <img in the report"
    );
    assert!(!html.contains("<img src=x"), "a raw <img in the report");
    // No raw control or bidi character (the report's own newlines and tabs
    // apart).
    if let Some(c) = html
        .chars()
        .find(|&c| c != '\n' && c != '\t' && probe::text::needs_escape(c))
    {
        panic!("U+{:04X} in the report", c as u32);
    }
    // The strings are there, as visible text.
    let text = all_text(&doc);
    assert!(
        text.contains("node0\\x1b]0;pwned\\x07<script>alert(1)</script>\\u{202e}"),
        "the host name is shown escaped (the loader escapes every trace string)"
    );
    assert!(text.contains("\\r\\x1b[2K<img src=x onerror=alert(1)>"));
    assert!(text.contains("</code><script>alert(3)</script>U+202E"));
    // The log line of megabytes is cut, and says so.
    assert!(
        html.len() < LONG / 4,
        "the report is {} bytes: the long line was not cut",
        html.len()
    );
    assert!(text.contains("more characters]"), "the cut is marked");
}
