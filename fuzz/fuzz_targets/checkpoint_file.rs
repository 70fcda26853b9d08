//! Fuzz target `checkpoint_file`: bytes as a reference-DDP checkpoint file, through the reader that checks it before libtorch sees it (`probe_contract::checkpoint_format`).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| probe_contract::checkpoint_format::fuzz_one(data));
