//! Fuzz target `trace_cache`: bytes as a binary trace cache payload through the cache decoder.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| probe_load::fuzzing::cache_payload(data));
