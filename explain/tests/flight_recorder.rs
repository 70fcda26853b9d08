//! `explain` on PyTorch flight-recorder dumps (explain/tests/data/flight_recorder/,
//! made by python/gen_flight_recorder_fixtures.py from real 2-rank gloo jobs of
//! torch 2.13; each scenario's truth is fixed by the script, see its docstring).

use std::path::PathBuf;

use probe_explain::{explain, Category};

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/flight_recorder")
        .join(name)
}

fn first(name: &str) -> probe_explain::Finding {
    let report = explain(&[fixture(name)]).unwrap_or_else(|e| panic!("{name}: {e}"));
    report
        .findings
        .first()
        .cloned()
        .unwrap_or_else(|| panic!("{name}: no finding"))
}

#[test]
fn a_rank_that_never_joined_is_named_with_the_last_completed_seqs() {
    let f = first("missing_rank");
    assert_eq!(f.category, Category::CollectiveTimeout);
    assert_eq!(f.ranks, vec![1], "{f:?}");
    let text = f.explanation.clone();
    assert!(
        text.contains("rank 1 never enqueued collective seq 3 (all_reduce)"),
        "{text}"
    );
    assert!(
        text.contains("rank 1's last completed collective is seq 2"),
        "{text}"
    );
    assert!(
        text.contains("rank 0's last completed collective is seq 2"),
        "{text}"
    );
    // The dumps are there: the fix does not ask for them again.
    assert!(!f.fix.contains("flight recorder"), "{}", f.fix);
}

#[test]
fn size_and_dtype_mismatches_are_collective_mismatches() {
    for (name, what, odd) in [
        ("size_mismatch", "different size", "[[8]]"),
        ("dtype_mismatch", "different dtype", "[Double]"),
    ] {
        let f = first(name);
        assert_eq!(f.category, Category::CollectiveMismatch, "{name}");
        // Two ranks disagree: neither is the majority, both are named.
        assert_eq!(f.ranks, vec![0, 1], "{name}");
        assert!(
            f.explanation.contains("collective seq 2"),
            "{name}: {}",
            f.explanation
        );
        assert!(f.explanation.contains(what), "{name}: {}", f.explanation);
        assert!(f.explanation.contains(odd), "{name}: {}", f.explanation);
    }
}

#[test]
fn a_recv_without_a_send_names_the_peer() {
    let f = first("p2p_hang");
    assert_eq!(f.category, Category::CollectiveTimeout);
    assert_eq!(f.ranks, vec![0], "{f:?}");
    assert!(
        f.explanation.contains("rank 1 waits in recv 1<-0"),
        "{}",
        f.explanation
    );
}

#[test]
fn damaged_dumps_are_notes_not_panics() {
    let dir = tempfile::tempdir().unwrap();
    let good = std::fs::read(fixture("missing_rank").join("nccl_trace_rank_0")).unwrap();
    // Cut off in the middle (a writer killed mid-dump) and plain garbage.
    std::fs::write(
        dir.path().join("nccl_trace_rank_0"),
        &good[..good.len() / 2],
    )
    .unwrap();
    std::fs::write(dir.path().join("nccl_trace_rank_1"), b"not a pickle").unwrap();
    std::fs::write(dir.path().join("rank-0.stderr"), b"hello\n").unwrap();
    let report = explain(&[dir.path().to_path_buf()]).unwrap();
    let notes = report.notes.join("\n");
    assert!(
        notes.contains("nccl_trace_rank_0 is not a readable dump"),
        "{notes}"
    );
    assert!(
        notes.contains("nccl_trace_rank_1 is not a readable dump"),
        "{notes}"
    );
}
