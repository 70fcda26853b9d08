//! GPU time breakdown with the definitions of Holistic Trace Analysis (HTA) 0.5.0.
//!
//! HTA is the usual tool for PyTorch profiler traces of distributed jobs; this module computes
//! its headline figures — temporal breakdown (idle / compute / non-compute time) and
//! communication/computation overlap — from the same Kineto traces, with the same rules, so
//! that ddp-probe's numbers can be put next to HTA's. `docs/hta-definitions.md` states each
//! rule with its source in HTA and how these figures relate to ddp-probe's own
//! overlapped/exposed communication.
//!
//! In short, per rank:
//! 1. events: every event with a `dur` and a `cat`, except `cat: "Trace"`; when any `ts` is a
//!    float (ns resolution), `ts` becomes `ceil(ts)` and the end `floor(ts + dur)`;
//! 2. GPU events have `args.stream ≥ 0` and `args.correlation ≥ 0`; everything else is CPU;
//! 3. with at least two distinct `ProfilerStep` names in the traces, CPU events starting before
//!    the last step's start are kept (up to its end with `include_last_step`), and GPU events
//!    whose correlation id is among the kept CPU events';
//! 4. kernel classes by name: communication `^nccl.*Kernel`; memory `^Memcpy|^Memset|^dma`;
//!    computation everything else except names matching `(.*Memcpy)|(^Memset)|(.*Sync)`;
//! 5. span = last end − first start of the merged GPU intervals; idle = span − |∪ GPU|;
//!    compute = |∪ computation|; non-compute = span − idle − compute; overlap =
//!    |∪ communication ∩ ∪ computation| / |∪ communication|. Percentages are rounded to
//!    2 decimals as Python's `round` does.

use std::collections::{BTreeSet, HashSet};

use serde::{Deserialize, Serialize};

use crate::parse::{Cat, Event, KinetoTrace};

/// Options of [`hta_breakdown`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HtaOptions {
    /// Keep the last `ProfilerStep` (HTA's `include_last_profiler_step=True`).
    pub include_last_step: bool,
    /// Do not round ns-resolution timestamps inward (HTA's `HTA_DISABLE_NS_ROUNDING=1`).
    pub no_ns_rounding: bool,
}

/// HTA's kernel classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelClass {
    /// `^nccl.*Kernel`.
    Communication,
    /// `^Memcpy`, `^Memset`, `^dma`.
    Memory,
    /// Everything else that is not a copy, a set or a synchronization.
    Computation,
    /// Names matching `.*Memcpy`, `^Memset` or `.*Sync` that are not memory kernels.
    Other,
}

/// HTA's kernel class of a GPU event name (`hta.utils.utils.get_kernel_type`).
pub fn kernel_class(name: &str) -> KernelClass {
    if name.starts_with("nccl") && name[4..].contains("Kernel") {
        KernelClass::Communication
    } else if name.starts_with("Memcpy") || name.starts_with("Memset") || name.starts_with("dma") {
        KernelClass::Memory
    } else if name.contains("Memcpy") || name.starts_with("Memset") || name.contains("Sync") {
        KernelClass::Other
    } else {
        KernelClass::Computation
    }
}

/// Count, sum of durations and merged (union) time of one kernel class, µs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ClassTime {
    /// Events.
    pub count: u64,
    /// Σ dur.
    pub sum_us: f64,
    /// |∪ intervals| (HTA's merge; see [`merged_length`]).
    pub merged_us: f64,
}

/// HTA's figures for one rank.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HtaRank {
    /// The rank.
    pub rank: u32,
    /// GPU events counted (HTA's `stream != -1` rows after filtering).
    pub gpu_events: u64,
    /// Span: last end − first start of the GPU events (HTA's `kernel_time`), µs.
    pub kernel_time_us: f64,
    /// Span − |∪ GPU events|, µs.
    pub idle_time_us: f64,
    /// |∪ computation kernels|, µs.
    pub compute_time_us: f64,
    /// Span − idle − compute, µs.
    pub non_compute_time_us: f64,
    /// idle / span, %, 2 decimals.
    pub idle_time_pctg: f64,
    /// compute / span, %, 2 decimals.
    pub compute_time_pctg: f64,
    /// non-compute / span, %, 2 decimals.
    pub non_compute_time_pctg: f64,
    /// |∪ communication ∩ ∪ computation|, µs.
    pub comm_comp_overlap_us: f64,
    /// overlap / |∪ communication|, %, 2 decimals (`None` without communication kernels).
    pub comp_comm_overlap_pctg: Option<f64>,
    /// Communication kernels.
    pub communication: ClassTime,
    /// Memory kernels.
    pub memory: ClassTime,
    /// Computation kernels.
    pub computation: ClassTime,
    /// Other GPU events.
    pub other: ClassTime,
    /// |∪ GPU events|, µs.
    pub gpu_busy_us: f64,
    /// The GPU streams seen.
    pub streams: Vec<i64>,
    /// The `ProfilerStep` numbers whose CPU range starts in the kept window.
    pub steps_kept: Vec<u64>,
}

/// HTA's figures for a set of traces (one per rank).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct HtaBreakdown {
    /// Whether the last profiler step was kept.
    pub include_last_step: bool,
    /// Whether ns timestamps were rounded inward (any trace with float timestamps).
    pub ns_rounding: bool,
    /// Whether the step filter applied (at least two `ProfilerStep` names).
    pub step_filter: bool,
    /// One entry per rank, by rank.
    pub ranks: Vec<HtaRank>,
    /// Things the reader should know (no steps, no GPU events...).
    pub notes: Vec<String>,
}

/// A GPU-side interval after rounding: start, end (µs) and class.
#[derive(Clone, Copy)]
struct Iv {
    ts: f64,
    end: f64,
    class: KernelClass,
    stream: i64,
}

/// Computes HTA's breakdown for traces given as `(rank, trace)` pairs.
pub fn hta_breakdown(traces: &[(u32, &KinetoTrace)], options: &HtaOptions) -> HtaBreakdown {
    // HTA's step symbols are global over all ranks: the filter applies when the traces hold
    // at least two distinct names containing "ProfilerStep".
    let mut step_names: BTreeSet<&str> = BTreeSet::new();
    for (_, t) in traces {
        for e in &t.events {
            let n = t.name(e);
            if n.contains("ProfilerStep") {
                step_names.insert(n);
            }
        }
    }
    let step_filter = step_names.len() >= 2;
    let mut notes = Vec::new();
    if step_names.is_empty() {
        notes.push("no ProfilerStep in the traces: every event is counted".to_owned());
    } else if step_names.len() == 1 {
        notes.push("only one ProfilerStep in the traces: every event is counted".to_owned());
    }
    // HTA subtracts the global minimum timestamp before anything else; sums of absolute µs
    // timestamps (~1e15) would also lose exactness in f64.
    let origin = traces
        .iter()
        .flat_map(|(_, t)| {
            let round = t.float_ts && !options.no_ns_rounding;
            t.events.iter().map(move |e| round_inward(e, round, 0.0).0)
        })
        .fold(f64::INFINITY, f64::min);
    let origin = if origin.is_finite() { origin } else { 0.0 };
    let mut ranks: Vec<HtaRank> = traces
        .iter()
        .map(|(rank, t)| rank_breakdown(*rank, t, step_filter, origin, options))
        .collect();
    ranks.sort_by_key(|r| r.rank);
    for r in &ranks {
        if r.gpu_events == 0 {
            notes.push(format!(
                "rank {}: no GPU kernels in the kept window (a CPU-only trace?): the GPU breakdown is empty",
                r.rank
            ));
        }
    }
    HtaBreakdown {
        include_last_step: options.include_last_step,
        ns_rounding: !options.no_ns_rounding && traces.iter().any(|(_, t)| t.float_ts),
        step_filter,
        ranks,
        notes,
    }
}

/// Start and end of an event relative to `origin`, rounded inward when `round`.
fn round_inward(e: &Event, round: bool, origin: f64) -> (f64, f64) {
    let end = e.ts + e.dur;
    if round {
        (e.ts.ceil() - origin, end.floor() - origin)
    } else {
        (e.ts - origin, end - origin)
    }
}

fn is_gpu(t: &KinetoTrace, e: &Event) -> bool {
    // HTA's GPUKernelFilter also counts "Event Sync" / "Context Sync" as GPU events.
    e.is_gpu() || matches!(t.name(e), "Event Sync" | "Context Sync")
}

fn rank_breakdown(
    rank: u32,
    t: &KinetoTrace,
    step_filter: bool,
    origin: f64,
    o: &HtaOptions,
) -> HtaRank {
    let round = t.float_ts && !o.no_ns_rounding;
    // HTA drops the Trace span at parse time; the importer never keeps it (cat Other with no
    // stream/correlation), and gpu_user_annotation events are CPU-side rows for HTA that
    // cannot match a GPU correlation, so they do not change anything here.
    let mut rows: Vec<Iv> = Vec::new();
    let mut steps_kept = Vec::new();
    if step_filter {
        let mut last_start = f64::NEG_INFINITY;
        let mut last_end = f64::NEG_INFINITY;
        let mut any_step = false;
        for e in t.events.iter().filter(|e| !is_gpu(t, e)) {
            if t.name(e).contains("ProfilerStep") {
                let (s, en) = round_inward(e, round, origin);
                last_start = last_start.max(s);
                last_end = last_end.max(en);
                any_step = true;
            }
        }
        // pandas' max of nothing is NaN and every comparison with it is false.
        let keep_cpu = |ts: f64| {
            any_step
                && if o.include_last_step {
                    ts <= last_end
                } else {
                    ts < last_start
                }
        };
        let mut correlations: HashSet<i64> = HashSet::new();
        for e in t.events.iter().filter(|e| !is_gpu(t, e)) {
            let (s, en) = round_inward(e, round, origin);
            if keep_cpu(s) {
                correlations.insert(e.correlation);
                // A CPU-side row with a stream (no correlation) still counts as GPU time in
                // HTA's breakdown (`stream != -1`).
                if e.stream != -1 {
                    rows.push(iv(t, e, s, en));
                }
                if let Some(n) = t.name(e).strip_prefix("ProfilerStep#") {
                    if let Ok(n) = n.trim().parse() {
                        steps_kept.push(n);
                    }
                }
            }
        }
        for e in t.events.iter().filter(|e| is_gpu(t, e)) {
            if correlations.contains(&e.correlation) && e.stream != -1 {
                let (s, en) = round_inward(e, round, origin);
                rows.push(iv(t, e, s, en));
            }
        }
    } else {
        for e in &t.events {
            if e.stream != -1 && e.cat != Cat::GpuUserAnnotation {
                let (s, en) = round_inward(e, round, origin);
                rows.push(iv(t, e, s, en));
            }
            if let Some(n) = t.name(e).strip_prefix("ProfilerStep#") {
                if let Ok(n) = n.trim().parse() {
                    steps_kept.push(n);
                }
            }
        }
    }
    steps_kept.sort_unstable();
    steps_kept.dedup();
    figures(rank, rows, steps_kept)
}

fn iv(t: &KinetoTrace, e: &Event, ts: f64, end: f64) -> Iv {
    Iv {
        ts,
        end,
        class: kernel_class(t.name(e)),
        stream: e.stream,
    }
}

/// HTA's `merge_kernel_intervals`: sort by start; a new group begins where a start is beyond
/// every earlier end; each group spans its least start to its greatest end. Returns the groups.
fn merge(mut iv: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    iv.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut out: Vec<(f64, f64)> = Vec::new();
    let mut cummax = f64::NEG_INFINITY;
    for (ts, end) in iv {
        if out.is_empty() || ts > cummax {
            out.push((ts, end));
        } else {
            let g = out.last_mut().expect("a group exists");
            g.1 = g.1.max(end);
        }
        cummax = cummax.max(end);
    }
    out
}

/// Σ (end − start) over merged groups, as HTA sums it (a group of events shorter than a
/// microsecond that rounding turned inside out counts negatively, as in HTA).
pub fn merged_length(groups: &[(f64, f64)]) -> f64 {
    groups.iter().map(|g| g.1).sum::<f64>() - groups.iter().map(|g| g.0).sum::<f64>()
}

/// HTA's overlap sweep over two merged interval lists: +1/−1 at communication starts/ends,
/// +2/−2 at computation starts/ends, time where the running sum is 3.
fn overlap(comm: &[(f64, f64)], comp: &[(f64, f64)]) -> f64 {
    let mut ev: Vec<(f64, i32)> = Vec::with_capacity(2 * (comm.len() + comp.len()));
    ev.extend(comm.iter().map(|g| (g.0, 1)));
    ev.extend(comm.iter().map(|g| (g.1, -1)));
    ev.extend(comp.iter().map(|g| (g.0, 2)));
    ev.extend(comp.iter().map(|g| (g.1, -2)));
    ev.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut running = 0;
    let mut total = 0.0;
    for w in 0..ev.len() {
        running += ev[w].1;
        if running == 3 {
            if let Some(next) = ev.get(w + 1) {
                total += next.0 - ev[w].0;
            }
        }
    }
    total
}

/// Python's `round(x, 2)` (correctly rounded, ties to even on the exact binary value).
pub fn round2(x: f64) -> f64 {
    format!("{x:.2}").parse().unwrap_or(x)
}

fn figures(rank: u32, rows: Vec<Iv>, steps_kept: Vec<u64>) -> HtaRank {
    let class_rows = |c: KernelClass| -> Vec<(f64, f64)> {
        rows.iter()
            .filter(|r| r.class == c)
            .map(|r| (r.ts, r.end))
            .collect()
    };
    let class_time = |c: KernelClass| -> (ClassTime, Vec<(f64, f64)>) {
        let iv = class_rows(c);
        let sum = iv.iter().map(|r| r.1 - r.0).sum();
        let groups = merge(iv.clone());
        (
            ClassTime {
                count: iv.len() as u64,
                sum_us: sum,
                merged_us: merged_length(&groups),
            },
            groups,
        )
    };
    let (communication, comm_groups) = class_time(KernelClass::Communication);
    let (memory, _) = class_time(KernelClass::Memory);
    let (computation, comp_groups) = class_time(KernelClass::Computation);
    let (other, _) = class_time(KernelClass::Other);
    let all = merge(rows.iter().map(|r| (r.ts, r.end)).collect());
    let (kernel_time, busy) = match (all.first(), all.last()) {
        (Some(f), Some(l)) => (l.1 - f.0, merged_length(&all)),
        _ => (0.0, 0.0),
    };
    let idle = kernel_time - busy;
    let compute = computation.merged_us;
    let non_compute = kernel_time - compute - idle;
    let pct = |x: f64| {
        if kernel_time > 0.0 {
            round2(100.0 * (x / kernel_time))
        } else {
            0.0
        }
    };
    let ov = if comm_groups.is_empty() || comp_groups.is_empty() {
        0.0
    } else {
        overlap(&comm_groups, &comp_groups)
    };
    let comm_len = merged_length(&comm_groups);
    let streams: BTreeSet<i64> = rows.iter().map(|r| r.stream).collect();
    HtaRank {
        rank,
        gpu_events: rows.len() as u64,
        kernel_time_us: kernel_time,
        idle_time_us: idle,
        compute_time_us: compute,
        non_compute_time_us: non_compute,
        idle_time_pctg: pct(idle),
        compute_time_pctg: pct(compute),
        non_compute_time_pctg: pct(non_compute),
        comm_comp_overlap_us: ov,
        comp_comm_overlap_pctg: (comm_len > 0.0).then(|| round2(100.0 * (ov / comm_len))),
        communication,
        memory,
        computation,
        other,
        gpu_busy_us: busy,
        streams: streams.into_iter().collect(),
        steps_kept,
    }
}

impl HtaBreakdown {
    /// The breakdown as a text table for a terminal.
    pub fn render_text(&self) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        if self.ranks.iter().all(|r| r.gpu_events == 0) {
            s.push_str(
                "GPU time breakdown (HTA definitions): no GPU kernels in these traces (a CPU-only job?), nothing to break down\n",
            );
            return s;
        }
        let _ = writeln!(
            s,
            "GPU time breakdown (HTA definitions{}{})",
            if self.include_last_step {
                ", last step included"
            } else {
                ", last ProfilerStep dropped"
            },
            if self.ns_rounding {
                ", ns rounded inward"
            } else {
                ""
            }
        );
        let _ = writeln!(
            s,
            "  {:>4}  {:>12}  {:>16}  {:>16}  {:>16}  {:>8}  steps",
            "rank", "span", "idle", "compute", "non-compute", "overlap"
        );
        for r in &self.ranks {
            let ms = |us: f64| format!("{:.3} ms", us / 1000.0);
            let _ = writeln!(
                s,
                "  {:>4}  {:>12}  {:>16}  {:>16}  {:>16}  {:>8}  {}",
                r.rank,
                ms(r.kernel_time_us),
                format!("{} {:>5.2}%", ms(r.idle_time_us), r.idle_time_pctg),
                format!("{} {:>5.2}%", ms(r.compute_time_us), r.compute_time_pctg),
                format!(
                    "{} {:>5.2}%",
                    ms(r.non_compute_time_us),
                    r.non_compute_time_pctg
                ),
                r.comp_comm_overlap_pctg
                    .map_or("-".to_owned(), |p| format!("{p:.2}%")),
                match r.steps_kept.as_slice() {
                    [a, .., b] if r.steps_kept.len() > 6 =>
                        format!("{a}-{b} ({})", r.steps_kept.len()),
                    s => s.iter().map(u64::to_string).collect::<Vec<_>>().join(" "),
                }
            );
        }
        s.push_str(
            "  span: first GPU start to last GPU end; idle: no GPU work; compute: non-NCCL, non-memory\n  kernels; overlap: share of NCCL kernel time with computation running (see docs/hta-definitions.md)\n",
        );
        for n in &self.notes {
            let _ = writeln!(s, "  note: {n}");
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_classes_follow_hta_regexes() {
        use KernelClass::*;
        assert_eq!(
            kernel_class("ncclKernel_AllReduce_RING_LL_Sum_float(x)"),
            Communication
        );
        assert_eq!(
            kernel_class("ncclDevKernel_AllGather_RING_LL(x)"),
            Communication
        );
        assert_eq!(kernel_class("ncclFoo"), Computation);
        assert_eq!(kernel_class("Memcpy HtoD (Pinned -> Device)"), Memory);
        assert_eq!(kernel_class("Memset (Device)"), Memory);
        assert_eq!(kernel_class("dma_copy"), Memory);
        assert_eq!(kernel_class("void fooMemcpyKernel()"), Other);
        assert_eq!(kernel_class("Event Sync"), Other);
        assert_eq!(kernel_class("ampere_sgemm_128x64_tn"), Computation);
    }

    #[test]
    fn merge_and_overlap_by_hand() {
        // [0,10] [5,12] [20,30] -> [0,12] [20,30], 22 µs.
        let g = merge(vec![(20.0, 30.0), (0.0, 10.0), (5.0, 12.0)]);
        assert_eq!(g, vec![(0.0, 12.0), (20.0, 30.0)]);
        assert_eq!(merged_length(&g), 22.0);
        // Touching intervals merge, as in HTA (a new group needs start > every earlier end).
        assert_eq!(merge(vec![(0.0, 5.0), (5.0, 7.0)]), vec![(0.0, 7.0)]);
        // comm [0,12] [20,30] vs comp [10,25]: 2 + 5 = 7 µs.
        assert_eq!(overlap(&g, &[(10.0, 25.0)]), 7.0);
        assert_eq!(overlap(&g, &[(40.0, 50.0)]), 0.0);
    }

    #[test]
    fn python_rounding() {
        assert_eq!(round2(14.305), 14.3); // 14.305 is 14.30499999... in binary
        assert_eq!(round2(77.7777), 77.78);
        assert_eq!(round2(0.125), 0.12); // exact tie, to even
    }
}
