//! Training programs built on the reference DDP, and what they share: the breast-cancer data
//! set of `train`, the text corpus of `lm`, batching over a [`ddp::DistributedSampler`], and
//! rank-0 logging.
//!
//! Every program runs under `ddp-probe run --nproc-per-node N -- <program>`, under torchrun-style
//! environment variables set by hand, or alone (one rank).

pub mod cancer;

use comm::ProcessGroup;
use ddp::DistributedSampler;

/// Prints from rank 0 only (every rank's output is in the run directory anyway).
#[macro_export]
macro_rules! log0 {
    ($pg:expr, $($arg:tt)*) => {
        if $pg.rank() == 0 {
            println!($($arg)*);
        }
    };
}

/// How a [`DistributedSampler`]'s indices split into batches (`DataLoader(drop_last=True)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochPlan {
    /// Batches each rank runs per epoch.
    pub batches_per_rank: usize,
    /// Samples all ranks together train on per epoch.
    pub samples_per_epoch: usize,
    /// Training samples of the data set that no rank sees in an epoch.
    pub dropped: usize,
}

impl EpochPlan {
    /// The plan for a data set of `len` samples over `world` ranks with `batch` per rank.
    pub fn new(sampler: &DistributedSampler, batch: usize, world: usize) -> EpochPlan {
        let batches_per_rank = sampler.num_samples() / batch.max(1);
        let samples_per_epoch = batches_per_rank * batch * world;
        EpochPlan {
            batches_per_rank,
            samples_per_epoch,
            dropped: sampler.dataset_len().saturating_sub(samples_per_epoch),
        }
    }
}

/// This rank's batches of one epoch: the sampler's indices cut into `batch`-sized groups, the
/// last incomplete group dropped.
pub fn epoch_batches(
    sampler: &DistributedSampler,
    batch: usize,
) -> Result<Vec<Vec<usize>>, ddp::SamplerError> {
    Ok(sampler
        .indices()?
        .chunks_exact(batch.max(1))
        .map(<[usize]>::to_vec)
        .collect())
}

/// Steps left out of the step-time statistic that [`print_step_time`] prints.
pub const WARMUP_STEPS: usize = 3;

/// Prints from rank 0 the median of this rank's step times after [`WARMUP_STEPS`] warm-up steps,
/// averaged over the ranks (every rank must call it): `step time: median X ms over N steps ...`.
/// Measured in the program itself (not from the trace), so that runs with recording on and off
/// compare (`bench/overhead`), and so that `bench/run` compares it with PyTorch's DDP.
pub fn print_step_time(pg: &ProcessGroup, step_ms: &[f64]) -> Result<(), ddp::DdpError> {
    let warm = WARMUP_STEPS.min(step_ms.len());
    let mut steady = step_ms[warm..].to_vec();
    if steady.is_empty() {
        return Ok(());
    }
    steady.sort_by(f64::total_cmp);
    let median = ddp::metrics::average(pg, steady[steady.len() / 2])?;
    let threads = tch::get_num_threads();
    log0!(
        pg,
        "step time: median {median:.3} ms over {} steps after {warm} warm-up steps (mean of the \
         ranks' medians; {threads} thread{} per rank)",
        steady.len(),
        if threads == 1 { "" } else { "s" }
    );
    Ok(())
}
