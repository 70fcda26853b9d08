//! Colours and glyphs: what each class of span looks like, in Unicode and
//! in plain ASCII.
//!
//! Every cell of a lane shows one [`Class`]: the class that covers most of
//! the cell's time window. Communication is split by what it overlaps:
//! [`Class::Overlapped`] (a collective while forward, backward or optimizer
//! compute runs on the same rank) and [`Class::Exposed`] (a collective with
//! no compute running: the step waits for it), drawn in red.

use probe::model::Span;
use probe::trace::{KernelCategory, SpanKind};
use ratatui::style::{Color, Modifier, Style};

/// What a cell shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Class {
    /// Inside a `step` span but in none of its phases (framework overhead,
    /// gaps).
    Step,
    /// Waiting for data.
    Data,
    /// Forward pass.
    Forward,
    /// Backward pass.
    Backward,
    /// Optimizer step.
    Optimizer,
    /// A gradient bucket's ready window (even bucket ids).
    Ready,
    /// A gradient bucket's ready window (odd bucket ids), so that
    /// neighbouring buckets can be told apart.
    ReadyAlt,
    /// A collective overlapped by compute.
    Overlapped,
    /// A collective with no compute running: exposed communication.
    Exposed,
    /// Copying reduced gradients back.
    Writeback,
    /// Saving or loading a checkpoint.
    Checkpoint,
    /// A GPU kernel (not communication).
    Kernel,
    /// A GPU communication kernel.
    CommKernel,
    /// A memory copy.
    Memcpy,
    /// A span the program named.
    User,
    /// Anything else.
    Other,
}

impl Class {
    /// Number of classes.
    pub const COUNT: usize = 16;

    /// Every class, in index order.
    pub const ALL: [Class; Class::COUNT] = [
        Class::Step,
        Class::Data,
        Class::Forward,
        Class::Backward,
        Class::Optimizer,
        Class::Ready,
        Class::ReadyAlt,
        Class::Overlapped,
        Class::Exposed,
        Class::Writeback,
        Class::Checkpoint,
        Class::Kernel,
        Class::CommKernel,
        Class::Memcpy,
        Class::User,
        Class::Other,
    ];

    /// The class of a span (collectives start as [`Class::Overlapped`] and
    /// are split into overlapped and exposed parts per rank).
    pub fn of(span: &Span) -> Class {
        match span.kind() {
            SpanKind::Step => Class::Step,
            SpanKind::DataWait => Class::Data,
            SpanKind::Forward => Class::Forward,
            SpanKind::Backward => Class::Backward,
            SpanKind::Optimizer => Class::Optimizer,
            SpanKind::BucketReady => match span.bucket() {
                Some(b) if b % 2 == 1 => Class::ReadyAlt,
                _ => Class::Ready,
            },
            SpanKind::Collective => Class::Overlapped,
            SpanKind::Writeback => Class::Writeback,
            SpanKind::CheckpointSave | SpanKind::CheckpointLoad => Class::Checkpoint,
            SpanKind::Kernel => match span.category() {
                Some(KernelCategory::Comm) => Class::CommKernel,
                Some(KernelCategory::Memcpy) => Class::Memcpy,
                _ => Class::Kernel,
            },
            SpanKind::Memcpy => Class::Memcpy,
            SpanKind::User => Class::User,
            SpanKind::Other => Class::Other,
        }
    }

    /// Position in [`Class::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The colour of the class's bars.
    pub const fn color(self) -> Color {
        match self {
            Class::Step => Color::DarkGray,
            Class::Data => Color::Yellow,
            Class::Forward => Color::LightBlue,
            Class::Backward => Color::Blue,
            Class::Optimizer => Color::Magenta,
            Class::Ready => Color::LightCyan,
            Class::ReadyAlt => Color::Cyan,
            Class::Overlapped => Color::Green,
            Class::Exposed => Color::LightRed,
            Class::Writeback => Color::Gray,
            Class::Checkpoint => Color::LightMagenta,
            Class::Kernel => Color::Blue,
            Class::CommKernel => Color::Green,
            Class::Memcpy => Color::Yellow,
            Class::User => Color::White,
            Class::Other => Color::Gray,
        }
    }

    /// The ASCII letter of the class's bars.
    pub const fn letter(self) -> char {
        match self {
            Class::Step => '.',
            Class::Data => 'D',
            Class::Forward => 'F',
            Class::Backward => 'B',
            Class::Optimizer => 'O',
            Class::Ready => 'R',
            Class::ReadyAlt => 'r',
            Class::Overlapped => 'C',
            Class::Exposed => 'X',
            Class::Writeback => 'W',
            Class::Checkpoint => 'K',
            Class::Kernel => 'k',
            Class::CommKernel => 'c',
            Class::Memcpy => 'M',
            Class::User => 'U',
            Class::Other => '?',
        }
    }

    /// The name in the legend.
    pub const fn name(self) -> &'static str {
        match self {
            Class::Step => "gap",
            Class::Data => "data",
            Class::Forward => "fwd",
            Class::Backward => "bwd",
            Class::Optimizer => "optim",
            Class::Ready | Class::ReadyAlt => "grad ready",
            Class::Overlapped => "comm overlapped",
            Class::Exposed => "comm exposed",
            Class::Writeback => "writeback",
            Class::Checkpoint => "checkpoint",
            Class::Kernel => "kernel",
            Class::CommKernel => "comm kernel",
            Class::Memcpy => "memcpy",
            Class::User => "user",
            Class::Other => "other",
        }
    }

    /// Whether the class is part of a bucket's journey (ready window,
    /// all-reduce, writeback): what a bucket highlight lights or dims.
    pub const fn is_bucket_work(self) -> bool {
        matches!(
            self,
            Class::Ready | Class::ReadyAlt | Class::Overlapped | Class::Exposed | Class::Writeback
        )
    }

    /// Whether the class is a phase worth drawing over a bare step.
    pub const fn is_primary(self) -> bool {
        !matches!(self, Class::Step)
    }
}

/// The glyphs of one character set.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Glyphs {
    /// Plain ASCII only.
    pub ascii: bool,
    /// A cell mostly covered.
    pub full: &'static str,
    /// A cell about half covered.
    pub part: &'static str,
    /// A cell a little covered.
    pub light: &'static str,
    /// A cell with only a very short span.
    pub tiny: &'static str,
    /// Inside a step, no phase.
    pub gap: &'static str,
    /// A step boundary.
    pub boundary: &'static str,
    /// An axis tick.
    pub tick: &'static str,
    /// The selection marker.
    pub marker: &'static str,
    /// Separator in running text.
    pub dot: &'static str,
    /// An arrow between two times.
    pub arrow: &'static str,
    /// A span that never ended (hang, crash, cut trace).
    pub open: &'static str,
}

/// Unicode glyphs (the default).
pub const UNICODE: Glyphs = Glyphs {
    ascii: false,
    full: "█",
    part: "▓",
    light: "▒",
    tiny: "▏",
    gap: "·",
    boundary: "│",
    tick: "╵",
    marker: "▶",
    dot: " · ",
    arrow: "→",
    open: "╌",
};

/// Plain ASCII glyphs (`--ascii`): cells show the class's letter.
pub const ASCII: Glyphs = Glyphs {
    ascii: true,
    full: "#",
    part: "+",
    light: "+",
    tiny: "|",
    gap: ".",
    boundary: "|",
    tick: "|",
    marker: ">",
    dot: " - ",
    arrow: "->",
    open: "~",
};

/// The title bar.
pub const TITLE: Style = Style::new().fg(Color::Black).bg(Color::Cyan);
/// The footer with key hints.
pub const FOOTER: Style = Style::new().fg(Color::Black).bg(Color::Gray);
/// A status message in the footer.
pub const MESSAGE: Style = Style::new()
    .fg(Color::Black)
    .bg(Color::Yellow)
    .add_modifier(Modifier::BOLD);
/// Axis labels.
pub const AXIS: Style = Style::new().fg(Color::Gray);
/// Lane labels.
pub const LABEL: Style = Style::new().fg(Color::Gray);
/// A rank's name on its first lane.
pub const RANK: Style = Style::new().fg(Color::White).add_modifier(Modifier::BOLD);
/// The lane the cursor is on.
pub const CURSOR: Style = Style::new().fg(Color::Black).bg(Color::White);
/// Step boundaries and numbers.
pub const STEP: Style = Style::new().fg(Color::Gray);
/// The current step on the steps row.
pub const STEP_CURRENT: Style = Style::new()
    .fg(Color::Black)
    .bg(Color::LightYellow)
    .add_modifier(Modifier::BOLD);
/// The selected span.
pub const SELECTED: Style = Style::new()
    .fg(Color::Black)
    .bg(Color::White)
    .add_modifier(Modifier::BOLD);
/// The highlighted bucket.
pub const HIGHLIGHT: Style = Style::new().fg(Color::Black).bg(Color::LightYellow);
/// Other buckets while one is highlighted.
pub const DIMMED: Style = Style::new().fg(Color::DarkGray);
/// Text in labels drawn over a bar.
pub const ON_BAR: Color = Color::Black;
/// Panel borders.
pub const BORDER: Style = Style::new().fg(Color::Cyan);
/// Panel and overlay titles.
pub const HEADING: Style = Style::new().fg(Color::Cyan).add_modifier(Modifier::BOLD);
/// Keys in the help overlay.
pub const KEY: Style = Style::new()
    .fg(Color::LightYellow)
    .add_modifier(Modifier::BOLD);
/// Ordinary text.
pub const TEXT: Style = Style::new().fg(Color::White);
/// Secondary text.
pub const DIM: Style = Style::new().fg(Color::Gray);
/// A span that never ended, and its label.
pub const OPEN: Style = Style::new()
    .fg(Color::LightMagenta)
    .add_modifier(Modifier::BOLD);
/// Warnings and exposed communication figures.
pub const WARN: Style = Style::new()
    .fg(Color::LightRed)
    .add_modifier(Modifier::BOLD);
