//! The checked-in inputs of the fuzz targets `explain_log`, `flight_recorder` and `manifest`
//! (`fuzz/corpus/<target>/`) run through their entry points as ordinary tests, so a fixed crash
//! stays fixed without a fuzzer.

use probe_contract::fuzz_corpus::replay_corpus;

#[test]
fn explain_log_inputs() {
    replay_corpus("explain_log", probe_explain::fuzzing::log_file);
}

#[test]
fn flight_recorder_inputs() {
    replay_corpus(
        "flight_recorder",
        probe_explain::fuzzing::flight_recorder_dump,
    );
}

#[test]
fn manifest_inputs() {
    replay_corpus("manifest", probe_explain::fuzzing::manifest);
}
