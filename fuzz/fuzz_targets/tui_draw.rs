//! Fuzz target `tui_draw`: bytes as a trace; whatever loads, the terminal timeline draws and navigates without a panic or a raw control character.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    probe_tui::fuzzing::draw_trace(data);
});
