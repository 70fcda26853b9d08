//! Metrics across ranks: averages for logging and sums for distributed validation.
//!
//! Each rank sees only its shard of the data, so a number worth logging (the loss, an accuracy)
//! has to be combined over the ranks. Every helper here is a collective: every rank of the group
//! must call the same helpers in the same order, and every rank gets the same, bitwise identical
//! result.
//!
//! * [`average`] / [`average_many`]: the mean over ranks of per-rank scalars (`all_reduce` with
//!   `Avg` over f64), e.g. the loss each rank computed on its batch;
//! * [`sum_counts`] / [`sum_count`]: exact integer sums (i64), e.g. correct predictions and
//!   examples seen;
//! * [`weighted_mean`] and [`WeightedMean`]: `sum(value * weight) / sum(weight)` over every
//!   rank's contributions, e.g. a validation loss averaged per example when ranks saw different
//!   numbers of examples (a plain [`average`] of per-rank means would weigh a rank's 3 leftover
//!   examples like another rank's 100);
//! * [`Accuracy`]: correct/total counts summed over ranks.

use comm::{ProcessGroup, ReduceOp};

use crate::error::{DdpError, Result};

/// The mean of `value` over the ranks of `group`.
pub fn average(group: &ProcessGroup, value: f64) -> Result<f64> {
    let mut v = [value];
    average_many(group, &mut v)?;
    Ok(v[0])
}

/// Replaces each of `values` by its mean over the ranks (one collective for all of them; every
/// rank must pass the same number of values).
pub fn average_many(group: &ProcessGroup, values: &mut [f64]) -> Result<()> {
    group.all_reduce(values, ReduceOp::Avg)?;
    Ok(())
}

/// The sum of `count` over the ranks.
pub fn sum_count(group: &ProcessGroup, count: u64) -> Result<u64> {
    let mut c = [count];
    sum_counts(group, &mut c)?;
    Ok(c[0])
}

/// Replaces each of `counts` by its sum over the ranks (one collective; every rank must pass
/// the same number of counts). Exact over the whole u64 range: each count travels as its high
/// and low 32-bit halves, summed separately as i64 (no overflow for fewer than 2^31 ranks). A
/// sum above `u64::MAX` is an error, on every rank alike.
pub fn sum_counts(group: &ProcessGroup, counts: &mut [u64]) -> Result<()> {
    let mut wire: Vec<i64> = counts
        .iter()
        .flat_map(|&c| [(c >> 32) as i64, (c & 0xffff_ffff) as i64])
        .collect();
    group.all_reduce(&mut wire, ReduceOp::Sum)?;
    for (i, (halves, out)) in wire.chunks_exact(2).zip(counts.iter_mut()).enumerate() {
        let (hi, lo) = (halves[0], halves[1]);
        let total = u128::try_from(hi)
            .ok()
            .zip(u128::try_from(lo).ok())
            .map(|(hi, lo)| (hi << 32) + lo)
            .and_then(|t| u64::try_from(t).ok());
        *out = total.ok_or_else(|| {
            DdpError::Metric(format!(
                "the sum of count {i} over the ranks does not fit in a u64"
            ))
        })?;
    }
    Ok(())
}

/// `sum(value * weight) / sum(weight)` over the ranks, where each rank contributes one `value`
/// with its `weight` (typically a mean over `weight` examples); `None` when the weights sum to
/// zero (no rank saw anything).
///
/// A rank passing a non-finite value or weight makes the call fail on every rank (the check
/// happens after the collective, so no rank is left waiting).
pub fn weighted_mean(group: &ProcessGroup, value: f64, weight: f64) -> Result<Option<f64>> {
    WeightedMean {
        weighted_sum: value * weight,
        weight,
    }
    .reduce(group)
}

/// A running weighted mean on one rank, reduced over the ranks with [`WeightedMean::reduce`].
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct WeightedMean {
    weighted_sum: f64,
    weight: f64,
}

impl WeightedMean {
    /// Nothing accumulated yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `value` with `weight` (e.g. a batch's mean loss and its number of examples). The
    /// weight must be finite and non-negative, the value finite.
    pub fn add(&mut self, value: f64, weight: f64) -> Result<()> {
        if !(weight.is_finite() && weight >= 0.0) {
            return Err(DdpError::Metric(format!(
                "a weight must be finite and non-negative, not {weight}"
            )));
        }
        if !value.is_finite() {
            return Err(DdpError::Metric(format!(
                "a weighted value must be finite, not {value}"
            )));
        }
        self.weighted_sum += value * weight;
        self.weight += weight;
        Ok(())
    }

    /// Sum of `value * weight` on this rank.
    pub fn weighted_sum(&self) -> f64 {
        self.weighted_sum
    }

    /// Sum of the weights on this rank.
    pub fn weight(&self) -> f64 {
        self.weight
    }

    /// The mean of this rank's contributions alone (`None` with zero total weight).
    pub fn local(&self) -> Option<f64> {
        (self.weight > 0.0).then(|| self.weighted_sum / self.weight)
    }

    /// The weighted mean over every rank's contributions (one collective); `None` when the
    /// weights of all ranks sum to zero. Fails on every rank if the sums are not finite.
    pub fn reduce(&self, group: &ProcessGroup) -> Result<Option<f64>> {
        let mut sums = [self.weighted_sum, self.weight];
        group.all_reduce(&mut sums, ReduceOp::Sum)?;
        let [weighted_sum, weight] = sums;
        if !(weighted_sum.is_finite() && weight.is_finite()) {
            return Err(DdpError::Metric(format!(
                "the weighted sums over the ranks are not finite (sum of value*weight \
                 {weighted_sum}, sum of weights {weight}): some rank contributed a non-finite or \
                 huge value or weight"
            )));
        }
        if weight < 0.0 {
            return Err(DdpError::Metric(format!(
                "the weights over the ranks sum to {weight}, a negative total"
            )));
        }
        Ok((weight > 0.0).then(|| weighted_sum / weight))
    }
}

/// Correct and total predictions on one rank, summed over the ranks with [`Accuracy::reduce`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Accuracy {
    /// Correct predictions.
    pub correct: u64,
    /// Predictions made.
    pub total: u64,
}

impl Accuracy {
    /// Nothing counted yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Counts a batch with `correct` right out of `total`.
    pub fn add(&mut self, correct: u64, total: u64) -> Result<()> {
        if correct > total {
            return Err(DdpError::Metric(format!(
                "{correct} correct predictions out of {total} is more than all of them"
            )));
        }
        let sum = |a: u64, b: u64| {
            a.checked_add(b)
                .ok_or_else(|| DdpError::Metric("the prediction counts overflow a u64".to_owned()))
        };
        self.correct = sum(self.correct, correct)?;
        self.total = sum(self.total, total)?;
        Ok(())
    }

    /// `correct / total` (`None` when nothing was counted).
    pub fn fraction(&self) -> Option<f64> {
        (self.total > 0).then(|| self.correct as f64 / self.total as f64)
    }

    /// The counts summed over the ranks (one collective).
    pub fn reduce(&self, group: &ProcessGroup) -> Result<Accuracy> {
        let mut c = [self.correct, self.total];
        sum_counts(group, &mut c)?;
        Ok(Accuracy {
            correct: c[0],
            total: c[1],
        })
    }
}
