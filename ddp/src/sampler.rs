//! `torch.utils.data.DistributedSampler`, index for index.
//!
//! [`DistributedSampler`] gives each rank the same indices as PyTorch's sampler
//! with the same arguments. Shuffling needs `torch.randperm(n, generator=g)`
//! after `g.manual_seed(seed + epoch)`; rather than touching libtorch's global
//! generator (or any libtorch state), this module re-implements the pieces of
//! PyTorch's CPU generator involved:
//!
//! * [`Mt19937`]: `at::mt19937`, a standard 32-bit Mersenne Twister. Seeding
//!   (`CPUGeneratorImpl::set_current_seed`, reached from `manual_seed`) keeps
//!   only the low 32 bits of the 64-bit seed (`state[0] = seed & 0xffffffff`,
//!   then the usual `1812433253` recurrence).
//! * [`CpuGenerator`]: `at::CPUGeneratorImpl`'s `random()` (one 32-bit draw)
//!   and `random64()` (two draws, the first one the high half).
//! * [`randperm`]: `randperm_cpu` of `aten/src/ATen/native/TensorFactories.cpp`.
//!   For `n < u32::MAX / 20` (= 214 748 364) it starts from the identity and,
//!   for `i` in `0..n-1`, swaps element `i` with element `i + random() % (n-i)`
//!   (one 32-bit draw per step). From that size on it switches to the
//!   "inside-out" Fisher-Yates with 64-bit draws: for `i` in `0..n`,
//!   `z = random64() % (i + 1)`, `r[i] = r[z]`, `r[z] = i`.
//!
//! The sampler itself follows `torch/utils/data/distributed.py`: with
//! `drop_last` and a length not divisible by the number of replicas,
//! `num_samples = ceil((len - replicas) / replicas)` (that is
//! `len / replicas` rounded down), otherwise `ceil(len / replicas)`;
//! `total_size = num_samples * replicas`. Without `drop_last` the (possibly
//! shuffled) index list is padded by repeating it from its start (several times
//! when the padding is longer than the list); with `drop_last` it is cut to
//! `total_size`. Rank `r` takes `indices[r..total_size]` with step `replicas`.

/// Errors from building or iterating a [`DistributedSampler`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SamplerError {
    /// `rank` is not in `0..num_replicas` (PyTorch raises `ValueError`).
    #[error("Invalid rank {rank}, rank should be in the interval [0, {}]", last_rank(.num_replicas))]
    InvalidRank {
        /// The rank given.
        rank: usize,
        /// The number of replicas given.
        num_replicas: usize,
    },
    /// `seed + epoch` does not fit the generator's 64-bit seed (PyTorch's
    /// `manual_seed` raises an overflow error).
    #[error("seed {seed} + epoch {epoch} overflows the 64-bit generator seed")]
    SeedOverflow {
        /// The sampler's seed.
        seed: u64,
        /// The epoch set.
        epoch: u64,
    },
}

/// The largest valid rank for `num_replicas`, as PyTorch prints it (-1 for 0).
fn last_rank(num_replicas: &usize) -> i128 {
    *num_replicas as i128 - 1
}

const N: usize = 624;
const M: usize = 397;
const MATRIX_A: u32 = 0x9908_b0df;
const UPPER_MASK: u32 = 0x8000_0000;
const LOWER_MASK: u32 = 0x7fff_ffff;

/// `at::mt19937`: the 32-bit Mersenne Twister behind PyTorch's CPU generator.
#[derive(Clone)]
pub struct Mt19937 {
    state: [u32; N],
    next: usize,
}

impl Mt19937 {
    /// Seeds the engine as `at::mt19937(seed)` does: only the low 32 bits of
    /// `seed` are used.
    pub fn new(seed: u64) -> Self {
        let mut state = [0u32; N];
        state[0] = (seed & 0xffff_ffff) as u32;
        for j in 1..N {
            let prev = state[j - 1];
            state[j] = 1_812_433_253u32
                .wrapping_mul(prev ^ (prev >> 30))
                .wrapping_add(j as u32);
        }
        Self { state, next: N }
    }

    /// The next 32-bit output.
    pub fn next_u32(&mut self) -> u32 {
        if self.next >= N {
            self.twist();
        }
        let mut y = self.state[self.next];
        self.next += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^= y >> 18;
        y
    }

    fn twist(&mut self) {
        let s = &mut self.state;
        for k in 0..N {
            let y = (s[k] & UPPER_MASK) | (s[(k + 1) % N] & LOWER_MASK);
            let mag = if y & 1 == 1 { MATRIX_A } else { 0 };
            s[k] = s[(k + M) % N] ^ (y >> 1) ^ mag;
        }
        self.next = 0;
    }
}

impl std::fmt::Debug for Mt19937 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mt19937")
            .field("next", &self.next)
            .finish_non_exhaustive()
    }
}

/// The seed of a fresh `torch.Generator()` (`c10::detail::default_rng_seed_val`).
pub const DEFAULT_CPU_SEED: u64 = 67_280_421_310_721;

/// The draws of `at::CPUGeneratorImpl` that `randperm` uses.
#[derive(Debug, Clone)]
pub struct CpuGenerator {
    engine: Mt19937,
    seed: u64,
}

impl Default for CpuGenerator {
    fn default() -> Self {
        Self::new(DEFAULT_CPU_SEED)
    }
}

impl CpuGenerator {
    /// A generator in the state `torch.Generator().manual_seed(seed)` leaves.
    pub fn new(seed: u64) -> Self {
        Self {
            engine: Mt19937::new(seed),
            seed,
        }
    }

    /// `manual_seed(seed)`.
    pub fn manual_seed(&mut self, seed: u64) {
        *self = Self::new(seed);
    }

    /// The seed last set (`initial_seed()`).
    pub fn initial_seed(&self) -> u64 {
        self.seed
    }

    /// `CPUGeneratorImpl::random()`: one 32-bit draw.
    pub fn random(&mut self) -> u32 {
        self.engine.next_u32()
    }

    /// `CPUGeneratorImpl::random64()`: two draws, the first the high half.
    pub fn random64(&mut self) -> u64 {
        let hi = u64::from(self.engine.next_u32());
        let lo = u64::from(self.engine.next_u32());
        (hi << 32) | lo
    }
}

/// From this `n` on, `randperm` draws 64-bit numbers (`UINT32_MAX / 20`).
pub const RANDPERM_64BIT_FROM: usize = (u32::MAX / 20) as usize;

/// `torch.randperm(n, generator=gen)` on the CPU (torch 2.13), advancing
/// `gen` exactly as PyTorch does.
pub fn randperm(n: usize, gen: &mut CpuGenerator) -> Vec<usize> {
    let mut r: Vec<usize> = (0..n).collect();
    if n < RANDPERM_64BIT_FROM {
        for i in 0..n.saturating_sub(1) {
            let z = gen.random() as usize % (n - i);
            r.swap(i, i + z);
        }
    } else {
        for i in 0..n {
            // `i + 1 <= n`, which fits in u64 on every supported platform.
            let z = (gen.random64() % (i as u64 + 1)) as usize;
            r[i] = r[z];
            r[z] = i;
        }
    }
    r
}

/// `torch.utils.data.DistributedSampler` over a dataset of a given length.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DistributedSampler {
    dataset_len: usize,
    num_replicas: usize,
    rank: usize,
    shuffle: bool,
    seed: u64,
    drop_last: bool,
    epoch: u64,
    num_samples: usize,
    total_size: usize,
}

impl DistributedSampler {
    /// `DistributedSampler(dataset, num_replicas, rank, shuffle, seed,
    /// drop_last)` for a dataset of `dataset_len` items, at epoch 0.
    ///
    /// PyTorch's seed is a Python int; seeds here are the unsigned 64-bit
    /// values `manual_seed` ends up with (a negative Python seed `s` is
    /// `2^64 + s`, as long as `seed + epoch` stays negative in Python).
    pub fn new(
        dataset_len: usize,
        num_replicas: usize,
        rank: usize,
        shuffle: bool,
        seed: u64,
        drop_last: bool,
    ) -> Result<Self, SamplerError> {
        if rank >= num_replicas {
            return Err(SamplerError::InvalidRank { rank, num_replicas });
        }
        let num_samples = if drop_last {
            // ceil((len - R) / R) for len % R != 0 is floor(len / R), the same
            // as len / R when R divides len.
            dataset_len / num_replicas
        } else {
            dataset_len.div_ceil(num_replicas)
        };
        Ok(Self {
            dataset_len,
            num_replicas,
            rank,
            shuffle,
            seed,
            drop_last,
            epoch: 0,
            num_samples,
            total_size: num_samples * num_replicas,
        })
    }

    /// `set_epoch(epoch)`: with shuffling, each epoch gets its own order.
    pub fn set_epoch(&mut self, epoch: u64) {
        self.epoch = epoch;
    }

    /// The epoch last set.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// Indices this rank yields per epoch (`len(sampler)`).
    pub fn num_samples(&self) -> usize {
        self.num_samples
    }

    /// `num_samples * num_replicas`.
    pub fn total_size(&self) -> usize {
        self.total_size
    }

    /// The dataset length.
    pub fn dataset_len(&self) -> usize {
        self.dataset_len
    }

    /// This sampler's rank.
    pub fn rank(&self) -> usize {
        self.rank
    }

    /// The number of replicas.
    pub fn num_replicas(&self) -> usize {
        self.num_replicas
    }

    /// The indices of the current epoch for this rank (`list(iter(sampler))`).
    pub fn indices(&self) -> Result<Vec<usize>, SamplerError> {
        let mut indices = if self.shuffle {
            let seed = self
                .seed
                .checked_add(self.epoch)
                .ok_or(SamplerError::SeedOverflow {
                    seed: self.seed,
                    epoch: self.epoch,
                })?;
            randperm(self.dataset_len, &mut CpuGenerator::new(seed))
        } else {
            (0..self.dataset_len).collect()
        };
        if self.drop_last {
            indices.truncate(self.total_size);
        } else if self.total_size > indices.len() {
            // total_size > 0 implies a non-empty dataset, so `cycle` repeats
            // the list from its start as many times as needed.
            let padding = self.total_size - indices.len();
            let pad: Vec<usize> = indices.iter().copied().cycle().take(padding).collect();
            indices.extend(pad);
        }
        Ok(indices
            .into_iter()
            .skip(self.rank)
            .step_by(self.num_replicas)
            .take(self.num_samples)
            .collect())
    }
}
