//! `train`: the classic DDP tutorial job on the reference DDP — binary classification of the
//! Breast Cancer Wisconsin (Diagnostic) data set with an MLP, a DistributedSampler, distributed
//! validation and rank-0 checkpoints.
//!
//! Run it with `ddp-probe run --nproc-per-node 2 -- target/release/train`, with torchrun's
//! variables set by hand, or alone.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use ddp::checkpoint::{Checkpoint, CheckpointManager};
use ddp::metrics::Accuracy;
use ddp::{Ddp, DdpOptions, DistributedSampler, Optimizer, OptimizerKind};
use ddp_examples::{cancer, epoch_batches, log0, EpochPlan};
use probe::trace::SpanKind;
use tch::nn::{self, Module};
use tch::{Device, Kind, Tensor};

/// Command line of `train`.
#[derive(Debug, Parser)]
#[command(about = "Train an MLP on the breast-cancer data set with the reference DDP.")]
struct Args {
    /// Epochs to train.
    #[arg(long, default_value_t = 20)]
    epochs: u64,
    /// Stop after this many steps in total (all epochs), if given.
    #[arg(long)]
    steps: Option<u64>,
    /// Samples per batch on each rank.
    #[arg(long, default_value_t = 8)]
    batch_size: usize,
    /// Adam's learning rate.
    #[arg(long, default_value_t = 1e-3)]
    lr: f64,
    /// Seed of the initialisation, the data split and the sampler's shuffling.
    #[arg(long, default_value_t = 42)]
    seed: u64,
    /// Gradient bucket cap in MiB [default: DDP_PROBE_BUCKET_CAP_MB, else PyTorch's 25].
    #[arg(long)]
    bucket_cap_mb: Option<f64>,
    /// Where rank 0 writes checkpoints [default: <run dir>/checkpoints under ddp-probe run, else
    /// ./checkpoints].
    #[arg(long)]
    checkpoint_dir: Option<PathBuf>,
    /// Write a checkpoint every N epochs (0: never).
    #[arg(long, default_value_t = 5)]
    checkpoint_every: u64,
    /// Resume from the newest checkpoint in --checkpoint-dir, if there is one.
    #[arg(long)]
    resume: bool,
}

/// 30 → 64 → 32 → 1 with ReLU.
fn model(vs: &nn::Path<'_>) -> impl Module {
    nn::seq()
        .add(nn::linear(
            vs / "fc1",
            cancer::FEATURES as i64,
            64,
            Default::default(),
        ))
        .add_fn(|x| x.relu())
        .add(nn::linear(vs / "fc2", 64, 32, Default::default()))
        .add_fn(|x| x.relu())
        .add(nn::linear(vs / "fc3", 32, 1, Default::default()))
}

fn tensors(data: &cancer::Dataset) -> (Tensor, Tensor) {
    let x = Tensor::from_slice(&data.features).view([data.len() as i64, cancer::FEATURES as i64]);
    let y = Tensor::from_slice(&data.labels).view([data.len() as i64, 1]);
    (x, y)
}

fn main() -> ExitCode {
    let args = Args::parse();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("train: error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<(), Box<dyn std::error::Error>> {
    if args.batch_size == 0 {
        return Err("--batch-size must be at least 1".into());
    }
    let pg = ddp::init_process_group(Default::default())?;
    let (rank, world) = (pg.rank(), pg.world_size());

    let data = cancer::parse(cancer::CSV)?;
    let (mut train, mut test) = cancer::split(&data, args.seed);
    let reference = train.clone();
    cancer::standardize(&reference, &mut [&mut train, &mut test]);
    let (train_x, train_y) = tensors(&train);
    let (test_x, test_y) = tensors(&test);

    tch::manual_seed(args.seed as i64);
    let vs = nn::VarStore::new(Device::Cpu);
    let net = model(&vs.root());
    let mut options = DdpOptions::from_env()?;
    if let Some(mb) = args.bucket_cap_mb {
        options.bucket_cap_mb = Some(mb);
    }
    let mut ddp = Ddp::new(&vs, pg.clone(), options)?;
    let params = ddp.parameters();
    let numel: usize = params.iter().map(Tensor::numel).sum();
    log0!(
        pg,
        "train: {} parameter tensors, {numel} parameters",
        params.len()
    );
    let mut opt = Optimizer::new(OptimizerKind::adam(args.lr), params);

    let mut sampler = DistributedSampler::new(train.len(), world, rank, true, args.seed, false)?;
    let plan = EpochPlan::new(&sampler, args.batch_size, world);
    log0!(
        pg,
        "rank 0 of {world}: {} training samples, {} test samples; {} batches per rank of {} samples, \
         {} samples per epoch, {} dropped",
        train.len(),
        test.len(),
        plan.batches_per_rank,
        args.batch_size,
        plan.samples_per_epoch,
        plan.dropped
    );

    // Checkpoints: rank 0 writes them; every rank resumes from the newest one.
    let ckpt_dir = args.checkpoint_dir.clone().unwrap_or_else(|| {
        std::env::var_os("DDP_PROBE_RUN_DIR")
            .map(|d| PathBuf::from(d).join("checkpoints"))
            .unwrap_or_else(|| PathBuf::from("checkpoints"))
    });
    let checkpoints = CheckpointManager::new(&ckpt_dir, 3)?;
    let mut first_epoch = 0;
    let mut steps = 0u64;
    let mut step_ms = Vec::new();
    if args.resume {
        let resumed = ddp.timed(SpanKind::CheckpointLoad, || checkpoints.load_latest_valid())?;
        for (path, why) in &resumed.refused {
            log0!(
                pg,
                "checkpoint {} refused ({why}); trying the previous one",
                path.display()
            );
        }
        if let Some((_, ckpt)) = resumed.loaded {
            ckpt.apply_to_var_store(&vs)?;
            ckpt.apply_to_optimizer(&mut opt)?;
            first_epoch = ckpt.epoch;
            steps = ckpt.step;
            log0!(
                pg,
                "resumed from the checkpoint of epoch {} (step {}) in {}",
                ckpt.epoch,
                ckpt.step,
                ckpt_dir.display()
            );
        } else {
            log0!(
                pg,
                "no checkpoint in {} yet: starting from scratch",
                ckpt_dir.display()
            );
        }
    }

    'epochs: for epoch in first_epoch..args.epochs {
        sampler.set_epoch(epoch);
        let mut loss_sum = 0f64;
        let batches = epoch_batches(&sampler, args.batch_size)?;
        for batch in &batches {
            if args.steps.is_some_and(|limit| steps >= limit) {
                break 'epochs;
            }
            let began = std::time::Instant::now();
            ddp.begin_step();
            let (x, y) = ddp.timed(SpanKind::DataWait, || {
                let idx = Tensor::from_slice(&batch.iter().map(|&i| i as i64).collect::<Vec<_>>());
                (train_x.index_select(0, &idx), train_y.index_select(0, &idx))
            });
            let logits = ddp.forward(|| net.forward(&x))?;
            // Samples this rank trained on in this step: the summary's throughput.
            ddp.recorder()
                .counter(probe::analysis::SAMPLES_COUNTER, batch.len() as f64);
            let loss = logits.binary_cross_entropy_with_logits::<Tensor>(
                &y,
                None,
                None,
                tch::Reduction::Mean,
            );
            ddp.backward(&loss)?;
            ddp.optimizer_step(|| opt.step())?;
            opt.zero_grad()?;
            loss_sum += loss.double_value(&[]);
            ddp.end_step();
            step_ms.push(began.elapsed().as_secs_f64() * 1e3);
            steps += 1;
        }
        let mean_loss = ddp::metrics::average(&pg, loss_sum / batches.len().max(1) as f64)?;
        let accuracy = evaluate(&net, &test_x, &test_y, rank, world)?.reduce(&pg)?;
        log0!(
            pg,
            "epoch {epoch:>3}: train loss {mean_loss:.4}, test accuracy {:.2}% ({}/{})",
            100.0 * accuracy.fraction().unwrap_or(0.0),
            accuracy.correct,
            accuracy.total
        );
        if args.checkpoint_every > 0 && (epoch + 1).is_multiple_of(args.checkpoint_every) {
            let path = ddp.timed(SpanKind::CheckpointSave, || {
                checkpoints.save_on_rank0(&pg, || {
                    Ok(Checkpoint::new(epoch + 1, steps)
                        .with_var_store(&vs)
                        .with_optimizer(&opt)
                        .with_sampler(epoch + 1, args.seed))
                })
            })?;
            log0!(
                pg,
                "checkpoint of epoch {} written to {}",
                epoch + 1,
                path.display()
            );
        }
    }
    log0!(pg, "done: {steps} steps per rank");
    ddp_examples::print_step_time(&pg, &step_ms)?;
    ddp.finish("ok")?;
    Ok(())
}

/// This rank's share of the test set (samples rank, rank+world, ...; no padding, so every test
/// sample is counted exactly once over the ranks).
fn evaluate(
    net: &impl Module,
    x: &Tensor,
    y: &Tensor,
    rank: usize,
    world: usize,
) -> Result<Accuracy, ddp::DdpError> {
    let n = x.size()[0] as usize;
    let mine: Vec<i64> = (rank..n).step_by(world).map(|i| i as i64).collect();
    let mut acc = Accuracy::new();
    if mine.is_empty() {
        return Ok(acc);
    }
    let idx = Tensor::from_slice(&mine);
    let (xs, ys) = (x.index_select(0, &idx), y.index_select(0, &idx));
    let predicted = tch::no_grad(|| net.forward(&xs))
        .ge(0.0)
        .to_kind(Kind::Float);
    let correct = predicted
        .eq_tensor(&ys)
        .to_kind(Kind::Int64)
        .sum(Kind::Int64)
        .int64_value(&[]);
    acc.add(correct as u64, mine.len() as u64)?;
    Ok(acc)
}
