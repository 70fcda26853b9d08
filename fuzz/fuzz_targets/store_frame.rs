//! Fuzz target `store_frame`: a frame body through the store's request and response decoders; a decoded request encodes back to the same bytes.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| comm::fuzzing::frame_body(data));
