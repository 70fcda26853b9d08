//! Fuzz target `kineto_import`: a PyTorch profiler trace's bytes (plain JSON or gzip) through the Kineto importer; no panic, and what it imports loads back as a run.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| probe_kineto::fuzzing::kineto_file(data));
