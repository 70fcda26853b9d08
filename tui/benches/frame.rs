//! Open time and frame time of the terminal timeline on a synthetic run of
//! about one million spans (8 ranks × 1000 steps × 40 buckets), written by
//! `probe::synth` to a temporary directory.
//!
//! ```text
//! cargo bench -p probe-tui --bench frame                 # 1,000,008 spans
//! cargo bench -p probe-tui --bench frame -- 16 2000 40   # RANKS STEPS BUCKETS
//! cargo bench -p probe-tui --bench frame -- 1024 200 4   # the heatmap's goal: a 1,024-rank job
//! ```
//!
//! The heatmap view (`m`) is measured too: the time to open it (computing the three
//! heatmaps) and its frames; the goals for 1,024 ranks × 200 steps are an open of at most 1 s
//! and frames of at most 16 ms. `FRAME_BENCH_RUN=DIR` writes the run to `DIR` (kept) instead
//! of a temporary directory, to look at it with `ddp-probe tui DIR`.
//!
//! "open" is what `ddp-probe tui` does before the first frame: load the run
//! (`probe::load_run`) and index it ([`probe_tui::Timeline::new`]). A
//! frame is one render of the whole screen into a buffer, as the terminal
//! draw does before it writes the changed cells, at several sizes and zoom
//! levels. Prints the numbers; asserts nothing.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use probe_tui::{App, Options, Timeline};
use ratatui::buffer::Buffer;
use ratatui::layout::Rect;
use ratatui::widgets::Widget;

fn arg(args: &[String], i: usize, default: u64) -> u64 {
    args.get(i).and_then(|s| s.parse().ok()).unwrap_or(default)
}

fn press(app: &mut App, c: char) {
    app.handle_key(KeyEvent::new(KeyCode::Char(c), KeyModifiers::NONE));
}

/// Mean and worst of `n` frames of `app` at `w` × `h`.
fn frames(app: &mut App, w: u16, h: u16, n: u32) -> (Duration, Duration) {
    app.resize(w, h);
    let area = Rect::new(0, 0, w, h);
    let mut buf = Buffer::empty(area);
    let mut total = Duration::ZERO;
    let mut worst = Duration::ZERO;
    for _ in 0..n {
        buf.reset();
        let t = Instant::now();
        (&*app).render(area, &mut buf);
        let d = t.elapsed();
        total += d;
        worst = worst.max(d);
    }
    (total / n, worst)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() {
    // `cargo bench` passes `--bench`; keep the numbers only.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let ranks = arg(&args, 0, 8) as u32;
    let steps = arg(&args, 1, 1000);
    let buckets = arg(&args, 2, 40) as u32;
    let tmp = tempfile::tempdir().expect("temporary directory");
    let kept = std::env::var_os("FRAME_BENCH_RUN").map(std::path::PathBuf::from);
    let dir = kept.as_deref().unwrap_or(tmp.path());
    let config = probe::synth::SynthConfig::new(ranks, steps, buckets);
    let t = Instant::now();
    let summary = probe::synth::generate_run(&config, dir).expect("synthetic run");
    println!(
        "generated {} ranks x {steps} steps x {buckets} buckets: {} spans in {:.2} s",
        ranks,
        summary.spans,
        t.elapsed().as_secs_f64()
    );

    let t = Instant::now();
    let (run, _warnings) = probe::load_run(&[dir]).expect("load");
    let load = t.elapsed();
    let t = Instant::now();
    let timeline = Timeline::new(run);
    let index = t.elapsed();
    println!(
        "open: {:.0} ms (load {:.0} ms + index {:.0} ms) for {} spans",
        ms(load + index),
        ms(load),
        ms(index),
        timeline.span_count()
    );

    let mut app = App::new(timeline, &Options::default());
    app.set_sources(vec![dir.to_path_buf()]);
    for (name, key) in [("advice panel", '2'), ("explain panel", '3')] {
        let t = Instant::now();
        press(&mut app, key);
        app.wait_for_background();
        println!(
            "{name}, computed when first opened: {:.0} ms",
            ms(t.elapsed())
        );
        press(&mut app, key);
    }
    let n = 30;
    println!("frame times (mean / worst of {n}):");
    let views: [(&str, &str); 5] = [
        ("whole run", "0"),
        ("one step", "0n"),
        ("a tenth of the run", "0++++++"),
        (
            "slowest step, selected, bucket lit, breakdown panel",
            "0sb1",
        ),
        ("help overlay over 10 steps", "0++++++++?"),
    ];
    for (w, h) in [(80, 24), (200, 50), (320, 96)] {
        for (name, keys) in views {
            app.resize(w, h);
            for c in keys.chars() {
                press(&mut app, c);
            }
            let (mean, worst) = frames(&mut app, w, h, n);
            println!(
                "  {w:>3}x{h:<3} {name:<52} {:>7.2} ms / {:>7.2} ms",
                ms(mean),
                ms(worst)
            );
            // Leave overlays and panels closed for the next view.
            for c in keys.chars().filter(|c| matches!(c, '?' | '1')) {
                press(&mut app, c);
            }
        }
    }
    // The heatmap view: opening it computes the heatmaps; then its frames, per metric.
    app.resize(200, 50);
    let t = Instant::now();
    press(&mut app, 'm');
    let opened = t.elapsed();
    println!(
        "heatmap view opened (3 heatmaps of {ranks} ranks x {steps} steps): {:.0} ms (goal 1000 ms)",
        ms(opened)
    );
    for (w, h) in [(80, 24), (200, 50), (320, 96)] {
        for metric in ["step time", "exposed communication", "arrival lateness"] {
            let (mean, worst) = frames(&mut app, w, h, n);
            println!(
                "  {w:>3}x{h:<3} heatmap, {metric:<41} {:>7.2} ms / {:>7.2} ms (goal 16 ms)",
                ms(mean),
                ms(worst)
            );
            press(&mut app, 'c');
        }
    }
    let open_total = load + index + opened;
    println!(
        "open to the heatmap's first frame: {:.0} ms (load + index + heatmaps)",
        ms(open_total)
    );
}
