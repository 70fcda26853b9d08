//! `checkpoint_format`, the libtorch-free reader of the reference DDP's checkpoints, on files
//! its writer made (`fuzz/corpus/checkpoint_file/seed-*`, written through libtorch by
//! `ddp/tests/checkpoint.rs`): their content as saved, every flipped bit refused or harmless,
//! every cut refused, dimensions libtorch cannot hold refused, and the fuzz corpus replayed.

use probe_contract::checkpoint_format::{decode, fuzz_one, is_complete, ElementType};
use probe_contract::fuzz_corpus::replay_corpus;

fn seed(name: &str) -> Vec<u8> {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/corpus/checkpoint_file")
        .join(name);
    std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

#[test]
fn a_full_checkpoint_reads_as_saved() {
    let bytes = seed("seed-full.safetensors");
    let d = decode(&bytes).expect("the writer's own file");
    // What ddp/tests/checkpoint.rs's full_checkpoint saves (step 40 of epoch 3, sampler
    // seed 1234, a default scaler: 65536, 2.0, 0.5, 2000).
    assert_eq!((d.version, d.epoch, d.step), (2, 3, 40));
    let s = d.sampler.expect("sampler");
    assert_eq!((s.epoch, s.seed), (3, 1234));
    let sc = d.scaler.expect("scaler");
    assert_eq!(
        (
            sc.scale,
            sc.growth_factor,
            sc.backoff_factor,
            sc.growth_interval
        ),
        (65536.0, 2.0, 0.5, 2000)
    );
    assert_eq!(
        d.user_metadata.as_deref(),
        Some(r#"{"lr": 0.01, "note": "ünïcode"}"#)
    );
    let model: Vec<(&str, ElementType, &[i64])> = d
        .model
        .iter()
        .map(|(n, e)| (n.as_str(), e.element, &e.shape[..]))
        .collect();
    assert_eq!(
        model,
        [
            ("batches", ElementType::I64, &[1][..]),
            ("bf", ElementType::BF16, &[6]),
            ("emb.table", ElementType::F32, &[2, 3]),
            ("fc.bias", ElementType::F32, &[3]),
            ("fc.weight", ElementType::F32, &[3, 5]),
            ("running_mean", ElementType::F32, &[3]),
            ("scale64", ElementType::F64, &[4]),
        ]
    );
    // The buffers the test model sets: batches [7], running_mean [0.25, NaN, -3.0] (a NaN's
    // bits kept).
    assert_eq!(d.model[0].1.data, 7i64.to_le_bytes());
    let running: Vec<u8> = [0.25f32, f32::NAN, -3.0]
        .iter()
        .flat_map(|x| x.to_le_bytes())
        .collect();
    assert_eq!(d.model[5].1.data, &running[..]);
    assert!(!d.optimizer.is_empty());
    let (cpu, cuda) = d.rng.expect("rng");
    assert_eq!((cpu.element, cuda.len()), (ElementType::U8, 0));
}

#[test]
fn every_flipped_bit_is_refused_or_changes_nothing() {
    // Every bit of the small file; every 13th of the full one (74k decodes take 30 s in a
    // debug build), which still lands in every entry.
    for (name, every) in [
        ("seed-meta-only.safetensors", 1),
        ("seed-full.safetensors", 13),
    ] {
        let bytes = seed(name);
        let good = decode(&bytes).expect("seed");
        let (mut refused, mut harmless) = (0, 0);
        for bit in (0..bytes.len() * 8).step_by(every) {
            let mut b = bytes.clone();
            b[bit / 8] ^= 1 << (bit % 8);
            match decode(&b) {
                Err(_) => refused += 1,
                Ok(d) => {
                    assert_eq!(d, good, "{name}: bit {bit} changed the content silently");
                    harmless += 1;
                }
            }
        }
        eprintln!("{name}: {refused} flips refused, {harmless} harmless");
        assert!(refused > 0);
    }
}

#[test]
fn every_cut_is_incomplete_and_refused() {
    let bytes = seed("seed-full.safetensors");
    assert!(is_complete(&mut &bytes[..], bytes.len() as u64));
    for cut in 0..bytes.len() {
        let b = &bytes[..cut];
        assert!(!is_complete(&mut &b[..], cut as u64), "cut at {cut}");
        assert!(decode(b).is_err(), "cut at {cut}");
    }
}

#[test]
fn dimensions_libtorch_cannot_hold_are_refused() {
    // An empty entry whose shape has a dimension past i64::MAX (zero elements, so the
    // safetensors container itself accepts it).
    let header = r#"{"meta/format_version":{"dtype":"I64","shape":[],"data_offsets":[0,8]},"model/w":{"dtype":"F32","shape":[9223372036854775808,0],"data_offsets":[8,8]}}"#;
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(&1i64.to_le_bytes());
    let e = decode(&bytes).expect_err("refused").to_string();
    assert!(
        e.contains("'model/w'") && e.contains("larger than libtorch"),
        "{e}"
    );
}

#[test]
fn an_end_offset_near_u64_max_is_incomplete_not_an_overflow() {
    // What the fuzzer found: a header whose end offset plus the header's own size passes
    // u64::MAX. Such a file is damaged (it cannot be that long), so it is not complete.
    let header = format!(
        r#"{{"meta/format_version":{{"dtype":"I64","shape":[],"data_offsets":[0,{}]}}}}"#,
        u64::MAX - 4
    );
    let mut bytes = (header.len() as u64).to_le_bytes().to_vec();
    bytes.extend_from_slice(header.as_bytes());
    bytes.extend_from_slice(&1i64.to_le_bytes());
    assert!(!is_complete(&mut &bytes[..], bytes.len() as u64));
    assert!(decode(&bytes).is_err());
}

#[test]
fn the_fuzz_corpus_replays_without_a_panic() {
    replay_corpus("checkpoint_file", fuzz_one);
}
