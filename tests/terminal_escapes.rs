//! Every command that prints a run to a terminal, on a run whose every
//! string holds terminal escapes: window-title and clear-screen sequences,
//! a C1 CSI, carriage returns, bell, a bidirectional override. The bytes
//! each command writes (stdout, stderr, and the files `export` and `report`
//! write) must hold none of them raw: the loader escapes every string it
//! keeps (`probe::text::escape_controls`), so no printer can forget to.

use std::path::Path;
use std::process::Command;

use probe::synth::{generate_run, SynthConfig};
use serde_json::Value;

/// Escapes an attacker would put in a trace: set the window title, clear
/// the screen, C1 CSI (U+009B), carriage return over the line, bell,
/// right-to-left override.
const HOSTILE: &str = "x\u{1b}]0;owned\u{7}\u{1b}[2J\u{9b}31m\r\u{202e}y";

fn first_raw_escape(text: &str) -> Option<(usize, char)> {
    text.char_indices()
        .find(|&(_, c)| c != '\n' && probe::text::needs_escape(c))
}

/// A synthetic 2-rank run with `HOSTILE` in its run id, host names,
/// program, arguments, collective names and dtypes.
fn hostile_run(dir: &Path) {
    let config = SynthConfig {
        run_id: format!("run-{HOSTILE}"),
        ranks: 2,
        steps: 6,
        ..SynthConfig::new(2, 6, 2)
    };
    generate_run(&config, dir).unwrap();
    for rank in 0..2 {
        let path = probe::trace::rank_file_path(dir, rank);
        let text = std::fs::read_to_string(&path).unwrap();
        let mut out = String::new();
        for line in text.lines() {
            let mut v: Value = serde_json::from_str(line).unwrap();
            if v["type"] == "header" {
                v["hostname"] = Value::from(format!("host-{HOSTILE}"));
                v["program"] = Value::from(format!("train-{HOSTILE}"));
                v["argv"] = serde_json::json!(["train", HOSTILE]);
            }
            if v["kind"] == "collective" {
                v["dtype"] = Value::from(format!("f{HOSTILE}"));
                v["transport"] = Value::from(format!("t{HOSTILE}"));
            }
            out.push_str(&serde_json::to_string(&v).unwrap());
            out.push('\n');
        }
        std::fs::write(&path, out).unwrap();
    }
}

#[test]
fn no_command_prints_a_traces_escapes_raw() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    hostile_run(&run);
    let run_arg = run.to_str().unwrap();
    let chrome = tmp.path().join("chrome.json");
    let report = tmp.path().join("report.html");
    let commands: Vec<Vec<&str>> = vec![
        vec!["summary", run_arg],
        vec!["summary", "--json", run_arg],
        vec!["advise", run_arg],
        vec!["advise", "--json", run_arg],
        vec!["explain", run_arg],
        vec!["explain", "--json", run_arg],
        vec!["export", "chrome", run_arg, "-o", chrome.to_str().unwrap()],
        vec!["report", run_arg, "-o", report.to_str().unwrap()],
    ];
    for args in &commands {
        let out = Command::new(env!("CARGO_BIN_EXE_ddp-probe"))
            .args(args)
            .env("COLUMNS", "100")
            .output()
            .expect("run ddp-probe");
        for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            let text = String::from_utf8_lossy(bytes);
            if let Some((at, c)) = first_raw_escape(&text) {
                let from = text[..at]
                    .char_indices()
                    .rev()
                    .nth(60)
                    .map_or(0, |(i, _)| i);
                panic!(
                    "`ddp-probe {}` wrote {c:?} raw to {stream}: ...{:?}",
                    args.join(" "),
                    &text[from..at]
                );
            }
        }
        assert!(
            out.status.success() || args[0] == "explain",
            "`ddp-probe {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    for file in [&chrome, &report] {
        let text = std::fs::read_to_string(file).unwrap();
        assert_eq!(first_raw_escape(&text), None, "{}", file.display());
        assert!(!text.contains('\u{1b}'), "{}", file.display());
    }
    // The strings are still there, visibly escaped.
    let summary = Command::new(env!("CARGO_BIN_EXE_ddp-probe"))
        .args(["summary", run_arg])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&summary.stdout);
    assert!(text.contains("run-x\\x1b]0;owned"), "{text}");
}
