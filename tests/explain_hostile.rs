//! `ddp-probe explain` on a log full of hostile bytes (terminal escapes,
//! carriage returns, markup, bidirectional overrides, invalid UTF-8, a
//! control character inside an NCCL word, a line of megabytes): the text and
//! the `--json` output, checked byte by byte, carry no raw control or bidi
//! character, and the diagnosis is still made.

use std::path::Path;
use std::process::{Command, Output};

use serde_json::Value;

fn ddp_probe(args: &[&str], cwd: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ddp-probe"))
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("the ddp-probe binary runs")
}

/// A rank's stderr with a CUDA out-of-memory error among hostile lines.
fn hostile_log() -> Vec<u8> {
    let mut log = Vec::new();
    log.extend_from_slice(b"\x1b]0;pwned\x07\x1b[2J\x1b[Hstarting <script>alert(1)</script>\r\n");
    log.extend_from_slice("progress 10%\rprogress 100% \u{202e}txt.exe\u{200b}\n".as_bytes());
    log.extend_from_slice(b"invalid utf-8: \xff\xfe\xc3\x28 \x9b31m\n");
    // An NCCL set-up line whose commId holds U+001C (not whitespace).
    log.extend_from_slice(
        b"node3:4411:4520 [1] NCCL INFO comm 0x7f11c0 rank 1 nranks 2 cudaDev 1 busId 47000 \
          commId 0x55aa\x1c\x1b[31m- Init START\n",
    );
    log.extend_from_slice(b"node3\x1b[8m:4411:4411 [1] NCCL INFO NCCL version 2.21.5+cuda\x07\n");
    log.extend_from_slice(&[b'A'; 3 << 20]);
    log.extend_from_slice(b"\x1b[1A\n");
    log.extend_from_slice(
        b"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\x1b[0m\r\x07 \
          <img src=x onerror=alert(2)> \xe2\x80\xae\n",
    );
    log
}

/// The first character of `s` that must not reach a terminal raw (the
/// text rendering's own newlines apart).
fn first_unsafe(s: &str) -> Option<char> {
    s.chars()
        .find(|&c| c != '\n' && probe::text::needs_escape(c))
}

fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(a) => a.iter().for_each(|v| strings(v, out)),
        Value::Object(o) => o.iter().for_each(|(k, v)| {
            out.push(k.clone());
            strings(v, out);
        }),
        _ => {}
    }
}

#[test]
fn explain_shows_hostile_log_lines_safely_in_text_and_json() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("rank-1.stderr"), hostile_log()).unwrap();

    let out = ddp_probe(&["explain", "rank-1.stderr"], dir.path());
    let text = std::str::from_utf8(&out.stdout).expect("the text output is UTF-8");
    assert!(
        text.contains("out of memory"),
        "the diagnosis is made:\n{text}"
    );
    if let Some(c) = first_unsafe(text) {
        panic!("U+{:04X} in the text output:\n{text}", c as u32);
    }
    assert!(!out.stdout.contains(&0x1b), "a raw ESC in the text output");
    assert!(text.contains("\\r\\x07"), "the escapes are shown:\n{text}");
    assert!(
        text.len() < 100_000,
        "the long line was cut: {} bytes",
        text.len()
    );
    assert!(
        std::str::from_utf8(&out.stderr).is_ok_and(|e| first_unsafe(e).is_none()),
        "stderr: {:?}",
        out.stderr
    );

    let out = ddp_probe(&["explain", "--json", "rank-1.stderr"], dir.path());
    let json = std::str::from_utf8(&out.stdout).expect("the JSON output is UTF-8");
    let v: Value = serde_json::from_str(json).expect("valid JSON");
    let mut all = Vec::new();
    strings(&v, &mut all);
    for s in &all {
        if let Some(c) = s.chars().find(|&c| probe::text::needs_escape(c)) {
            panic!("U+{:04X} in a JSON string: {s:?}", c as u32);
        }
    }
    assert!(
        all.iter().any(|s| s.contains("0x55aa\\x1c")),
        "the commId is kept, escaped"
    );
    assert!(
        json.len() < 200_000,
        "the long line was cut: {} bytes",
        json.len()
    );
}
