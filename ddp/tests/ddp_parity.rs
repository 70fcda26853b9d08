//! The reference DDP against its independent truth: after K steps, 2 (or 3) ranks that each
//! train on their shard of every global batch hold exactly the parameters that one process
//! reaches on the whole batch (same initialisation, same data, SGD). Also: the initial
//! broadcast, no_sync accumulation, find_unused_parameters, the unused-parameter error, fp16
//! compression, and the trace invariants of the instrumentation.

use std::sync::Arc;
use std::time::Duration;

use comm::{GroupOptions, ProcessGroup, StoreClient, StoreServer, Token, TransportChoice};
use ddp::{Compression, Ddp, DdpError, DdpOptions};
use probe::recorder::Recorder;
use probe::trace::{Header, SpanKind};
use tch::nn::{self, Module, VarStore};
use tch::{Device, Tensor};

const IN: i64 = 12;
const HIDDEN: i64 = 16;
const OUT: i64 = 3;

/// A small MLP; `with_unused` adds a layer (`spare`) that forward never uses.
struct Mlp {
    layers: Vec<nn::Linear>,
    _unused: Option<nn::Linear>,
}

impl Mlp {
    fn new(vs: &VarStore, with_unused: bool) -> Mlp {
        let root = vs.root();
        let layers = vec![
            nn::linear(&root / "fc1", IN, HIDDEN, Default::default()),
            nn::linear(&root / "fc2", HIDDEN, HIDDEN, Default::default()),
            nn::linear(&root / "fc3", HIDDEN, OUT, Default::default()),
        ];
        let unused =
            with_unused.then(|| nn::linear(&root / "spare", HIDDEN, OUT, Default::default()));
        Mlp {
            layers,
            _unused: unused,
        }
    }

    fn forward(&self, x: &Tensor) -> Tensor {
        let h = self.layers[0].forward(x).tanh();
        let h = self.layers[1].forward(&h).tanh();
        self.layers[2].forward(&h)
    }
}

/// Deterministic values from a seed (no libtorch global RNG: ranks are threads of one process).
fn values(seed: u64, n: usize) -> Vec<f32> {
    let mut rng = fastrand::Rng::with_seed(seed);
    (0..n).map(|_| rng.f32() - 0.5).collect()
}

/// Sets every parameter of `vs` from `seed` (parameters in creation order).
fn init(vs: &VarStore, seed: u64) {
    tch::no_grad(|| {
        for (i, mut p) in vs.trainable_variables().into_iter().enumerate() {
            let v = values(seed * 1000 + i as u64, p.numel());
            p.copy_(&Tensor::from_slice(&v).view(p.size().as_slice()));
        }
    });
}

/// The global batch of step `step`: inputs and targets.
fn batch(step: usize, size: usize) -> (Tensor, Tensor) {
    let x =
        Tensor::from_slice(&values(77 + step as u64, size * IN as usize)).view([size as i64, IN]);
    let y =
        Tensor::from_slice(&values(99 + step as u64, size * OUT as usize)).view([size as i64, OUT]);
    (x, y)
}

fn sgd(params: &[Tensor], lr: f64) {
    tch::no_grad(|| {
        for p in params {
            let g = p.grad();
            if g.defined() {
                let mut p = p.shallow_clone();
                p -= g * lr;
            }
        }
    });
}

fn zero_grad(params: &[Tensor]) {
    for p in params {
        let mut g = p.grad();
        if g.defined() {
            let _ = g.zero_();
        }
    }
}

/// Runs `f(rank, pg)` on `world` ranks (threads, loopback TCP or shared memory).
fn run_ranks<R: Send>(
    world: usize,
    transport: TransportChoice,
    f: impl Fn(usize, Arc<ProcessGroup>) -> R + Sync,
) -> Vec<R> {
    tch::set_num_threads(1);
    let token = Token::generate().unwrap();
    let server = StoreServer::bind("127.0.0.1:0", token.clone()).unwrap();
    let addr = server.local_addr();
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..world)
            .map(|rank| {
                let (token, f) = (token.clone(), &f);
                s.spawn(move || {
                    let store =
                        StoreClient::connect(addr, &token, Duration::from_secs(10)).unwrap();
                    let options = GroupOptions {
                        timeout: Duration::from_secs(20),
                        transport,
                        ..GroupOptions::default()
                    };
                    let pg = Arc::new(ProcessGroup::new(rank, world, &store, options).unwrap());
                    f(rank, pg)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("rank panicked"))
            .collect()
    })
}

/// Single-process training on the whole global batch: the truth.
fn reference(steps: usize, global: usize, lr: f64, accumulate: bool) -> Vec<Vec<f32>> {
    let vs = VarStore::new(Device::Cpu);
    let model = Mlp::new(&vs, false);
    init(&vs, 0);
    let params = vs.trainable_variables();
    for step in 0..steps {
        let (x, y) = batch(step, global);
        if accumulate {
            // Two micro-batches of half the global batch, losses averaged: same gradient.
            for half in 0..2 {
                let xs = x.narrow(0, (half * global / 2) as i64, (global / 2) as i64);
                let ys = y.narrow(0, (half * global / 2) as i64, (global / 2) as i64);
                let loss = model.forward(&xs).mse_loss(&ys, tch::Reduction::Mean) * 0.5;
                loss.backward();
            }
        } else {
            let loss = model.forward(&x).mse_loss(&y, tch::Reduction::Mean);
            loss.backward();
        }
        sgd(&params, lr);
        zero_grad(&params);
    }
    params
        .iter()
        .map(|p| Vec::<f32>::try_from(p.flatten(0, -1)).unwrap())
        .collect()
}

fn assert_close(got: &[Vec<f32>], want: &[Vec<f32>], tol: f32, what: &str) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        for (k, (a, b)) in g.iter().zip(w).enumerate() {
            assert!(
                (a - b).abs() <= tol * (1.0 + b.abs()),
                "{what}: param {i}[{k}]: {a} vs {b}"
            );
        }
    }
}

/// Trains on `world` ranks: each rank's shard of each global batch is contiguous.
fn distributed(
    world: usize,
    transport: TransportChoice,
    steps: usize,
    global: usize,
    options: DdpOptions,
    trace_dir: Option<&std::path::Path>,
) -> Vec<Vec<Vec<f32>>> {
    run_ranks(world, transport, |rank, pg| {
        let vs = VarStore::new(Device::Cpu);
        let model = Mlp::new(&vs, false);
        // Every rank starts differently: the construction broadcast must make them rank 0's.
        init(&vs, rank as u64 * 17);
        let (params, buffers) = ddp::named_parameters_and_buffers(&vs);
        let header = Header::new("parity", rank as u32, world as u32);
        let mut ddp =
            Ddp::with_recorder(
                params,
                buffers,
                pg,
                options.clone(),
                header,
                |h| match trace_dir {
                    Some(dir) => Recorder::create_in_dir(dir, h),
                    None => Ok(Recorder::disabled()),
                },
            )
            .unwrap();
        let params = ddp.parameters();
        let shard = global / world;
        for step in 0..steps {
            ddp.begin_step();
            let (x, y) = batch(step, global);
            let xs = x.narrow(0, (rank * shard) as i64, shard as i64);
            let ys = y.narrow(0, (rank * shard) as i64, shard as i64);
            let out = ddp.forward(|| model.forward(&xs)).unwrap();
            let loss = out.mse_loss(&ys, tch::Reduction::Mean);
            ddp.backward(&loss).unwrap();
            ddp.optimizer_step(|| sgd(&params, 0.1));
            zero_grad(&params);
            ddp.end_step();
        }
        ddp.finish("ok").unwrap();
        params
            .iter()
            .map(|p| Vec::<f32>::try_from(p.flatten(0, -1)).unwrap())
            .collect()
    })
}

#[test]
fn two_ranks_match_single_process_training_on_the_global_batch() {
    let want = reference(6, 16, 0.1, false);
    // Tiny buckets: several buckets, a rebuild after step 0, overlap from step 1 on.
    let options = DdpOptions::default().bucket_cap_mb(0.0005);
    for transport in [TransportChoice::Tcp, TransportChoice::Shm] {
        let ranks = distributed(2, transport, 6, 16, options.clone(), None);
        for (rank, got) in ranks.iter().enumerate() {
            assert_close(got, &want, 2e-5, &format!("{transport:?} rank {rank}"));
        }
        assert_eq!(
            ranks[0], ranks[1],
            "ranks must hold bitwise identical parameters"
        );
    }
}

#[test]
fn three_ranks_with_default_buckets_match_too() {
    let want = reference(4, 12, 0.1, false);
    let ranks = distributed(3, TransportChoice::Auto, 4, 12, DdpOptions::default(), None);
    for got in &ranks {
        assert_close(got, &want, 2e-5, "3 ranks");
    }
}

#[test]
fn fp16_compression_stays_close_to_the_exact_result() {
    let want = reference(3, 16, 0.1, false);
    let options = DdpOptions::default().compression(Compression::Fp16);
    let ranks = distributed(2, TransportChoice::Auto, 3, 16, options, None);
    assert_close(&ranks[0], &want, 2e-3, "fp16");
    assert_eq!(ranks[0], ranks[1]);
}

#[test]
fn no_sync_accumulates_locally_and_the_next_backward_synchronises() {
    // Reference: each global step = 2 micro-batches; rank r takes its shard of each.
    let want = reference(3, 16, 0.1, true);
    let ranks = run_ranks(2, TransportChoice::Auto, |rank, pg| {
        let vs = VarStore::new(Device::Cpu);
        let model = Mlp::new(&vs, false);
        init(&vs, 0);
        let (params, buffers) = ddp::named_parameters_and_buffers(&vs);
        let header = Header::new("nosync", rank as u32, 2);
        let mut ddp =
            Ddp::with_recorder(params, buffers, pg, DdpOptions::default(), header, |_| {
                Ok(Recorder::disabled())
            })
            .unwrap();
        let params = ddp.parameters();
        for step in 0..3 {
            let (x, y) = batch(step, 16);
            // Micro-batch h of the global batch is rows h*8..h*8+8; rank r takes 4 of them.
            let part = |h: i64| {
                let at = h * 8 + rank as i64 * 4;
                (x.narrow(0, at, 4), y.narrow(0, at, 4))
            };
            let (x0, y0) = part(0);
            ddp.no_sync(|ddp| {
                let out = ddp.forward(|| model.forward(&x0)).unwrap();
                ddp.backward(&(out.mse_loss(&y0, tch::Reduction::Mean) * 0.5))
                    .unwrap();
            });
            let (x1, y1) = part(1);
            let out = ddp.forward(|| model.forward(&x1)).unwrap();
            ddp.backward(&(out.mse_loss(&y1, tch::Reduction::Mean) * 0.5))
                .unwrap();
            sgd(&params, 0.1);
            zero_grad(&params);
        }
        params
            .iter()
            .map(|p| Vec::<f32>::try_from(p.flatten(0, -1)).unwrap())
            .collect::<Vec<_>>()
    });
    for got in &ranks {
        assert_close(got, &want, 2e-5, "no_sync");
    }
}

#[test]
fn a_parameter_without_gradient_is_named_unless_find_unused_parameters() {
    let results = run_ranks(2, TransportChoice::Auto, |rank, pg| {
        let vs = VarStore::new(Device::Cpu);
        let model = Mlp::new(&vs, true);
        init(&vs, 0);
        let (params, buffers) = ddp::named_parameters_and_buffers(&vs);
        let header = Header::new("unused", rank as u32, 2);
        let mut ddp =
            Ddp::with_recorder(params, buffers, pg, DdpOptions::default(), header, |_| {
                Ok(Recorder::disabled())
            })
            .unwrap();
        let (x, y) = batch(0, 8);
        let out = ddp.forward(|| model.forward(&x)).unwrap();
        ddp.backward(&out.mse_loss(&y, tch::Reduction::Mean))
            .unwrap_err()
    });
    for err in results {
        assert!(matches!(err, DdpError::UnusedParameters(_)), "{err}");
        let text = err.to_string();
        assert!(
            text.contains("spare.weight") && text.contains("spare.bias"),
            "{text}"
        );
        assert!(text.contains("find_unused_parameters"), "{text}");
    }

    // With find_unused_parameters the step goes through; used parameters are averaged and the
    // unused ones keep no gradient.
    let want = {
        let vs = VarStore::new(Device::Cpu);
        let model = Mlp::new(&vs, true);
        init(&vs, 0);
        let (x, y) = batch(0, 8);
        model
            .forward(&x)
            .mse_loss(&y, tch::Reduction::Mean)
            .backward();
        vs.trainable_variables()
            .iter()
            .map(|p| {
                let g = p.grad();
                g.defined()
                    .then(|| Vec::<f32>::try_from(g.flatten(0, -1)).unwrap())
            })
            .collect::<Vec<_>>()
    };
    let grads = run_ranks(2, TransportChoice::Auto, |rank, pg| {
        let vs = VarStore::new(Device::Cpu);
        let model = Mlp::new(&vs, true);
        init(&vs, 0);
        let (params, buffers) = ddp::named_parameters_and_buffers(&vs);
        let header = Header::new("unused", rank as u32, 2);
        let options = DdpOptions::default().find_unused_parameters(true);
        let mut ddp = Ddp::with_recorder(params, buffers, pg, options, header, |_| {
            Ok(Recorder::disabled())
        })
        .unwrap();
        let (x, y) = batch(0, 8);
        let (xs, ys) = (
            x.narrow(0, rank as i64 * 4, 4),
            y.narrow(0, rank as i64 * 4, 4),
        );
        let out = ddp.forward(|| model.forward(&xs)).unwrap();
        ddp.backward(&out.mse_loss(&ys, tch::Reduction::Mean))
            .unwrap();
        ddp.parameters()
            .iter()
            .map(|p| {
                let g = p.grad();
                g.defined()
                    .then(|| Vec::<f32>::try_from(g.flatten(0, -1)).unwrap())
            })
            .collect::<Vec<_>>()
    });
    for got in &grads {
        assert_eq!(got.len(), want.len());
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            match (g, w) {
                (Some(g), Some(w)) => assert_close(
                    std::slice::from_ref(g),
                    std::slice::from_ref(w),
                    2e-5,
                    &format!("grad {i}"),
                ),
                (None, None) => {}
                other => panic!("parameter {i}: gradient presence differs: {other:?}"),
            }
        }
    }
}

#[test]
fn the_trace_has_every_bucket_once_per_step_with_agreeing_sequence_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let steps = 5;
    distributed(
        2,
        TransportChoice::Auto,
        steps,
        16,
        DdpOptions::default().bucket_cap_mb(0.0005),
        Some(dir.path()),
    );
    let (run, warnings) = probe::reader::load_run(&[dir.path()]).unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    assert_eq!(run.ranks.len(), 2);

    let model_bytes: u64 = {
        let vs = VarStore::new(Device::Cpu);
        let _ = Mlp::new(&vs, false);
        vs.trainable_variables()
            .iter()
            .map(|p| (p.numel() * 4) as u64)
            .sum()
    };
    let mut seqs_per_rank = Vec::new();
    for rank in &run.ranks {
        let header = &rank.header;
        let ddp_cfg = header
            .ddp
            .as_ref()
            .expect("the header carries the DDP configuration");
        assert_eq!(ddp_cfg.params.len(), 6);
        let mut seqs = Vec::new();
        for step in 1..steps as u64 {
            // After the rebuild (before step 1): every bucket exactly once per step.
            let collectives: Vec<_> = rank
                .spans_of_kind(SpanKind::Collective)
                .filter(|s| s.step() == Some(step) && s.bucket().is_some())
                .collect();
            let layout = rank.layout_at(step).expect("a bucket layout");
            let mut ids: Vec<u32> = collectives.iter().map(|s| s.bucket().unwrap()).collect();
            let layout = &layout.buckets;
            ids.sort_unstable();
            assert_eq!(
                ids,
                (0..layout.len() as u32).collect::<Vec<_>>(),
                "step {step}"
            );
            let bytes: u64 = collectives.iter().map(|s| s.bytes().unwrap()).sum();
            assert_eq!(
                bytes, model_bytes,
                "bucket bytes add up to the model's gradient bytes"
            );
            seqs.extend(
                collectives
                    .iter()
                    .map(|s| (s.bucket().unwrap(), s.seq().unwrap())),
            );
            // Gradient-ready windows lie inside backward.
            let backward = rank
                .spans_of_kind(SpanKind::Backward)
                .find(|s| s.step() == Some(step))
                .expect("a backward span");
            for ready in rank
                .spans_of_kind(SpanKind::BucketReady)
                .filter(|s| s.step() == Some(step))
            {
                assert!(ready.start() >= backward.start() && ready.end() <= backward.end());
            }
        }
        seqs_per_rank.push(seqs);
    }
    assert_eq!(
        seqs_per_rank[0], seqs_per_rank[1],
        "sequence numbers agree across ranks"
    );
}
