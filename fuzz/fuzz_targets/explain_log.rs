//! Fuzz target `explain_log`: a log file's bytes through `explain`; no control character may reach its text or JSON.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| probe_explain::fuzzing::log_file(data));
