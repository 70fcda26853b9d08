//! The checked-in inputs of the fuzz target `explain_log` (`fuzz/corpus/explain_log/`)
//! run through its entry point as an ordinary test, so a fixed crash stays fixed
//! without a fuzzer.

use probe_contract::fuzz_corpus::replay_corpus;

#[test]
fn explain_log_inputs() {
    replay_corpus("explain_log", probe_explain::fuzzing::log_file);
}
