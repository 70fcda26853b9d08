//! Fuzz target `flight_recorder`: bytes as two ranks' PyTorch flight-recorder dumps (pickles), read within the budgets and compared.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| probe_explain::fuzzing::flight_recorder_dump(data));
