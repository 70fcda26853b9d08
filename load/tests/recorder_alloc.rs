//! A disabled recorder never allocates (checked with a counting global
//! allocator; in its own test binary so the allocator sees nothing else).

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::hint::black_box;
use std::time::Instant;

use probe_load::recorder::Recorder;
use probe_load::trace::{KernelCategory, LogLevel, SpanKind};

struct Counting;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.with(|c| c.set(c.get() + 1));
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

#[test]
fn disabled_recorder_does_not_allocate() {
    let rec = black_box(Recorder::disabled());
    const N: u64 = 100_000;
    let before = allocations();
    let t = Instant::now();
    for i in 0..N {
        rec.span(SpanKind::Collective, i, i, i + 1)
            .op("all_reduce")
            .algo("ring")
            .transport("tcp")
            .name("bucket")
            .bucket(3)
            .bytes(1 << 20)
            .seq(i)
            .queued(i)
            .category(KernelCategory::Comm)
            .finish();
        let g = rec.start(SpanKind::Forward, i);
        drop(g);
        rec.instant("mark", Some(i));
        rec.counter("loss", 1.0);
        rec.log(LogLevel::Info, "message");
    }
    let elapsed = t.elapsed();
    assert_eq!(allocations() - before, 0);
    println!(
        "disabled recorder: {:.1} ns per iteration (one span, one guard, instant, counter, log)",
        elapsed.as_nanos() as f64 / N as f64
    );
}

#[test]
fn the_counter_sees_allocations() {
    let before = allocations();
    let v: Vec<u64> = black_box(vec![1, 2, 3]);
    assert!(allocations() > before);
    drop(v);
}
