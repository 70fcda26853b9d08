//! `ddp::checkpoint`: round trips restore bit-identical parameters, buffers and optimizer state;
//! the RNG state reproduces the same draws; a writer SIGKILLed mid-write (a child process) or
//! truncated files never hide the previous checkpoint; keep-last-N deletes the right files;
//! mismatches are errors naming the entry; rank 0 writes for a 2-rank group.
//!
//! Every test holds `serial()`: libtorch's default CPU generator is process-wide, and model
//! initialisation draws from it, so tests of this binary must not run concurrently with the RNG
//! test.

mod threads;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use ddp::amp::{GradScaler, GradScalerConfig, GradScalerState};
use ddp::checkpoint::{
    cpu_rng_state, set_cpu_rng_state, Checkpoint, CheckpointManager, SamplerState,
};
use ddp::optim::{Optimizer, OptimizerKind};
use ddp::DdpError;
use tch::nn::{self, Module, VarStore};
use tch::{Device, Kind, Tensor};

static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

/// Environment variable telling the child helper test where to write.
const CHILD_DIR_ENV: &str = "DDP_CKPT_TEST_CHILD_DIR";
/// Step of the checkpoint the child writes.
const CHILD_STEP: u64 = 2;
/// Elements of each of the child's 4 tensors (f32): 48 MiB each, long enough to write that the
/// parent catches the temporary file.
const CHILD_ELEMENTS: i64 = 12 << 20;
/// Data bytes of the child's checkpoint.
const CHILD_BYTES: u64 = 4 * 4 * CHILD_ELEMENTS as u64;

/// The raw bytes of a tensor (for bit-identical comparisons, NaN-safe).
fn bytes(t: &Tensor) -> Vec<u8> {
    let t = t.detach().contiguous();
    let n = t.numel() * t.kind().elt_size_in_bytes();
    let mut out = vec![0u8; n];
    t.copy_data_u8(&mut out, t.numel());
    out
}

fn same_bits(a: &Tensor, b: &Tensor) -> bool {
    a.kind() == b.kind() && a.size() == b.size() && bytes(a) == bytes(b)
}

/// A small model: a linear layer, a float64 and a bf16 parameter, and two buffers (f32, i64).
struct Model {
    vs: VarStore,
    fc: nn::Linear,
}

impl Model {
    fn new() -> Model {
        let vs = VarStore::new(Device::Cpu);
        let root = vs.root();
        let fc = nn::linear(&root / "fc", 5, 3, Default::default());
        let _ = root
            .randn("scale64", &[4], 0.0, 1.0)
            .set_requires_grad(true);
        let _ = (&root / "emb").var(
            "table",
            &[2, 3],
            nn::Init::Randn {
                mean: 0.0,
                stdev: 1.0,
            },
        );
        let _ = root.randn_standard("bf", &[6]);
        let _ = root.zeros_no_train("running_mean", &[3]);
        let _ = root.zeros_no_train("batches", &[1]);
        let m = Model { vs, fc };
        tch::no_grad(|| {
            let vars = m.vs.variables();
            let mut v = vars["scale64"].shallow_clone();
            v.set_data(&v.to_kind(Kind::Double));
            let mut b = vars["bf"].shallow_clone();
            b.set_data(&b.to_kind(Kind::BFloat16));
            let mut c = vars["batches"].shallow_clone();
            c.set_data(&Tensor::from_slice(&[7i64]));
            let mut r = vars["running_mean"].shallow_clone();
            r.copy_(&Tensor::from_slice(&[0.25f32, f32::NAN, -3.0]));
        });
        m
    }

    fn params(&self) -> Vec<Tensor> {
        let mut v: Vec<(String, Tensor)> = self.vs.trainable_variables_named();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v.into_iter().map(|(_, t)| t).collect()
    }

    /// One training step with a deterministic loss.
    fn train_step(&self, opt: &mut Optimizer) {
        opt.zero_grad().expect("zero_grad");
        let x = Tensor::arange(10, tch::kind::FLOAT_CPU).reshape([2, 5]) * 0.1;
        let vars = self.vs.variables();
        let loss = self.fc.forward(&x).square().sum(Kind::Float)
            + vars["scale64"]
                .square()
                .sum(Kind::Double)
                .to_kind(Kind::Float)
            + vars["emb.table"].sum(Kind::Float)
            + vars["bf"].to_kind(Kind::Float).square().sum(Kind::Float);
        loss.backward();
        opt.step().expect("step");
    }
}

trait NamedVars {
    fn trainable_variables_named(&self) -> Vec<(String, Tensor)>;
}

impl NamedVars for VarStore {
    fn trainable_variables_named(&self) -> Vec<(String, Tensor)> {
        self.variables()
            .into_iter()
            .filter(|(_, t)| t.requires_grad())
            .collect()
    }
}

fn full_checkpoint(model: &Model, opt: &Optimizer, scaler: &GradScaler, step: u64) -> Checkpoint {
    Checkpoint::new(3, step)
        .with_var_store(&model.vs)
        .with_optimizer(opt)
        .with_sampler(3, 1234)
        .with_scaler(scaler)
        .with_user_metadata(r#"{"lr": 0.01, "note": "ünïcode"}"#)
        .with_rng()
        .expect("rng")
}

#[test]
fn round_trip_restores_identical_state() {
    let _g = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let model = Model::new();
    let mut opt = Optimizer::new(OptimizerKind::adamw(0.01), model.params());
    model.train_step(&mut opt);
    model.train_step(&mut opt);
    let scaler_state = GradScalerState {
        scale: 2048.0,
        growth_factor: 2.0,
        backoff_factor: 0.5,
        growth_interval: 100,
        growth_tracker: 17,
    };
    let mut scaler = GradScaler::new(GradScalerConfig::default()).expect("scaler");
    scaler.load_state(&scaler_state).expect("scaler state");

    let path = dir.path().join("one.safetensors");
    full_checkpoint(&model, &opt, &scaler, 40)
        .save(&path)
        .expect("save");
    let loaded = Checkpoint::load(&path).expect("load");
    assert_eq!((loaded.epoch, loaded.step), (3, 40));
    assert_eq!(
        loaded.sampler,
        Some(SamplerState {
            epoch: 3,
            seed: 1234
        })
    );
    assert_eq!(loaded.scaler, Some(scaler_state));
    assert_eq!(
        loaded.user_metadata.as_deref(),
        Some(r#"{"lr": 0.01, "note": "ünïcode"}"#)
    );
    assert!(loaded.rng.is_some());

    // A model with other values (a second initialisation) gets the saved ones, bit for bit.
    let other = Model::new();
    let before = other.vs.variables();
    assert!(!same_bits(
        &before["fc.weight"],
        &model.vs.variables()["fc.weight"]
    ));
    loaded.apply_to_var_store(&other.vs).expect("apply");
    let (a, b) = (model.vs.variables(), other.vs.variables());
    assert_eq!(a.len(), 7);
    for (name, t) in &a {
        assert!(
            same_bits(t, &b[name]),
            "{name} differs after the round trip"
        );
    }
    assert_eq!(b["bf"].kind(), Kind::BFloat16);
    assert_eq!(b["scale64"].kind(), Kind::Double);

    let mut opt2 = Optimizer::new(OptimizerKind::adamw(0.01), other.params());
    loaded.apply_to_optimizer(&mut opt2).expect("optimizer");
    let (s1, s2) = (opt.state_tensors(), opt2.state_tensors());
    assert_eq!(s1.len(), s2.len());
    assert!(s1.iter().any(|(n, _)| n.ends_with(".exp_avg_sq")));
    for ((n1, t1), (n2, t2)) in s1.iter().zip(&s2) {
        assert_eq!(n1, n2);
        assert!(
            same_bits(&t1.to_kind(t2.kind()), t2),
            "optimizer state {n1} differs"
        );
    }
    // And training continues identically.
    model.train_step(&mut opt);
    other.train_step(&mut opt2);
    for (name, t) in &model.vs.variables() {
        assert!(
            same_bits(t, &other.vs.variables()[name]),
            "{name} after resuming"
        );
    }

    let mut scaler2 = GradScaler::new(GradScalerConfig::default()).expect("scaler");
    loaded.apply_to_scaler(&mut scaler2).expect("scaler");
    assert_eq!(scaler2.state(), Some(scaler_state));
}

#[test]
fn rng_state_reproduces_the_same_draws() {
    let _g = serial();
    let state = cpu_rng_state().expect("state");
    assert_eq!(state.kind(), Kind::Uint8);
    let a = Tensor::randn([16], tch::kind::FLOAT_CPU);
    let b = Tensor::randn([16], tch::kind::FLOAT_CPU);
    assert!(!same_bits(&a, &b));
    set_cpu_rng_state(&state).expect("set state");
    let a2 = Tensor::randn([16], tch::kind::FLOAT_CPU);
    assert!(same_bits(&a, &a2), "restoring the state repeats the draws");

    // Through a checkpoint file.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("rng.safetensors");
    Checkpoint::new(0, 0)
        .with_rng()
        .expect("rng")
        .save(&path)
        .expect("save");
    let c = Tensor::randn([8], tch::kind::FLOAT_CPU);
    let u = Tensor::rand([3], tch::kind::DOUBLE_CPU);
    let _ = Tensor::randn([100], tch::kind::FLOAT_CPU);
    Checkpoint::load(&path)
        .expect("load")
        .restore_rng()
        .expect("restore");
    assert!(same_bits(&c, &Tensor::randn([8], tch::kind::FLOAT_CPU)));
    assert!(same_bits(&u, &Tensor::rand([3], tch::kind::DOUBLE_CPU)));

    // A state of the wrong size is refused by libtorch, with the generator untouched.
    let bad = Tensor::zeros([7], (Kind::Uint8, Device::Cpu));
    let e = set_cpu_rng_state(&bad).expect_err("bad state");
    assert!(e.to_string().contains("CPU generator"), "{e}");
    let no_rng = Checkpoint::new(0, 0);
    assert!(matches!(no_rng.restore_rng(), Err(DdpError::Checkpoint(_))));
}

/// CUDA generator states (only where libtorch sees a GPU; a no-op elsewhere).
#[test]
fn cuda_rng_states_round_trip_when_a_gpu_is_present() {
    let _g = serial();
    if !tch::Cuda::is_available() {
        eprintln!("no CUDA device: CUDA generator states not exercised");
        return;
    }
    let gpu = Device::Cuda(0);
    let state = ddp::checkpoint::RngState::capture().expect("capture");
    assert_eq!(state.cuda.len() as i64, tch::Cuda::device_count());
    let a = Tensor::randn([32], (Kind::Float, gpu));
    let c = Tensor::randn([8], tch::kind::FLOAT_CPU);
    let _ = Tensor::randn([32], (Kind::Float, gpu));
    state.restore().expect("restore");
    assert!(same_bits(&a, &Tensor::randn([32], (Kind::Float, gpu))));
    assert!(same_bits(&c, &Tensor::randn([8], tch::kind::FLOAT_CPU)));
}

fn small_checkpoint(step: u64) -> Checkpoint {
    Checkpoint::new(0, step).with_named_tensors([(
        "w".to_owned(),
        Tensor::from_slice(&[step as f32, 1.5, -2.0]),
    )])
}

fn step_value(c: &Checkpoint) -> f32 {
    let (name, t) = &c.model[0];
    assert_eq!(name, "w");
    t.double_value(&[0]) as f32
}

fn dir_names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn temp_files(dir: &Path) -> Vec<String> {
    dir_names(dir)
        .into_iter()
        .filter(|n| n.starts_with('.') && n.contains(".tmp-"))
        .collect()
}

/// Not a test on its own: when `DDP_CKPT_TEST_CHILD_DIR` is set (by
/// `killed_mid_write_leaves_the_previous_checkpoint`, which runs this binary again), it writes
/// a large checkpoint into that directory and is killed while doing so. Otherwise it returns.
#[test]
fn child_writes_a_big_checkpoint() {
    let Some(dir) = std::env::var_os(CHILD_DIR_ENV) else {
        return;
    };
    let manager = CheckpointManager::new(PathBuf::from(dir), 3).expect("manager");
    let big: Vec<(String, Tensor)> = (0..4)
        .map(|i| {
            (
                format!("layer{i}.weight"),
                Tensor::full([CHILD_ELEMENTS], i as f64, tch::kind::FLOAT_CPU),
            )
        })
        .collect();
    let ckpt = Checkpoint::new(0, CHILD_STEP).with_named_tensors(big);
    manager.save(&ckpt).expect("child save");
}

#[test]
fn killed_mid_write_leaves_the_previous_checkpoint() {
    let _g = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let manager = CheckpointManager::new(dir.path(), 3).expect("manager");
    manager.save(&small_checkpoint(1)).expect("save step 1");

    let exe = std::env::current_exe().expect("test binary");
    let mut child = Command::new(exe)
        .args([
            "child_writes_a_big_checkpoint",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_DIR_ENV, dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn the writer");
    let tmp_prefix = format!(".ckpt-{CHILD_STEP}.safetensors.tmp-{}-", child.id());
    let deadline = Instant::now() + Duration::from_secs(120);
    let caught = loop {
        let partial = std::fs::read_dir(dir.path())
            .expect("read dir")
            .filter_map(|e| e.ok())
            .find(|e| e.file_name().to_string_lossy().starts_with(&tmp_prefix))
            .and_then(|e| e.metadata().ok())
            .is_some_and(|m| m.len() > 0);
        if partial {
            break true;
        }
        if child.try_wait().expect("try_wait").is_some() || Instant::now() > deadline {
            break false;
        }
        std::thread::sleep(Duration::from_micros(200));
    };
    // SIGKILL on Unix; then reap it so that its pid is gone.
    let _ = child.kill();
    let status = child.wait().expect("wait");
    assert!(
        caught,
        "the writer finished (or never started) before it could be killed mid-write: {status:?}; \
         files: {:?}",
        dir_names(dir.path())
    );
    assert!(!status.success(), "the writer was killed: {status:?}");

    let leftovers = temp_files(dir.path());
    assert_eq!(
        leftovers.len(),
        1,
        "the killed write leaves its temporary file: {leftovers:?}"
    );
    let partial_len = std::fs::metadata(dir.path().join(&leftovers[0]))
        .expect("stat")
        .len();
    eprintln!("killed the writer with {partial_len} of {CHILD_BYTES} data bytes written");
    assert!(partial_len < CHILD_BYTES, "the temporary file is partial");
    assert!(
        !manager.path_for_step(CHILD_STEP).exists(),
        "no checkpoint file of the killed write"
    );
    assert_eq!(
        manager.latest().expect("latest"),
        Some(manager.path_for_step(1))
    );
    let loaded = manager.load_latest().expect("load").expect("a checkpoint");
    assert_eq!(step_value(&loaded), 1.0);
    assert_eq!(
        manager
            .list()
            .expect("list")
            .iter()
            .map(|(s, _)| *s)
            .collect::<Vec<_>>(),
        vec![1]
    );

    // The next save succeeds and removes the dead writer's temporary file.
    manager.save(&small_checkpoint(3)).expect("save step 3");
    assert!(
        temp_files(dir.path()).is_empty(),
        "{:?}",
        dir_names(dir.path())
    );
    assert_eq!(
        manager.latest().expect("latest"),
        Some(manager.path_for_step(3))
    );
}

#[test]
fn truncated_files_are_skipped() {
    let _g = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let manager = CheckpointManager::new(dir.path(), 10).expect("manager");
    manager.save(&small_checkpoint(4)).expect("save");
    manager.save(&small_checkpoint(6)).expect("save");
    let good = std::fs::read(manager.path_for_step(6)).expect("read");

    // A temporary file of a crashed writer with a higher step, and a checkpoint file truncated
    // by other means (say, a copy that stopped): neither is "latest".
    std::fs::write(
        dir.path().join(".ckpt-9.safetensors.tmp-4000000-0"),
        &good[..good.len() / 2],
    )
    .expect("write");
    std::fs::write(manager.path_for_step(8), &good[..good.len() - 3]).expect("write");
    std::fs::write(manager.path_for_step(10), &good[..5]).expect("write");
    std::fs::write(dir.path().join("ckpt-x.safetensors"), &good).expect("write");
    std::fs::write(dir.path().join("ckpt-12.safetensors.bak"), &good).expect("write");

    assert_eq!(
        manager.latest().expect("latest"),
        Some(manager.path_for_step(6))
    );
    let steps: Vec<u64> = manager
        .list()
        .expect("list")
        .iter()
        .map(|(s, _)| *s)
        .collect();
    assert_eq!(steps, vec![4, 6]);
    assert_eq!(
        step_value(&manager.load_latest().expect("load").expect("some")),
        6.0
    );

    let e = Checkpoint::load(manager.path_for_step(8)).expect_err("truncated");
    assert!(e.to_string().contains("ckpt-8.safetensors"), "{e}");
}

/// The JSON header of a safetensors file and where its data starts.
fn safetensors_header(bytes: &[u8]) -> (serde_json::Value, usize) {
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    (serde_json::from_slice(&bytes[8..8 + n]).unwrap(), 8 + n)
}

#[test]
fn damaged_checkpoints_are_refused_and_resume_falls_back_saying_so() {
    let _g = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let manager = CheckpointManager::new(dir.path(), 10).expect("manager");
    manager.save(&small_checkpoint(4)).expect("save");
    manager.save(&small_checkpoint(6)).expect("save");
    let newest = manager.path_for_step(6);
    let good = std::fs::read(&newest).expect("read");
    let (header, data_start) = safetensors_header(&good);
    let w = &header["model/w"];
    let w_start = data_start + w["data_offsets"][0].as_u64().unwrap() as usize;

    // One flipped bit in the data of 'model/w' (its second element, 1.5).
    let mut flipped = good.clone();
    flipped[w_start + 4] ^= 0x01;
    std::fs::write(&newest, &flipped).expect("write");
    let e = checkpoint_error(Checkpoint::load(&newest));
    assert!(e.contains("ckpt-6.safetensors"), "{e}");
    assert!(
        e.contains("entry 'model/w' does not match its checksum"),
        "{e}"
    );
    let resumed = manager.load_latest_valid().expect("load");
    let (path, ckpt) = resumed.loaded.expect("the previous checkpoint loads");
    assert_eq!(path, manager.path_for_step(4));
    assert_eq!(step_value(&ckpt), 4.0);
    assert_eq!(resumed.refused.len(), 1);
    assert_eq!(resumed.refused[0].0, newest);
    assert!(
        resumed.refused[0].1.contains("model/w"),
        "{:?}",
        resumed.refused
    );
    assert_eq!(step_value(&manager.load_latest().unwrap().unwrap()), 4.0);

    // The header's dtype of 'model/w' changed from F32 to I32 (same size: it loaded, with a
    // loss of 2.8e8, before checksums).
    let text = String::from_utf8_lossy(&good[8..data_start]).into_owned();
    let changed = text.replacen("\"F32\"", "\"I32\"", 1);
    assert_ne!(changed, text, "the header names F32");
    let mut retyped = good[..8].to_vec();
    retyped.extend_from_slice(changed.as_bytes());
    retyped.extend_from_slice(&good[data_start..]);
    std::fs::write(&newest, &retyped).expect("write");
    let e = checkpoint_error(Checkpoint::load(&newest));
    assert!(e.contains("does not match its checksum"), "{e}");
    assert_eq!(
        manager
            .load_latest_valid()
            .expect("load")
            .loaded
            .map(|(p, _)| p),
        Some(manager.path_for_step(4))
    );

    // The undamaged file loads again.
    std::fs::write(&newest, &good).expect("write");
    assert_eq!(step_value(&manager.load_latest().unwrap().unwrap()), 6.0);
}

#[test]
fn random_damage_is_refused_never_a_panic_or_a_silent_change() {
    // The checkpoint loader's fuzzing, as an ordinary test (it links libtorch, which the
    // cargo-fuzz targets do not): 400 damaged copies of a real checkpoint, each with random
    // bit flips anywhere, a cut, or a header byte overwritten. Each is refused with an error,
    // or loads exactly what was saved (a flip in the header's padding changes nothing).
    let _g = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("ckpt.safetensors");
    let original = Checkpoint::new(3, 7).with_named_tensors([
        (
            "w".to_owned(),
            Tensor::from_slice(&[1.5f32, -2.0, 3.25, 0.0]),
        ),
        ("b".to_owned(), Tensor::from_slice(&[7i64, -9])),
    ]);
    original.save(&path).expect("save");
    let good = std::fs::read(&path).expect("read");
    let (_, data_start) = safetensors_header(&good);
    let mut rng = fastrand::Rng::with_seed(0x5eed_c4ec);
    let (mut refused, mut same) = (0, 0);
    for case in 0..400 {
        let mut bytes = good.clone();
        match case % 3 {
            0 => {
                for _ in 0..rng.usize(1..4) {
                    let i = rng.usize(..bytes.len());
                    bytes[i] ^= 1 << rng.u8(..8);
                }
            }
            1 => bytes.truncate(rng.usize(..bytes.len())),
            _ => {
                let i = rng.usize(8..data_start);
                bytes[i] = rng.u8(..);
            }
        }
        std::fs::write(&path, &bytes).expect("write");
        let loaded = std::panic::catch_unwind(|| Checkpoint::load(&path))
            .unwrap_or_else(|_| panic!("case {case}: loading panicked"));
        match loaded {
            Err(_) => refused += 1,
            Ok(c) => {
                assert_eq!((c.epoch, c.step), (3, 7), "case {case}");
                for ((n1, t1), (n2, t2)) in c.model.iter().zip(&original.model) {
                    assert_eq!(n1, n2, "case {case}");
                    assert!(same_bits(t1, t2), "case {case}: '{n1}' changed silently");
                }
                same += 1;
            }
        }
    }
    assert!(refused >= 300, "{refused} refused, {same} unchanged");
}

#[test]
fn keep_last_n_deletes_the_oldest() {
    let _g = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let manager = CheckpointManager::new(dir.path().join("run"), 2).expect("manager");
    let mut expected: Vec<Vec<&str>> = vec![
        vec!["ckpt-1.safetensors"],
        vec!["ckpt-1.safetensors", "ckpt-2.safetensors"],
        vec!["ckpt-2.safetensors", "ckpt-3.safetensors"],
        vec!["ckpt-3.safetensors", "ckpt-4.safetensors"],
        vec!["ckpt-10.safetensors", "ckpt-4.safetensors"],
    ]
    .into_iter()
    .rev()
    .collect();
    for step in [1, 2, 3, 4, 10] {
        let path = manager.save(&small_checkpoint(step)).expect("save");
        assert_eq!(path, manager.path_for_step(step));
        assert_eq!(
            dir_names(manager.dir()),
            expected.pop().expect("expected files"),
            "after step {step}"
        );
    }
    // A lower step than an existing one is still kept (with the newest other one), and the
    // newer file is left alone.
    manager.save(&small_checkpoint(7)).expect("save");
    assert_eq!(
        dir_names(manager.dir()),
        vec!["ckpt-10.safetensors", "ckpt-7.safetensors"]
    );
    assert_eq!(
        manager.latest().expect("latest"),
        Some(manager.path_for_step(10))
    );
    // Keeping one: the new checkpoint (the highest step) replaces all others.
    let keep_one = CheckpointManager::new(dir.path().join("run"), 1).expect("manager");
    keep_one.save(&small_checkpoint(11)).expect("save");
    assert_eq!(dir_names(manager.dir()), vec!["ckpt-11.safetensors"]);

    assert!(matches!(
        CheckpointManager::new(dir.path(), 0),
        Err(DdpError::Checkpoint(_))
    ));
}

fn checkpoint_error<T: std::fmt::Debug>(r: Result<T, DdpError>) -> String {
    match r {
        Err(DdpError::Checkpoint(m)) => m,
        other => panic!("expected a checkpoint error, got {other:?}"),
    }
}

#[test]
fn mismatches_are_errors_naming_the_entry() {
    let _g = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let model = Model::new();
    let path = dir.path().join("m.safetensors");
    Checkpoint::new(0, 1)
        .with_var_store(&model.vs)
        .save(&path)
        .expect("save");
    let loaded = Checkpoint::load(&path).expect("load");

    // Other shape.
    let vs = VarStore::new(Device::Cpu);
    let _ = nn::linear(vs.root() / "fc", 5, 4, Default::default());
    let m = checkpoint_error(loaded.apply_to_var_store(&vs));
    assert!(
        m.contains("'model/fc.weight' has shape [3, 5]") && m.contains("shape [4, 5]"),
        "{m}"
    );
    assert!(m.contains("'model/fc.bias' has shape [3]"), "{m}");
    assert!(
        m.contains("model/scale64"),
        "entries the model lacks are listed too: {m}"
    );

    // Missing and unexpected names; nothing is copied when anything mismatches.
    let vs = VarStore::new(Device::Cpu);
    let _ = nn::linear(vs.root() / "fc", 5, 3, Default::default());
    let extra = vs.root().zeros("extra", &[2]);
    let w_before = bytes(&vs.variables()["fc.weight"]);
    let m = checkpoint_error(loaded.apply_to_var_store(&vs));
    assert!(m.contains("extra"), "{m}");
    assert_eq!(
        bytes(&vs.variables()["fc.weight"]),
        w_before,
        "nothing copied"
    );
    let named = vec![
        (
            "fc.weight".to_owned(),
            vs.variables()["fc.weight"].shallow_clone(),
        ),
        (
            "fc.bias".to_owned(),
            vs.variables()["fc.bias"].shallow_clone(),
        ),
    ];
    let m = checkpoint_error(loaded.apply_to_tensors(&named));
    assert!(
        m.contains("model/scale64") && m.contains("model/running_mean"),
        "{m}"
    );
    drop(extra);

    // Files that are not checkpoints of this layout.
    let foreign = dir.path().join("foreign.safetensors");
    Tensor::write_safetensors(
        &[("weight", Tensor::zeros([2], tch::kind::FLOAT_CPU))],
        &foreign,
    )
    .expect("write");
    let m = checkpoint_error(Checkpoint::load(&foreign));
    assert!(m.contains("meta/format_version"), "{m}");

    let version = |v: i64| Tensor::from_slice(&[v]).view(());
    let newer = dir.path().join("newer.safetensors");
    Tensor::write_safetensors(
        &[
            ("meta/format_version", version(3)),
            ("meta/epoch", version(0)),
            ("meta/step", version(0)),
        ],
        &newer,
    )
    .expect("write");
    let m = checkpoint_error(Checkpoint::load(&newer));
    assert!(m.contains("version 3"), "{m}");

    // Version 2 without its checksums.
    let unchecked = dir.path().join("unchecked.safetensors");
    Tensor::write_safetensors(
        &[
            ("meta/format_version", version(2)),
            ("meta/epoch", version(0)),
            ("meta/step", version(0)),
        ],
        &unchecked,
    )
    .expect("write");
    let m = checkpoint_error(Checkpoint::load(&unchecked));
    assert!(m.contains("no 'meta/checksums' entry"), "{m}");

    let unknown = dir.path().join("unknown.safetensors");
    Tensor::write_safetensors(
        &[
            ("meta/format_version", version(1)),
            ("meta/epoch", version(0)),
            ("meta/step", version(0)),
            ("weights/fc", Tensor::zeros([2], tch::kind::FLOAT_CPU)),
        ],
        &unknown,
    )
    .expect("write");
    let m = checkpoint_error(Checkpoint::load(&unknown));
    assert!(m.contains("'weights/fc'"), "{m}");

    let partial = dir.path().join("partial.safetensors");
    Tensor::write_safetensors(
        &[
            ("meta/format_version", version(1)),
            ("meta/epoch", version(0)),
            ("meta/step", version(0)),
            ("sampler/epoch", version(3)),
        ],
        &partial,
    )
    .expect("write");
    let m = checkpoint_error(Checkpoint::load(&partial));
    assert!(m.contains("sampler/seed"), "{m}");

    let wrong_kind = dir.path().join("kind.safetensors");
    Tensor::write_safetensors(
        &[
            ("meta/format_version", version(1)),
            ("meta/epoch", Tensor::from_slice(&[0.5f32]).view(())),
            ("meta/step", version(0)),
        ],
        &wrong_kind,
    )
    .expect("write");
    let m = checkpoint_error(Checkpoint::load(&wrong_kind));
    assert!(m.contains("'meta/epoch'"), "{m}");

    // An enabled scaler needs a saved state.
    let mut scaler = GradScaler::new(GradScalerConfig::default()).expect("scaler");
    let m = checkpoint_error(loaded.apply_to_scaler(&mut scaler));
    assert!(m.contains("loss scaler"), "{m}");

    // Complex tensors cannot be stored; the error names the tensor and nothing is written.
    let complex = Checkpoint::new(0, 1).with_named_tensors([(
        "z".to_owned(),
        Tensor::zeros([2], (Kind::ComplexFloat, Device::Cpu)),
    )]);
    let target = dir.path().join("complex.safetensors");
    let m = checkpoint_error(complex.save(&target));
    assert!(m.contains("'model/z'") && m.contains("ComplexFloat"), "{m}");
    assert!(!target.exists());
}

#[test]
fn rank_zero_writes_and_every_rank_learns_the_path() {
    let _g = serial();
    let dir = tempfile::tempdir().expect("tempdir");
    let manager = CheckpointManager::new(dir.path(), 2).expect("manager");
    let built = std::sync::atomic::AtomicUsize::new(0);
    let paths = threads::run_ranks(2, |pg| {
        let ok = manager
            .save_on_rank0(&pg, || {
                built.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                Ok(small_checkpoint(5))
            })
            .expect("save");
        let failed = manager.save_on_rank0(&pg, || {
            Err(DdpError::Checkpoint("no disk today".to_owned()))
        });
        let failure = match failed {
            Err(DdpError::Checkpoint(m)) => m,
            other => panic!("expected an error on every rank, got {other:?}"),
        };
        // Every rank loads the same file.
        let loaded = Checkpoint::load(&ok).expect("load");
        (ok, failure, step_value(&loaded))
    });
    assert_eq!(
        built.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "built on rank 0 only"
    );
    for (rank, (path, failure, value)) in paths.into_iter().enumerate() {
        assert_eq!(path, manager.path_for_step(5), "rank {rank}");
        assert_eq!(value, 5.0);
        if rank == 0 {
            assert!(failure.contains("no disk today"), "{failure}");
        } else {
            assert!(failure.contains("rank 0 failed"), "{failure}");
        }
    }
}

/// The seeds of the fuzz target `checkpoint_file` (`fuzz/corpus/checkpoint_file/seed-*`) are
/// files of this writer that load: a full checkpoint (every group, bf16 and f64 tensors), one
/// with the `meta` entries only, and a version-1 file (no checksums, so mutations reach the
/// layout checks). `DDP_PROBE_WRITE_FUZZ_SEEDS=1` writes them afresh first.
#[test]
fn the_checkpoint_fuzz_target_seeds_are_files_of_this_writer() {
    let _g = serial();
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/corpus/checkpoint_file");
    if std::env::var_os("DDP_PROBE_WRITE_FUZZ_SEEDS").is_some() {
        let model = Model::new();
        let mut opt = Optimizer::new(OptimizerKind::adamw(0.01), model.params());
        model.train_step(&mut opt);
        let scaler = GradScaler::new(GradScalerConfig::default()).expect("scaler");
        full_checkpoint(&model, &opt, &scaler, 40)
            .save(dir.join("seed-full.safetensors"))
            .expect("save");
        Checkpoint::new(0, 1)
            .save(dir.join("seed-meta-only.safetensors"))
            .expect("save");
        let version = |v: i64| Tensor::from_slice(&[v]).view(());
        Tensor::write_safetensors(
            &[
                ("meta/format_version", version(1)),
                ("meta/epoch", version(2)),
                ("meta/step", version(7)),
                ("model/w", Tensor::from_slice(&[1.5f32, -2.0]).view([2, 1])),
                ("sampler/epoch", version(2)),
                ("sampler/seed", version(5)),
            ],
            dir.join("seed-version-1.safetensors"),
        )
        .expect("write");
    }
    let full = Checkpoint::load(dir.join("seed-full.safetensors")).expect("full seed");
    assert!(full.sampler.is_some() && full.scaler.is_some() && full.rng.is_some());
    assert_eq!(full.model.len(), 7);
    let meta = Checkpoint::load(dir.join("seed-meta-only.safetensors")).expect("meta seed");
    assert_eq!((meta.epoch, meta.step, meta.model.len()), (0, 1, 0));
    let v1 = Checkpoint::load(dir.join("seed-version-1.safetensors")).expect("version-1 seed");
    assert_eq!((v1.epoch, v1.step), (2, 7));
    assert_eq!(
        Vec::<f32>::try_from(&v1.model[0].1.flatten(0, -1)).unwrap(),
        [1.5, -2.0]
    );
}
