//! The fuzz targets' checked-in inputs (`fuzz/corpus/<target>/`: the seeds
//! and every input that once crashed a target) run through the targets'
//! entry points as ordinary tests, so a fixed crash stays fixed without a
//! fuzzer.

use probe_contract::fuzz_corpus::replay_corpus;

#[test]
fn store_frame_inputs() {
    replay_corpus("store_frame", comm::fuzzing::frame_body);
}

#[test]
fn store_server_inputs() {
    replay_corpus("store_server", comm::fuzzing::server_session);
}

#[test]
fn shm_ring_inputs() {
    replay_corpus("shm_ring", comm::fuzzing::shm_ring);
}
