//! The Kineto importer and the HTA-definition breakdown against independent truth: HTA 0.5.0's
//! own figures for real GPU traces (read from `../shared/data/kineto/` beside the repository,
//! skipped with a message when absent), and real 2-rank gloo traces written by PyTorch
//! (`tests/data/kineto/gloo-2rank`, made by `tests/gen/kineto_fixtures.py`).

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use probe_kineto::hta::{hta_breakdown, HtaOptions, HtaRank};
use probe_kineto::import::{find_traces, import, load_traces, IMPORT_JSON};
use probe_kineto::parse::parse_file;
use probe_load::trace::SpanKind;

fn shared_data() -> Option<PathBuf> {
    // `shared/` sits beside the repository root (probe/ → root → ..); a git worktree one
    // folder deeper (e.g. wt/<name>) looks one more level up. DDP_PROBE_KINETO_DATA overrides.
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut candidates: Vec<PathBuf> = std::env::var_os("DDP_PROBE_KINETO_DATA")
        .map(PathBuf::from)
        .into_iter()
        .collect();
    candidates.push(manifest.join("../../shared/data/kineto"));
    candidates.push(manifest.join("../../../shared/data/kineto"));
    if let Some(dir) = candidates
        .into_iter()
        .find(|d| d.join("README.md").is_file())
    {
        return Some(dir);
    }
    eprintln!(
        "skipped: the real GPU traces (shared/data/kineto beside the repository) are not here"
    );
    None
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/kineto/gloo-2rank")
}

/// Rows of an HTA CSV (no quoted fields in the files read here), by rank.
fn csv(path: &Path) -> HashMap<u32, HashMap<String, String>> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let head: Vec<&str> = lines.next().unwrap().split(',').collect();
    lines
        .map(|l| {
            let row: HashMap<String, String> = head
                .iter()
                .zip(l.split(','))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
            (row["rank"].parse().unwrap(), row)
        })
        .collect()
}

fn f(row: &HashMap<String, String>, k: &str) -> f64 {
    row[k]
        .parse()
        .unwrap_or_else(|_| panic!("{k} = {}", row[k]))
}

/// `tol_us`: allowed difference of absolute figures (0 where HTA's sums are of integers).
fn check(dataset: &Path, hta_dir: &Path, suffix: &str, options: HtaOptions, tol_us: f64) {
    let files = find_traces(&[dataset.to_owned()]).unwrap();
    let traces = load_traces(&files).unwrap();
    let pairs: Vec<_> = traces.iter().map(|(r, t)| (*r, t)).collect();
    let b = hta_breakdown(&pairs, &options);
    let tb = csv(&hta_dir.join(format!("temporal_breakdown{suffix}.csv")));
    let ov = csv(&hta_dir.join(format!("comm_comp_overlap{suffix}.csv")));
    let abs = csv(&hta_dir.join(format!("per_rank_absolute_us{suffix}.csv")));
    assert_eq!(b.ranks.len(), tb.len(), "{}", dataset.display());
    for r in &b.ranks {
        let name = format!("{} rank {} {suffix}", dataset.display(), r.rank);
        let t = &tb[&r.rank];
        let a = &abs[&r.rank];
        let eq = |ours: f64, theirs: f64, what: &str| {
            assert!(
                (ours - theirs).abs() <= tol_us.max(1e-9 * theirs.abs()),
                "{name}: {what}: ours {ours}, HTA {theirs}"
            );
        };
        eq(r.kernel_time_us, f(t, "kernel_time(us)"), "kernel_time");
        eq(r.idle_time_us, f(t, "idle_time(us)"), "idle_time");
        eq(r.compute_time_us, f(t, "compute_time(us)"), "compute_time");
        eq(
            r.non_compute_time_us,
            f(t, "non_compute_time(us)"),
            "non_compute",
        );
        assert_eq!(r.idle_time_pctg, f(t, "idle_time_pctg"), "{name}: idle %");
        assert_eq!(r.compute_time_pctg, f(t, "compute_time_pctg"), "{name}");
        assert_eq!(
            r.non_compute_time_pctg,
            f(t, "non_compute_time_pctg"),
            "{name}"
        );
        assert_eq!(
            r.comp_comm_overlap_pctg,
            Some(f(&ov[&r.rank], "comp_comm_overlap_pctg")),
            "{name}: overlap %"
        );
        eq(
            r.comm_comp_overlap_us,
            f(a, "comm_comp_overlap_us"),
            "overlap µs",
        );
        eq(r.gpu_busy_us, f(a, "gpu_busy_merged_us"), "busy");
        eq(
            r.communication.merged_us,
            f(a, "merged_communication_us"),
            "comm",
        );
        eq(r.memory.merged_us, f(a, "merged_memory_us"), "memory");
        eq(r.memory.sum_us, f(a, "sum_dur_memory_us"), "memory Σ");
        eq(
            r.computation.sum_us,
            f(a, "sum_dur_computation_us"),
            "compute Σ",
        );
        assert_eq!(
            r.gpu_events as f64,
            f(a, "n_gpu_events_stream_ne_-1"),
            "{name}"
        );
        assert_eq!(
            r.communication.count as f64,
            f(a, "n_communication"),
            "{name}"
        );
        assert_eq!(r.computation.count as f64, f(a, "n_computation"), "{name}");
        let streams: Vec<String> = r.streams.iter().map(i64::to_string).collect();
        assert_eq!(streams.join(" "), a["gpu_streams"], "{name}");
        eprintln!("{name}: matches HTA ({:?})", summary(r));
    }
}

fn summary(r: &HtaRank) -> (f64, f64, f64, Option<f64>) {
    (
        r.idle_time_pctg,
        r.compute_time_pctg,
        r.non_compute_time_pctg,
        r.comp_comm_overlap_pctg,
    )
}

#[test]
fn kineto_hta_figures_match_hta_on_the_real_gpu_traces() {
    let Some(root) = shared_data() else { return };
    for ds in [
        "hta_ddp_a100_rank0of2",
        "hta_sampled_2rank",
        "hta_a100_rank3of8",
    ] {
        let d = root.join(ds);
        check(&d, &d.join("hta"), "", HtaOptions::default(), 0.0);
        check(
            &d,
            &d.join("hta"),
            "_include_last_step",
            HtaOptions {
                include_last_step: true,
                ..HtaOptions::default()
            },
            0.0,
        );
    }
    let d = root.join("hta_ddp_a100_rank0of2");
    let off = d.join("hta/ns_rounding_disabled");
    let opts = HtaOptions {
        no_ns_rounding: true,
        ..HtaOptions::default()
    };
    // Without rounding the sums are of fractional µs, added in another order (and from
    // another origin) than pandas does: equal within 0.1 µs, percentages equal.
    check(&d, &off, "", opts, 0.1);
}

#[test]
fn kineto_import_of_real_gpu_traces_gives_steps_kernels_and_collectives() {
    let Some(root) = shared_data() else { return };
    let out = tempfile::tempdir().unwrap();
    let run = out.path().join("run");
    let report = import(&[root.join("hta_ddp_a100_rank0of2")], &run).unwrap();
    assert_eq!(report.world_size, 2);
    assert_eq!(report.ranks.len(), 1);
    assert!(run.join(IMPORT_JSON).is_file());
    let (model, warnings) = probe_load::load_run(std::slice::from_ref(&run)).unwrap();
    // Rank 1 of 2 was not published: the reader says so.
    assert!(
        warnings.iter().any(|w| w.to_string().contains('1')),
        "{warnings:?}"
    );
    let rank = &model.ranks[0];
    let steps: Vec<u64> = rank
        .spans_of_kind(SpanKind::Step)
        .filter_map(|s| s.step())
        .collect();
    assert_eq!(steps, [4, 5, 6]);
    let colls: Vec<_> = rank.spans_of_kind(SpanKind::Collective).collect();
    // 15 bucket all-reduces (5 per step) and 2 buffer broadcasts per step (SCHEMA-NOTES §7).
    let all_reduce = colls
        .iter()
        .filter(|c| c.op().map(|o| model.str(o)) == Some("all_reduce"))
        .count();
    let broadcast = colls
        .iter()
        .filter(|c| c.op().map(|o| model.str(o)) == Some("broadcast"))
        .count();
    assert_eq!((all_reduce, broadcast), (15, 6), "ops");
    // The first NCCL kernel of the file carries 6637568 float elements.
    assert!(colls.iter().any(|c| c.bytes() == Some(6637568 * 4)));
}

#[test]
fn kineto_import_of_pytorch_gloo_traces() {
    let out = tempfile::tempdir().unwrap();
    let run = out.path().join("gloo");
    let report = import(&[fixtures()], &run).unwrap();
    assert_eq!(report.world_size, 2);
    assert_eq!(
        report.ranks.iter().map(|r| r.rank).collect::<Vec<_>>(),
        [0, 1]
    );
    let (model, warnings) = probe_load::load_run(&[run]).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    for rank in &model.ranks {
        let steps: Vec<u64> = rank
            .spans_of_kind(SpanKind::Step)
            .filter_map(|s| s.step())
            .collect();
        assert_eq!(steps, [2, 3, 4, 5], "the profiler's active steps");
        let colls: Vec<_> = rank.spans_of_kind(SpanKind::Collective).collect();
        assert!(!colls.is_empty());
        // 16→64→64→1 MLP: 5313 float parameters all-reduced per step in buckets.
        for step in 2..=5u64 {
            let bytes: u64 = colls
                .iter()
                .filter(|c| {
                    c.step() == Some(step) && c.op().map(|o| model.str(o)) == Some("all_reduce")
                })
                .map(|c| c.bytes().unwrap())
                .sum();
            assert_eq!(bytes, 5313 * 4, "rank {} step {step}", rank.rank());
        }
        assert_eq!(rank.spans_of_kind(SpanKind::Forward).count(), 4);
        assert_eq!(rank.spans_of_kind(SpanKind::Optimizer).count(), 4);
        assert_eq!(rank.spans_of_kind(SpanKind::Backward).count(), 4);
    }
}

#[test]
fn kineto_plain_json_and_gzip_parse_the_same() {
    let gz = fixtures().join("rank-0.json.gz");
    let text = {
        let mut d = flate2::read::GzDecoder::new(std::fs::File::open(&gz).unwrap());
        let mut s = Vec::new();
        std::io::Read::read_to_end(&mut d, &mut s).unwrap();
        s
    };
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("rank-0.json");
    std::fs::write(&plain, &text).unwrap();
    let a = parse_file(&gz).unwrap();
    let b = parse_file(&plain).unwrap();
    assert_eq!(a.events.len(), b.events.len());
    assert_eq!(a.events_read, b.events_read);
    assert!(a.truncated.is_none());
    assert_eq!(a.dist.as_ref().unwrap().rank, Some(0));
}

#[test]
fn kineto_truncated_files_give_the_events_before_the_cut_and_a_warning() {
    let gz = fixtures().join("rank-1.json.gz");
    let text = {
        let mut d = flate2::read::GzDecoder::new(std::fs::File::open(&gz).unwrap());
        let mut s = Vec::new();
        std::io::Read::read_to_end(&mut d, &mut s).unwrap();
        s
    };
    let full = parse_file(&gz).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // Plain JSON cut in the middle of the events.
    let cut = dir.path().join("cut.json");
    std::fs::write(&cut, &text[..text.len() * 2 / 3]).unwrap();
    let t = parse_file(&cut).unwrap();
    assert!(t.truncated.as_deref().unwrap().contains("ends early"));
    assert!(!t.events.is_empty() && t.events.len() < full.events.len());
    // A gzip stream cut off.
    let gzcut = dir.path().join("cut.json.gz");
    let bytes = std::fs::read(&gz).unwrap();
    std::fs::write(&gzcut, &bytes[..bytes.len() / 2]).unwrap();
    let t = parse_file(&gzcut).unwrap();
    assert!(t.truncated.is_some());
    assert!(!t.events.is_empty());
    // Cut before any event: a clear error.
    let early = dir.path().join("early.json");
    std::fs::write(&early, &text[..40]).unwrap();
    let e = parse_file(&early).unwrap_err().to_string();
    assert!(
        e.contains("cut off") || e.contains("no \"traceEvents\""),
        "{e}"
    );
    // Not JSON at all.
    let junk = dir.path().join("junk.json");
    std::fs::File::create(&junk)
        .unwrap()
        .write_all(b"hello, world")
        .unwrap();
    let e = parse_file(&junk).unwrap_err().to_string();
    assert!(e.contains("not a readable PyTorch profiler trace"), "{e}");
    // The import keeps the cut rank, says so in the trace, and drops its end record.
    let run = dir.path().join("run");
    let inputs = vec![fixtures().join("rank-0.json.gz"), gzcut];
    let report = import(&inputs, &run).unwrap();
    assert_eq!(report.warnings.len(), 1);
    assert!(report.ranks[1].truncated);
    probe_load::load_run(&[run]).unwrap();
}

/// A tiny crafted trace: the HTA figures by hand.
#[test]
fn kineto_hta_breakdown_of_a_crafted_trace() {
    let json = r#"{"distributedInfo":{"rank":0,"world_size":1,"backend":"nccl"},"traceEvents":[
 {"ph":"X","cat":"user_annotation","name":"ProfilerStep#1","pid":1,"tid":1,"ts":0,"dur":100},
 {"ph":"X","cat":"user_annotation","name":"ProfilerStep#2","pid":1,"tid":1,"ts":100,"dur":100},
 {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":10,"dur":1,"args":{"correlation":1}},
 {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":20,"dur":1,"args":{"correlation":2}},
 {"ph":"X","cat":"cuda_runtime","name":"cudaMemcpyAsync","pid":1,"tid":1,"ts":30,"dur":1,"args":{"correlation":3}},
 {"ph":"X","cat":"cuda_runtime","name":"cudaLaunchKernel","pid":1,"tid":1,"ts":110,"dur":1,"args":{"correlation":4}},
 {"ph":"X","cat":"kernel","name":"gemm","pid":0,"tid":7,"ts":100,"dur":50,"args":{"stream":7,"correlation":1}},
 {"ph":"X","cat":"kernel","name":"ncclKernel_AllReduce_RING_LL_Sum_float(x)","pid":0,"tid":20,"ts":130,"dur":40,"args":{"stream":20,"correlation":2,"Collective name":"allreduce","In msg nelems":1000,"dtype":"Float"}},
 {"ph":"X","cat":"gpu_memcpy","name":"Memcpy DtoD (Device -> Device)","pid":0,"tid":7,"ts":190,"dur":10,"args":{"stream":7,"correlation":3}},
 {"ph":"X","cat":"kernel","name":"late","pid":0,"tid":7,"ts":300,"dur":50,"args":{"stream":7,"correlation":4}},
 {"ph":"X","cat":"Trace","name":"PyTorch Profiler (0)","pid":"Spans","tid":"PyTorch Profiler","ts":0,"dur":1000},
 {"ph":"f","cat":"ac2g","id":1,"pid":0,"tid":7,"ts":100}
]}"#;
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("t.json");
    std::fs::write(&p, json).unwrap();
    let t = parse_file(&p).unwrap();
    let b = hta_breakdown(&[(0, &t)], &HtaOptions::default());
    let r = &b.ranks[0];
    // Kept: gemm [100,150], nccl [130,170], memcpy [190,200]; "late" was launched in the last
    // step. Span 100; busy 70 + 10 = 80; idle 20; compute 50; non-compute 30.
    assert_eq!(r.kernel_time_us, 100.0);
    assert_eq!(r.idle_time_us, 20.0);
    assert_eq!(r.compute_time_us, 50.0);
    assert_eq!(r.non_compute_time_us, 30.0);
    assert_eq!((r.idle_time_pctg, r.compute_time_pctg), (20.0, 50.0));
    // Overlap: nccl [130,170] ∩ gemm [100,150] = 20 of 40 µs.
    assert_eq!(r.comm_comp_overlap_us, 20.0);
    assert_eq!(r.comp_comm_overlap_pctg, Some(50.0));
    assert_eq!(r.steps_kept, [1]);
    let all = hta_breakdown(
        &[(0, &t)],
        &HtaOptions {
            include_last_step: true,
            ..HtaOptions::default()
        },
    );
    assert_eq!(all.ranks[0].kernel_time_us, 250.0);
}

/// On an imported GPU run, the summary's overlapped communication is measured against the GPU's
/// compute kernels (HTA's comm/comp overlap), not against the CPU-side backward range that
/// only enqueues the kernels: HTA 0.5.0 finds computation running during 14.31 % of the NCCL
/// kernel time of `hta_ddp_a100_rank0of2` (its CSV), where the CPU ranges cover all of it.
#[test]
fn kineto_summary_overlap_of_gpu_collectives_is_measured_against_gpu_compute_kernels() {
    let Some(root) = shared_data() else { return };
    let hta = csv(&root.join("hta_ddp_a100_rank0of2/hta/comm_comp_overlap.csv"));
    let hta_pctg = f(&hta[&0], "comp_comm_overlap_pctg");
    assert_eq!(hta_pctg, 14.31);
    let out = tempfile::tempdir().unwrap();
    let run = out.path().join("run");
    import(&[root.join("hta_ddp_a100_rank0of2")], &run).unwrap();
    let (model, _) = probe_load::load_run(std::slice::from_ref(&run)).unwrap();
    let opts = probe::analysis::SummaryOptions {
        warmup_steps: 0,
        ..Default::default()
    };
    let steps = probe::analysis::step_breakdowns(&model, &opts);
    assert_eq!(steps.len(), 3);
    for s in &steps {
        assert_eq!(s.comm_overlapped_ns + s.comm_exposed_ns, s.comm_ns, "{s:?}");
        assert!(s.comm_exposed_ns > 0, "{s:?}");
    }
    // HTA's window: every step but the last (by launch; the step windows here are by time).
    let (ov, comm) = steps[..2].iter().fold((0, 0), |(o, c), s| {
        (o + s.comm_overlapped_ns, c + s.comm_ns)
    });
    let pctg = 100.0 * ov as f64 / comm as f64;
    eprintln!("overlap over steps 4-5: {pctg:.3} % (HTA {hta_pctg} %)");
    let summary = probe::analysis::summarize(&model, &Default::default());
    let t = &summary.overall.as_ref().unwrap().totals;
    assert_eq!(t.comm_overlapped_ns + t.comm_exposed_ns, t.comm_ns);
    let steady = 100.0 * t.comm_overlapped_ns as f64 / t.comm_ns as f64;
    eprintln!("overlap over the steady steps: {steady:.3} %");
    assert!((pctg - hta_pctg).abs() < 2.0, "{pctg} vs HTA {hta_pctg}");
}

/// Every trace at hand, read by the scanner's fast path and by serde_json alone (the
/// reference), gives the same events.
#[test]
fn the_fast_path_reads_what_serde_json_reads() {
    use probe_kineto::parse::{
        parse_bytes, parse_bytes_reference, parse_split, same_events, SPLITS_JOINED,
    };
    use std::sync::atomic::Ordering;
    let mut files: Vec<PathBuf> = find_traces(&[fixtures()]).unwrap();
    if let Some(shared) = shared_data() {
        for d in [
            "hta_ddp_a100_rank0of2",
            "hta_sampled_2rank",
            "hta_a100_rank3of8",
        ] {
            files.extend(find_traces(&[shared.join(d)]).unwrap());
        }
    }
    let joined = SPLITS_JOINED.load(Ordering::Relaxed);
    for f in &files {
        let data = std::fs::read(f).unwrap();
        let fast = parse_bytes(f, &data).unwrap();
        let reference = parse_bytes_reference(f, &data).unwrap();
        assert!(!fast.events.is_empty(), "{}", f.display());
        same_events(&reference, &fast).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        // Split in two wherever the reading thread gets to choose (timing decides), many times.
        let gzip = data.starts_with(&[0x1f, 0x8b]);
        for _ in 0..8 {
            let split = parse_split(f, gzip, &data[..], false, 1).unwrap();
            same_events(&reference, &split)
                .unwrap_or_else(|e| panic!("{} split: {e}", f.display()));
            assert_eq!(
                (&split.dist.as_ref().map(|d| d.rank), split.base_time_ns),
                (
                    &reference.dist.as_ref().map(|d| d.rank),
                    reference.base_time_ns
                )
            );
        }
    }
    assert!(
        SPLITS_JOINED.load(Ordering::Relaxed) > joined,
        "no parse was split"
    );
}

/// Shapes of values the fast path leaves to serde_json or reads itself, each checked against
/// the reference and against the value written.
#[test]
fn the_fast_path_on_unusual_values() {
    use probe_kineto::parse::{parse_bytes, parse_bytes_reference, same_events, Cat};
    let ev = |body: &str| format!(r#"{{"traceEvents": [{body}]}}"#);
    /// name, ts, dur, pid, correlation of the kept event.
    type Kept = (&'static str, f64, f64, i64, i64);
    let cases: &[(&str, Option<Kept>)] = &[
        (
            r#"{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 10, "dur": 5, "args": {"stream": 7, "correlation": 3}}"#,
            Some(("k", 10.0, 5.0, 0, 3)),
        ),
        (
            r#"{"ph":"X","cat":"kernel","name":"esc\"aped","pid":0,"tid":7,"ts":1.5e3,"dur":0.25,"args":{"stream":7,"correlation":4}}"#,
            Some(("esc\"aped", 1500.0, 0.25, 0, 4)),
        ),
        (
            r#"{"ph": "X", "cat": "kernel", "name": "f", "pid": "host", "tid": 7, "ts": 4458676522690.655, "dur": -0, "args": {"stream": "7", "correlation": 5.0}}"#,
            Some(("f", 4458676522690.655, 0.0, -1, 5)),
        ),
        (
            r#"{"ph": "X", "cat": "kernel", "name": "big", "pid": 12345678901234567890, "tid": 1, "ts": 1, "dur": 1, "args": {"stream": 7, "correlation": 6, "extra": [1, {"a": "}"}]}}"#,
            Some(("big", 1.0, 1.0, -1, 6)),
        ),
        (
            r#"{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 1, "tid": 1, "ts": 2, "dur": 3, "args": {"Collective name": "allreduce", "In msg nelems": 1024, "dtype": "Float", "Input Dims": [[1024]], "Input type": ["float"]}}"#,
            Some(("record_param_comms", 2.0, 3.0, 1, -1)),
        ),
        // Dropped: not a complete event, no dur, a plain operator, a flow arrow.
        (
            r#"{"ph": "i", "cat": "kernel", "name": "k", "ts": 1, "dur": 1, "args": {"stream": 7, "correlation": 1}}"#,
            None,
        ),
        (
            r#"{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "args": {"stream": 7, "correlation": 1}}"#,
            None,
        ),
        (
            r#"{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 1, "dur": 1, "args": {"External id": 9}}"#,
            None,
        ),
        (
            r#"{"ph": "f", "id": 1, "pid": 1, "tid": 1, "ts": 1, "cat": "async_cpu_to_gpu", "name": "async_gpu", "bp": "e"}"#,
            None,
        ),
    ];
    for (body, want) in cases {
        let text = ev(body);
        let path = Path::new("case.json");
        let fast = parse_bytes(path, text.as_bytes()).unwrap();
        let reference = parse_bytes_reference(path, text.as_bytes()).unwrap();
        same_events(&reference, &fast).unwrap_or_else(|e| panic!("{body}: {e}"));
        assert_eq!(fast.events_read, 1, "{body}");
        match want {
            None => assert!(fast.events.is_empty(), "{body}"),
            Some((name, ts, dur, pid, correlation)) => {
                let [e] = fast.events.as_slice() else {
                    panic!("{body}: {:?}", fast.events)
                };
                assert_eq!(fast.name(e), *name);
                assert_eq!(
                    (e.ts, e.dur, e.pid, e.correlation),
                    (*ts, *dur, *pid, *correlation),
                    "{body}"
                );
                if *name == "record_param_comms" {
                    assert_eq!(e.cat, Cat::CpuOp);
                    let c = e.comm.as_ref().expect("collective metadata");
                    assert_eq!(c.collective.as_deref(), Some("allreduce"));
                    assert_eq!((c.in_nelems, c.input_numel), (Some(1024), Some(1024)));
                }
            }
        }
    }
}
