//! The fuzz targets' checked-in inputs (`fuzz/corpus/<target>/`: the seeds
//! and every input that once crashed a target) run through the targets'
//! entry points as ordinary tests, so a fixed crash stays fixed without a
//! fuzzer.

use probe_load::fuzzing::replay_corpus;

#[test]
fn trace_file_inputs() {
    replay_corpus("trace_file", probe_load::fuzzing::trace_file);
}

#[test]
fn trace_cache_inputs() {
    replay_corpus("trace_cache", probe_load::fuzzing::cache_payload);
}
