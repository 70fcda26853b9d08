//! The `kineto_import` fuzz target's checked-in inputs (`fuzz/corpus/kineto_import/`: the
//! seeds and every input that once crashed it) run as ordinary tests, and the crashes it
//! found, each with the behaviour that replaced it.

use probe_load::fuzzing::replay_corpus;

#[test]
fn kineto_import_inputs() {
    replay_corpus("kineto_import", probe_kineto::fuzzing::kineto_file);
}

/// Found by review of the `kineto_import` target: the importer's world
/// size is one more than the largest rank, so a `distributedInfo.rank` of
/// u32::MAX overflowed it (a panic in debug builds, world size 0 and a
/// header the writer refuses in release builds). The rank is refused.
#[test]
fn a_kineto_trace_of_rank_u32_max_is_refused() {
    let trace = r#"{"distributedInfo":{"rank":4294967295},"traceEvents":[{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":5,"dur":2}]}"#;
    probe_kineto::fuzzing::kineto_file(trace.as_bytes());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rank.json");
    std::fs::write(&file, trace).unwrap();
    let e = probe_kineto::import::import(&[file], &dir.path().join("run")).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("distributedInfo.rank is 4294967295, more than a world size can hold"),
        "{msg}"
    );
    assert!(!dir.path().join("run").exists(), "nothing written");
}

/// Found by the `kineto_import` fuzz target: `baseTimeNanoseconds` plus an event's `ts` past
/// 2^63 ns used to import into a run that the reader then refused (the reader keeps times up to
/// 2^62 ns since 2026-11-28, and the import follows it).
#[test]
fn a_kineto_trace_with_timestamps_past_what_a_run_holds_is_refused() {
    let trace = r#"{"baseTimeNanoseconds":1790857026000000000,"traceEvents":[{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":9000000000000000,"dur":2}]}"#;
    probe_kineto::fuzzing::kineto_file(trace.as_bytes());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rank.json");
    std::fs::write(&file, trace).unwrap();
    let e = probe_kineto::import::import(&[file], &dir.path().join("run")).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.contains("\"ProfilerStep#1\"") && msg.contains("2^62"),
        "{msg}"
    );
    assert!(!dir.path().join("run").exists(), "nothing written");
}

/// Found by the `kineto_import` fuzz target when the reader's limit became 2^62 ns: a
/// `baseTimeNanoseconds` of 8.79e18 (between 2^62 and 2^63) imported into a run the reader
/// refused.
#[test]
fn a_base_time_between_2_62_and_2_63_is_refused_at_import() {
    let trace = r#"{"baseTimeNanoseconds":8790857026000000000,"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":10,"dur":2}]}"#;
    probe_kineto::fuzzing::kineto_file(trace.as_bytes());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rank.json");
    std::fs::write(&file, trace).unwrap();
    let msg = probe_kineto::import::import(&[file], &dir.path().join("run"))
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("baseTimeNanoseconds") && msg.contains("2^62"),
        "{msg}"
    );
    assert!(!dir.path().join("run").exists(), "nothing written");
}

/// Found by the `kineto_import` fuzz target (out of memory): a rank of 2^31 - 1 made the
/// reader list every missing rank of a world of 2^31. The list is capped, the count is exact.
#[test]
fn a_huge_world_with_one_rank_lists_few_missing_ranks_and_counts_all() {
    let trace = r#"{"distributedInfo":{"rank":2147483647},"traceEvents":[{"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":5,"dur":2}]}"#;
    probe_kineto::fuzzing::kineto_file(trace.as_bytes());
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rank.json");
    std::fs::write(&file, trace).unwrap();
    let run_dir = dir.path().join("run");
    probe_kineto::import::import(&[file], &run_dir).unwrap();
    let (run, warnings) = probe_load::reader::load_run(&[run_dir.as_path()]).unwrap();
    assert_eq!(run.world_size, 1 << 31);
    assert_eq!(run.missing_rank_count(), (1 << 31) - 1);
    assert_eq!(run.missing_ranks().len(), probe_load::model::MISSING_LISTED);
    let text = warnings
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(text.contains("(2147483647 in all)"), "{text}");
}
