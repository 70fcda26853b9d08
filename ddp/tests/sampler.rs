//! `randperm` and `DistributedSampler` against PyTorch 2.13's outputs
//! (`tests/data/sampler.json`, written by `tests/gen/gen_sampler.py`).

use ddp::sampler::{
    randperm, CpuGenerator, DistributedSampler, Mt19937, SamplerError, RANDPERM_64BIT_FROM,
};
use serde_json::Value;

fn fixture() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/sampler.json");
    let text = std::fs::read_to_string(path).expect("read sampler.json");
    serde_json::from_str(&text).expect("parse sampler.json")
}

/// The fixture's checksum: sum over i of (x_i + 1) * ((i + 1) * K), mod 2^64.
fn checksum(values: &[usize]) -> u64 {
    const K: u64 = 0x9E37_79B9_7F4A_7C15;
    values.iter().enumerate().fold(0u64, |acc, (i, &x)| {
        acc.wrapping_add((x as u64 + 1).wrapping_mul((i as u64 + 1).wrapping_mul(K)))
    })
}

fn u64_of(v: &Value) -> u64 {
    v.as_u64().unwrap_or_else(|| panic!("not a u64: {v}"))
}

fn seed_of(v: &Value) -> u64 {
    v.as_str().expect("seed string").parse().expect("seed")
}

fn usizes(v: &Value) -> Vec<usize> {
    v.as_array()
        .expect("array")
        .iter()
        .map(|x| u64_of(x) as usize)
        .collect()
}

/// Compares `got` with a stored `[len, checksum, head, tail]` summary.
fn check_summary(got: &[usize], summary: &[Value], what: &str) {
    let len = u64_of(&summary[0]) as usize;
    let sum: u64 = summary[1]
        .as_str()
        .expect("checksum")
        .parse()
        .expect("checksum");
    let head = usizes(&summary[2]);
    let tail = usizes(&summary[3]);
    assert_eq!(got.len(), len, "{what}: length");
    assert_eq!(&got[..head.len()], &head[..], "{what}: first elements");
    assert_eq!(&got[len - tail.len()..], &tail[..], "{what}: last elements");
    assert_eq!(checksum(got), sum, "{what}: checksum");
}

#[test]
fn mt19937_matches_the_standard_engine() {
    // The C++ standard's check: the 10000th output of a default-constructed
    // std::mt19937 (seed 5489) is 4123659995.
    let mut mt = Mt19937::new(5489);
    let mut last = 0;
    for _ in 0..10_000 {
        last = mt.next_u32();
    }
    assert_eq!(last, 4_123_659_995);
    // Only the low 32 bits of the seed are used.
    let a: Vec<u32> = {
        let mut g = CpuGenerator::new(5);
        (0..5).map(|_| g.random()).collect()
    };
    let b: Vec<u32> = {
        let mut g = CpuGenerator::new((1 << 32) + 5);
        (0..5).map(|_| g.random()).collect()
    };
    assert_eq!(a, b);
    // random64: the first draw is the high half.
    let mut g = CpuGenerator::new(42);
    let (hi, lo) = (u64::from(g.random()), u64::from(g.random()));
    g.manual_seed(42);
    assert_eq!(g.random64(), (hi << 32) | lo);
    assert_eq!(g.initial_seed(), 42);
}

#[test]
fn randperm_matches_torch() {
    let data = fixture();
    assert_eq!(
        u64_of(&data["randperm_switch_n"]) as usize,
        RANDPERM_64BIT_FROM
    );
    let cases = data["randperm"].as_array().expect("randperm cases");
    assert!(cases.len() >= 90);
    for case in cases {
        let row = case.as_array().expect("row");
        let n = u64_of(&row[0]) as usize;
        let seed = seed_of(&row[1]);
        let got = randperm(n, &mut CpuGenerator::new(seed));
        check_summary(&got, &row[2..], &format!("randperm({n}) seed {seed}"));
    }
}

/// Both sides of the switch to 64-bit draws (n = 214748363 and 214748364).
/// Needs about 2 GB of memory; run with
/// `cargo test -p ddp --test sampler -- --ignored` (about 5 minutes
/// unoptimized, seconds with `--release`).
#[test]
#[ignore = "needs about 2 GB of memory and, unoptimized, about 5 minutes"]
fn randperm_matches_torch_where_it_switches_to_64_bit_draws() {
    let data = fixture();
    let cases = data["randperm_huge"].as_array().expect("huge cases");
    assert_eq!(cases.len(), 2, "the fixture was written without --huge");
    for case in cases {
        let row = case.as_array().expect("row");
        let n = u64_of(&row[0]) as usize;
        let seed = seed_of(&row[1]);
        let got = randperm(n, &mut CpuGenerator::new(seed));
        check_summary(&got, &row[2..], &format!("randperm({n}) seed {seed}"));
    }
}

#[test]
fn distributed_sampler_matches_torch() {
    let data = fixture();
    let rows = data["sampler"].as_array().expect("sampler rows");
    assert_eq!(rows.len(), 2880);
    // Without shuffling, every epoch and seed must give the recorded indices.
    let other_epochs_and_seeds = [(1, 0), (5, 42), (3, (1 << 31) + 7)];
    for row in rows {
        let r = row.as_array().expect("row");
        let length = u64_of(&r[0]) as usize;
        let world = u64_of(&r[1]) as usize;
        let rank = u64_of(&r[2]) as usize;
        let epoch = u64_of(&r[3]);
        let seed = seed_of(&r[4]);
        let shuffle = r[5].as_bool().expect("shuffle");
        let drop_last = r[6].as_bool().expect("drop_last");
        let what = format!(
            "len {length} world {world} rank {rank} epoch {epoch} seed {seed} shuffle {shuffle} drop_last {drop_last}"
        );
        let mut sampler = DistributedSampler::new(length, world, rank, shuffle, seed, drop_last)
            .unwrap_or_else(|e| panic!("{what}: {e}"));
        sampler.set_epoch(epoch);
        assert_eq!(
            sampler.num_samples() as u64,
            u64_of(&r[7]),
            "{what}: num_samples"
        );
        assert_eq!(
            sampler.total_size() as u64,
            u64_of(&r[8]),
            "{what}: total_size"
        );
        let got = sampler.indices().expect("indices");
        check_summary(&got, &r[9..], &what);
        if !shuffle {
            for (e, s) in other_epochs_and_seeds {
                let mut other =
                    DistributedSampler::new(length, world, rank, false, s, drop_last).unwrap();
                other.set_epoch(e);
                assert_eq!(other.indices().unwrap(), got, "{what}: epoch {e} seed {s}");
            }
        }
    }
}

#[test]
fn ranks_partition_the_padded_permutation() {
    // Hand-checkable: 10 items, 4 ranks, no shuffle: total 12, padding 0 and 1.
    let per_rank: Vec<Vec<usize>> = (0..4)
        .map(|r| {
            DistributedSampler::new(10, 4, r, false, 0, false)
                .unwrap()
                .indices()
                .unwrap()
        })
        .collect();
    assert_eq!(
        per_rank,
        vec![vec![0, 4, 8], vec![1, 5, 9], vec![2, 6, 0], vec![3, 7, 1]]
    );
    // Padding longer than the list: 1 item over 3 ranks.
    let one: Vec<Vec<usize>> = (0..3)
        .map(|r| {
            DistributedSampler::new(1, 3, r, true, 0, false)
                .unwrap()
                .indices()
                .unwrap()
        })
        .collect();
    assert_eq!(one, vec![vec![0], vec![0], vec![0]]);
    // drop_last with fewer items than ranks leaves nothing.
    let s = DistributedSampler::new(3, 4, 2, true, 0, true).unwrap();
    assert_eq!((s.num_samples(), s.total_size()), (0, 0));
    assert!(s.indices().unwrap().is_empty());
}

#[test]
fn invalid_ranks_and_seed_overflow_are_errors() {
    let data = fixture();
    for case in data["invalid"].as_array().expect("invalid cases") {
        let world = u64_of(&case["world"]) as usize;
        let rank = u64_of(&case["rank"]) as usize;
        let err =
            DistributedSampler::new(10, world, rank, true, 0, false).expect_err("invalid rank");
        assert_eq!(
            err,
            SamplerError::InvalidRank {
                rank,
                num_replicas: world
            }
        );
        assert_eq!(
            err.to_string(),
            case["error"].as_str().expect("PyTorch's message")
        );
    }
    let mut s = DistributedSampler::new(5, 1, 0, true, u64::MAX, false).unwrap();
    assert!(s.indices().is_ok());
    s.set_epoch(1);
    assert_eq!(s.epoch(), 1);
    assert_eq!(
        s.indices(),
        Err(SamplerError::SeedOverflow {
            seed: u64::MAX,
            epoch: 1
        })
    );
    // Without shuffling the seed is never used.
    let mut s = DistributedSampler::new(5, 1, 0, false, u64::MAX, false).unwrap();
    s.set_epoch(1);
    assert_eq!(s.indices().unwrap(), vec![0, 1, 2, 3, 4]);
}
