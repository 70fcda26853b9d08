//! Fuzz target `trace_file`: one trace file's bytes through the reader (fast parser against serde_json, binary cache and record round trips).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| probe_load::fuzzing::trace_file(data));
