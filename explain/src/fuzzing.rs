//! Entry point of the fuzz target `explain_log` (in the repository's
//! `fuzz/` folder) and of its regression test; hidden from the
//! documentation and not a stable API.
//!
//! [`log_file`]: `explain` on any log; neither its text nor its JSON holds a
//! character that `probe::text::needs_escape` names (bar the text
//! rendering's own newlines).
//!
//! [`flight_recorder_dump`] (target `flight_recorder`): any bytes as two
//! ranks' flight-recorder dumps, read and compared; an error or findings,
//! never a panic, within the reader's budgets.
//!
//! [`manifest`] (target `manifest`): any bytes as a run directory's
//! `manifest.json`, through `explain`; an error or a report, never a panic,
//! and no raw control character in the report.

use probe::text::needs_escape;

use crate::{explain_log_bytes, Options};

/// Diagnoses `data` as a log file and checks that neither rendering lets a
/// dangerous character through.
pub fn log_file(data: &[u8]) {
    let report = explain_log_bytes("logs/rank-1.stderr", data, &Options::default());
    let text = report.render_text(100);
    if let Some(c) = text.chars().find(|&c| c != '\n' && needs_escape(c)) {
        panic!("explain's text holds U+{:04X}: {text:?}", c as u32);
    }
    let json = match serde_json::to_value(&report) {
        Ok(v) => v,
        Err(e) => panic!("the report does not serialize: {e}"),
    };
    check_json_strings(&json);
}

/// Panics when a string anywhere in `v` holds a character that must be
/// escaped.
fn check_json_strings(v: &serde_json::Value) {
    match v {
        serde_json::Value::String(s) => {
            if let Some(c) = s.chars().find(|&c| needs_escape(c)) {
                panic!("explain's JSON holds U+{:04X} in {s:?}", c as u32);
            }
        }
        serde_json::Value::Array(a) => a.iter().for_each(check_json_strings),
        serde_json::Value::Object(o) => {
            for (k, v) in o {
                check_json_strings(&serde_json::Value::String(k.clone()));
                check_json_strings(v);
            }
        }
        _ => {}
    }
}

/// Reads `data` as the dumps of ranks 0 and 1 (the second with its first half only, so the two
/// differ) and draws the findings the dumps support.
pub fn flight_recorder_dump(data: &[u8]) {
    use crate::flight_recorder::{read_bytes, signals};
    let dumps: Vec<_> = [(data, 0usize), (&data[..data.len() / 2], 1)]
        .into_iter()
        .filter_map(|(bytes, rank)| read_bytes(bytes, rank, format!("nccl_trace_rank_{rank}")).ok())
        .collect();
    let mut order = 0;
    let _ = signals(&dumps, &mut order);
}

/// `explain` over a run directory holding `data` as its `manifest.json` (and one log line).
pub fn manifest(data: &[u8]) {
    let Ok(dir) = tempfile_dir() else {
        return;
    };
    let run = dir.join("run");
    let logs = run.join(probe_contract::run_dir::LOGS_DIR);
    if std::fs::create_dir_all(&logs).is_err()
        || std::fs::write(run.join(probe_contract::run_dir::MANIFEST_FILE), data).is_err()
        || std::fs::write(logs.join("rank-1.stderr"), b"RuntimeError: boom\n").is_err()
    {
        let _ = std::fs::remove_dir_all(&dir);
        return;
    }
    let report = crate::explain_with(&[run], &Options::default());
    let _ = std::fs::remove_dir_all(&dir);
    if let Ok(report) = report {
        let text = report.render_text(100);
        if let Some(c) = text.chars().find(|&c| c != '\n' && needs_escape(c)) {
            panic!("explain's text holds U+{:04X}: {text:?}", c as u32);
        }
    }
}

/// A fresh private folder under the system's temporary directory.
fn tempfile_dir() -> std::io::Result<std::path::PathBuf> {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "ddp-probe-fuzz-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir(&dir)?;
    Ok(dir)
}
