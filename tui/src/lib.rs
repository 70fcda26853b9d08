//! The interactive terminal timeline of a ddp-probe run (`ddp-probe tui`
//! and `ddp-probe run --tui`).
//!
//! One lane group per rank (compute, gradient buckets, communication, data,
//! custom lanes and GPU streams when present) on a time axis with units and
//! step boundaries. Each bucket's gradient-ready window sits above its
//! all-reduce, and all-reduce time with no compute running on the rank —
//! exposed communication — is drawn in red, so overlap and waiting show at
//! a glance. Zoom, pan, select spans for their details, jump to the slowest
//! step or the one with the most exposed communication, highlight a bucket
//! on every rank, and open panels with the step breakdown, the
//! `bucket_cap_mb` advice, the `explain` findings and the summary's warnings
//! (counted in the title bar). `m` switches to a
//! rank × step heatmap (step time, exposed communication, arrival lateness)
//! for jobs of hundreds of ranks, whose cells open in the timeline. `?`
//! lists every key.
//!
//! * [`view`]: the viewer on a loaded run, until the user quits.
//! * [`live`]: the viewer on a run being recorded, reloaded as it grows.
//! * [`App`]: the state and its actions, drawable on any ratatui backend
//!   (`impl Widget for &App`), which is how the tests drive it.
//! * [`Timeline`]: a run indexed for drawing: a frame costs the same with a
//!   thousand spans or millions (cells are drawn from per-class coverage
//!   found by binary search, never by walking the spans).
//!
//! Every string from a trace or a log is made safe to draw before it
//! reaches the terminal; `--ascii` ([`Options::ascii`]) draws with plain
//! ASCII only.

mod app;
mod format;
#[doc(hidden)]
pub mod fuzzing;
mod heatmap;
mod input;
mod live;
mod panels;
mod term;
mod theme;
mod timeline;
mod ui;

use std::path::PathBuf;
use std::time::Duration;

pub use app::{
    App, Follow, HeatCursor, LiveStatus, Mode, Options, Panel, Regions, RowSlot, Selection,
    MIN_HEIGHT, MIN_WIDTH,
};
pub use input::KEYS;
pub use live::live;
pub use probe::analysis::intervals::Cover;
pub use theme::Class;
pub use timeline::{Row, StepInfo, Timeline};
pub use ui::buffer_text;

/// Shows `run` in the terminal until the user quits. `sources` are the run
/// directories (or log files) the explain panel reads.
pub fn view(run: probe::Run, sources: Vec<PathBuf>, options: &Options) -> std::io::Result<()> {
    let mut app = App::new(Timeline::new(run), options);
    app.set_sources(sources);
    term::run(&mut app, Duration::from_millis(250), |_| Ok(()))
}
