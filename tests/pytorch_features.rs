//! Real PyTorch programs, one per DDP feature that changes what a trace must
//! hold: `examples/python/ddp_features.py` (a minGPT-like block with a
//! BatchNorm, a DataLoader, AdamW; gloo, 2 CPU ranks) under `ddp-probe run`
//! in each `--mode`, recorded by `ddp_probe_torch`, and once more with
//! recording off (`DDP_PROBE_TRACE=0`).
//!
//! Each mode checks its records against what PyTorch did (the samples the
//! script counted and printed, the bucket bytes of the same step, hand
//! computed buffer sizes, Dynamo's graph-break count without recording),
//! what `summary` says, and that recording added no warning to any rank's
//! stderr. The failing modes (`uneven`, `slow_save`, `worker_killed`) check
//! what `explain` says of the job's failure instead.
//!
//! Needs the project's venv (`scripts/setup`, which `scripts/test` runs
//! first); without it each test fails saying so.

mod common;

use common::{
    explain_json, line_of, repo, run_again_after_teardown_abort, venv_python, GLOO_TEARDOWN_ABORT,
};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use serde_json::Value;

/// One PyTorch job at a time (2 cores: two jobs could starve each other).
static JOB: Mutex<()> = Mutex::new(());

const STEPS: u64 = 8;
const BATCH: u64 = 16;
/// The model's width: BatchNorm1d(96) keeps running_mean and running_var
/// (96 float32 each) and num_batches_tracked (one int64): 776 bytes.
const BUFFER_BYTES: u64 = 2 * 96 * 4 + 8;

struct Job {
    dir: PathBuf,
    console: String,
    _tmp: tempfile::TempDir,
}

impl Job {
    fn stderr(&self, rank: u32) -> String {
        std::fs::read_to_string(self.dir.join(format!("logs/rank-{rank}.stderr")))
            .unwrap_or_default()
    }

    /// Every record of a rank's trace.
    fn records(&self, rank: u32) -> Vec<Value> {
        let text = std::fs::read_to_string(self.dir.join(format!("traces/rank-{rank}.jsonl")))
            .unwrap_or_else(|e| panic!("rank {rank}'s trace: {e}\n{}", self.console));
        text.lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
            .collect()
    }

    /// The number after `label` in rank 0's stdout (`samples: 128`).
    fn printed(&self, label: &str) -> u64 {
        let out = std::fs::read_to_string(self.dir.join("logs/rank-0.stdout")).unwrap();
        out.lines()
            .find_map(|l| l.strip_prefix(label))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or_else(|| panic!("no `{label}` line in rank 0's stdout:\n{out}"))
    }

    fn summary(&self) -> (String, Value) {
        let run = |json: bool| {
            let mut c = Command::new(env!("CARGO_BIN_EXE_ddp-probe"));
            c.arg("summary").arg(&self.dir).env("COLUMNS", "120");
            if json {
                c.arg("--json");
            }
            let out = c.output().expect("run ddp-probe summary");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8(out.stdout).unwrap()
        };
        let text = run(false);
        let json = serde_json::from_str(&run(true)).expect("summary --json");
        (text, json)
    }
}

fn run_mode(mode: &str, record: bool) -> Job {
    run_mode_steps(mode, record, STEPS)
}

fn run_mode_steps(mode: &str, record: bool, steps: u64) -> Job {
    run_mode_with(mode, record, steps, &[])
}

/// [`run_mode_steps`] with `run_args` among ddp-probe's options.
fn run_mode_with(mode: &str, record: bool, steps: u64, run_args: &[&str]) -> Job {
    let (tmp, dir) = run_dir();
    let mut c = features_job(&dir, mode, steps, run_args);
    if record {
        c.env_remove("DDP_PROBE_TRACE");
    } else {
        c.env("DDP_PROBE_TRACE", "0");
    }
    // Rank 0's last line printed, then the abort.
    let (out, console) = run_again_after_teardown_abort(
        || output_of(&mut c),
        |(out, console)| {
            !out.status.success()
                && console.contains(GLOO_TEARDOWN_ABORT)
                && console.contains("[rank 0] samples: ")
        },
        &dir,
    );
    assert!(
        out.status.success(),
        "mode {mode} (recording {record}) failed:\n{console}"
    );
    Job {
        dir,
        console,
        _tmp: tmp,
    }
}

/// A fresh temporary folder and the run directory inside it.
fn run_dir() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    (tmp, dir)
}

/// `ddp-probe run` of `examples/python/ddp_features.py --mode MODE` on 2 ranks (unless
/// `run_args` has `--nproc-per-node`) into `dir`, with `run_args` among ddp-probe's options.
fn features_job(dir: &Path, mode: &str, steps: u64, run_args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_ddp-probe"));
    c.current_dir(repo()).arg("run");
    if !run_args.contains(&"--nproc-per-node") {
        c.args(["--nproc-per-node", "2"]);
    }
    c.args(run_args);
    if !run_args.contains(&"--hang-timeout") {
        // A job that hangs fails its test in five minutes, not in gloo's thirty (a stuck
        // DataLoader worker once took CI past its hour).
        c.args(["--hang-timeout", "300"]);
    }
    c.arg("--out")
        .arg(dir)
        .arg("--")
        .arg(venv_python())
        .args(["examples/python/ddp_features.py", "--mode", mode])
        .args([
            "--steps",
            &steps.to_string(),
            "--batch-size",
            &BATCH.to_string(),
        ])
        .env_remove("PYTHONPATH")
        .env_remove("TORCH_FR_BUFFER_SIZE")
        .env_remove("TORCH_NCCL_TRACE_BUFFER_SIZE");
    c
}

/// The line of `examples/python/ddp_features.py` that contains `marker`.
fn features_line(marker: &str) -> usize {
    let script = std::fs::read_to_string(repo().join("examples/python/ddp_features.py")).unwrap();
    line_of(&script, marker)
}

/// Runs `c` and returns its output with stdout and stderr together.
fn output_of(c: &mut Command) -> (std::process::Output, String) {
    let out = c.output().expect("start ddp-probe run");
    let console = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out, console)
}

/// The warning lines of a rank's stderr, without their time stamps and
/// process ids, so two runs compare.
fn warnings(stderr: &str) -> Vec<String> {
    let mut lines: Vec<String> = stderr
        .lines()
        .filter(|l| {
            let l = l.to_ascii_lowercase();
            l.contains("warn") || l.contains("deprecat")
        })
        .map(|l| {
            l.chars()
                .filter(|c| !c.is_ascii_digit())
                .collect::<String>()
        })
        .collect();
    lines.sort();
    lines.dedup();
    lines
}

/// Runs `mode` with recording off and on; checks that recording added no
/// warning on any rank and returns the recorded job.
fn recorded(mode: &str) -> (Job, Job) {
    let _one = JOB.lock().unwrap_or_else(|e| e.into_inner());
    let off = run_mode(mode, false);
    let on = run_mode(mode, true);
    for rank in 0..2 {
        let (a, b) = (warnings(&off.stderr(rank)), warnings(&on.stderr(rank)));
        let added: Vec<&String> = b.iter().filter(|w| !a.contains(w)).collect();
        assert!(
            added.is_empty(),
            "mode {mode}: recording added warnings on rank {rank}: {added:#?}"
        );
    }
    let (ok, rows) = gpu_check_rows(mode, &on, &off);
    assert!(
        ok,
        "scripts/gpu-check's checker fails this CPU job:\n{rows}"
    );
    (on, off)
}

/// What scripts/gpu-check's checker of these jobs (`gpu_module_check.py features`, run there
/// on CUDA jobs) says of a CPU job checked as `mode`: whether every row passed, and its rows.
fn gpu_check_rows(mode: &str, on: &Job, off: &Job) -> (bool, String) {
    let out = Command::new(venv_python())
        .current_dir(repo())
        .args([
            "examples/python/gpu_module_check.py",
            "features",
            "--mode",
            mode,
        ])
        .arg("--run")
        .arg(&on.dir)
        .arg("--off")
        .arg(&off.dir)
        .args(["--steps", &STEPS.to_string(), "--batch", &BATCH.to_string()])
        .output()
        .expect("run gpu_module_check.py");
    let rows = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let counted = rows
        .lines()
        .filter(|l| l.starts_with("gpu-check: "))
        .count();
    let passed = rows.lines().filter(|l| l.contains(" | pass | ")).count();
    (
        out.status.success() && counted >= 3 && passed == counted,
        rows,
    )
}

fn spans<'a>(records: &'a [Value], kind: &str) -> Vec<&'a Value> {
    records
        .iter()
        .filter(|r| r["type"] == "span" && r["kind"] == kind)
        .collect()
}

fn u(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not an integer: {v}"))
}

/// The bytes of each bucket's ready window, by (step, bucket).
fn window_bytes(records: &[Value]) -> BTreeMap<(u64, u64), u64> {
    spans(records, "bucket_ready")
        .into_iter()
        .map(|s| ((u(&s["step"]), u(&s["bucket"])), u(&s["bytes"])))
        .collect()
}

/// Bucket collectives (those with a bucket) by (step, bucket).
fn bucket_collectives(records: &[Value]) -> BTreeMap<(u64, u64), &Value> {
    spans(records, "collective")
        .into_iter()
        .filter(|s| s.get("bucket").is_some())
        .map(|s| ((u(&s["step"]), u(&s["bucket"])), s))
        .collect()
}

/// What every mode shares: a step, forward, backward and optimizer span
/// per step, a data wait per micro-batch inside its step, samples that
/// add up to what the script counted, DDP's buffer broadcast per step.
fn check_common(job: &Job, micro_batches: u64) {
    let samples_printed = job.printed("samples:");
    for rank in 0..2 {
        let recs = job.records(rank);
        let steps = spans(&recs, "step");
        assert_eq!(steps.len() as u64, STEPS, "rank {rank} steps");
        assert_eq!(spans(&recs, "optimizer").len() as u64, STEPS);
        assert_eq!(spans(&recs, "forward").len() as u64, STEPS * micro_batches);
        let waits = spans(&recs, "data_wait");
        assert_eq!(
            waits.len() as u64,
            STEPS * micro_batches,
            "rank {rank} data waits"
        );
        for w in &waits {
            let step = steps
                .iter()
                .find(|s| s["step"] == w["step"])
                .expect("data wait's step");
            assert!(
                u(&step["start"]) <= u(&w["start"]) && u(&w["end"]) <= u(&step["end"]),
                "data wait {w} outside its step {step}"
            );
        }
        let samples: Vec<u64> = recs
            .iter()
            .filter(|r| r["type"] == "counter" && r["name"] == "samples")
            .map(|r| u(&r["value"]))
            .collect();
        assert_eq!(samples, vec![BATCH * micro_batches; STEPS as usize]);
        if rank == 0 {
            assert_eq!(samples.iter().sum::<u64>(), samples_printed);
        }
        let broadcasts: Vec<&Value> = spans(&recs, "collective")
            .into_iter()
            .filter(|s| s["op"] == "broadcast" && s["args"]["what"] != "program")
            .collect();
        // DDP broadcasts buffers before synchronised forwards only (not
        // under no_sync): once per step.
        assert_eq!(broadcasts.len() as u64, STEPS, "rank {rank}");
        assert!(broadcasts.iter().all(|b| u(&b["bytes"]) == BUFFER_BYTES));
        // The header names the buffers DDP broadcasts: the BatchNorm's statistics.
        let header = recs.iter().find(|r| r["type"] == "header").expect("header");
        let buffers = header["ddp"]["buffers"].as_array().expect("ddp.buffers");
        let names: Vec<&str> = buffers.iter().filter_map(|b| b["name"].as_str()).collect();
        assert_eq!(names.len(), 3, "{names:?}");
        for stat in ["running_mean", "running_var", "num_batches_tracked"] {
            assert!(names.iter().any(|n| n.ends_with(stat)), "{names:?}");
        }
        let bytes: u64 = buffers.iter().map(|b| u(&b["bytes"])).sum();
        assert_eq!(bytes, BUFFER_BYTES, "{buffers:?}");
    }
}

#[test]
fn tutorial_trainer_records_data_wait_buffers_and_buckets() {
    let (job, off) = recorded("plain");
    check_common(&job, 1);
    // The checker can fail: float32 all-reduces are not what an fp16 hook sends.
    let (ok, rows) = gpu_check_rows("fp16", &job, &off);
    assert!(
        !ok && rows.contains("bucket all-reduces | FAIL | step ") && rows.contains(": float32 "),
        "{rows}"
    );
    let recs = job.records(0);
    let ready = window_bytes(&recs);
    let colls = bucket_collectives(&recs);
    assert_eq!(colls.len(), ready.len());
    for (key, c) in &colls {
        assert_eq!(c["dtype"], "float32");
        assert_eq!(u(&c["bytes"]), ready[key], "{key:?}");
    }
    let (text, json) = job.summary();
    // Everything but the write-back, which PyTorch's reducer does unseen.
    assert_eq!(
        json["summary"]["not_recorded"],
        serde_json::json!(["writeback"]),
        "{text}"
    );
    assert!(text.contains("data wait"), "{text}");
    // The training DataLoader's settings, once, for the note on steps that wait for data: the
    // job's loader has no workers and pins nothing (no GPU).
    let loaders: Vec<&Value> = recs
        .iter()
        .filter(|r| r["type"] == "instant" && r["name"] == "training_loader")
        .collect();
    assert_eq!(loaders.len(), 1, "{loaders:?}");
    let args = &loaders[0]["args"];
    assert_eq!(
        (
            &args["num_workers"],
            &args["pin_memory"],
            &args["persistent_workers"]
        ),
        (
            &serde_json::json!(0),
            &serde_json::json!(false),
            &serde_json::json!(false)
        ),
    );
    assert!(u(&args["cores"]) >= 1, "{args}");

    // The start-up calibration at instrument(): both ranks swept the same all-reduce sizes
    // from 4 KiB up (the same plan as the reference DDP's), and ran the interference probe.
    let sweep = |rank: u32| -> Vec<u64> {
        let mut sizes: Vec<u64> = spans(&job.records(rank), "collective")
            .into_iter()
            .filter(|s| s["name"] == "calibration")
            .map(|s| u(&s["bytes"]))
            .collect();
        sizes.dedup();
        sizes
    };
    let sizes = sweep(0);
    assert_eq!(sizes, sweep(1));
    assert!(sizes.len() >= 4 && sizes[0] == 4096, "{sizes:?}");
    assert!(sizes.windows(2).all(|w| w[0] < w[1]), "{sizes:?}");
    let user_spans = |name: &str| -> Vec<(u64, u64)> {
        spans(&recs, "user")
            .into_iter()
            .filter(|s| s["name"] == name)
            .map(|s| (u(&s["start"]), u(&s["end"])))
            .collect()
    };
    let overlapped = user_spans("calibration compute overlapped");
    assert!(!overlapped.is_empty(), "the interference probe ran");
    assert_eq!(
        user_spans("calibration compute").len(),
        overlapped.len(),
        "each round runs the same work alone"
    );
    // The probe's compute lasts until its all-reduce has completed (then the same number of
    // products alone): each round's compute ends after its collective does (a 128×128 product
    // or two later; 5 ms of slack for a loaded machine).
    let calls: Vec<u64> = spans(&recs, "collective")
        .into_iter()
        .filter(|s| s["name"] == "calibration overlapped")
        .map(|s| u(&s["end"]))
        .collect();
    assert_eq!(calls.len(), overlapped.len());
    for (&(_, compute_end), &call_end) in overlapped.iter().zip(&calls) {
        assert!(
            compute_end + 5_000_000 >= call_end,
            "compute ended {} ms before its collective",
            (call_end - compute_end) as f64 / 1e6
        );
    }
    // Every calibration call lies before the first step.
    let first_step = spans(&recs, "step")
        .iter()
        .map(|s| u(&s["start"]))
        .min()
        .unwrap();
    assert!(spans(&recs, "collective")
        .iter()
        .filter(|s| s["name"] == "calibration")
        .all(|s| u(&s["end"]) <= first_step));
    let advice = &json["advice"];
    let used = advice["fit_used"].as_u64().expect("a cost model") as usize;
    assert_eq!(advice["fits"][used]["calibrated"], true, "{advice}");
    assert!(
        advice["interference"]["compute"].as_f64().is_some(),
        "{advice}"
    );
}

#[test]
fn long_runs_sample_gradient_ready_times_and_keep_every_window() {
    // Per-parameter hooks run on the first 12 steps and one step in 10
    // (the module's largest cost); every step keeps its bucket windows.
    let _one = JOB.lock().unwrap_or_else(|e| e.into_inner());
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let run = || {
        Command::new(env!("CARGO_BIN_EXE_ddp-probe"))
            .current_dir(repo())
            .args(["run", "--nproc-per-node", "2", "--out"])
            .arg(&dir)
            .arg("--")
            .arg(venv_python())
            .args(["examples/python/ddp_features.py", "--steps", "25"])
            .env_remove("PYTHONPATH")
            .env_remove("DDP_PROBE_TRACE")
            .output()
            .expect("start ddp-probe run")
    };
    // gloo's teardown abort with the other rank done (it passed the script's final barrier,
    // so every step ran): once in CI on 2026-12-02.
    let out = run_again_after_teardown_abort(
        run,
        |out| {
            let console = String::from_utf8_lossy(&out.stderr);
            !out.status.success()
                && console.contains(GLOO_TEARDOWN_ABORT)
                && console.contains("rank 1: exited with code 0")
        },
        &dir,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let job = Job {
        dir,
        console: String::new(),
        _tmp: tmp,
    };
    let recs = job.records(0);
    let sampled: Vec<u64> = recs
        .iter()
        .filter(|r| r["type"] == "grad_ready")
        .map(|r| u(&r["step"]))
        .collect();
    let expected: Vec<u64> = (0..12).chain([20]).collect();
    assert_eq!(sampled, expected);
    let windows = spans(&recs, "bucket_ready");
    let colls = bucket_collectives(&recs);
    assert_eq!(windows.len(), colls.len(), "a window per bucket all-reduce");
    for w in windows {
        let step = u(&w["step"]);
        let approx = w["args"]["from"] == "previous bucket";
        assert_eq!(approx, !expected.contains(&step), "{w}");
        // The window ends when its bucket's all-reduce was called.
        let c = colls[&(step, u(&w["bucket"]))];
        assert!(u(&w["end"]) <= u(&c["start"]), "{w} {c}");
        assert!(u(&w["start"]) <= u(&w["end"]));
    }
}

#[test]
fn hook_registered_before_instrument_keeps_ready_windows() {
    let (job, _) = recorded("prehook");
    check_common(&job, 1);
    for rank in 0..2 {
        let recs = job.records(rank);
        assert!(bucket_collectives(&recs).is_empty());
        let grad_ready = recs.iter().filter(|r| r["type"] == "grad_ready").count();
        assert_eq!(grad_ready as u64, STEPS, "rank {rank}");
        let windows = spans(&recs, "bucket_ready");
        let steps: std::collections::BTreeSet<u64> =
            windows.iter().map(|s| u(&s["step"])).collect();
        assert_eq!(steps.len() as u64, STEPS, "a window in every step");
    }
    assert!(
        job.stderr(0).contains("registered before instrument()"),
        "the module says why collectives are missing"
    );
    let (text, json) = job.summary();
    assert_eq!(
        json["summary"]["not_recorded"],
        serde_json::json!(["communication", "writeback"]),
        "{text}"
    );
    assert!(text.contains("No bucket all-reduce was recorded"), "{text}");
}

fn check_compressed(mode: &str, dtype: &str) {
    let (job, _) = recorded(mode);
    check_common(&job, 1);
    let recs = job.records(0);
    let ready = window_bytes(&recs);
    let colls = bucket_collectives(&recs);
    assert!(!colls.is_empty());
    for (key, c) in colls {
        assert_eq!(c["dtype"], dtype, "{c}");
        // A 16-bit copy of the float32 bucket (PyTorch pads nothing).
        assert_eq!(u(&c["bytes"]) * 2, ready[&key], "{c}");
        assert_eq!(u(&c["args"]["bucket_bytes"]), ready[&key]);
    }
}

#[test]
fn fp16_compression_records_what_was_sent() {
    check_compressed("fp16", "float16");
}

#[test]
fn bf16_compression_records_what_was_sent() {
    check_compressed("bf16", "bfloat16");
}

#[test]
fn no_sync_accumulation_counts_every_micro_batch() {
    let (job, _) = recorded("no_sync");
    check_common(&job, 2);
    let recs = job.records(0);
    // One all-reduce per bucket and step (the synchronised micro-batch's),
    // each with its ready window.
    let all = spans(&recs, "collective")
        .into_iter()
        .filter(|s| s.get("bucket").is_some())
        .count();
    let colls = bucket_collectives(&recs);
    assert_eq!(all, colls.len(), "a bucket all-reduced twice in a step");
    let windows: Vec<(u64, u64)> = spans(&recs, "bucket_ready")
        .into_iter()
        .map(|s| (u(&s["step"]), u(&s["bucket"])))
        .collect();
    assert_eq!(windows, colls.keys().copied().collect::<Vec<_>>());
    // Ready windows start after the last micro-batch's backward began.
    let backwards = spans(&recs, "backward");
    for w in spans(&recs, "bucket_ready") {
        let last_backward = backwards
            .iter()
            .filter(|b| b["step"] == w["step"])
            .map(|b| u(&b["start"]))
            .max()
            .unwrap();
        assert!(u(&w["start"]) >= last_backward, "{w}");
    }
    let (_, json) = job.summary();
    // Samples per step in the job's throughput: both micro-batches of both ranks.
    let throughput = &json["summary"]["throughput"];
    let per_step = throughput["samples_per_s"].as_f64().expect("samples/s")
        / throughput["steps_per_s"].as_f64().expect("steps/s");
    assert!(
        (per_step - (2 * 2 * BATCH) as f64).abs() < 0.5,
        "{per_step}"
    );
}

#[test]
fn static_graph_steps_on_the_initial_layout_are_warm_up() {
    let (job, _) = recorded("static_graph");
    check_common(&job, 1);
    let (text, json) = job.summary();
    let warm: Vec<(u64, String)> = json["summary"]["warmup"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| (u(&w["step"]), w["reason"].as_str().unwrap().to_owned()))
        .collect();
    // PyTorch rebuilds a static graph's buckets before the third iteration.
    assert!(
        warm.contains(&(1, "before_rebuild".to_owned())),
        "{warm:?}\n{text}"
    );
    assert!(warm.iter().any(|(s, _)| *s == 2), "{warm:?}");
    assert_eq!(u(&json["summary"]["steady_steps"]), STEPS - 3, "{text}");
}

#[test]
fn steps_run_as_optimizer_closures_get_their_optimizer_time() {
    // `opt.step(closure)`: the optimizer's hooks fire around the forward and the backward. The
    // optimizer span is its own work, from the closure's return (after backward and the last
    // all-reduce) to the end of its step, and every step is still one step.
    let (job, _) = recorded("closure");
    check_common(&job, 1);
    for rank in 0..2 {
        let recs = job.records(rank);
        let colls = bucket_collectives(&recs);
        for opt in spans(&recs, "optimizer") {
            let step = u(&opt["step"]);
            let backward = spans(&recs, "backward")
                .into_iter()
                .find(|b| u(&b["step"]) == step)
                .expect("the step's backward");
            let last_comm = colls
                .iter()
                .filter(|((s, _), _)| *s == step)
                .map(|(_, c)| u(&c["end"]))
                .max()
                .expect("the step's all-reduces");
            assert!(
                u(&opt["start"]) >= u(&backward["end"]) && u(&opt["start"]) >= last_comm,
                "rank {rank} step {step}: optimizer {opt} before backward {backward} or the \
                 last all-reduce's end {last_comm}"
            );
        }
    }
    let (text, _) = job.summary();
    assert!(!text.contains("optimizer      not recorded"), "{text}");
}

/// ZeroRedundancyOptimizer's step runs its shard's own optimizer's step inside its own, then
/// broadcasts the updated parameters: the optimizer span is the outer step's, broadcasts
/// included, and the step ends with it; the broadcasts are the program's collectives. Before,
/// the inner step's end ended the step, and the broadcasts (a third of the iteration in
/// PyTorch's ZeRO recipe on 2 CPU ranks) fell between steps, in no phase, unrecorded.
#[test]
fn zero_redundancy_optimizer_broadcasts_count_in_the_optimizer_step() {
    let job = run_mode("zero", true);
    check_common(&job, 1);
    let out = std::fs::read_to_string(job.dir.join("logs/rank-0.stdout")).unwrap();
    let broadcasts: Vec<(u64, u64)> = out
        .lines()
        .filter_map(|l| l.strip_prefix("zero broadcasts: "))
        .map(|l| {
            let (a, b) = l.split_once(' ').unwrap();
            (a.parse().unwrap(), b.trim().parse().unwrap())
        })
        .collect();
    assert_eq!(broadcasts.len() as u64, STEPS, "{out}");
    let recs = job.records(0);
    let optimizers = spans(&recs, "optimizer");
    assert_eq!(optimizers.len() as u64, STEPS, "one optimizer span a step");
    for (start, end) in broadcasts {
        let inside = optimizers
            .iter()
            .any(|o| u(&o["start"]) <= start && end <= u(&o["end"]));
        assert!(
            inside,
            "broadcasts {start}..{end} in no optimizer span: {optimizers:?}"
        );
        let step = spans(&recs, "step")
            .into_iter()
            .find(|s| u(&s["start"]) <= start && start <= u(&s["end"]));
        assert!(
            step.is_some_and(|s| end <= u(&s["end"])),
            "broadcasts {start}..{end} not inside a step"
        );
        // Its broadcasts (async_op=True, run in turn) are collectives of the program's, inside
        // the window, one after another: they add up to no more than it.
        let calls: Vec<&Value> = spans(&recs, "collective")
            .into_iter()
            .filter(|c| c["args"]["async"] == true && c["op"] == "broadcast")
            .filter(|c| start <= u(&c["queued"]) && u(&c["end"]) <= end)
            .collect();
        assert!(!calls.is_empty(), "no broadcast recorded in {start}..{end}");
        let mut previous_end = 0;
        for c in &calls {
            assert_eq!(c["args"]["what"], "program", "{c}");
            assert!(
                u(&c["start"]) >= previous_end,
                "overlapping broadcasts: {calls:?}"
            );
            previous_end = u(&c["end"]);
        }
    }
    let (text, _) = job.summary();
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        words.contains("They were issued with async_op=True: each counts from its call"),
        "{text}"
    );
    // Named as ZeRO's by the function of torch's that made them (the caller chain leaves torch
    // out), not for every asynchronous call.
    assert!(
        words.contains("ZeroRedundancyOptimizer's step broadcasts the updated parameter shards"),
        "{text}"
    );
}

/// DDP's Join context manager, PyTorch's answer to uneven inputs: rank 1 has three batches
/// fewer, joins, and shadows rank 0's last three steps' all-reduces. Before, the module took
/// the shadows for a backward after an eval-mode forward and warned, falsely, that training
/// went on in eval mode; Join's two flag all-reduces a step were noted as the program's own
/// collectives (75% of the median step, where Join costs a few percent) and counted as
/// blocking the forward and backward they run beside (a median backward of 0 ns).
#[test]
fn a_rank_out_of_batches_under_join_is_said_to_have_joined() {
    let steps = 10;
    let job = run_mode_steps("join", true, steps);
    let (rank0, rank1) = (job.records(0), job.records(1));
    assert_eq!(spans(&rank0, "step").len() as u64, steps);
    assert_eq!(spans(&rank1, "step").len() as u64, steps - 3);
    let joined = |recs: &[Value]| -> Vec<Value> {
        recs.iter()
            .filter(|r| r["type"] == "instant" && r["name"] == "ddp_joined")
            .cloned()
            .collect()
    };
    assert!(joined(&rank0).is_empty(), "rank 0 never ran out");
    let j = joined(&rank1);
    assert_eq!(j.len(), 1, "{j:?}");
    assert_eq!(j[0]["args"]["steps"], steps - 3);
    // Join's flags, two a step on the rank that trains every step, named by Join's functions.
    let via = |name: &str| {
        spans(&rank0, "collective")
            .into_iter()
            .filter(|c| c["args"]["via"].as_str().is_some_and(|v| v.ends_with(name)))
            .count() as u64
    };
    assert_eq!(via(" in notify_join_context"), steps);
    assert_eq!(via(" in _check_global_requires_backward_grad_sync"), steps);
    let (text, json) = job.summary();
    let words = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(!words.contains("eval mode"), "{text}");
    assert!(
        words.contains(&format!(
            "rank 1 joined after {} steps, 3 fewer than rank 0's {steps}",
            steps - 3
        )),
        "{text}"
    );
    assert!(
        !words.contains("the program called collectives of its own"),
        "{text}"
    );
    let backward = &json["summary"]["overall"]["backward"]["median"];
    assert!(backward.as_f64().is_some_and(|b| b > 0.0), "{backward}");
}

#[test]
fn find_unused_parameters_and_amp_record_every_step() {
    for mode in ["unused", "amp"] {
        let (job, _) = recorded(mode);
        check_common(&job, 1);
        let recs = job.records(1);
        assert_eq!(
            recs.iter().filter(|r| r["type"] == "grad_ready").count() as u64,
            STEPS,
            "{mode}"
        );
        assert!(!bucket_collectives(&recs).is_empty(), "{mode}");
        if mode == "unused" {
            // Its branch leaves parameters out on odd steps: the search finds them, and the
            // summary does not call it a search for nothing.
            let (text, json) = job.summary();
            assert!(!text.contains("find_unused_parameters=True, yet"), "{text}");
            // PyTorch never rebuilds the buckets of such a DDP: the advice replays the layout
            // as DDP built it (registration order), and that is the layout PyTorch ran.
            let current = &json["advice"]["current"];
            assert_eq!(current["kept_as_built"], true, "{current}");
            assert_eq!(current["layout_matches_replay"], true, "{current}");
        }
    }
}

/// A program's own collectives (a loss all-reduced for logging before the optimizer, a barrier
/// after it) are recorded with `"what": "program"`, where the script called them, and the step
/// they belong to, in DDP's sequence with the buckets; the summary names them.
#[test]
fn the_programs_own_collectives_are_recorded_with_their_caller() {
    let (job, off) = recorded("log_loss");
    check_common(&job, 1);
    // scripts/gpu-check's checker reads the same job the same way.
    let (ok, rows) = gpu_check_rows("log_loss", &job, &off);
    assert!(
        ok && rows.contains("the program's own collectives | pass |"),
        "{rows}"
    );
    for rank in 0..2 {
        let recs = job.records(rank);
        let program: Vec<&Value> = spans(&recs, "collective")
            .into_iter()
            .filter(|s| s["args"]["what"] == "program")
            .collect();
        // The script's last barrier, before destroy_process_group, counts with the last step.
        for (op, bytes, calls) in [("all_reduce", 4, STEPS), ("barrier", 0, STEPS + 1)] {
            let expected = calls;
            let calls: Vec<&&Value> = program.iter().filter(|s| s["op"] == op).collect();
            assert_eq!(
                calls.len() as u64,
                expected,
                "rank {rank} {op}: {program:#?}"
            );
            let steps: BTreeSet<u64> = calls.iter().map(|s| u(&s["step"])).collect();
            assert_eq!(steps, (0..STEPS).collect(), "rank {rank} {op}");
            for c in &calls {
                assert_eq!(u(&c["bytes"]), bytes, "{c}");
                let caller = c["args"]["caller"].as_str().unwrap_or_default();
                assert!(
                    caller.starts_with("ddp_features.py:") && caller.ends_with(" in main"),
                    "{c}"
                );
            }
        }
        // In the group's sequence with DDP's own: every collective its own number.
        let seqs: Vec<u64> = spans(&recs, "collective")
            .iter()
            .filter_map(|s| s["seq"].as_u64())
            .collect();
        let distinct: BTreeSet<u64> = seqs.iter().copied().collect();
        assert_eq!(distinct.len(), seqs.len(), "rank {rank}: {seqs:?}");
    }
    let (text, _) = job.summary();
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("Besides DDP's, the program called collectives of its own")
            && flat.contains("all_reduce ×1.0 a rank-step (4 B) from ddp_features.py:"),
        "{text}"
    );
}

/// The loop's tail (an LR scheduler each step, a 40 ms checkpoint every third step) runs after
/// the optimizer and before the next step's data wait, in no step: the summary's throughput
/// follows the program's own clock, and the summary names the time between steps. The
/// collectives there belong to the step before.
#[test]
fn time_between_steps_counts_in_the_throughput_by_the_programs_own_clock() {
    let job = run_mode_steps("loop_tail", true, 12);
    let wall_ns = job.printed("wall per step:") as f64;
    let (text, json) = job.summary();
    let s = &json["summary"];
    let steps_per_s = s["throughput"]["steps_per_s"].as_f64().expect("steps/s");
    // The steps alone run at over twice the rate; by the wall clock the two agree within 10%.
    let by_summary = 1e9 / steps_per_s;
    assert!(
        (by_summary / wall_ns - 1.0).abs() < 0.10,
        "summary {by_summary:.0} ns a step, the program's clock {wall_ns:.0} ns\n{text}"
    );
    let median_step = s["overall"]["step"]["median"].as_f64().unwrap();
    assert!(median_step < 40e6, "{text}");
    let longest = &s["longest_between"];
    assert!(longest["ns"].as_f64().unwrap() >= 40e6, "{longest}");
    assert_eq!(
        u(&longest["step"]) % 3,
        2,
        "after step 2, 5 or 8 (loop step 3, 6, 9): {longest}"
    );
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(
        flat.contains("Between steps (after a step's optimizer")
            && flat.contains(", longest ")
            && flat.contains("Longer than the median step every 3 steps (after steps 2, 5, 8")
            && flat.contains("the program's collectives there were called from ddp_features.py:")
            && flat.contains(" in evaluate"),
        "{text}"
    );
    // The evaluation's all-reduce, after a step's optimizer (the last one's too), belongs to
    // that step, though the evaluation's DataLoader was asked for batches (the model runs
    // unwrapped: no forward hook sees them).
    for rank in 0..2 {
        let records = job.records(rank);
        // The steps of the all-reduces called from `function`.
        let steps_of_calls_in = |function: &str| -> Vec<u64> {
            spans(&records, "collective")
                .into_iter()
                .filter(|c| {
                    c["op"] == "all_reduce"
                        && c["args"]["caller"]
                            .as_str()
                            .is_some_and(|f| f.ends_with(&format!(" in {function}")))
                })
                .map(|c| u(&c["step"]))
                .collect()
        };
        // Its caller chain (between steps) ends in the evaluation, though the helper's frame
        // stands for the file and says nothing of what the loop was doing.
        assert_eq!(
            steps_of_calls_in("evaluate"),
            vec![2, 5, 8, 11],
            "rank {rank}"
        );
        // The epoch's all-reduce after its DataLoader's StopIteration (6 steps an epoch; the
        // first epoch ends in the gap after step 5, the second with the loop) belongs to the
        // epoch's last step: the StopIteration is no batch (before, it was taken for the next
        // step's data and the all-reduce went to that step).
        let epoch_ends = steps_of_calls_in("main");
        assert_eq!(epoch_ends, vec![5], "rank {rank}");
    }
}

/// Training with the DDP model in `eval()` from step 2 on (BatchNorm frozen after a warm-up, or
/// an evaluation's `eval()` never undone): the hooks take no forward for a training one, but the
/// communication hook registered in step 0 still runs in every backward and must hand DDP the
/// bucket as a Python hook does (before 2026-12-06 the job died in every rank with PyTorch's
/// "expected the hook result is a PyObject"). Since 2026-12-07 training that goes on in eval mode
/// after recorded steps is a warning (most often `model.train()` forgotten after an
/// evaluation; the words say what to do when it is meant): rank 0 says it once, every rank's
/// trace holds it.
#[test]
fn training_in_eval_mode_runs_as_without_recording_and_says_what_is_missing() {
    let job = run_mode_steps("eval_train", true, 4);
    assert_eq!(job.printed("samples:"), 4 * BATCH, "{}", job.console);
    let steps: BTreeSet<u64> = spans(&job.records(0), "step")
        .iter()
        .map(|s| u(&s["step"]))
        .collect();
    assert_eq!(steps, BTreeSet::from([0, 1]), "{}", job.console);
    let warning = "training went on in eval mode: after 2 training steps a backward followed a \
                   forward of the DistributedDataParallel model with the model in eval()";
    for rank in 0..2 {
        let said = job.stderr(rank).matches(warning).count();
        assert_eq!(
            said,
            usize::from(rank == 0),
            "rank {rank}: {}",
            job.stderr(rank)
        );
        let logged = job
            .records(rank)
            .iter()
            .filter(|r| r["type"] == "log" && r["level"] == "warning")
            .filter(|r| {
                r["message"]
                    .as_str()
                    .is_some_and(|m| m.starts_with(warning))
            })
            .count();
        assert_eq!(logged, 1, "rank {rank}");
    }
}

/// A frozen embedding before a block checkpointed with `use_reentrant=True`, under
/// `static_graph=True`: the block's input does not require grad, so PyTorch computes no
/// gradient for the block (and warns once, "None of the inputs have requires_grad=True") while
/// DDP all-reduces its buckets all the same. The summary warns that the block's 12 parameters
/// never got a gradient and that only the norm's and the head's did (2026-12-07; before, it
/// said nothing).
#[test]
fn a_checkpointed_block_that_gets_no_gradient_is_a_warning() {
    let job = run_mode("checkpoint_frozen", true);
    assert!(
        job.stderr(0)
            .contains("None of the inputs have requires_grad=True"),
        "PyTorch's own warning, the truth here: {}",
        job.stderr(0)
    );
    let (_, json) = job.summary();
    let warnings: Vec<&str> = json["summary"]["warnings"]
        .as_array()
        .expect("warnings")
        .iter()
        .filter_map(Value::as_str)
        .filter(|w| w.contains("got no gradient"))
        .collect();
    assert_eq!(warnings.len(), 1, "{json:#}");
    let w = warnings[0];
    assert!(
        w.starts_with("12 of the DDP model's 16 parameters")
            && w.contains(
                ": block.ln1.weight, block.ln1.bias, block.attn.in_proj_weight and 9 more."
            )
            && w.contains("Only norm.weight, norm.bias, head.weight and head.bias got one.")
            && w.contains("static_graph=True lets it go on"),
        "{w}"
    );
}

#[test]
fn a_model_sharded_by_fsdp_trains_on_and_each_rank_says_why_nothing_is_recorded() {
    // `instrument` given a model that is not DDP (here FSDP2's `fully_shard`) must not break
    // the training it is added to: it says why on each rank and records nothing.
    let _one = JOB.lock().unwrap_or_else(|e| e.into_inner());
    let job = run_mode("fsdp", true);
    for rank in 0..2 {
        let err = job.stderr(rank);
        let said: Vec<&str> = err
            .lines()
            .filter(|l| l.contains("ddp_probe_torch: instrument:"))
            .collect();
        assert_eq!(said.len(), 1, "rank {rank}:\n{err}");
        assert!(
            said[0].contains("a model sharded by FSDP") && said[0].ends_with("not recording"),
            "{}",
            said[0]
        );
        assert!(!job.dir.join(format!("traces/rank-{rank}.jsonl")).exists());
    }
    assert_eq!(job.printed("samples:"), STEPS * BATCH);
}

#[test]
fn a_model_left_unwrapped_in_one_process_is_not_recorded_and_the_line_says_why() {
    // What a framework does in a job of one process (Accelerate, Lightning): no process
    // group, no DDP. Under `ddp-probe run` (a trace folder set) the one line must not raise.
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(venv_python())
        .args([
            "-c",
            "import torch, ddp_probe_torch\n\
             m = ddp_probe_torch.instrument(torch.nn.Linear(4, 4))\n\
             print(type(m).__name__)",
        ])
        .env("PYTHONPATH", repo().join("python"))
        .env("DDP_PROBE_TRACE_DIR", tmp.path())
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert_eq!(stdout.trim(), "Linear");
    assert!(
        stderr.contains(
            "got Linear (not DistributedDataParallel) and torch.distributed is not initialized"
        ),
        "{stderr}"
    );
    assert_eq!(std::fs::read_dir(tmp.path()).unwrap().count(), 0);
}

#[test]
fn torch_compile_gets_no_added_graph_breaks() {
    let (on, off) = recorded("compile");
    assert_eq!(
        on.printed("graph breaks:"),
        off.printed("graph breaks:"),
        "Dynamo's graph breaks with recording vs without"
    );
    check_common(&on, 1);
}

#[test]
fn a_rank_busy_waiting_inside_backward_is_named_with_the_late_buckets() {
    // Rank 1 busy-waits 60 ms inside the block's backward, after the MLP's gradients and before
    // ln2's and the attention's; 14 steps, so that the 12 steady ones can name it.
    let _guard = JOB.lock().unwrap_or_else(|e| e.into_inner());
    let job = run_mode_steps("straggler", true, 14);
    let (text, json) = job.summary();
    let s = &json["summary"];
    let v = &s["slowdowns"]["straggler"];
    assert_eq!(v["rank"], 1, "{text}");
    assert_eq!(v["phase"], "backward", "{text}");
    // The first late bucket is the one holding ln2's weight: the steady layout from rank 0's
    // last `buckets` record, the names from its header.
    let recs = job.records(0);
    let header = &recs[0];
    let index = header["ddp"]["params"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "module.block.ln2.weight" || p["name"] == "block.ln2.weight")
        .map(|p| u(&p["index"]))
        .unwrap_or_else(|| panic!("no ln2 weight in {}", header["ddp"]["params"]));
    let layout = recs
        .iter()
        .rfind(|r| r["type"] == "buckets")
        .map(|r| r["buckets"].clone())
        .unwrap_or_else(|| header["ddp"]["buckets"].clone());
    let bucket = layout
        .as_array()
        .unwrap()
        .iter()
        .find(|b| {
            b["params"]
                .as_array()
                .unwrap()
                .iter()
                .any(|p| u(p) == index)
        })
        .map(|b| u(&b["id"]))
        .expect("ln2's bucket");
    assert_eq!(v["buckets"][0].as_u64(), Some(bucket), "{text}");
    assert!(bucket >= 1, "the head's and the MLP's buckets come first");
    let saved = v["step_ns"].as_f64().unwrap() - v["without_ns"].as_f64().unwrap();
    assert!(saved > 30e6, "{v}");
    assert!(text.contains("straggler: rank 1 held back"), "{text}");
}

/// DDP over process groups smaller than the world (`--mode subgroup`, 4 ranks): ranks 0 and 2
/// reduce together, 1 and 3 together, and rank 3 busy-waits 60 ms inside backward. Each group
/// numbers its own collectives, so rank 0's bucket all-reduces carry the same sequence numbers
/// as rank 1's. Before 2026-12-07 the summary took them for one collective of 4 ranks: rank 0
/// and rank 2 "waited" for the other group (which drifts freely: 57%–65% of their collective
/// time in two runs), arrivals were weighed at chance 25%, the buckets' skew read 23–225 ms, and
/// busbw was algbw × 1.5 (4 ranks' factor, where 2 ranks move the data: × 1).
#[test]
fn ddp_over_subgroups_compares_each_groups_ranks_with_each_other() {
    let _guard = JOB.lock().unwrap_or_else(|e| e.into_inner());
    let steps = 14;
    let job = run_mode_with("subgroup", true, steps, &["--nproc-per-node", "4"]);
    for rank in 0..4u32 {
        let header = &job.records(rank)[0];
        let parity = u64::from(rank % 2);
        assert_eq!(
            header["ddp"]["group_ranks"],
            serde_json::json!([parity, parity + 2]),
            "rank {rank}'s header"
        );
    }
    let (text, json) = job.summary();
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let s = &json["summary"];
    assert_eq!(
        s["ddp_groups"],
        serde_json::json!([[0, 2], [1, 3]]),
        "{text}"
    );
    assert!(
        flat.contains(
            "DDP reduces over 2 process groups smaller than the world (ranks 0, 2; ranks 1, 3)"
        ),
        "{text}"
    );
    // Arrivals: two ranks compared at each collective, the candidate weighed over its group's
    // steps and collectives (rank 3 is not last at the bucket it readies before its wait, nor
    // always at the buffers' broadcast: the verdict rests on the re-simulation below).
    let arrivals = &s["stragglers"];
    assert_eq!(arrivals["ranks_compared"], 2, "{text}");
    assert_eq!(arrivals["chance"], 0.5, "{text}");
    let candidate = &arrivals["candidate"];
    let group_steps = u(&candidate["steps"]);
    assert!(
        group_steps + 2 >= steps && group_steps < steps,
        "its group's steady steps: {text}"
    );
    // Each group's collectives: half of all compared.
    assert_eq!(
        2 * u(&candidate["collectives"]),
        u(&arrivals["collectives"]),
        "{text}"
    );
    // The re-simulation names it over its group's steps.
    let held = &s["slowdowns"]["straggler"];
    assert_eq!(held["rank"], 3, "{text}");
    assert_eq!(u(&held["of_steps"]), group_steps, "{text}");
    // Rank 1 waits for rank 3; rank 0 waits for nobody in particular.
    let waiting = |rank: u64| {
        s["ranks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["rank"] == rank)
            .and_then(|r| r["waiting_per_step_ns"].as_f64())
            .unwrap_or_else(|| panic!("rank {rank}'s waiting: {text}"))
    };
    assert!(waiting(1) > 30e6, "rank 1 waits ~60 ms a step: {text}");
    assert!(
        waiting(0) < waiting(1) / 2.0,
        "rank 0 waits for rank 2 only: {text}"
    );
    // Two ranks move the data of each all-reduce: busbw is algbw.
    let op = s["ops"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["op"] == "all_reduce")
        .unwrap_or_else(|| panic!("no all_reduce row: {text}"));
    assert_eq!(op["bus_factor"], 1.0, "{op}");
    assert_eq!(op["busbw_bytes_per_s"], op["algbw_bytes_per_s"], "{op}");
}

/// `explain --json` of a features mode whose job fails (`steps` steps), and the job's console.
/// Should gloo ever wait instead of failing, the hang watchdog ends the job (and the same
/// findings follow from the hang).
fn failing_mode_explained(mode: &str, steps: u64) -> (serde_json::Value, String) {
    let (_tmp, dir) = run_dir();
    let (out, console) = output_of(&mut features_job(
        &dir,
        mode,
        steps,
        &["--hang-timeout", "60"],
    ));
    assert!(!out.status.success(), "the job should fail:\n{console}");
    (explain_json(&dir), console)
}

#[test]
fn a_rank_out_of_batches_is_named_as_the_cause_when_its_peer_fails() {
    // Rank 1 has one batch fewer and exits normally; rank 0's next all-reduce loses its peer
    // (gloo: "Connection closed by peer") and the job fails. From the log alone that reads as
    // a crash; the run's manifest shows rank 1's clean exit before rank 0's failure.
    let (report, console) = failing_mode_explained("uneven", 4);
    let first = &report["findings"][0];
    assert_eq!(
        (first["category"].as_str(), first["ranks"].clone()),
        (Some("uneven_inputs"), serde_json::json!([1])),
        "{report:#}\n{console}"
    );
    assert!(
        console.contains("most likely cause: rank 1 ran out of input batches"),
        "{console}"
    );
    // The module saw rank 1's DataLoader run out: explain says so, not only that it left.
    assert!(
        first["explanation"]
            .as_str()
            .is_some_and(|e| e.contains("rank 1's training DataLoader ran out after")),
        "{report:#}"
    );
}

#[test]
fn an_all_gather_of_different_sizes_is_named_with_where_it_was_called() {
    // An evaluation all-gathers predictions of different lengths (51 on rank 0, 50 on rank 1):
    // gloo aborts rank 1 and completes the call on rank 0 with wrong data. Before, explain said
    // only that the ranks called different collectives.
    let (report, console) = failing_mode_explained("gather_sizes", 4);
    let first = &report["findings"][0];
    assert_eq!(
        (first["category"].as_str(), first["ranks"].clone()),
        (Some("collective_mismatch"), serde_json::json!([0, 1])),
        "{report:#}\n{console}"
    );
    let title = first["title"].as_str().unwrap_or_default();
    assert!(
        title.starts_with(
            "ranks 0, 1 called all_gather with different sizes (rank 0: 408 bytes, rank 1: 400 \
             bytes) at ddp_features.py:"
        ),
        "{title}"
    );
    assert!(
        report["findings"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["category"] != "uneven_inputs"),
        "{report:#}"
    );
}

#[test]
fn a_rank_that_stops_on_its_own_check_is_told_from_one_out_of_batches() {
    // Rank 1 finds its loss NaN in step 3 and leaves its loop after that step's forward,
    // printing why; rank 0's all-reduce of step 3 loses its peer. Before, explain said rank 1
    // "ran out of input batches" and told the user to even out the data.
    let (report, console) = failing_mode_explained("early_exit", 6);
    let first = &report["findings"][0];
    assert_eq!(
        (
            first["category"].as_str(),
            first["ranks"].clone(),
            first["title"].as_str()
        ),
        (
            Some("uneven_inputs"),
            serde_json::json!([1]),
            Some("rank 1 left the training loop in step 3, after the step's forward, while the others went on")
        ),
        "{report:#}\n{console}"
    );
    let said = first["evidence"]
        .as_array()
        .unwrap()
        .iter()
        .any(|e| e["text"] == "rank 1: the loss is NaN at step 3, stopping");
    assert!(said, "{report:#}");
    assert!(
        console.contains("most likely cause: rank 1 left the training loop in step 3"),
        "{console}"
    );
}

#[test]
fn a_killed_dataloader_worker_is_named_with_the_launchers_evidence() {
    // Rank 1's DataLoader worker gets SIGKILL; rank 1 raises PyTorch's "DataLoader worker (pid
    // N) is killed by signal: Killed." and exits 1 the way hydra's main does (sys.exit after
    // printing), so its trace ends "ok". `explain` names the worker, not the rank, judges the
    // sender from the OOM-kill counters the launcher read at rank 1's exit, and does not take
    // rank 1 for a rank that ran out of batches.
    let (_tmp, dir) = run_dir();
    let (out, console) = output_of(&mut features_job(&dir, "worker_killed", 6, &[]));
    assert!(!out.status.success(), "the job should fail:\n{console}");
    assert!(
        console.contains("is killed by signal: Killed"),
        "the console's block quotes rank 1's error:\n{console}"
    );
    let report = explain_json(&dir);
    let first = &report["findings"][0];
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).unwrap()).unwrap();
    let counters = manifest["ranks"][1]["end"]["kill_evidence"]["oom_kill_counters"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let readable = counters.iter().any(|c| c["at_death"].is_u64());
    let expected = if readable {
        // Nothing here is short of memory: the counters did not move.
        (
            "rank_crashed",
            "a DataLoader worker of rank 1 was killed by SIGKILL from outside the process, not by \
             the out-of-memory killer",
        )
    } else {
        eprintln!("no oom_kill counter was readable here: expecting the unconfirmed verdict");
        (
            "host_oom_killed",
            "a DataLoader worker of rank 1 got SIGKILL, most likely from the host's out-of-memory \
             killer",
        )
    };
    assert_eq!(
        (
            first["category"].as_str(),
            first["title"].as_str(),
            first["ranks"].clone()
        ),
        (Some(expected.0), Some(expected.1), serde_json::json!([1])),
        "{report:#}\n{console}"
    );
    let findings = report["findings"].as_array().unwrap();
    assert!(
        findings.iter().all(|f| f["category"] != "uneven_inputs"),
        "{report:#}"
    );
}

#[test]
fn a_rank_outside_its_steps_is_named_when_a_peer_times_out_waiting_for_it() {
    // Rank 0 spends 15 s after its third step with a 5 s process-group timeout: rank 1's
    // all-reduce fails (the module records it as a failed collective, not a completed one)
    // and `explain` names rank 0, which never queued it and recorded nothing for seconds.
    let (_tmp, dir) = run_dir();
    let (out, console) = output_of(&mut features_job(&dir, "slow_save", 6, &[]));
    assert!(!out.status.success(), "the job should fail:\n{console}");
    let report = explain_json(&dir);
    // The script's line where rank 0 sleeps, as its stack names it.
    let line = features_line("time.sleep(15)  # the checkpoint that only rank 0 writes");
    let expected_title = format!(
        "rank 1 timed out in a collective waiting for rank 0, which never joined it: it was in \
         main at ddp_features.py:{line} (`time.sleep(15)  # the checkpoint that only rank 0 \
         writes`)"
    );
    let first = &report["findings"][0];
    assert_eq!(
        (
            first["category"].as_str(),
            first["ranks"].clone(),
            first["title"].as_str()
        ),
        (
            Some("collective_timeout"),
            serde_json::json!([0]),
            // Rank 0's Python stack, asked for when rank 1 failed, before rank 0 was stopped.
            Some(expected_title.as_str())
        ),
        "{report:#}\n{console}"
    );
    let explanation = first["explanation"].as_str().unwrap_or_default();
    assert!(
        explanation.contains("it recorded nothing after the end of step 2 for the")
            && explanation.contains("it was outside the training steps"),
        "{explanation}"
    );
}

#[test]
fn a_model_built_differently_on_one_rank_is_named_as_such() {
    // Rank 1 builds its model wider; DDP's check when it wraps the model fails on rank 1.
    // The console quotes rank 1's error and `explain` says the ranks built different models,
    // with what differs (PyTorch's own message, reducer.cpp), not only "different collectives".
    let (_tmp, dir) = run_dir();
    let (out, console) = output_of(&mut features_job(&dir, "model_differs", 4, &[]));
    assert!(!out.status.success(), "the job should fail:\n{console}");
    assert!(
        console.contains("appears not to match sizes of the same param in process 0"),
        "the console quotes the failing rank's error:\n{console}"
    );
    let report = explain_json(&dir);
    let first = &report["findings"][0];
    assert_eq!(first["category"], "collective_mismatch", "{report:#}");
    // DDP compares every rank's parameters with rank 0's (broadcast from it): rank 1 fails,
    // and the sizes are its embedding's (vocabulary 64 × dim 128; 96 on rank 0).
    assert_eq!(
        first["title"].as_str(),
        Some(
            "rank 1 built another model than rank 0: params[0] has sizes [64, 128] on rank 1, \
             other sizes on rank 0"
        ),
        "{report:#}"
    );
    assert!(
        first["fix"]
            .as_str()
            .unwrap_or_default()
            .starts_with("Build the same model on every rank"),
        "{report:#}"
    );
}

#[test]
fn a_rank_busy_before_ddp_wraps_the_model_is_named_from_its_stack_alone() {
    // Rank 0 spends 15 s before DDP's construction (a download on rank 0 only) with a 5 s
    // process-group timeout: rank 1's wait in DDP's check of the model times out. Neither
    // rank reached `instrument`, so there are no traces: the module answers the launcher's
    // request from its import on, and rank 0's Python stack alone names where it was.
    let (_tmp, dir) = run_dir();
    let (out, console) = output_of(&mut features_job(&dir, "slow_download", 4, &[]));
    assert!(!out.status.success(), "the job should fail:\n{console}");
    assert!(
        !dir.join("traces/rank-0.jsonl").exists(),
        "rank 0 was never instrumented"
    );
    let line = features_line("time.sleep(15)  # rank 0 downloads the dataset");
    let report = explain_json(&dir);
    let first = &report["findings"][0];
    assert_eq!(
        (
            first["category"].as_str(),
            first["ranks"].clone(),
            first["title"].as_str()
        ),
        (
            Some("collective_timeout"),
            serde_json::json!([0]),
            Some(
                format!(
                    "rank 1 timed out in a collective waiting for rank 0, which never joined it: \
                     it was in main at ddp_features.py:{line} (`time.sleep(15)  # rank 0 \
                     downloads the dataset before the model is wrapped`)"
                )
                .as_str()
            )
        ),
        "{report:#}\n{console}"
    );
}

#[test]
fn an_exception_in_a_dataloader_worker_is_named_with_its_own_words_and_frame() {
    // Rank 1's dataset raises in its DataLoader worker; PyTorch re-raises it in rank 1 under
    // "Caught ValueError in DataLoader worker process 0." with the original traceback. The
    // finding quotes the original exception and cites the dataset's frame.
    let (_tmp, dir) = run_dir();
    let (out, console) = output_of(&mut features_job(&dir, "bad_sample", 6, &[]));
    assert!(!out.status.success(), "the job should fail:\n{console}");
    let report = explain_json(&dir);
    let first = &report["findings"][0];
    let title = first["title"].as_str().unwrap_or_default();
    assert!(
        first["category"] == "rank_crashed"
            && title.starts_with("rank 1 crashed: ValueError: sample ")
            && title.ends_with(" cannot be decoded (raised in DataLoader worker process 0)"),
        "{report:#}\n{console}"
    );
    let line = features_line("raise ValueError(f\"sample {i} cannot be decoded\")");
    let frame = format!("line {line}, in __getitem__");
    assert!(
        first["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .any(|e| e["text"].as_str().unwrap_or_default().contains(&frame)),
        "the dataset's frame ({frame}) is evidence:\n{report:#}"
    );
}

#[test]
fn a_dataloader_worker_stuck_on_a_lock_inherited_at_fork_is_named_with_its_state() {
    // Rank 1's worker is forked while the rank holds a lock its dataset takes for the third
    // batch: the worker sleeps on it for good, rank 1 waits for the batch, rank 0 for rank 1.
    // The hang watchdog stops the job; the launcher's list of rank 1's processes shows the
    // worker asleep on a futex, and `explain` names it and the fix (start workers by spawn).
    let (_tmp, dir) = run_dir();
    let (out, console) = output_of(&mut features_job(
        &dir,
        "worker_stuck",
        6,
        &["--hang-timeout", "15"],
    ));
    assert_eq!(out.status.code(), Some(124), "a hang:\n{console}");
    let procs = std::fs::read_to_string(dir.join("logs/processes-rank-1.txt")).unwrap();
    let worker = procs
        .lines()
        .find(|l| l.split('\t').nth(5) == Some("pt_data_worker"))
        .unwrap_or_else(|| panic!("rank 1's worker is listed:\n{procs}"));
    let fields: Vec<&str> = worker.split('\t').collect();
    assert!(
        fields[2] == "S" && fields[3].contains("futex"),
        "asleep on a futex: {worker}"
    );
    let report = explain_json(&dir);
    let first = &report["findings"][0];
    // The training loop's `next` (in its `try`, the line before `except StopIteration:`).
    let line = features_line("except StopIteration:") - 1;
    let pid = fields[0];
    assert_eq!(
        (
            first["category"].as_str(),
            first["ranks"].clone(),
            first["title"].as_str()
        ),
        (
            Some("collective_timeout"),
            serde_json::json!([1]),
            Some(
                format!(
                    "rank 0 waited in a collective for rank 1, which never joined it: it was \
                     in main at ddp_features.py:{line} (`x, y = next(batches)`), inside \
                     torch/utils/data/dataloader.py:1291 in _try_get_data, waiting for a batch \
                     from its DataLoader worker (pid {pid}), which was asleep on a lock"
                )
                .as_str()
            )
        ),
        "{report:#}\n{console}"
    );
    let fix = first["fix"].as_str().unwrap_or_default();
    assert!(
        fix.contains("multiprocessing_context=\"spawn\"")
            && fix.contains(&format!("py-spy dump --pid {pid}")),
        "{fix}"
    );
    assert!(
        first["evidence"]
            .as_array()
            .unwrap()
            .iter()
            .any(
                |e| e["text"].as_str().unwrap_or_default().starts_with(&format!(
                    "rank 1's DataLoader worker, pid {pid}, was asleep on a lock"
                ))
            ),
        "{report:#}"
    );
}
