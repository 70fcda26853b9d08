//! Training programs built on the reference DDP, and what they share: the breast-cancer data
//! set of `train`, the text corpus of `lm`, batching over a [`ddp::DistributedSampler`], and
//! rank-0 logging.
//!
//! Every program runs under `ddp-probe run --nproc-per-node N -- <program>`, under torchrun-style
//! environment variables set by hand, or alone (one rank).

pub mod cancer;

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
