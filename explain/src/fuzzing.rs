//! Entry point of the fuzz target `explain_log` (in the repository's
//! `fuzz/` folder) and of its regression test; hidden from the
//! documentation and not a stable API.
//!
//! [`log_file`]: `explain` on any log; neither its text nor its JSON holds a
//! character that `probe::text::needs_escape` names (bar the text
//! rendering's own newlines).

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
