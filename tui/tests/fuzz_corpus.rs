//! The checked-in inputs of the fuzz target `tui_draw` (`fuzz/corpus/tui_draw/`) run through its
//! entry point as an ordinary test, so a fixed crash stays fixed without a fuzzer; the seeds
//! (real traces) must load and be drawn.

use std::sync::atomic::{AtomicUsize, Ordering};

static DRAWN: AtomicUsize = AtomicUsize::new(0);

fn draw(data: &[u8]) {
    if probe_tui::fuzzing::draw_trace(data) {
        DRAWN.fetch_add(1, Ordering::Relaxed);
    }
}

#[test]
fn tui_draw_inputs() {
    probe_contract::fuzz_corpus::replay_corpus("tui_draw", draw);
    assert!(
        DRAWN.load(Ordering::Relaxed) >= 2,
        "the seed traces were not drawn"
    );
}
