//! Helpers shared by the integration tests: hand-made headers and records,
//! and writing them as a run directory.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use probe_load::trace::{
    BucketInfo, DdpConfig, Header, ParamInfo, Record, TraceWriter, CLOCK_UNIX_NS, FORMAT_NAME,
    VERSION,
};

/// Base timestamp of the hand-made traces.
pub const T0: u64 = 1_700_000_000_000_000_000;

/// A fully specified header (no values taken from the machine).
pub fn header(run_id: &str, rank: u32, world_size: u32, offset: i64) -> Header {
    Header {
        format: FORMAT_NAME.to_owned(),
        version: VERSION.to_owned(),
        run_id: run_id.to_owned(),
        rank,
        local_rank: rank,
        world_size,
        local_world_size: world_size,
        node_rank: 0,
        hostname: "host-a".to_owned(),
        pid: 100 + rank,
        start_ns: T0,
        clock: CLOCK_UNIX_NS.to_owned(),
        offset_to_rank0_ns: offset,
        offset_uncertainty_ns: 10,
        program: Some("train".to_owned()),
        argv: Some(vec!["train".to_owned(), "--fast".to_owned()]),
        ddp: Some(DdpConfig {
            bucket_cap_mb_list: None,
            backend: "gloo".to_owned(),
            bucket_cap_mb: Some(25.0),
            first_bucket_bytes: Some(1024),
            find_unused_parameters: false,
            buffers: Vec::new(),
            static_graph: false,
            gradient_as_bucket_view: true,
            params: (0..4)
                .map(|i| ParamInfo {
                    index: i,
                    name: format!("p{i}"),
                    shape: vec![2, 8],
                    dtype: "float32".to_owned(),
                    numel: 16,
                    bytes: 64,
                })
                .collect(),
            buckets: vec![
                BucketInfo {
                    id: 0,
                    params: vec![3, 2],
                    bytes: 128,
                },
                BucketInfo {
                    id: 1,
                    params: vec![1, 0],
                    bytes: 128,
                },
            ],
            group_ranks: Vec::new(),
        }),
    }
}

/// Serializes records as JSON Lines.
pub fn to_bytes(records: &[Record]) -> Vec<u8> {
    let mut w = TraceWriter::new(Vec::new());
    for r in records {
        w.write(r).expect("valid record");
    }
    w.into_inner().expect("in-memory write")
}

/// Writes `<dir>/traces/rank-<i>.jsonl` for each list of records.
pub fn write_run(dir: &Path, ranks: &[Vec<Record>]) -> Vec<PathBuf> {
    let traces = dir.join("traces");
    std::fs::create_dir_all(&traces).unwrap();
    ranks
        .iter()
        .enumerate()
        .map(|(i, recs)| {
            let p = traces.join(format!("rank-{i}.jsonl"));
            std::fs::write(&p, to_bytes(recs)).unwrap();
            p
        })
        .collect()
}

/// Writes raw text as a one-file run and returns the run directory's path.
pub fn write_text_run(dir: &Path, name: &str, text: &[u8]) -> PathBuf {
    let traces = dir.join("traces");
    std::fs::create_dir_all(&traces).unwrap();
    std::fs::write(traces.join(name), text).unwrap();
    dir.to_owned()
}
