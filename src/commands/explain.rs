//! `ddp-probe explain`: why a run failed or hung, from its manifest, logs and traces, or from a
//! log piped in (`-`: `kubectl logs POD | ddp-probe explain -`).

use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};

use crate::cli::ExplainArgs;
use crate::commands::output::{print_block, terminal_width};

/// Prints the findings, likely root cause first.
pub fn explain(args: ExplainArgs) -> Result<ExitCode> {
    let stdin_named = args.inputs.iter().any(|p| p == Path::new("-"));
    let report = if stdin_named {
        if args.inputs.len() > 1 {
            bail!(
                "`-` (the log on stdin) is read alone: save it to a file to read it with other \
                 logs or run directories (`... > job.log`, then `ddp-probe explain job.log OTHER`)"
            );
        }
        let opts = probe_explain::Options::default();
        let bytes = read_stdin(opts.head_bytes, opts.tail_bytes)?;
        probe_explain::explain_log_bytes("stdin", &bytes, &opts)
    } else {
        let inputs: Vec<PathBuf> = if args.inputs.is_empty() {
            vec![super::load::latest_run(
                "name a run directory or log files",
            )?]
        } else {
            args.inputs
        };
        probe_explain::explain(&inputs)?
    };
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report).context("could not encode the report")?
        );
    } else {
        print_block(&report.render_text(terminal_width()));
    }
    Ok(ExitCode::SUCCESS)
}

/// The log on stdin (see [`head_and_tail`]).
fn read_stdin(head: u64, tail: u64) -> Result<Vec<u8>> {
    let stdin = std::io::stdin().lock();
    if stdin.is_terminal() {
        eprintln!("ddp-probe: reading the log from stdin (paste it, then Ctrl-D)");
    }
    head_and_tail(stdin, head as usize, tail as usize).context("could not read the log from stdin")
}

/// A stream as a file of it would be read: all of it up to `head + tail` bytes, else its
/// first `head` and last `tail` bytes with a line break between (a stream of any length in
/// bounded memory: at most `head` plus twice `tail` bytes, or 128 KiB).
fn head_and_tail(mut r: impl Read, head: usize, tail: usize) -> std::io::Result<Vec<u8>> {
    let mut first = Vec::new();
    let mut last: Vec<u8> = Vec::new();
    let mut dropped = false;
    let mut chunk = vec![0u8; 1 << 16];
    loop {
        let n = match r.read(&mut chunk) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        let mut data = &chunk[..n];
        if first.len() < head {
            let take = data.len().min(head - first.len());
            first.extend_from_slice(&data[..take]);
            data = &data[take..];
        }
        last.extend_from_slice(data);
        if last.len() > 2 * tail.max(1 << 16) {
            last.drain(..last.len() - tail);
            dropped = true;
        }
    }
    if last.len() > tail {
        last.drain(..last.len() - tail);
        dropped = true;
    }
    if dropped {
        // The middle is gone: the lines on either side of the cut are not one line.
        first.push(b'\n');
    }
    first.extend_from_slice(&last);
    Ok(first)
}

#[cfg(test)]
mod tests {
    use super::head_and_tail;

    #[test]
    fn a_stream_is_kept_whole_up_to_head_and_tail_and_cut_in_the_middle_beyond() {
        let lines: Vec<u8> = (0..100_000)
            .flat_map(|i| format!("line {i:06}\n").into_bytes())
            .collect(); // 12 bytes a line
        assert_eq!(
            head_and_tail(&lines[..], 12 * 60_000, 12 * 40_000).unwrap(),
            lines
        );
        let cut = head_and_tail(&lines[..], 24, 12 * 20_000).unwrap();
        let text = String::from_utf8(cut).unwrap();
        assert!(
            text.starts_with("line 000000\nline 000001\n\nline 080000\n"),
            "{}",
            &text[..60]
        );
        assert!(text.ends_with("line 099999\n"));
        assert_eq!(text.len(), 24 + 1 + 12 * 20_000);
    }
}
