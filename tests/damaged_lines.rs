//! One rule for a damaged line in the middle of a trace, in every command (issue 24, point 8):
//! by default the line is skipped, counted, and named with its file and line on stderr (in
//! `explain`'s notes and the report's warnings), and the rest of the run is read; with
//! `--strict` (or `DDP_PROBE_STRICT=1`) every command refuses the file, naming it and the line.
//! Before, `summary`, `tui` and `export` stopped with "corrupt line", `report` exited 0 with a
//! "1 failed" page and `explain` said "no problem found".

use std::path::Path;
use std::process::{Command, Output};

use probe::synth::{generate_run, SynthConfig};

/// A synthetic 2-rank run whose rank 1 trace has line 40 replaced by garbage.
fn damaged_run(dir: &Path) -> String {
    generate_run(&SynthConfig::new(2, 6, 2), dir).unwrap();
    let path = probe::trace::rank_file_path(dir, 1);
    let text = std::fs::read_to_string(&path).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    assert!(
        lines.len() > 60,
        "the synthetic trace has {} lines",
        lines.len()
    );
    lines[39] = "{\"type\":\"span\",,\"kind\":\"forward\"} and then garbage";
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    format!("{}:40", path.display())
}

/// stdout and stderr with every run of whitespace as one space (explain wraps its notes).
fn squashed(out: &Output) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn ddp_probe(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ddp-probe"))
        .args(args)
        .env_remove("DDP_PROBE_STRICT")
        .output()
        .expect("run ddp-probe")
}

#[test]
fn every_command_skips_a_damaged_line_and_says_where_and_strict_refuses_it() {
    let tmp = tempfile::tempdir().unwrap();
    let run = tmp.path().join("run");
    let place = damaged_run(&run);
    let run_arg = run.to_str().unwrap();
    let chrome = tmp.path().join("chrome.json");
    let report = tmp.path().join("report.html");
    let (chrome_arg, report_arg) = (chrome.to_str().unwrap(), report.to_str().unwrap());
    let commands: Vec<Vec<&str>> = vec![
        vec!["summary", run_arg],
        vec!["advise", run_arg],
        vec!["export", "chrome", run_arg, "-o", chrome_arg],
        vec!["report", run_arg, "-o", report_arg],
        vec!["explain", run_arg],
    ];
    for args in &commands {
        let out = ddp_probe(args);
        let all = squashed(&out);
        assert!(
            out.status.success(),
            "`ddp-probe {}` failed:\n{all}",
            args.join(" ")
        );
        assert!(
            all.contains(&format!("{place}: skipped 1 damaged line (not valid JSON")),
            "`ddp-probe {}` does not name the skipped line:\n{all}",
            args.join(" ")
        );
    }
    let page = std::fs::read_to_string(&report).unwrap();
    assert!(
        page.contains("skipped 1 damaged line"),
        "the report page names it"
    );
    // The rest of rank 1 was read: the summary lists both ranks.
    let summary =
        String::from_utf8_lossy(&ddp_probe(&["summary", "--json", run_arg]).stdout).into_owned();
    let json: serde_json::Value = serde_json::from_str(&summary).unwrap();
    assert_eq!(json["summary"]["ranks_loaded"], 2, "{summary}");

    // --strict: every command that reads the run as its answer refuses it, naming the line.
    for args in &commands {
        let mut strict = args.clone();
        strict.insert(1, "--strict");
        let out = ddp_probe(&strict);
        let all = squashed(&out);
        assert!(
            all.contains(&format!("{place}: corrupt line, not valid JSON")),
            "`ddp-probe {}` does not name the line:\n{all}",
            strict.join(" ")
        );
        if args[0] == "explain" {
            // explain diagnoses from the logs too: the refused traces are one of its notes.
            assert!(all.contains("the traces did not load"), "{all}");
        } else {
            assert!(
                !out.status.success(),
                "`ddp-probe {}` succeeded",
                strict.join(" ")
            );
        }
    }
}
