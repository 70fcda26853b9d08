//! The communication cost model `time = latency + size / bandwidth`, fitted
//! to observed collectives.
//!
//! The fit is robust to outliers (a collective that waited for a slow rank,
//! a network hiccup): observations are grouped by size and each size
//! contributes its **median** time, weighted by its number of observations
//! and by `1 / time²`, so that the fit minimizes *relative* error and small
//! and large collectives count alike. The weighted least-squares line is
//! solved in closed form; a negative latency is clamped to zero (the line is
//! then refitted through the origin), and a line that does not rise with
//! size is rejected, since it has no bandwidth. Only a start-up calibration
//! sweep whose times do not rise with size (a latency-bound link over the
//! sizes that matter) gets a flat line instead: [`fit_latency_only`].
//!
//! Sizes are "bus bytes": a collective's bytes times the nccl-tests bus
//! factor of its operation ([`super::bus_factor`]), so the fitted bandwidth
//! is a bus bandwidth, and different operations can share one fit when one
//! operation alone has too few sizes.

use serde::{Deserialize, Serialize};

use super::stats::median;

/// A fitted line `time_ns = latency_ns + x · ns_per_byte` with its quality.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LinearFit {
    /// Fixed cost of a call (ns).
    pub latency_ns: f64,
    /// Cost per (bus) byte (ns); `1e9 / ns_per_byte` is the bandwidth in
    /// bytes/s.
    pub ns_per_byte: f64,
    /// Number of distinct sizes (points of the fit).
    pub sizes: usize,
    /// Number of observations.
    pub calls: u64,
    /// Coefficient of determination of the per-size medians (weighted by
    /// observations; 1 is a perfect line).
    pub r2: f64,
    /// Root mean square of the per-size medians' relative residuals
    /// `(median − model) / model`, weighted by observations: how far the
    /// model is from the typical time of each size.
    pub rel_rmse: f64,
    /// Median over all observations of `|time − model| / model`: how much a
    /// single call scatters around the model.
    pub rel_mad: f64,
    /// Whether the unconstrained fit gave a negative latency that was
    /// clamped to zero.
    pub latency_clamped: bool,
}

impl LinearFit {
    /// The model's time for `x` (bus) bytes (ns).
    pub fn predict_ns(&self, x: f64) -> f64 {
        self.latency_ns + x * self.ns_per_byte
    }

    /// The bandwidth in (bus) bytes per second.
    pub fn bandwidth_bytes_per_s(&self) -> f64 {
        if self.ns_per_byte > 0.0 {
            1e9 / self.ns_per_byte
        } else {
            f64::INFINITY
        }
    }
}

/// Why no line could be fitted.
#[derive(Clone, Debug, PartialEq)]
pub enum FitError {
    /// No observation.
    Empty,
    /// All observations have one size (the `x` given), so latency and
    /// bandwidth cannot be told apart.
    OneSize(f64),
    /// Time does not grow with size.
    NoBandwidth,
}

impl std::fmt::Display for FitError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FitError::Empty => f.write_str("no collective with a byte count was recorded"),
            FitError::OneSize(x) => write!(
                f,
                "all recorded collectives have the same size ({x:.0} bus bytes), so latency and bandwidth cannot be told apart"
            ),
            FitError::NoBandwidth => {
                f.write_str("the collectives' times do not grow with their size")
            }
        }
    }
}

/// Fits `time = latency + x · ns_per_byte` to `(x, time_ns)` observations
/// as described in the module documentation.
pub fn fit_latency_bandwidth(obs: &[(f64, f64)]) -> Result<LinearFit, FitError> {
    fit_line(obs, LineShape::Free)
}

/// Fits `time = x · ns_per_byte` (a line through the origin: no per-call
/// latency) to `(x, time_ns)` observations, weighted as
/// [`fit_latency_bandwidth`] weighs them; one size is enough. For when the
/// observations cannot tell the latency from the bandwidth: the latency is
/// then reported as 0 and clamped.
pub fn fit_bandwidth(obs: &[(f64, f64)]) -> Result<LinearFit, FitError> {
    fit_line(obs, LineShape::ThroughOrigin)
}

/// Fits `time = latency` (no size term, `ns_per_byte` 0): the median of the
/// sizes' median times. For a calibration sweep that spans the sizes the
/// buckets can take and whose times do not grow with size: over that range a
/// call costs its latency whatever its size, which is a measurement, not a
/// missing one (the advice then interpolates the sweep's own table).
pub fn fit_latency_only(obs: &[(f64, f64)]) -> Result<LinearFit, FitError> {
    fit_line(obs, LineShape::Flat)
}

/// Which line [`fit_line`] fits.
#[derive(Clone, Copy, PartialEq)]
enum LineShape {
    /// Latency and slope ([`fit_latency_bandwidth`]).
    Free,
    /// Slope only ([`fit_bandwidth`]).
    ThroughOrigin,
    /// Latency only ([`fit_latency_only`]).
    Flat,
}

/// The line of [`fit_latency_bandwidth`], [`fit_bandwidth`] or
/// [`fit_latency_only`], by `shape`.
fn fit_line(obs: &[(f64, f64)], shape: LineShape) -> Result<LinearFit, FitError> {
    let obs_len = obs.len();
    let mut obs: Vec<(f64, f64)> = obs
        .iter()
        .copied()
        .filter(|(x, t)| x.is_finite() && t.is_finite() && *x >= 0.0 && *t >= 0.0)
        .collect();
    if obs.is_empty() {
        return Err(FitError::Empty);
    }
    let pts = per_size_medians(&mut obs);
    if pts.len() < 2 && shape != LineShape::ThroughOrigin {
        return Err(FitError::OneSize(pts[0].0));
    }
    let floor = 1.0; // ns, keeps the weights finite for zero times
    let w = |y: f64, c: f64| c / y.max(floor).powi(2);
    let (mut sw, mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0, 0.0);
    for &(x, y, c) in &pts {
        let wi = w(y, c);
        sw += wi;
        sx += wi * x;
        sy += wi * y;
        sxx += wi * x * x;
        sxy += wi * x * y;
    }
    let den = sw * sxx - sx * sx;
    let mut slope = if den > 0.0 {
        (sw * sxy - sx * sy) / den
    } else {
        0.0
    };
    let mut latency = (sy - slope * sx) / sw;
    let mut clamped = false;
    if shape == LineShape::Flat {
        let mut times: Vec<f64> = pts.iter().map(|p| p.1).collect();
        (latency, slope) = (median(&mut times), 0.0);
    } else if latency < 0.0 || shape == LineShape::ThroughOrigin {
        clamped = true;
        latency = 0.0;
        slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    }
    let rises = slope > 0.0 || shape == LineShape::Flat;
    if !(rises && slope.is_finite() && latency.is_finite()) {
        return Err(FitError::NoBandwidth);
    }
    let model = |x: f64| latency + slope * x;
    let total_c: f64 = pts.iter().map(|p| p.2).sum();
    let mean_y = pts.iter().map(|p| p.1 * p.2).sum::<f64>() / total_c;
    let (mut ss_res, mut ss_tot, mut rel2) = (0.0, 0.0, 0.0);
    for &(x, y, c) in &pts {
        let m = model(x);
        ss_res += c * (y - m).powi(2);
        ss_tot += c * (y - mean_y).powi(2);
        rel2 += c * ((y - m) / m.max(floor)).powi(2);
    }
    let r2 = if ss_tot > 0.0 {
        1.0 - ss_res / ss_tot
    } else {
        1.0
    };
    let mut rel: Vec<f64> = obs
        .iter()
        .map(|&(x, t)| (t - model(x)).abs() / model(x).max(floor))
        .collect();
    Ok(LinearFit {
        latency_ns: latency,
        ns_per_byte: slope,
        sizes: pts.len(),
        calls: obs_len as u64,
        r2,
        rel_rmse: (rel2 / total_c).sqrt(),
        rel_mad: median(&mut rel),
        latency_clamped: clamped,
    })
}

/// The cost model of one transport, as [`super::advise`] reports it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CostFit {
    /// The transport (`"unknown"` for collectives without one).
    pub transport: String,
    /// The operation fitted (the one the gradient buckets use when this
    /// transport carries them, else the most frequent one).
    pub op: String,
    /// Whether other operations were fitted along (their sizes in bus
    /// bytes) because this operation alone had fewer than two sizes.
    pub mixed_ops: bool,
    /// The fitted line, sizes in bus bytes.
    pub fit: LinearFit,
    /// The bus factor of `op` among the run's ranks: a call of `b` bytes
    /// costs `latency + b · bus_factor · ns_per_byte`.
    pub bus_factor: f64,
    /// Whether the user gave this model (`--latency`/`--bandwidth`) instead
    /// of it being fitted to the trace; `fit`'s quality fields are then 0.
    #[serde(default)]
    pub assumed: bool,
    /// Whether the collectives fitted showed too few sizes (with several
    /// calls each) to tell a per-call latency from the bandwidth, so that
    /// the line was fitted through the origin (latency 0, which favours
    /// smaller buckets). Only with `compute_free`.
    #[serde(default)]
    pub latency_unmeasured: bool,
    /// Whether only the collectives that ran while their rank computed
    /// nothing were fitted: the times of all of them did not make a line
    /// that rises with size, because those that overlapped compute were
    /// slowed by contention for the CPU (or the GPU) and the earlier,
    /// smaller buckets are the ones that overlap.
    #[serde(default)]
    pub compute_free: bool,
    /// Whether the start-up calibration's sweep was among the calls fitted (then only calls
    /// that ran alone were, and the interference factors model the overlap).
    #[serde(default)]
    pub calibrated: bool,
    /// With `calibrated`: the median time (ns) of each size (bus bytes) among the calls that ran
    /// alone, by size. Predictions interpolate between them rather than follow the line: real
    /// links are not one line (a token bucket lets small messages through at full speed, NCCL
    /// switches protocols with the size), and the sweep spans the bucket sizes that matter.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub table: Vec<(f64, f64)>,
    /// With a `table`: the median over the calls of `|time − their size's median| / median`,
    /// how much one call scatters around the table.
    #[serde(default)]
    pub table_scatter: f64,
}

/// The median relative deviation of `obs` from `table` at their sizes.
pub fn table_scatter(table: &[(f64, f64)], obs: &[(f64, f64)]) -> f64 {
    let mut rel: Vec<f64> = obs
        .iter()
        .filter_map(|&(x, t)| {
            let m = table.iter().find(|p| p.0 == x)?.1;
            (m > 0.0).then(|| (t - m).abs() / m)
        })
        .collect();
    if rel.is_empty() {
        0.0
    } else {
        median(&mut rel)
    }
}

/// `(x, median time, count)` of each size of `obs` (`(x, time)`), by size; sorts `obs`.
fn per_size_medians(obs: &mut [(f64, f64)]) -> Vec<(f64, f64, f64)> {
    obs.sort_unstable_by(|a, b| a.0.total_cmp(&b.0));
    obs.chunk_by(|a, b| a.0 == b.0)
        .map(|run| {
            let mut t: Vec<f64> = run.iter().map(|o| o.1).collect();
            (run[0].0, median(&mut t), run.len() as f64)
        })
        .collect()
}

/// The per-size medians of `obs` (`(x, time)`), by size.
pub fn size_table(obs: &[(f64, f64)]) -> Vec<(f64, f64)> {
    per_size_medians(&mut obs.to_vec())
        .into_iter()
        .map(|(x, t, _)| (x, t))
        .collect()
}

/// The slope (ns per bus byte) of `table`'s last segment, when it rises.
pub fn last_slope(table: &[(f64, f64)]) -> Option<f64> {
    let [.., prev, last] = table else { return None };
    let s = (last.1 - prev.1) / (last.0 - prev.0);
    (s > 0.0).then_some(s)
}

/// `table`'s time at `x`: linear between the neighbouring sizes; below the smallest, the
/// smallest's time; above the largest, the last segment's slope (`fallback_slope` when that
/// does not rise).
pub fn interpolate(table: &[(f64, f64)], x: f64, fallback_slope: f64) -> f64 {
    let (Some(&first), Some(&last)) = (table.first(), table.last()) else {
        return 0.0;
    };
    if x <= first.0 {
        return first.1;
    }
    if x >= last.0 {
        let slope = last_slope(table).unwrap_or(fallback_slope);
        return last.1 + (x - last.0) * slope.max(0.0);
    }
    let i = table.partition_point(|p| p.0 <= x);
    let (a, b) = (table[i - 1], table[i]);
    a.1 + (b.1 - a.1) * (x - a.0) / (b.0 - a.0)
}

impl LinearFit {
    /// A line the user states rather than one fitted: `latency_ns` per call
    /// plus bytes at `busbw_bytes_per_s` (bus bandwidth).
    pub fn assumed(latency_ns: f64, busbw_bytes_per_s: f64) -> LinearFit {
        LinearFit {
            latency_ns,
            ns_per_byte: 1e9 / busbw_bytes_per_s,
            sizes: 0,
            calls: 0,
            r2: 1.0,
            rel_rmse: 0.0,
            rel_mad: 0.0,
            latency_clamped: false,
        }
    }
}

impl CostFit {
    /// The fitted operation as tables show it: `"all_reduce"`, with
    /// `" + others"` when other operations were fitted along and `" (no
    /// overlap)"` when only the calls that overlapped no compute were.
    pub fn op_label(&self) -> String {
        format!(
            "{}{}{}",
            self.op,
            if self.mixed_ops { " + others" } else { "" },
            if self.calibrated {
                " (calibrated)"
            } else if self.compute_free {
                " (no overlap)"
            } else {
                ""
            }
        )
    }

    /// Predicted time of one call of `op` moving `bytes` (ns).
    pub fn predict_ns(&self, bytes: u64) -> f64 {
        let x = bytes as f64 * self.bus_factor;
        if self.table.len() >= 2 {
            interpolate(&self.table, x, self.fit.ns_per_byte)
        } else {
            self.fit.predict_ns(x)
        }
    }

    /// The model's relative error: the table's scatter when predictions come from it, else
    /// the line's residual.
    pub fn relative_error(&self) -> f64 {
        if self.table.len() >= 2 {
            self.table_scatter
        } else {
            self.fit.rel_rmse
        }
    }

    /// Bus bandwidth (bytes/s).
    pub fn busbw_bytes_per_s(&self) -> f64 {
        self.fit.bandwidth_bytes_per_s()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exact_line_is_recovered() {
        // 100 µs + 1 ns per byte, three sizes, repeated.
        let obs: Vec<(f64, f64)> = [1e6, 4e6, 16e6]
            .iter()
            .flat_map(|&x| std::iter::repeat_n((x, 1e5 + x), 5))
            .collect();
        let f = fit_latency_bandwidth(&obs).unwrap();
        assert!((f.latency_ns - 1e5).abs() < 1e-3, "{f:?}");
        assert!((f.ns_per_byte - 1.0).abs() < 1e-9);
        assert_eq!((f.sizes, f.calls), (3, 15));
        assert!(f.r2 > 0.999_999 && f.rel_rmse < 1e-9 && f.rel_mad < 1e-9);
        assert!((f.bandwidth_bytes_per_s() - 1e9).abs() < 1e-3);
    }

    #[test]
    fn medians_ignore_outliers() {
        let obs = vec![
            (1e6, 1.1e6),
            (1e6, 1.1e6),
            (1e6, 50e6), // waited for a straggler
            (2e6, 2.1e6),
            (2e6, 2.1e6),
            (2e6, 0.2e6),
        ];
        let f = fit_latency_bandwidth(&obs).unwrap();
        assert!((f.latency_ns - 1e5).abs() < 1.0, "{f:?}");
        assert!((f.ns_per_byte - 1.0).abs() < 1e-6);
        assert!(f.rel_mad < 1e-9, "most calls sit on the line");
    }

    #[test]
    fn negative_latency_is_clamped() {
        let obs = vec![(1e6, 0.5e6), (2e6, 2.0e6)];
        let f = fit_latency_bandwidth(&obs).unwrap();
        assert!(f.latency_clamped);
        assert_eq!(f.latency_ns, 0.0);
        assert!(f.ns_per_byte > 0.0);
    }

    #[test]
    fn a_line_through_the_origin_takes_one_size() {
        // 2 ms for 1 MB, weighted medians: the 9 ms outlier does not count.
        let obs = [(1e6, 2e6), (1e6, 2e6), (1e6, 9e6)];
        assert_eq!(fit_latency_bandwidth(&obs), Err(FitError::OneSize(1e6)));
        let f = fit_bandwidth(&obs).unwrap();
        assert_eq!((f.latency_ns, f.ns_per_byte), (0.0, 2.0));
        assert!(f.latency_clamped);
        assert_eq!((f.sizes, f.calls), (1, 3));
        // Two sizes: the weighted least-squares slope through the origin,
        // Σ w·x·y / Σ w·x² with w = count / y²: w1 = 1e-12, w2 = 1e-12 / 16,
        // (1 + 0.5) / (1 + 0.25) = 1.2 ns per byte.
        let f = fit_bandwidth(&[(1e6, 1e6), (2e6, 4e6)]).unwrap();
        assert!((f.ns_per_byte - 1.2).abs() < 1e-12, "{f:?}");
        assert_eq!(fit_bandwidth(&[]), Err(FitError::Empty));
    }

    #[test]
    fn a_flat_sweep_gets_a_latency_only_line() {
        // Latency-bound: 1.2, 1.0, 1.1 and 0.9 ms for 4 KB to 4 MB, the
        // median of the medians (1.0 and 1.1) is 1.05 ms.
        let obs = [
            (4e3, 1.2e6),
            (4e4, 1.0e6),
            (4e4, 1.0e6),
            (4e5, 1.1e6),
            (4e6, 0.9e6),
        ];
        assert_eq!(fit_latency_bandwidth(&obs), Err(FitError::NoBandwidth));
        let f = fit_latency_only(&obs).unwrap();
        assert_eq!((f.latency_ns, f.ns_per_byte), (1.05e6, 0.0));
        assert!(!f.latency_clamped);
        assert_eq!((f.sizes, f.calls), (4, 5));
        assert_eq!(f.bandwidth_bytes_per_s(), f64::INFINITY);
        assert_eq!(f.predict_ns(1e9), 1.05e6);
        assert_eq!(fit_latency_only(&[(1e3, 5.0)]), Err(FitError::OneSize(1e3)));
    }

    #[test]
    fn the_table_interpolates_and_extends_its_last_slope() {
        let t = size_table(&[
            (1e3, 10.0),
            (1e3, 30.0),
            (1e3, 20.0),
            (2e3, 40.0),
            (4e3, 60.0),
        ]);
        assert_eq!(t, vec![(1e3, 20.0), (2e3, 40.0), (4e3, 60.0)]);
        assert_eq!(interpolate(&t, 500.0, 1.0), 20.0);
        assert_eq!(interpolate(&t, 1500.0, 1.0), 30.0);
        assert_eq!(interpolate(&t, 3e3, 1.0), 50.0);
        // Past the largest: 0.01 ns/byte, the last segment's slope.
        assert_eq!(interpolate(&t, 6e3, 1.0), 80.0);
        // A last segment that falls: the line's slope instead.
        assert_eq!(interpolate(&[(1e3, 50.0), (2e3, 40.0)], 3e3, 0.5), 540.0);
    }

    #[test]
    fn errors() {
        assert_eq!(fit_latency_bandwidth(&[]), Err(FitError::Empty));
        assert_eq!(
            fit_latency_bandwidth(&[(5.0, 1.0), (5.0, 2.0)]),
            Err(FitError::OneSize(5.0))
        );
        assert_eq!(
            fit_latency_bandwidth(&[(1.0, 10.0), (2.0, 5.0)]),
            Err(FitError::NoBandwidth)
        );
    }
}
