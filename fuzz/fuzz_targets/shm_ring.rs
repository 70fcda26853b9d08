//! Fuzz target `shm_ring`: the shared-memory handshake's ring check on a header a peer wrote, and a ring's two ends driven by a script in which a hostile peer sets the indices and writes the data.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| comm::fuzzing::shm_ring(data));
