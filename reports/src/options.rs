//! [`ReportOptions`]: what a report shows and how much, read by the report
//! and by each of its sections.

/// What a report shows and how much.
#[derive(Clone, Debug, PartialEq)]
pub struct ReportOptions {
    /// The title; by default it names the program and the runs.
    pub title: Option<String>,
    /// Leading steps of each rank counted as warm-up (default 1).
    pub warmup_steps: u64,
    /// Most ranks drawn in the representative step (default 16).
    pub max_gantt_ranks: usize,
    /// Most ranks drawn in the breakdown chart (default 64; the slowest).
    pub max_bar_ranks: usize,
}

impl Default for ReportOptions {
    fn default() -> ReportOptions {
        ReportOptions {
            title: None,
            warmup_steps: 1,
            max_gantt_ranks: 16,
            max_bar_ranks: 64,
        }
    }
}
