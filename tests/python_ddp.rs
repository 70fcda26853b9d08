//! End to end with real PyTorch: `ddp-probe run` launches
//! `examples/python/train_ddp.py` (PyTorch's own DistributedDataParallel,
//! gloo, 2 CPU ranks) instrumented by `python/ddp_probe_torch/__init__.py`, and the
//! traces it leaves are checked against the invariants of the reference DDP's
//! traces and against PyTorch's own bucket layout.
//!
//! A second test makes rank 1 of the same example stop before a step's
//! forward (`TRAIN_DDP_HANG_AT_STEP`, `TRAIN_DDP_HANG_RANK`): the hang
//! watchdog asks both ranks for PyTorch flight-recorder dumps, stops the job,
//! and `explain` names rank 1 from the traces and the dumps. Another hangs a script of
//! plain collectives that never calls `instrument`: no traces, and `explain` names the rank
//! from the Python stacks the module writes from its import on.
//!
//! The example with its one line taken out runs under `--auto-instrument` (how a script looks
//! whose DDP model a framework builds) and is recorded the same, as are
//! `torch.multiprocessing.spawn`'s ranks of a script without the line; `tune --auto-instrument`
//! hands each candidate's cap to such a script's DDP.
//!
//! Mistakes in a script's use of DDP raise PyTorch's own exceptions (device_ids for a model on
//! the CPU, a collective before init_process_group, NCCL where no GPU is seen; run with plain
//! `python`: no launcher, a nested function handed to mp.spawn, no `__main__` guard); `explain`
//! names each and the script's line.
//!
//! Needs the project's venv (`<repo>/.venv/bin/python` with torch, made by
//! `scripts/setup`, which `scripts/test` runs first); without it the tests
//! fail saying so.

mod common;

use common::{
    explain_json, line_of, repo, run_again_after_teardown_abort, venv_python, GLOO_TEARDOWN_ABORT,
};
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

use probe::model::{RankTrace, Run};
use probe::trace::SpanKind;

const STEPS: u64 = 12;
/// The bucket cap handed to DDP: 0.1 MiB = 104857 bytes.
const CAP_MB: &str = "0.1";

/// One PyTorch job at a time: two jobs at once on a small machine could
/// starve a rank's start past the hang timeout.
static PYTORCH_JOB: Mutex<()> = Mutex::new(());

/// Gradient bytes of the example's MLP (32 → 256 → 256 → 128 → 10, float32),
/// per layer (weight + bias), first layer first.
fn layer_bytes() -> [u64; 4] {
    let layer = |i: u64, o: u64| (i * o + o) * 4;
    [
        layer(32, 256),
        layer(256, 256),
        layer(256, 128),
        layer(128, 10),
    ]
}

/// PyTorch's rebuilt layout for a cap of 104857 bytes, by hand: buckets fill
/// in gradient-ready order (last layer first) until they reach the cap.
/// Layers 4 and 3 (5160 + 131584 bytes) pass the cap together; layer 2
/// (263168) alone; layer 1 (33792) is what is left.
fn expected_rebuilt() -> Vec<u64> {
    let l = layer_bytes();
    vec![l[3] + l[2], l[1], l[0]]
}

fn run_example(py: &Path, out: &Path) {
    run_script(py, out, &repo().join("examples/python/train_ddp.py"), &[]);
}

/// Runs `script` (the example or a variant of it) as [`run_example`] runs the example, with
/// `options` of `ddp-probe run` before the command.
fn run_script(py: &Path, out: &Path, script: &Path, options: &[&str]) {
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_ddp-probe"))
            .current_dir(repo())
            .args(["run", "--nproc-per-node", "2"])
            .args(options)
            .arg("--out")
            .arg(out)
            .arg("--")
            .arg(py)
            .arg(script)
            .args(["--steps", &STEPS.to_string(), "--bucket-cap-mb", CAP_MB])
            .env_remove("PYTHONPATH")
            .env_remove("DDP_PROBE_TRACE")
            .status()
            .expect("start ddp-probe run")
    };
    let log = |name: &str| std::fs::read_to_string(out.join("logs").join(name)).unwrap_or_default();
    // The training's last line printed, then the abort.
    let status = run_again_after_teardown_abort(
        run,
        |status| {
            status.code() == Some(134)
                && log("rank-0.stdout").contains("pytorch buckets:")
                && (0..2).any(|r| log(&format!("rank-{r}.stderr")).contains(GLOO_TEARDOWN_ABORT))
        },
        out,
    );
    assert!(
        status.success(),
        "ddp-probe run failed ({status}); rank 0 stderr:\n{}\nrank 1 stderr:\n{}",
        log("rank-0.stderr"),
        log("rank-1.stderr")
    );
}

/// PyTorch's layout as the example prints it from DDP's reducer:
/// `pytorch buckets: 0=136744 1=263168 2=33792`.
fn pytorch_layout(out: &Path) -> Vec<u64> {
    let stdout = std::fs::read_to_string(out.join("logs/rank-0.stdout")).expect("rank 0 stdout");
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("pytorch buckets: "))
        .unwrap_or_else(|| panic!("no `pytorch buckets:` line in rank 0's stdout:\n{stdout}"));
    line.split_whitespace()
        .enumerate()
        .map(|(i, kv)| {
            let (id, bytes) = kv.split_once('=').expect("id=bytes");
            assert_eq!(id.parse::<usize>().unwrap(), i, "{line}");
            bytes.parse().unwrap()
        })
        .collect()
}

/// Spans of one kind and step of a rank, by bucket. Only a collective may have none: the
/// program's own (the script's loss all-reduced for printing) and DDP's buffer broadcast.
fn by_bucket(
    rank: &RankTrace,
    kind: SpanKind,
    step: u64,
) -> BTreeMap<u32, Vec<&probe::model::Span>> {
    let mut out: BTreeMap<u32, Vec<_>> = BTreeMap::new();
    for s in rank.spans_of_kind(kind).filter(|s| s.step() == Some(step)) {
        let Some(bucket) = s.bucket() else {
            assert_eq!(
                kind,
                SpanKind::Collective,
                "a {kind:?} span without a bucket"
            );
            continue;
        };
        out.entry(bucket).or_default().push(s);
    }
    out
}

fn one_of(rank: &RankTrace, kind: SpanKind, step: u64) -> &probe::model::Span {
    let spans: Vec<_> = rank
        .spans_of_kind(kind)
        .filter(|s| s.step() == Some(step))
        .collect();
    assert_eq!(
        spans.len(),
        1,
        "rank {} step {step}: {kind:?} spans",
        rank.rank()
    );
    spans[0]
}

fn check_trace(run: &Run, pytorch: &[u64]) {
    assert_eq!(run.world_size, 2);
    assert_eq!(run.ranks.len(), 2, "both ranks left a trace");
    let total: u64 = layer_bytes().iter().sum();
    // seq of (step, bucket) on each rank.
    let mut seqs: Vec<BTreeMap<(u64, u32), u64>> = Vec::new();
    for rank in &run.ranks {
        let r = rank.rank();
        assert!(rank.end.is_some(), "rank {r}: no end record");
        let ddp = rank.header.ddp.as_ref().expect("ddp header");
        assert_eq!(ddp.backend, "gloo");
        assert_eq!(ddp.params.len(), 8, "rank {r}: parameter table");
        assert_eq!(ddp.params.iter().map(|p| p.bytes).sum::<u64>(), total);
        // Layouts: one bucket of everything for the first iteration, PyTorch's
        // rebuilt one from step 1.
        assert_eq!(
            rank.layouts.len(),
            2,
            "rank {r}: layouts {:?}",
            rank.layouts
        );
        let bytes =
            |i: usize| -> Vec<u64> { rank.layouts[i].buckets.iter().map(|b| b.bytes).collect() };
        assert_eq!(bytes(0), vec![total], "rank {r}: first layout");
        assert_eq!(rank.layouts[1].from_step, 1);
        assert_eq!(rank.layouts[1].reason, "rebuild");
        assert_eq!(
            bytes(1),
            pytorch,
            "rank {r}: rebuilt layout vs PyTorch's reducer"
        );

        assert_eq!(rank.steps().count() as u64, STEPS, "rank {r}: step spans");
        let mut rank_seqs = BTreeMap::new();
        for step in 0..STEPS {
            let layout = if step == 0 {
                vec![total]
            } else {
                pytorch.to_vec()
            };
            let ready = by_bucket(rank, SpanKind::BucketReady, step);
            let comm = by_bucket(rank, SpanKind::Collective, step);
            let ids: BTreeSet<u32> = (0..layout.len() as u32).collect();
            assert_eq!(
                ready.keys().copied().collect::<BTreeSet<_>>(),
                ids,
                "rank {r} step {step}: ready buckets"
            );
            assert_eq!(
                comm.keys().copied().collect::<BTreeSet<_>>(),
                ids,
                "rank {r} step {step}: all-reduced buckets"
            );
            let backward = one_of(rank, SpanKind::Backward, step);
            let step_span = one_of(rank, SpanKind::Step, step);
            let forward = one_of(rank, SpanKind::Forward, step);
            let opt = one_of(rank, SpanKind::Optimizer, step);
            assert!(step_span.start() <= forward.start() && forward.end() <= backward.start());
            assert!(backward.end() <= opt.start() && opt.end() <= step_span.end());
            for (&b, spans) in &ready {
                assert_eq!(
                    spans.len(),
                    1,
                    "rank {r} step {step} bucket {b}: ready windows"
                );
                let w = spans[0];
                assert_eq!(w.bytes(), Some(layout[b as usize]));
                assert!(
                    backward.start() <= w.start() && w.end() <= backward.end(),
                    "rank {r} step {step} bucket {b}: ready window outside backward"
                );
                let c = &comm[&b];
                assert_eq!(c.len(), 1, "rank {r} step {step} bucket {b}: all-reduces");
                let c = c[0];
                assert_eq!(
                    c.bytes(),
                    Some(layout[b as usize]),
                    "rank {r} step {step} bucket {b}"
                );
                assert!(c.end() >= c.start());
                assert!(
                    c.start() >= w.end(),
                    "all-reduce starts once the bucket is ready"
                );
                assert!(
                    c.end() <= opt.start(),
                    "DDP waits for every all-reduce before the optimizer"
                );
                assert_eq!(run.str(c.op().expect("op")), "all_reduce");
                rank_seqs.insert((step, b), c.seq().expect("seq"));
            }
        }
        seqs.push(rank_seqs);
    }
    assert_eq!(
        seqs[0], seqs[1],
        "the same all-reduce has the same seq on both ranks"
    );
    let distinct: BTreeSet<u64> = seqs[0].values().copied().collect();
    assert_eq!(distinct.len(), seqs[0].len(), "seq numbers are unique");
}

#[test]
fn pytorch_ddp_traces_have_the_reference_invariants() {
    let py = venv_python();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    {
        let _one = PYTORCH_JOB.lock().unwrap_or_else(|e| e.into_inner());
        run_example(&py, &out);
    }
    let pytorch = pytorch_layout(&out);
    assert_eq!(
        pytorch,
        expected_rebuilt(),
        "PyTorch's layout vs the hand-computed one"
    );
    let (run, _warnings) = probe::reader::load_run(&[&out]).expect("load the traces");
    check_trace(&run, &pytorch);
    check_span_fields_against_the_rust_schema(&out);

    let summary = Command::new(env!("CARGO_BIN_EXE_ddp-probe"))
        .args(["summary"])
        .arg(&out)
        .output()
        .unwrap();
    assert!(summary.status.success());
    let text = String::from_utf8_lossy(&summary.stdout);
    let table = text
        .split("\nbuckets (")
        .nth(1)
        .unwrap_or_else(|| panic!("no bucket table in the summary:\n{text}"));
    for (id, bytes) in pytorch.iter().enumerate() {
        let row = table
            .lines()
            .find(|l| l.split_whitespace().next() == Some(&id.to_string()))
            .unwrap_or_else(|| panic!("no row for bucket {id}:\n{text}"));
        let kib = format!("{:.1} KiB", *bytes as f64 / 1024.0);
        assert!(row.contains(&kib), "bucket {id} row {row:?} lacks {kib}");
    }
    let json = Command::new(env!("CARGO_BIN_EXE_ddp-probe"))
        .args(["summary", "--json"])
        .arg(&out)
        .output()
        .unwrap();
    let v: serde_json::Value = serde_json::from_slice(&json.stdout).expect("summary --json");
    let totals = &v["summary"]["overall"]["totals"];
    let n = |k: &str| {
        totals[k]
            .as_i64()
            .unwrap_or_else(|| panic!("{k} in {totals}"))
    };
    assert!(n("comm_ns") > 0);
    assert_eq!(n("comm_overlapped_ns") + n("comm_exposed_ns"), n("comm_ns"));
    assert_eq!(v["summary"]["buckets"].as_array().map(Vec::len), Some(3));

    // advise: bucket advice from the per-parameter gradient-ready times. Whether gloo's
    // collective times on a busy machine reveal a bandwidth is up to the machine, so the
    // fitted advice is checked when it is there, and the advice from a stated cost
    // (--latency/--bandwidth) always.
    let advise_json = |extra: &[&str]| -> serde_json::Value {
        let advise = Command::new(env!("CARGO_BIN_EXE_ddp-probe"))
            .args(["advise", "--json"])
            .args(extra)
            .arg(&out)
            .output()
            .unwrap();
        assert!(
            advise.status.success(),
            "{}",
            String::from_utf8_lossy(&advise.stderr)
        );
        serde_json::from_slice(&advise.stdout).expect("advise --json")
    };
    let check_advice = |v: &serde_json::Value| {
        assert_eq!(v["current"]["bucket_cap_mb"].as_f64(), Some(0.1), "{v}");
        assert_eq!(v["current"]["cap_from_trace"], true);
        assert_eq!(v["observed"]["params_ready"].as_u64(), Some(8));
        assert!(v["observed"]["ready_records"].as_u64() >= Some(STEPS - 2));
        let rec = &v["recommendation"];
        assert!(rec["cap_mb"].as_f64().is_some_and(|c| c > 0.0), "{v}");
        assert!(rec["worth_changing"].is_boolean(), "{v}");
        let why = rec["explanation"].as_array().map(Vec::len).unwrap_or(0);
        assert!(why >= 2, "advise gives its reasoning: {rec}");
    };
    let fitted = advise_json(&[]);
    if fitted["missing"] == serde_json::json!([]) {
        check_advice(&fitted);
    } else {
        // The only thing allowed to be missing is the cost model, and the advice then says
        // how to state one.
        let missing = fitted["missing"].to_string();
        assert!(
            missing.contains("no cost model for the buckets' all_reduce over gloo"),
            "{missing}"
        );
        assert!(missing.contains("--latency"), "{missing}");
        eprintln!("note: gloo's times here show no bandwidth: {missing}");
    }
    let stated = advise_json(&["--latency", "200us", "--bandwidth", "1GB/s"]);
    assert_eq!(
        stated["missing"],
        serde_json::json!([]),
        "advise lacks data: {stated}"
    );
    check_advice(&stated);
    let fit = &stated["fits"][stated["fit_used"].as_u64().unwrap() as usize];
    assert_eq!(fit["assumed"], true, "{fit}");
    assert_eq!(fit["fit"]["latency_ns"].as_f64(), Some(200_000.0), "{fit}");
    assert_eq!(fit["fit"]["ns_per_byte"].as_f64(), Some(1.0), "{fit}");
    let text = Command::new(env!("CARGO_BIN_EXE_ddp-probe"))
        .args(["advise", "--latency", "200us", "--bandwidth", "1GB/s"])
        .arg(&out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&text.stdout);
    assert!(text.contains("bucket_cap_mb=0.1 "), "{text}");
    assert!(
        text.contains("Cost model for all_reduce over gloo: 200 µs per call"),
        "{text}"
    );
    let why = stated["recommendation"]["explanation"].to_string();
    assert!(
        why.contains("as stated with --latency and --bandwidth"),
        "{why}"
    );
}

/// Seconds without progress before the watchdog stops the job: above the
/// silent start of a Python rank (importing torch), well below the test's
/// patience.
const HANG_TIMEOUT_S: &str = "15";

/// `ddp-probe run` of `script` (a path from the repository root, or absolute) under the
/// project's Python on `nproc` ranks into `out`, with the hang watchdog at [`HANG_TIMEOUT_S`]
/// and a 2 s grace; the script's arguments and environment are the caller's to add.
fn watched_job(out: &Path, nproc: usize, script: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ddp-probe"));
    c.current_dir(repo())
        .args([
            "run",
            "--nproc-per-node",
            &nproc.to_string(),
            "--grace",
            "2",
        ])
        .args(["--hang-timeout", HANG_TIMEOUT_S, "--out"])
        .arg(out)
        .arg("--")
        .arg(venv_python())
        .arg(script)
        .env_remove("PYTHONPATH")
        .env_remove("DDP_PROBE_TRACE");
    c
}

/// [`watched_job`] with `configure` applied, one PyTorch job at a time, run again when gloo's
/// teardown aborted it after the training (exit code `aborted_code` and gloo's words): its exit
/// status and console.
fn watched_until_no_teardown_abort(
    out: &Path,
    nproc: usize,
    script: &Path,
    aborted_code: i32,
    configure: impl Fn(&mut Command),
) -> (std::process::ExitStatus, String) {
    run_again_after_teardown_abort(
        || {
            let _one = PYTORCH_JOB.lock().unwrap_or_else(|e| e.into_inner());
            let mut c = watched_job(out, nproc, script);
            configure(&mut c);
            with_console(&mut c)
        },
        |(status, console)| {
            status.code() == Some(aborted_code) && console.contains(GLOO_TEARDOWN_ABORT)
        },
        out,
    )
}

/// PyTorch's example with ddp-probe's line taken out and its DDP built as a framework builds
/// it, with none of the script's settings (so a cap can only come from ddp-probe), written to
/// `dir/train_plain.py`.
fn example_without_the_line(dir: &Path) -> std::path::PathBuf {
    let example = std::fs::read_to_string(repo().join("examples/python/train_ddp.py")).unwrap();
    let plain = example.replace("import ddp_probe_torch\n", "").replace(
        "ddp_probe_torch.instrument(DDP(model, **kwargs))",
        "DDP(model)",
    );
    assert!(
        !plain.contains("ddp_probe_torch"),
        "the line is out:\n{plain}"
    );
    let script = dir.join("train_plain.py");
    std::fs::write(&script, plain).unwrap();
    script
}

/// Rank `rank`'s trace in run directory `out` and its header (failing with the run's console
/// when there is none).
fn trace_and_header(out: &Path, rank: u64, console: &str) -> (String, serde_json::Value) {
    let trace = std::fs::read_to_string(out.join(format!("traces/rank-{rank}.jsonl")))
        .unwrap_or_else(|e| panic!("rank {rank}'s trace: {e}\n{console}"));
    let header = serde_json::from_str(trace.lines().next().unwrap_or_default()).unwrap();
    (trace, header)
}

/// Runs `c`: its exit status and its console (stderr, then stdout).
fn with_console(c: &mut Command) -> (std::process::ExitStatus, String) {
    let done = c.output().expect("start ddp-probe run");
    let console =
        String::from_utf8_lossy(&done.stderr).to_string() + &String::from_utf8_lossy(&done.stdout);
    (done.status, console)
}
/// The step before whose forward rank 1 stops.
const HANG_AT_STEP: u64 = 3;

/// `explain`'s text without its line breaks (they fall where the wrapping puts them), after
/// checking that its headline names rank 1 as the rank waited for, and where it was.
fn headline_names_the_hang(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.starts_with(&format!(
            "most likely cause: rank 0 waited in a collective for rank 1, which never joined it: \
             it was {} ",
            hang_place()
        )),
        "{text}"
    );
    flat
}

/// Where the example's hung rank is, as `explain` names it from its Python stack: "in main at
/// train_ddp.py:N (`time.sleep(60)`)" with N read from the script.
fn hang_place() -> String {
    let script = std::fs::read_to_string(repo().join("examples/python/train_ddp.py")).unwrap();
    let line = line_of(&script, "time.sleep(60)");
    format!("in main at train_ddp.py:{line} (`time.sleep(60)`)")
}

#[test]
fn pytorch_hang_is_explained_naming_the_rank_behind() {
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let status = {
        let _one = PYTORCH_JOB.lock().unwrap_or_else(|e| e.into_inner());
        watched_job(&out, 2, Path::new("examples/python/train_ddp.py"))
            .args(["--steps", &STEPS.to_string(), "--bucket-cap-mb", CAP_MB])
            .env("TRAIN_DDP_HANG_AT_STEP", HANG_AT_STEP.to_string())
            .env("TRAIN_DDP_HANG_RANK", "1")
            .status()
            .expect("start ddp-probe run")
    };
    let read = |rel: &str| std::fs::read_to_string(out.join(rel)).unwrap_or_default();
    assert_eq!(
        status.code(),
        Some(124),
        "the watchdog stops the hung job; rank 0 stderr:\n{}\nrank 1 stderr:\n{}",
        read("logs/rank-0.stderr"),
        read("logs/rank-1.stderr")
    );
    let manifest: serde_json::Value =
        serde_json::from_str(&read("manifest.json")).expect("manifest");
    assert_eq!(manifest["status"], "hang");
    assert_eq!(
        manifest["hang"]["behind"],
        serde_json::json!([1]),
        "{manifest}"
    );

    // Both ranks answered the watchdog's dump request with a real dump.
    for rank in 0..2 {
        let answer = read(&format!("control/rank-{rank}.dumped"));
        let dump = out.join(format!("logs/nccl_trace_rank_{rank}"));
        assert_eq!(
            answer.trim(),
            format!("ok {}", dump.display()),
            "rank {rank}'s answer; stderr:\n{}",
            read(&format!("logs/rank-{rank}.stderr"))
        );
        assert!(std::fs::metadata(&dump).is_ok_and(|m| m.len() > 0));
    }

    // The traces: rank 0 queued the first all-reduce of the step and waits;
    // rank 1 never got there. Their common last one is the step before's.
    let (run, _warnings) = probe::reader::load_run(&[&out]).expect("load the traces");
    let last_seq = |rank: usize| {
        run.ranks[rank]
            .spans_of_kind(SpanKind::Collective)
            .filter_map(|s| s.seq())
            .max()
            .expect("completed all-reduces")
    };
    let last = last_seq(0);
    assert_eq!(
        last_seq(1),
        last,
        "both ranks completed the same all-reduces"
    );
    let stuck = last + 1;
    for rank in &run.ranks {
        assert!(
            rank.spans_of_kind(SpanKind::Step)
                .all(|s| s.step() < Some(HANG_AT_STEP)),
            "no rank completed step {HANG_AT_STEP}"
        );
    }

    let explain = |json: bool| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_ddp-probe"));
        c.arg("explain");
        if json {
            c.arg("--json");
        }
        let o = c.arg(&out).output().unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    };
    let v: serde_json::Value = serde_json::from_str(&explain(true)).expect("explain --json");
    let first = &v["findings"][0];
    assert_eq!(first["category"], "collective_timeout", "{v}");
    assert_eq!(first["role"], "cause", "{v}");
    assert_eq!(first["ranks"], serde_json::json!([1]), "{v}");
    let evidence = first["evidence"].as_array().expect("evidence");
    let cited = |file: &str, needle: &str| {
        evidence.iter().any(|e| {
            e["file"].as_str().is_some_and(|f| f.ends_with(file))
                && e["text"].as_str().is_some_and(|t| t.contains(needle))
        })
    };
    // The flight-recorder dumps: rank 1 stopped at the last common
    // collective; rank 0 enqueued the next one.
    assert!(
        cited("logs/nccl_trace_rank_1", &format!("collective seq {last}")),
        "{first}"
    );
    assert!(
        cited("logs/nccl_trace_rank_0", &format!("collective seq {stuck}")),
        "{first}"
    );
    // The traces.
    assert!(
        cited(
            "traces/rank-1.jsonl",
            &format!("rank 1 never queued all_reduce seq {stuck} (step {HANG_AT_STEP})")
        ),
        "{first}"
    );
    assert!(
        cited(
            "traces/rank-0.jsonl",
            &format!("rank 0 queued all_reduce seq {stuck} (step {HANG_AT_STEP})")
        ),
        "{first}"
    );

    let text = explain(false);
    // Where rank 1 was: its Python stack, written at the watchdog's request (the headline
    // wraps at the terminal's width).
    let flat = headline_names_the_hang(&text);
    assert!(text.contains("[collective_timeout]"), "{text}");
    // (Compared without the text's line breaks, which fall where the wrapping puts them.)
    assert!(
        flat.contains(&format!(
            "rank 1 never enqueued collective seq {stuck} (all_reduce)"
        )),
        "{text}"
    );
    assert!(
        flat.contains(&format!("rank 0 waits in collective seq {stuck}")),
        "{text}"
    );
}

#[test]
fn a_hung_pytorch_job_stopped_by_hand_says_where_the_rank_behind_was() {
    // The same hang without --hang-timeout: the user presses Ctrl-C (SIGINT to the launcher).
    // The launcher asks the ranks for their dumps and stacks before it stops them, so
    // `explain` says where rank 1 was as it does after the watchdog.
    let py = venv_python();
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let read = |rel: &str| std::fs::read_to_string(out.join(rel)).unwrap_or_default();
    let status = {
        let _one = PYTORCH_JOB.lock().unwrap_or_else(|e| e.into_inner());
        let child = Command::new(env!("CARGO_BIN_EXE_ddp-probe"))
            .current_dir(repo())
            .args(["run", "--nproc-per-node", "2", "--grace", "2", "--out"])
            .arg(&out)
            .arg("--")
            .arg(&py)
            .arg("examples/python/train_ddp.py")
            .args(["--steps", &STEPS.to_string(), "--bucket-cap-mb", CAP_MB])
            .env("TRAIN_DDP_HANG_AT_STEP", HANG_AT_STEP.to_string())
            .env("TRAIN_DDP_HANG_RANK", "1")
            .env_remove("PYTHONPATH")
            .env_remove("DDP_PROBE_TRACE")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("start ddp-probe run");
        let started = std::time::Instant::now();
        while !read("logs/rank-1.stdout").contains("not going on") {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(120),
                "rank 1 never reached the hang; its stderr:\n{}",
                read("logs/rank-1.stderr")
            );
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
        // Rank 0 reaches the step's all-reduce and waits there.
        std::thread::sleep(std::time::Duration::from_secs(2));
        let sent = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status()
            .expect("kill");
        assert!(sent.success());
        child.wait_with_output().expect("ddp-probe run ends")
    };
    let (status, console) = (status.status, String::from_utf8_lossy(&status.stderr));
    assert_eq!(status.code(), Some(130), "{}", read("manifest.json"));
    // Ctrl-C on a hung job: the console names the hang, not only what was recorded.
    assert!(
        console.contains("most likely cause: rank 0 waited in a collective for rank 1"),
        "{console}"
    );
    let report = Command::new(env!("CARGO_BIN_EXE_ddp-probe"))
        .arg("explain")
        .arg(&out)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&report.stdout);
    let flat = headline_names_the_hang(&text);
    assert!(text.contains("[launcher_interrupted]"), "{text}");
    // Every rank's place is listed, in explain and in the report's "where the run stopped".
    assert!(
        flat.contains("where each rank was when stopped (Python stacks): rank 0: in ")
            && flat.contains(&format!("rank 1: {}", hang_place())),
        "{text}"
    );
    let html = tmp.path().join("report.html");
    let made = Command::new(env!("CARGO_BIN_EXE_ddp-probe"))
        .arg("report")
        .arg(&out)
        .arg("-o")
        .arg(&html)
        .output()
        .unwrap();
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(
        page.contains("Where each rank was in its program when the run was stopped")
            && page.contains(&format!("rank 1: {}", hang_place())),
        "the report's stopped section lists the stacks"
    );
}

/// The pairing of the module's NCCL spans with torch.profiler's kernels that
/// `scripts/gpu-check` relies on, on constructed inputs (no GPU needed): a
/// host-timed span of a 100 µs kernel fails, counts that differ fail.
/// A script of plain collectives that imports the module and never calls `instrument` (no
/// DDP model): rank 1 stops in a read between two all-reduces.
const PLAIN_COLLECTIVES_HANG: &str = "\
import time, torch, torch.distributed as dist
import ddp_probe_torch
dist.init_process_group(\"gloo\")
rank = dist.get_rank()
t = torch.ones(1000)
dist.all_reduce(t)
if rank == 1:
    time.sleep(3600)  # a read that never returns
dist.all_reduce(t)
dist.destroy_process_group()
";

#[test]
fn mistakes_in_a_script_s_use_of_ddp_are_named_with_the_script_s_line() {
    let py = venv_python();
    let tmp = tempfile::tempdir().unwrap();
    // PyTorch raises each of these in every rank; the words are PyTorch 2.13's own.
    let scripts = [
        (
            "device_ids.py",
            "import torch, torch.distributed as dist\n\
             from torch.nn.parallel import DistributedDataParallel as DDP\n\
             dist.init_process_group('gloo')\n\
             model = torch.nn.Linear(4, 4)\n\
             ddp = DDP(model, device_ids=[0])\n",
            "rank_crashed",
            "DistributedDataParallel's device_ids do not match where the model's parameters are",
            "ddp = DDP(model, device_ids=[0])",
        ),
        (
            "no_init.py",
            "import torch, torch.distributed as dist\n\
             t = torch.ones(1)\n\
             dist.all_reduce(t)\n",
            "rank_crashed",
            "a torch.distributed call came before init_process_group",
            "dist.all_reduce(t)",
        ),
    ];
    // NCCL asked for where no GPU is seen: this machine's case; a machine with a GPU runs the
    // job instead, and says so.
    let gpu = Command::new(&py)
        .args(["-c", "import torch; print(torch.cuda.is_available())"])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "True");
    let nccl = (
        "nccl_no_gpu.py",
        "import torch, torch.distributed as dist\n\
         dist.init_process_group('nccl')\n",
        "nccl_internal_or_unsupported",
        "the job asked for NCCL in a process that sees no GPU",
        "dist.init_process_group('nccl')",
    );
    if gpu {
        eprintln!("a GPU is visible: the case of NCCL without a GPU is not run here");
    }
    for (name, code, category, title, line) in scripts.into_iter().chain((!gpu).then_some(nccl)) {
        let script = tmp.path().join(name);
        std::fs::write(&script, code).unwrap();
        let out = tmp.path().join(name.replace(".py", ""));
        let status = {
            let _one = PYTORCH_JOB.lock().unwrap_or_else(|e| e.into_inner());
            watched_job(&out, 2, &script)
                .output()
                .expect("start ddp-probe run")
                .status
        };
        assert!(!status.success(), "{name}: the job should fail");
        let report = explain_json(&out);
        let first = &report["findings"][0];
        assert_eq!(first["category"], category, "{name}: {report:#}");
        assert!(
            first["title"].as_str().unwrap_or_default().ends_with(title),
            "{name}: {report:#}"
        );
        let evidence: Vec<&str> = first["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|e| e["text"].as_str())
            .collect();
        assert!(
            evidence.iter().any(|e| e.contains(name)) && evidence.contains(&line),
            "{name}: {evidence:?}"
        );
    }
}

#[test]
fn mistakes_made_before_any_rank_runs_are_told_so() {
    // Scripts run with plain `python`, as a user first tries them: each fails in PyTorch's or
    // CPython's own words before any training.
    let py = venv_python();
    let tmp = tempfile::tempdir().unwrap();
    let scripts = [
        (
            // init_process_group's env:// set-up finds none of the launcher's variables.
            "no_launcher.py",
            "import torch.distributed as dist\ndist.init_process_group('gloo')\n",
            "the script was started without a launcher (RANK is not set)",
        ),
        (
            // mp.spawn pickles its function: a nested one cannot be.
            "nested_fn.py",
            "import torch.multiprocessing as mp\n\
             def main():\n\
             \x20   def run(rank):\n\
             \x20       print(rank)\n\
             \x20   mp.spawn(run, nprocs=2)\n\
             if __name__ == '__main__':\n\
             \x20   main()\n",
            "an object could not be pickled (a nested function, a lambda, a lock)",
        ),
        (
            // A spawned child imports the script again and would start the process again.
            "no_main_guard.py",
            "import torch.multiprocessing as mp\n\
             def run(rank):\n\
             \x20   print(rank)\n\
             mp.set_start_method('spawn', force=True)\n\
             p = mp.Process(target=run, args=(0,))\n\
             p.start()\n\
             p.join()\n",
            "processes were started while the script was being imported (no `if __name__ == \"__main__\":`)",
        ),
    ];
    for (name, code, title) in scripts {
        let script = tmp.path().join(name);
        std::fs::write(&script, code).unwrap();
        let mut c = Command::new(&py);
        c.arg(&script)
            .current_dir(tmp.path())
            .env_remove("PYTHONPATH");
        for var in [
            "MASTER_ADDR",
            "MASTER_PORT",
            "RANK",
            "WORLD_SIZE",
            "LOCAL_RANK",
        ] {
            c.env_remove(var);
        }
        let run = c.output().unwrap();
        let log = tmp.path().join(name.replace(".py", ".log"));
        std::fs::write(&log, [run.stdout, run.stderr].concat()).unwrap();
        let report = explain_json(&log);
        let first = &report["findings"][0];
        assert_eq!(first["category"], "rank_crashed", "{name}: {report:#}");
        assert!(
            first["title"].as_str().unwrap_or_default().ends_with(title),
            "{name}: {report:#}"
        );
    }
}

#[test]
fn a_master_address_not_of_this_machine_is_said_at_the_start_and_explained_after() {
    // A one-node run given a master address that is not this machine's (192.0.2.1, TEST-NET-1:
    // never assigned): rank 0 hosts the store here, rank 1 looks for it there and never gets
    // past init_process_group. torchrun says nothing and waits; ddp-probe says so at the start,
    // and `explain` names the rank that could not connect from its stack.
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("run");
    let mut c = Command::new(env!("CARGO_BIN_EXE_ddp-probe"));
    c.current_dir(repo())
        .args(["run", "--nproc_per_node", "2", "--grace", "2"])
        .args([
            "--master_addr",
            "192.0.2.1",
            "--hang-timeout",
            HANG_TIMEOUT_S,
            "--out",
        ])
        .arg(&out)
        .arg("--")
        .arg(venv_python())
        .arg(repo().join("examples/python/train_ddp.py"))
        .env_remove("PYTHONPATH")
        .env_remove("DDP_PROBE_TRACE");
    let (status, console) = {
        let _one = PYTORCH_JOB.lock().unwrap_or_else(|e| e.into_inner());
        with_console(&mut c)
    };
    assert_eq!(status.code(), Some(124), "{console}");
    let flat = console.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("master address 192.0.2.1 is not an address of this machine"),
        "{console}"
    );
    assert!(
        flat.contains("most likely cause: rank 1 could not connect to the store at 192.0.2.1:"),
        "{console}"
    );
}

#[test]
fn a_store_port_held_by_another_program_is_named_from_pytorch_s_own_ping() {
    // Something that is not a TCPStore answers on the master port (here a listener that
    // replies to anything with an HTTP error). PyTorch's store client pings it at connect
    // and gets another value back; `explain` reads PyTorch's words as the port taken by
    // another program, not as a crash of the rank.
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for mut conn in listener.incoming().flatten() {
            std::thread::spawn(move || {
                let mut buf = [0u8; 4096];
                while matches!(conn.read(&mut buf), Ok(n) if n > 0) {
                    let _ = conn.write_all(b"HTTP/1.1 400 Bad Request\r\n\r\n");
                }
            });
        }
    });
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("join.py");
    std::fs::write(
        &script,
        "import datetime, torch.distributed as dist\n\
         dist.init_process_group('gloo', timeout=datetime.timedelta(seconds=4))\n",
    )
    .unwrap();
    let out = Command::new(venv_python())
        .arg(&script)
        .env("MASTER_ADDR", "127.0.0.1")
        .env("MASTER_PORT", port.to_string())
        .env("RANK", "1")
        .env("WORLD_SIZE", "2")
        .env_remove("PYTHONPATH")
        .output()
        .unwrap();
    assert!(!out.status.success());
    let log = tmp.path().join("rank-1.log");
    std::fs::write(&log, &out.stderr).unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("Ping failed, invalid value returned from server"),
        "{stderr}"
    );
    let report = explain_json(&log);
    let first = &report["findings"][0];
    assert_eq!(first["category"], "port_in_use", "{report:#}");
    assert!(
        first["title"]
            .as_str()
            .unwrap()
            .contains("not this job's store"),
        "{report:#}"
    );
}

#[test]
fn a_hung_script_without_traces_is_explained_from_its_stacks() {
    // No traces: the watchdog's progress is the ranks' output, the module answers the dump
    // request from its import on, and `explain` names rank 1 from the stacks alone (rank 0's
    // inside torch.distributed, rank 1's in the script).
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("plain_collectives.py");
    std::fs::write(&script, PLAIN_COLLECTIVES_HANG).unwrap();
    let out = tmp.path().join("run");
    let (status, console) = {
        let _one = PYTORCH_JOB.lock().unwrap_or_else(|e| e.into_inner());
        with_console(&mut watched_job(&out, 2, &script))
    };
    assert_eq!(status.code(), Some(124), "{console}");
    assert!(!out.join("traces/rank-0.jsonl").exists(), "{console}");
    let flat = console.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains(&format!(
            "hang: no rank made progress for {HANG_TIMEOUT_S} s and none wrote a trace; \
             `ddp-probe explain` reads what the ranks left"
        )),
        "{console}"
    );
    let line = line_of(PLAIN_COLLECTIVES_HANG, "time.sleep(3600)");
    assert!(
        flat.contains(&format!(
            "most likely cause: rank 0 waited in a collective for rank 1, which never joined it: \
             it was in <module> at plain_collectives.py:{line} (`time.sleep(3600) # a read \
             that never returns`)"
        )),
        "{console}"
    );
}

/// `ddp-probe explain DIR`'s output with its line breaks taken out (they fall where the
/// wrapping puts them).
fn explained(dir: &Path) -> String {
    let done = Command::new(env!("CARGO_BIN_EXE_ddp-probe"))
        .arg("explain")
        .arg(dir)
        .output()
        .unwrap();
    String::from_utf8_lossy(&done.stdout)
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
}

/// An evaluation on rank 0 only, through the DDP model (a common mistake: DDP's forward first
/// broadcasts the module's buffers, a collective rank 1 never joins), then a barrier: the job
/// hangs with rank 0 in the broadcast and rank 1 in the barrier, one collective number apart
/// from nothing. The launcher's hang line says the ranks wait in different collectives (it had
/// said "the collective itself is stuck"), and `explain` names the mismatch with the forward
/// and its line as the fix, from the flight-recorder dumps and, without them, from the traces.
const RANK0_EVALUATION: &str = "\
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
import ddp_probe_torch
dist.init_process_group('gloo')
torch.manual_seed(0)
net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.BatchNorm1d(16), torch.nn.Linear(16, 1))
model = ddp_probe_torch.instrument(DDP(net))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
for step in range(4):
    model(torch.randn(8, 8)).pow(2).mean().backward()
    opt.step()
    opt.zero_grad()
if dist.get_rank() == 0:
    with torch.no_grad():
        print('evaluation', model(torch.randn(8, 8)).mean().item())
dist.barrier()
dist.destroy_process_group()
";

/// `source` written as `name` and run on 2 ranks under the hang watchdog, which must stop it:
/// the temporary directory, the run directory and the console with its white space collapsed.
fn hung_job(name: &str, source: &str) -> (tempfile::TempDir, std::path::PathBuf, String) {
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join(name);
    std::fs::write(&script, source).unwrap();
    let out = tmp.path().join("run");
    let (status, console) = {
        let _one = PYTORCH_JOB.lock().unwrap_or_else(|e| e.into_inner());
        with_console(&mut watched_job(&out, 2, &script))
    };
    assert_eq!(status.code(), Some(124), "{console}");
    let console = console.split_whitespace().collect::<Vec<_>>().join(" ");
    (tmp, out, console)
}

#[test]
fn an_evaluation_through_ddp_on_rank_0_only_is_named_as_the_mismatch() {
    let (_tmp, out, console) = hung_job("evaluate.py", RANK0_EVALUATION);
    assert!(
        console.contains("in different collectives (rank 0: broadcast, rank 1: barrier)")
            && !console.contains("the collective itself is stuck"),
        "{console}"
    );
    let line = line_of(RANK0_EVALUATION, "print('evaluation'");
    let forward = format!(
        "fix: Rank 0 was in <module> at evaluate.py:{line} (`print('evaluation', \
         model(torch.randn(8, 8)).mean().item())`), inside torch/nn/parallel/distributed.py"
    );
    let with_dumps = explained(&out);
    assert!(
        with_dumps.starts_with(
            "most likely cause: ranks 0, 1 issued different collectives at the same point"
        ) && with_dumps.contains(&forward)
            && with_dumps.contains("ran no such forward"),
        "{with_dumps}"
    );
    // Without the dumps (a job whose ranks could not write them) the traces tell the same.
    for rank in 0..2 {
        std::fs::remove_file(out.join(format!("logs/nccl_trace_rank_{rank}"))).unwrap();
    }
    let from_traces = explained(&out);
    assert!(
        from_traces.starts_with(
            "most likely cause: ranks 0, 1 issued different collectives at the same point"
        ) && from_traces.contains("the traces show collective seq")
            && from_traces.contains("called as different operations on different ranks")
            && from_traces.contains(&forward),
        "{from_traces}"
    );
}

/// An evaluation whose metrics are reduced (a barrier, then an all-reduce, as torchvision's
/// classification reference does) run on rank 0 only, while rank 1 goes on to the next epoch:
/// rank 0 waits in the barrier, rank 1 in its first gradient all-reduce, at one collective
/// number. The launcher's hang line says the ranks wait in different collectives (it had named
/// rank 0 "behind", by its step counter, one step short of rank 1's), and `explain`'s fix says
/// where each rank's path went: rank 0 in `evaluate`, rank 1 in its training backward.
const RANK0_METRICS: &str = "\
import torch, torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
import ddp_probe_torch
dist.init_process_group('gloo')
model = ddp_probe_torch.instrument(DDP(torch.nn.Linear(8, 1)))
opt = torch.optim.SGD(model.parameters(), lr=0.01)
def evaluate():
    loss = torch.tensor([1.0])
    dist.barrier()
    dist.all_reduce(loss)
    return loss.item()
for epoch in range(2):
    for step in range(4):
        model(torch.randn(8, 8)).pow(2).mean().backward()
        opt.step()
        opt.zero_grad()
    if dist.get_rank() == 0:
        evaluate()
dist.destroy_process_group()
";

#[test]
fn metrics_reduced_on_rank_0_only_are_named_where_the_paths_parted() {
    let (_tmp, out, console) = hung_job("metrics.py", RANK0_METRICS);
    assert!(
        console.contains("in different collectives (rank 0: barrier, rank 1: all_reduce)")
            && !console.contains("is behind"),
        "{console}"
    );
    let text = explained(&out);
    let barrier = line_of(RANK0_METRICS, "dist.barrier()");
    let backward = line_of(RANK0_METRICS, ".backward()");
    assert!(
        text.starts_with(
            "most likely cause: ranks 0, 1 issued different collectives at the same point"
        ) && text.contains(&format!(
            "fix: Rank 0 was in evaluate at metrics.py:{barrier} (`dist.barrier()`)"
        )) && text.contains(&format!("rank 1 was in <module> at metrics.py:{backward}"))
            && text.contains("the ranks' code took different paths"),
        "{text}"
    );
}

/// A script that asks `init_process_group` for 4 ranks where the launcher started 2: both
/// wait in the rendezvous for ranks that never come. Without the module nothing the ranks leave
/// says where they were, and `explain` says so with the rerun that would (it had headlined "a
/// rank timed out in a collective" and suggested a rerun under the hang watchdog the run had
/// used); with `--auto-instrument` the ranks' stacks name the cause and the line.
#[test]
fn a_hang_with_nothing_to_read_says_what_rerun_would_tell() {
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("four.py");
    std::fs::write(
        &script,
        "import os, torch.distributed as dist\n\
         dist.init_process_group('gloo', world_size=4, rank=int(os.environ['RANK']))\n\
         print('joined', dist.get_rank())\n",
    )
    .unwrap();
    let plain = tmp.path().join("plain");
    let (status, console) = {
        let _one = PYTORCH_JOB.lock().unwrap_or_else(|e| e.into_inner());
        with_console(&mut watched_job(&plain, 2, &script))
    };
    assert_eq!(status.code(), Some(124), "{console}");
    let text = explained(&plain);
    assert!(
        text.starts_with(
            "found: no rank made progress until the launcher's hang watchdog stopped the job, \
             and nothing the ranks left says where they were"
        ) && text.contains("to confirm: a rerun under `ddp-probe run --auto-instrument")
            && !text.contains("timed out in a collective"),
        "{text}"
    );
    let auto = tmp.path().join("auto");
    let (status, console) = {
        let _one = PYTORCH_JOB.lock().unwrap_or_else(|e| e.into_inner());
        with_console(watched_job(&auto, 2, &script).env("DDP_PROBE_AUTO_INSTRUMENT", "1"))
    };
    assert_eq!(status.code(), Some(124), "{console}");
    let text = explained(&auto);
    assert!(
        text.starts_with(
            "most likely cause: init_process_group asks for 4 ranks (`world_size=4` in the \
             program), and ranks 0, 1 waited for the others"
        ) && text.contains("rank 0 passes `world_size=4` at four.py:2"),
        "{text}"
    );
}

/// A script in the style of PyTorch's DDP tutorial (`multigpu.py`): one process started by the
/// launcher runs `torch.multiprocessing.spawn` for 2 ranks, each passing its rank to
/// `init_process_group` (its environment still says the launcher's `RANK=0`). With
/// `SPAWNED_HANG=1` rank 1 stops in a read at its fourth step.
const SPAWNED_RANKS: &str = "\
import os, time, torch, torch.distributed as dist, torch.multiprocessing as mp
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
import ddp_probe_torch


def worker(rank, world_size):
    dist.init_process_group(\"gloo\", rank=rank, world_size=world_size)
    model = ddp_probe_torch.instrument(DDP(nn.Linear(32, 4)))
    for step in range(6):
        if step == 3 and rank == 1 and os.environ.get(\"SPAWNED_HANG\") == \"1\":
            time.sleep(3600)  # a read that never returns
        model(torch.randn(8, 32)).sum().backward()
    del model
    dist.barrier()
    dist.destroy_process_group()


if __name__ == \"__main__\":
    mp.spawn(worker, args=(2,), nprocs=2)
";

/// A script without the one line (the example with it taken out: how a Hugging Face Trainer,
/// Accelerate or Lightning user's script looks, whose DDP the framework builds, with none of
/// the script's settings) under `--auto-instrument --bucket-cap-mb 0.1`: recorded as the
/// example with the line is, with the cap handed through, PyTorch's own layout included. The
/// same with `torch.multiprocessing.spawn`'s ranks.
#[test]
fn a_script_without_the_line_is_recorded_under_auto_instrument() {
    let py = venv_python();
    let tmp = tempfile::tempdir().unwrap();
    let script = example_without_the_line(tmp.path());

    // Without the option: no trace, and the run's end says how to get one.
    let out = tmp.path().join("without");
    let (status, console) = watched_until_no_teardown_abort(&out, 2, &script, 134, |c| {
        c.args(["--steps", "2"]);
    });
    assert!(status.success(), "{console}");
    assert!(!out.join("traces/rank-0.jsonl").exists());
    assert!(
        console.contains("no rank recorded a trace")
            && console.contains("ddp-probe run --auto-instrument"),
        "{console}"
    );

    let out = tmp.path().join("run");
    {
        let _one = PYTORCH_JOB.lock().unwrap_or_else(|e| e.into_inner());
        run_script(
            &py,
            &out,
            &script,
            &["--auto-instrument", "--bucket-cap-mb", CAP_MB],
        );
    }
    let pytorch = pytorch_layout(&out);
    assert_eq!(pytorch, expected_rebuilt());
    let (run, _warnings) = probe::reader::load_run(&[&out]).expect("load the traces");
    check_trace(&run, &pytorch);

    // torch.multiprocessing.spawn's ranks run the script's function, not its start: each is
    // recorded as itself all the same.
    let spawned = SPAWNED_RANKS
        .replace("import ddp_probe_torch\n", "")
        .replace(
            "ddp_probe_torch.instrument(DDP(nn.Linear(32, 4)))",
            // PyTorch 2.13 deprecates the keyword (a FutureWarning aimed at the caller).
            "DDP(nn.Linear(32, 4), broadcast_buffers=True)",
        );
    assert!(!spawned.contains("ddp_probe_torch"));
    let script = tmp.path().join("spawned_plain.py");
    std::fs::write(&script, &spawned).unwrap();
    let out = tmp.path().join("spawned");
    let (status, console) = watched_until_no_teardown_abort(&out, 1, &script, 1, |c| {
        c.env("DDP_PROBE_AUTO_INSTRUMENT", "1");
    });
    assert!(status.success(), "{console}");
    // The constructor's warning names the script's line, as without the wrapper that records it
    // (before, `ddp_probe_torch/__init__.py`'s).
    let line = 1 + spawned
        .lines()
        .position(|l| l.contains("broadcast_buffers=True"))
        .unwrap();
    assert!(
        console.contains(&format!(
            "spawned_plain.py:{line}: FutureWarning: `broadcast_buffers` is deprecated"
        )) && !console.contains("ddp_probe_torch/__init__.py"),
        "{console}"
    );
    for rank in 0..2u64 {
        let (trace, header) = trace_and_header(&out, rank, &console);
        assert_eq!(header["rank"].as_u64(), Some(rank), "{header}");
        assert!(
            trace.contains("\"kind\":\"collective\""),
            "rank {rank} recorded no collective"
        );
    }
}

/// What a small script shows a user under `--auto-instrument`: `script ARGS` run on 2 ranks
/// into `out` (run again after gloo's teardown abort), then `ddp-probe summary out`. Gives the
/// console and the summary's stdout and stderr, each with its white space made single spaces
/// (the summary wraps its notes).
struct AutoRun {
    console: String,
    summary: String,
    summary_error: String,
}

fn auto_instrumented(out: &Path, script: &Path, args: &[&str]) -> AutoRun {
    let (status, console) = watched_until_no_teardown_abort(out, 2, script, 134, |c| {
        c.env("DDP_PROBE_AUTO_INSTRUMENT", "1").args(args);
    });
    assert!(status.success(), "{console}");
    let summary = Command::new(env!("CARGO_BIN_EXE_ddp-probe"))
        .arg("summary")
        .arg(out)
        .output()
        .unwrap();
    let flat = |b: &[u8]| {
        String::from_utf8_lossy(b)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
    };
    AutoRun {
        console,
        summary: flat(&summary.stdout),
        summary_error: flat(&summary.stderr),
    }
}

/// A script that starts the process group but never wraps its model (PyTorch's ImageNet
/// example on CPU does so): under `--auto-instrument` rank 0 says at the first optimizer step
/// that nothing is recorded and that the ranks train apart, the run's end repeats it, and so
/// does `summary`'s error (before, the run ended in silence and `summary` said only that there
/// were no trace files).
#[test]
fn training_with_a_process_group_and_no_ddp_is_said_to_train_apart() {
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("no_ddp.py");
    std::fs::write(
        &script,
        "import torch, torch.distributed as dist\n\
         dist.init_process_group('gloo')\n\
         model = torch.nn.Linear(8, 2)\n\
         opt = torch.optim.SGD(model.parameters(), lr=0.1)\n\
         for step in range(3):\n\
         \x20   model(torch.randn(4, 8)).sum().backward()\n\
         \x20   opt.step()\n\
         \x20   opt.zero_grad()\n\
         dist.barrier()\n\
         dist.destroy_process_group()\n",
    )
    .unwrap();
    let run = auto_instrumented(&tmp.path().join("run"), &script, &[]);
    let console = &run.console;
    let said = "ddp_probe_torch: the optimizer steps in a job of 2 ranks, but no \
                DistributedDataParallel model was built, so nothing is recorded; unless the \
                program averages the gradients itself";
    assert_eq!(
        console.matches(&format!("[rank 0] {said}")).count(),
        1,
        "{console}"
    );
    assert!(!console.contains("[rank 1] ddp_probe_torch"), "{console}");
    assert!(
        console.contains("no rank recorded a trace; the ranks' ddp_probe_torch said:\n  rank 0: the optimizer steps"),
        "{console}"
    );
    let err = &run.summary_error;
    assert!(
        err.contains("no trace files in")
            && err.contains(
                "the ranks' ddp_probe_torch said: rank 0: the optimizer steps in a job of 2 ranks"
            ),
        "{err}"
    );

    // Sharded by FSDP2 (`fully_shard`, which runs on CPU): the ranks do train together, and
    // are not said to train apart.
    let text = std::fs::read_to_string(&script).unwrap().replace(
        "opt = ",
        "from torch.distributed.fsdp import fully_shard\nfully_shard(model)\nopt = ",
    );
    std::fs::write(&script, text).unwrap();
    let console = auto_instrumented(&tmp.path().join("fsdp"), &script, &[]).console;
    assert!(
        console.contains(
            "[rank 0] ddp_probe_torch: the optimizer steps sharded parameters (FSDP) in a job \
             of 2 ranks: ddp-probe records DistributedDataParallel only; nothing is recorded"
        ) && !console.contains("trains its own copy"),
        "{console}"
    );

    // No process group at all (a one-process script started on 2 ranks): each rank trains
    // alone, which rank 0 says once (before, only the run's end said that no trace was
    // recorded).
    let one_process = "import torch\n\
         model = torch.nn.Linear(8, 2)\n\
         opt = torch.optim.SGD(model.parameters(), lr=0.1)\n\
         for step in range(3):\n\
         \x20   model(torch.randn(4, 8)).sum().backward()\n\
         \x20   opt.step()\n\
         \x20   opt.zero_grad()\n";
    std::fs::write(&script, one_process).unwrap();
    let console = auto_instrumented(&tmp.path().join("alone"), &script, &[]).console;
    let said = "ddp_probe_torch: the optimizer steps in a job of 2 ranks, but this process never \
                called torch.distributed.init_process_group: every rank trains its own copy of \
                the model alone";
    assert_eq!(
        console.matches(&format!("[rank 0] {said}")).count(),
        1,
        "{console}"
    );
    assert!(!console.contains("[rank 1] ddp_probe_torch"), "{console}");
}

/// A loop that calls the wrapped module (`model.module(x)`) instead of the DDP model: DDP
/// all-reduces nothing and the ranks' copies drift apart, with no error from PyTorch. Each rank
/// says so once at its first optimizer step, into its trace too, and `summary` repeats it
/// (before, `summary` said only that the ranks had no step spans). The same loop through the
/// DDP model says nothing of the kind.
#[test]
fn a_loop_that_calls_the_wrapped_module_is_said_to_skip_the_all_reduce() {
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("bypass.py");
    let write = |call: &str| {
        std::fs::write(
            &script,
            format!(
                "import torch, torch.distributed as dist\n\
                 from torch.nn.parallel import DistributedDataParallel as DDP\n\
                 dist.init_process_group('gloo')\n\
                 model = DDP(torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.Linear(16, 2)))\n\
                 opt = torch.optim.SGD(model.parameters(), lr=0.1)\n\
                 for step in range(4):\n\
                 \x20   {call}(torch.randn(4, 8)).sum().backward()\n\
                 \x20   opt.step()\n\
                 \x20   opt.zero_grad()\n\
                 dist.barrier()\n\
                 dist.destroy_process_group()\n"
            ),
        )
        .unwrap();
    };
    let said = "ddp_probe_torch: the optimizer stepped 4 of the DistributedDataParallel model's \
                parameters with gradients from a backward that did not go through its forward";
    write("model.module");
    let out = tmp.path().join("bypass");
    let run = auto_instrumented(&out, &script, &[]);
    assert_eq!(run.console.matches(said).count(), 1, "{}", run.console);
    for rank in 0..2 {
        let trace = std::fs::read_to_string(out.join(format!("traces/rank-{rank}.jsonl")))
            .unwrap_or_default();
        assert_eq!(
            trace.matches("\"level\":\"warning\"").count(),
            1,
            "rank {rank}: {trace}"
        );
    }
    assert!(
        run.summary
            .contains("warning: rank 0: the optimizer stepped 4 of the DistributedDataParallel"),
        "{}",
        run.summary
    );

    // Through the DDP model, with the parameters split between two optimizers (Muon for the
    // matrices and AdamW for the rest, as modded-nanoGPT trains): the second steps after the
    // first closed the step, and is no bypass.
    write("model");
    let text = std::fs::read_to_string(&script).unwrap();
    let text = text
        .replace(
            "opt = torch.optim.SGD(model.parameters(), lr=0.1)",
            "params = list(model.parameters())\n\
             opt = torch.optim.SGD(params[:2], lr=0.1)\n\
             opt2 = torch.optim.SGD(params[2:], lr=0.1)",
        )
        .replace("    opt.step()\n", "    opt.step()\n    opt2.step()\n");
    assert!(text.contains("opt2.step()"), "{text}");
    std::fs::write(&script, text).unwrap();
    let console = auto_instrumented(&tmp.path().join("through"), &script, &[]).console;
    assert!(
        !console.contains("did not go through its forward"),
        "{console}"
    );
}

/// A GAN's loop (PyTorch's DCGAN example's order): both nets in DDP, the generator built first
/// and recorded; the discriminator's optimizer steps between the generator's forward and its
/// backward. Before 2026-12-07 that step closed the generator's step: its backward then came
/// with no step under way, the module said "training went on in eval mode" (falsely) and
/// recorded 1 step of 8. Now every iteration is a step whose optimizer span is the generator's
/// (after its backward), and `summary` says what the unrecorded discriminator costs.
#[test]
fn a_gans_second_model_and_optimizer_leave_the_recorded_steps_whole() {
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("gan.py");
    std::fs::write(
        &script,
        "import torch, torch.nn as nn, torch.distributed as dist\n\
         from torch.nn.parallel import DistributedDataParallel as DDP\n\
         dist.init_process_group('gloo')\n\
         torch.manual_seed(0)\n\
         G = DDP(nn.Sequential(nn.Linear(4, 32), nn.ReLU(), nn.Linear(32, 8)))\n\
         D = DDP(nn.Sequential(nn.Linear(8, 32), nn.ReLU(), nn.Linear(32, 1)))\n\
         optG = torch.optim.Adam(G.parameters(), lr=1e-3)\n\
         optD = torch.optim.Adam(D.parameters(), lr=1e-3)\n\
         bce = nn.BCEWithLogitsLoss()\n\
         for step in range(8):\n\
         \x20   real = torch.randn(16, 8)\n\
         \x20   D.zero_grad()\n\
         \x20   bce(D(real), torch.ones(16, 1)).backward()\n\
         \x20   fake = G(torch.randn(16, 4))\n\
         \x20   bce(D(fake.detach()), torch.zeros(16, 1)).backward()\n\
         \x20   optD.step()\n\
         \x20   G.zero_grad()\n\
         \x20   bce(D(fake), torch.ones(16, 1)).backward()\n\
         \x20   optG.step()\n\
         dist.barrier()\n\
         dist.destroy_process_group()\n",
    )
    .unwrap();
    let out = tmp.path().join("run");
    let run = auto_instrumented(&out, &script, &[]);
    assert!(
        !run.console.contains("eval mode") && !run.console.contains("eval()"),
        "{}",
        run.console
    );
    // Rank 0 says once which model is recorded (parameters counted by hand: 4·32 + 32 + 32·8 + 8
    // and 8·32 + 32 + 32 + 1).
    assert!(
        run.console.contains(
            "[rank 0] ddp_probe_torch: another DistributedDataParallel model (Sequential of 321 \
             parameters) was built; only the first (Sequential of 424 parameters) is recorded"
        ),
        "{}",
        run.console
    );
    for rank in 0..2 {
        let trace = std::fs::read_to_string(out.join(format!("traces/rank-{rank}.jsonl"))).unwrap();
        let spans: Vec<serde_json::Value> = trace
            .lines()
            .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
            .filter(|v| v["type"] == "span")
            .collect();
        let of = |kind: &str, step: u64| -> Vec<&serde_json::Value> {
            spans
                .iter()
                .filter(|v| v["kind"] == kind && v["step"].as_u64() == Some(step))
                .collect()
        };
        let steps = spans.iter().filter(|v| v["kind"] == "step").count();
        assert_eq!(steps, 8, "rank {rank}: {trace}");
        for step in 0..8 {
            let (backward, optimizer) = (of("backward", step), of("optimizer", step));
            assert_eq!(
                (backward.len(), optimizer.len()),
                (1, 1),
                "rank {rank} step {step}"
            );
            assert!(
                optimizer[0]["start"].as_i64() >= backward[0]["end"].as_i64(),
                "rank {rank} step {step}: the optimizer span is the discriminator's: {:?}",
                (backward, optimizer)
            );
            // The generator's one bucket (424 float32 parameters), all-reduced in the step.
            let comm = of("collective", step);
            assert!(
                comm.iter().any(|c| c["bytes"] == 424 * 4),
                "rank {rank} step {step}: {comm:?}"
            );
        }
    }
    assert!(
        run.summary.contains(
            "note: the program also trains another DistributedDataParallel model, not recorded \
             (Sequential of 321 parameters): only the first one built is"
        ),
        "{}",
        run.summary
    );
}

/// A DataLoader without a DistributedSampler, shuffled with one seed on every rank: each rank
/// trains on the same batches. `summary` says so from the fingerprints of the first steps'
/// batches; with a DistributedSampler it says nothing of the kind.
#[test]
fn ranks_fed_the_same_batches_are_said_to_split_no_data() {
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("loader.py");
    std::fs::write(
        &script,
        "import sys, torch, torch.distributed as dist\n\
         from torch.nn.parallel import DistributedDataParallel as DDP\n\
         from torch.utils.data import DataLoader, TensorDataset, DistributedSampler\n\
         dist.init_process_group('gloo')\n\
         torch.manual_seed(0)\n\
         data = TensorDataset(torch.randn(256, 8), torch.randn(256, 2))\n\
         sampler = DistributedSampler(data) if sys.argv[1] == 'sharded' else None\n\
         loader = DataLoader(data, batch_size=16, sampler=sampler, shuffle=sampler is None)\n\
         model = DDP(torch.nn.Linear(8, 2))\n\
         opt = torch.optim.SGD(model.parameters(), lr=0.1)\n\
         for x, y in loader:\n\
         \x20   ((model(x) - y) ** 2).mean().backward()\n\
         \x20   opt.step()\n\
         \x20   opt.zero_grad()\n\
         dist.barrier()\n\
         dist.destroy_process_group()\n",
    )
    .unwrap();
    let said = "every rank got the same input in steps 0, 1, 2, 3";
    for (mode, expected) in [("same", true), ("sharded", false)] {
        let summary = auto_instrumented(&tmp.path().join(mode), &script, &[mode]).summary;
        assert_eq!(summary.contains(said), expected, "{mode}: {summary}");
    }
}

/// Checks that the module said `said` once, on rank 0's console only, and that `summary` shows
/// it as rank 0's warning, when `expected`; that neither did otherwise. The console, its white
/// space collapsed.
fn said_by_rank_0_only(run: &AutoRun, said: &str, mode: &str, expected: bool) -> String {
    assert_eq!(
        run.summary.contains(&format!("warning: rank 0: {said}")),
        expected,
        "{mode}: {}",
        run.summary
    );
    let console: String = run.console.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(
        console.matches(&format!("ddp_probe_torch: {said}")).count(),
        usize::from(expected),
        "{mode}: {console}"
    );
    console
}

/// A shuffling DistributedSampler whose `set_epoch` is never called draws the same order every
/// epoch (PyTorch's documentation of DistributedSampler: "Otherwise, the same ordering will be
/// always used"), with no word from PyTorch: rank 0 says so at the second epoch's first batch and
/// `summary` shows it as a warning, also when persistent workers reset one iterator. A look at one
/// batch before training is no pass, and an evaluation loader's sampler (no training step) is not
/// the training data's: with `set_epoch` each epoch nothing is said.
#[test]
fn a_distributed_sampler_never_given_its_epoch_is_said_to_repeat_its_order() {
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("epochs.py");
    std::fs::write(
        &script,
        "import sys, torch, torch.distributed as dist\n\
         from torch.nn.parallel import DistributedDataParallel as DDP\n\
         from torch.utils.data import DataLoader, TensorDataset, DistributedSampler\n\
         def main(mode):\n\
         \x20   dist.init_process_group('gloo')\n\
         \x20   torch.manual_seed(0)\n\
         \x20   data = TensorDataset(torch.randn(64, 8), torch.randn(64, 2))\n\
         \x20   sampler = DistributedSampler(data, shuffle=True)\n\
         \x20   workers = dict(num_workers=1, persistent_workers=True, multiprocessing_context='spawn')\n\
         \x20   loader = DataLoader(data, batch_size=8, sampler=sampler, **(workers if mode == 'persistent' else {}))\n\
         \x20   held_out = TensorDataset(torch.randn(32, 8), torch.randn(32, 2))\n\
         \x20   evaluation = DataLoader(held_out, batch_size=8, sampler=DistributedSampler(held_out, shuffle=True))\n\
         \x20   model = DDP(torch.nn.Linear(8, 2))\n\
         \x20   opt = torch.optim.SGD(model.parameters(), lr=0.1)\n\
         \x20   next(iter(loader))\n\
         \x20   for epoch in range(3):\n\
         \x20       if mode == 'each':\n\
         \x20           sampler.set_epoch(epoch)\n\
         \x20       model.train()\n\
         \x20       for x, y in loader:\n\
         \x20           ((model(x) - y) ** 2).mean().backward()\n\
         \x20           opt.step()\n\
         \x20           opt.zero_grad()\n\
         \x20       model.eval()\n\
         \x20       with torch.no_grad():\n\
         \x20           for x, y in evaluation:\n\
         \x20               model(x)\n\
         \x20   dist.barrier()\n\
         \x20   dist.destroy_process_group()\n\
         if __name__ == '__main__':\n\
         \x20   main(sys.argv[1])\n",
    )
    .unwrap();
    let said =
        "the training DataLoader's DistributedSampler (shuffle=True) began another pass over \
                the data with the epoch of the pass before (0): `set_epoch` was not called";
    for (mode, expected) in [("never", true), ("persistent", true), ("each", false)] {
        let run = auto_instrumented(&tmp.path().join(mode), &script, &[mode]);
        let console = said_by_rank_0_only(&run, said, mode, expected);
        // And again in the run's closing warnings.
        assert_eq!(
            console.contains(&format!("warning: rank 0: {said}")),
            expected,
            "{mode}: {console}"
        );
    }
}

/// An optimizer step whose gradients are never cleared: every backward adds to the gradients of
/// all the steps before, with no word from PyTorch. Rank 0 says so after the third step and
/// `summary` shows it as a warning, also under DDP's `gradient_as_bucket_view` (whose bucket
/// rebuild after the first step gives `.grad` a new tensor with the old values). Clearing them
/// any way a program does is not named: a module's `zero_grad(set_to_none=False)` between the
/// forward and the backward, or the program's own `p.grad.zero_()` after each step.
#[test]
fn gradients_never_cleared_between_optimizer_steps_are_named() {
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("clearing.py");
    std::fs::write(
        &script,
        "import sys, torch, torch.distributed as dist\n\
         from torch.nn.parallel import DistributedDataParallel as DDP\n\
         mode = sys.argv[1]\n\
         dist.init_process_group('gloo')\n\
         torch.manual_seed(0)\n\
         net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 1))\n\
         model = DDP(net, gradient_as_bucket_view=mode == 'bucket_view')\n\
         opt = torch.optim.SGD(model.parameters(), lr=0.001)\n\
         for step in range(8):\n\
         \x20   loss = model(torch.randn(8, 8)).pow(2).mean()\n\
         \x20   if mode == 'module_before_backward':\n\
         \x20       model.zero_grad(set_to_none=False)\n\
         \x20   loss.backward()\n\
         \x20   opt.step()\n\
         \x20   if mode == 'by_hand':\n\
         \x20       for p in model.parameters():\n\
         \x20           p.grad.zero_()\n\
         dist.destroy_process_group()\n",
    )
    .unwrap();
    let said = "the gradients were not cleared between optimizer steps: in the 2 steps after the \
                first, the backward added its gradients to the ones the optimizer had just used";
    for (mode, expected) in [
        ("never", true),
        ("bucket_view", true),
        ("module_before_backward", false),
        ("by_hand", false),
    ] {
        let run = auto_instrumented(&tmp.path().join(mode), &script, &[mode]);
        said_by_rank_0_only(&run, said, mode, expected);
    }
}

/// An evaluation's `model.eval()` never undone: training goes on in eval mode (BatchNorm stops
/// updating its statistics, dropout is off), silently in PyTorch. Rank 0 says so and `summary`
/// shows it as a warning; with `model.train()` at each epoch's start nothing is said.
#[test]
fn training_left_in_eval_mode_after_an_evaluation_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("modes.py");
    std::fs::write(
        &script,
        "import sys, torch, torch.distributed as dist\n\
         from torch.nn.parallel import DistributedDataParallel as DDP\n\
         dist.init_process_group('gloo')\n\
         net = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.BatchNorm1d(16), torch.nn.Linear(16, 1))\n\
         model = DDP(net)\n\
         opt = torch.optim.SGD(model.parameters(), lr=0.01)\n\
         model.train()\n\
         for epoch in range(3):\n\
         \x20   if sys.argv[1] == 'train':\n\
         \x20       model.train()\n\
         \x20   for step in range(4):\n\
         \x20       model(torch.randn(8, 8)).pow(2).mean().backward()\n\
         \x20       opt.step()\n\
         \x20       opt.zero_grad()\n\
         \x20   model.eval()\n\
         \x20   with torch.no_grad():\n\
         \x20       model(torch.randn(8, 8))\n\
         dist.destroy_process_group()\n",
    )
    .unwrap();
    let said = "training went on in eval mode: after 4 training steps a backward followed a \
                forward of the DistributedDataParallel model with the model in eval()";
    for (mode, expected) in [("forgot", true), ("train", false)] {
        let run = auto_instrumented(&tmp.path().join(mode), &script, &[mode]);
        assert_eq!(
            run.summary.contains(&format!("warning: rank 0: {said}")),
            expected,
            "{mode}: {}",
            run.summary
        );
        let console: String = run.console.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(console.contains(said), expected, "{mode}: {console}");
    }
}

/// Every rank saving the checkpoint to the same file (no `if rank == 0:`): the writes race on
/// the file and the job pays the I/O once per rank, with no word from PyTorch. `summary` names
/// the file and the ranks from the module's record of each `torch.save`; saving on rank 0 only,
/// or each rank to its own file, says nothing of the kind.
#[test]
fn one_checkpoint_file_saved_by_every_rank_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("save.py");
    std::fs::write(
        &script,
        "import os, sys, torch, torch.distributed as dist\n\
         from torch.nn.parallel import DistributedDataParallel as DDP\n\
         dist.init_process_group('gloo')\n\
         model = DDP(torch.nn.Linear(8, 2))\n\
         opt = torch.optim.SGD(model.parameters(), lr=0.1)\n\
         rank, mode, where = dist.get_rank(), sys.argv[1], sys.argv[2]\n\
         big = torch.zeros(4_000_000)\n\
         for step in range(9):\n\
         \x20   model(torch.randn(4, 8)).sum().backward()\n\
         \x20   opt.step()\n\
         \x20   opt.zero_grad()\n\
         \x20   if step % 3 == 2:\n\
         \x20       if mode == 'all':\n\
         \x20           torch.save({'model': model.state_dict(), 'big': big}, os.path.join(where, 'ckpt.pt'))\n\
         \x20       elif mode == 'own':\n\
         \x20           torch.save({'rng': torch.get_rng_state()}, os.path.join(where, f'rng_{rank}.pt'))\n\
         \x20       elif rank == 0:\n\
         \x20           torch.save({'model': model.state_dict(), 'big': big}, os.path.join(where, 'ckpt.pt'))\n\
         \x20       dist.barrier()\n\
         dist.destroy_process_group()\n",
    )
    .unwrap();
    for (mode, expected) in [("all", true), ("rank0", false), ("own", false)] {
        let dir = tmp.path().join(format!("{mode}-files"));
        std::fs::create_dir_all(&dir).unwrap();
        let dir = dir.canonicalize().unwrap();
        let run = auto_instrumented(
            &tmp.path().join(mode),
            &script,
            &[mode, dir.to_str().unwrap()],
        );
        let said = format!(
            "warning: ranks 0, 1 each saved {} with torch.save (6 saves in all,",
            dir.join("ckpt.pt").display()
        );
        assert_eq!(
            run.summary.contains(&said),
            expected,
            "{mode}: {}",
            run.summary
        );
        // The run's console ends with it too, before its `next:` commands.
        let console: String = run.console.split_whitespace().collect::<Vec<_>>().join(" ");
        assert_eq!(console.contains(&said), expected, "{mode}: {console}");
        assert_eq!(
            run.summary.contains("the job pays the I/O 2 times"),
            expected,
            "{mode}: {}",
            run.summary
        );
        // The 16 MB saves make the gaps after steps 2 and 5 long ones, and the note on the time
        // between steps says what ran there. (With a 3 ms median step, a busy machine can make
        // another gap longer too, "after steps 2, 5, 7", which hides the period: not asserted.)
        if mode != "own" {
            let calls = if mode == "all" { 4 } else { 2 };
            let named = "Longer than the median step";
            assert!(
                run.summary.contains("after steps 2, 5"),
                "{mode}: {}",
                run.summary
            );
            let saves = format!("; {calls} torch.save calls there took");
            let file = format!(
                "in all (checkpoints, {} the most)",
                dir.join("ckpt.pt").display()
            );
            assert!(
                run.summary.contains(named)
                    && run.summary.contains(&saves)
                    && run.summary.contains(&file),
                "{mode}: {}",
                run.summary
            );
        }
    }
}

/// A dataset that caches its samples with `torch.save` in forked DataLoader workers: the
/// workers inherit the rank's trace file and the module's `torch.save` hook, and before
/// 2026-12-07 their saves landed in the rank's trace as the rank's checkpoints. A forked child
/// now writes nothing to it.
#[test]
fn forked_data_loader_workers_write_nothing_into_the_rank_s_trace() {
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("cache.py");
    std::fs::write(
        &script,
        "import os, sys, torch, torch.distributed as dist\n\
         from torch.utils.data import DataLoader, Dataset, DistributedSampler\n\
         from torch.nn.parallel import DistributedDataParallel as DDP\n\
         class Cached(Dataset):\n\
         \x20   def __len__(self):\n\
         \x20       return 64\n\
         \x20   def __getitem__(self, i):\n\
         \x20       x = torch.randn(8)\n\
         \x20       torch.save(x, os.path.join(sys.argv[1], f'{os.getpid()}_{i}.pt'))\n\
         \x20       return x, torch.randn(2)\n\
         dist.init_process_group('gloo')\n\
         data = Cached()\n\
         loader = DataLoader(data, batch_size=8, sampler=DistributedSampler(data), num_workers=2, multiprocessing_context='fork')\n\
         model = DDP(torch.nn.Linear(8, 2))\n\
         opt = torch.optim.SGD(model.parameters(), lr=0.1)\n\
         for x, y in loader:\n\
         \x20   ((model(x) - y) ** 2).mean().backward()\n\
         \x20   opt.step()\n\
         \x20   opt.zero_grad()\n\
         dist.destroy_process_group()\n",
    )
    .unwrap();
    let cache = tmp.path().join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    let out = tmp.path().join("run");
    let run = auto_instrumented(&out, &script, &[cache.to_str().unwrap()]);
    assert_eq!(
        std::fs::read_dir(&cache).unwrap().count(),
        64,
        "{}",
        run.console
    );
    for rank in 0..2 {
        let trace = std::fs::read_to_string(out.join(format!("traces/rank-{rank}.jsonl"))).unwrap();
        assert!(
            !trace.contains("checkpoint_save"),
            "rank {rank}: a worker's save in the trace"
        );
        assert!(trace
            .lines()
            .all(|l| serde_json::from_str::<serde_json::Value>(l).is_ok()));
    }
    assert!(!run.summary.contains("torch.save"), "{}", run.summary);
}

/// Gradient accumulation over 4 micro-batches with every backward synchronised (no
/// `no_sync`): `summary` names it and what `no_sync` saves; the same loop with `no_sync` for the
/// first three says nothing of the kind.
#[test]
fn accumulation_without_no_sync_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("accumulate.py");
    std::fs::write(
        &script,
        "import sys, contextlib, torch, torch.distributed as dist\n\
         from torch.nn.parallel import DistributedDataParallel as DDP\n\
         dist.init_process_group('gloo')\n\
         model = DDP(torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.Linear(64, 2)))\n\
         opt = torch.optim.SGD(model.parameters(), lr=0.01)\n\
         for step in range(8):\n\
         \x20   for micro in range(4):\n\
         \x20       quiet = sys.argv[1] == 'no_sync' and micro < 3\n\
         \x20       with model.no_sync() if quiet else contextlib.nullcontext():\n\
         \x20           model(torch.randn(8, 64)).pow(2).mean().backward()\n\
         \x20   opt.step()\n\
         \x20   opt.zero_grad()\n\
         dist.barrier()\n\
         dist.destroy_process_group()\n",
    )
    .unwrap();
    for (mode, expected) in [("every", true), ("no_sync", false)] {
        let summary = auto_instrumented(&tmp.path().join(mode), &script, &[mode]).summary;
        assert_eq!(
            summary.contains(
                "gradient accumulation all-reduces every micro-batch: 24 of rank 0's 32 steps \
                 ran a synchronised backward"
            ) && summary.contains("about 4 backwards per optimizer step"),
            expected,
            "{mode}: {summary}"
        );
    }
}

/// `tune --auto-instrument` of a script that builds DDP with none of its settings: each
/// candidate's cap reaches DistributedDataParallel (before, every candidate of such a script
/// ran with 25 MiB and tune could only say so).
#[test]
fn tune_hands_each_cap_to_a_script_that_never_reads_it() {
    let tmp = tempfile::tempdir().unwrap();
    let script = example_without_the_line(tmp.path());
    let dir = tmp.path().join("tune");
    let done = {
        let _one = PYTORCH_JOB.lock().unwrap_or_else(|e| e.into_inner());
        Command::new(env!("CARGO_BIN_EXE_ddp-probe"))
            .current_dir(repo())
            .args(["tune", "--nproc-per-node", "2", "--bucket-cap-mb", "0.1,25"])
            .args([
                "--repeats",
                "1",
                "--steps",
                "6",
                "--auto-instrument",
                "--dir",
            ])
            .arg(&dir)
            .arg("--")
            .arg(venv_python())
            .arg(&script)
            .env_remove("PYTHONPATH")
            .output()
            .unwrap()
    };
    let console =
        String::from_utf8_lossy(&done.stderr).to_string() + &String::from_utf8_lossy(&done.stdout);
    // Gloo's teardown may abort a run after its training; the traces are written by then.
    for (cap, dir_name) in [(0.1, "cap-0.1-r1"), (25.0, "cap-25-r1")] {
        let (_, header) = trace_and_header(&dir.join(dir_name), 0, &console);
        assert_eq!(
            header["ddp"]["bucket_cap_mb"].as_f64(),
            Some(cap),
            "{dir_name}: {header}\n{console}"
        );
    }
}

#[test]
fn ranks_started_by_torch_multiprocessing_spawn_are_recorded_as_themselves() {
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("spawned.py");
    std::fs::write(&script, SPAWNED_RANKS).unwrap();
    // Each spawned rank writes its own trace (not both "rank 0", the launcher's variable).
    let out = tmp.path().join("run");
    let (status, console) = watched_until_no_teardown_abort(&out, 1, &script, 1, |_| {});
    assert!(status.success(), "{console}");
    for rank in 0..2u64 {
        let (_, header) = trace_and_header(&out, rank, &console);
        assert_eq!(
            (
                header["rank"].as_u64(),
                header["world_size"].as_u64(),
                header["local_rank"].as_u64()
            ),
            (Some(rank), Some(2), Some(rank)),
            "{header}"
        );
    }

    // Hung: the spawned ranks answer the dump request as themselves; the launched process
    // (which only waits in mp.spawn) does not answer for rank 0.
    let out = tmp.path().join("hung");
    let (status, console) = {
        let _one = PYTORCH_JOB.lock().unwrap_or_else(|e| e.into_inner());
        with_console(watched_job(&out, 1, &script).env("SPAWNED_HANG", "1"))
    };
    assert_eq!(status.code(), Some(124), "{console}");
    let stack0 = std::fs::read_to_string(out.join("logs/python-stack-rank-0.txt")).unwrap();
    assert!(
        stack0.contains("in worker") && !stack0.contains("mp.spawn("),
        "rank 0's stack is the spawned rank's:\n{stack0}"
    );
    let line = line_of(SPAWNED_RANKS, "time.sleep(3600)");
    let flat = console.split_whitespace().collect::<Vec<_>>().join(" ");
    // Rank 1 is no process of the launcher's, but it listens: its answer is waited for too
    // (else stopping rank 0's process, rank 1's parent, can beat rank 1's answer: CI,
    // 2026-12-03).
    assert!(
        flat.contains("asked rank(s) 0, 1 for a flight-recorder dump"),
        "{console}"
    );
    assert!(
        flat.contains(&format!(
            "most likely cause: rank 0 waited in a collective for rank 1, which never joined it: \
             it was in worker at spawned.py:{line} (`time.sleep(3600) # a read that never \
             returns`)"
        )),
        "{console}"
    );
}

#[test]
fn gpu_module_check_pairs_spans_with_profiler_kernels() {
    let py = venv_python();
    let out = Command::new(py)
        .current_dir(repo())
        .args(["examples/python/gpu_module_check.py", "self-test"])
        .output()
        .unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("self-test passed"),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// Every span the PyTorch module wrote uses only the field names of the Rust
/// span record (`probe::trace::span_field_names`, taken from its serde
/// declaration) and reads back as one: a field added or renamed on either
/// side alone fails here.
fn check_span_fields_against_the_rust_schema(run: &Path) {
    let known: BTreeSet<&str> = probe::trace::span_field_names().into_iter().collect();
    let mut spans = 0;
    for rank in 0..2 {
        let path = run.join(format!("traces/rank-{rank}.jsonl"));
        let text = std::fs::read_to_string(&path).unwrap();
        for line in text.lines() {
            let value: serde_json::Value = serde_json::from_str(line).unwrap();
            if value["type"] != "span" {
                continue;
            }
            spans += 1;
            for key in value.as_object().unwrap().keys() {
                assert!(
                    known.contains(key.as_str()),
                    "the module writes span field {key:?}, which the Rust record lacks: {line}"
                );
            }
            let record: probe::trace::Record = serde_json::from_str(line).unwrap_or_else(|e| {
                panic!("a module span does not read as a record ({e}): {line}")
            });
            assert!(matches!(record, probe::trace::Record::Span(_)), "{line}");
        }
    }
    assert!(spans > 0, "the module wrote no spans");
}
