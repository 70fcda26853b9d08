//! Fuzz target `manifest`: bytes as a run directory's manifest.json, through `explain`.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| probe_explain::fuzzing::manifest(data));
