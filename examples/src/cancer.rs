//! The Breast Cancer Wisconsin (Diagnostic) data set shipped in `examples/data/` (see its
//! README for attribution and licence): parsing, the 80/20 split, and feature standardisation.

use std::fmt;

/// The CSV, built into the binaries so they run from any directory.
pub const CSV: &str = include_str!("../data/breast_cancer.csv");

/// Number of features per sample.
pub const FEATURES: usize = 30;

/// A problem with the data file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DataError(pub String);

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for DataError {}

/// Samples: row-major features and 0/1 labels (0 = malignant, 1 = benign).
#[derive(Debug, Clone, PartialEq)]
pub struct Dataset {
    /// `len * FEATURES` values.
    pub features: Vec<f32>,
    /// One label per sample.
    pub labels: Vec<f32>,
}

impl Dataset {
    /// Number of samples.
    pub fn len(&self) -> usize {
        self.labels.len()
    }

    /// Whether there is no sample.
    pub fn is_empty(&self) -> bool {
        self.labels.is_empty()
    }

    /// The samples at `indices`, in that order.
    pub fn select(&self, indices: &[usize]) -> Dataset {
        let mut features = Vec::with_capacity(indices.len() * FEATURES);
        let mut labels = Vec::with_capacity(indices.len());
        for &i in indices {
            features.extend_from_slice(&self.features[i * FEATURES..(i + 1) * FEATURES]);
            labels.push(self.labels[i]);
        }
        Dataset { features, labels }
    }
}

/// Parses the file: a first line `569,30,malignant,benign`, then `FEATURES` numbers and the
/// label per line.
pub fn parse(text: &str) -> Result<Dataset, DataError> {
    let mut lines = text.lines().enumerate();
    let (_, head) = lines
        .next()
        .ok_or_else(|| DataError("the data file is empty".into()))?;
    let declared: usize = head
        .split(',')
        .next()
        .and_then(|n| n.trim().parse().ok())
        .ok_or_else(|| {
            DataError(format!(
                "line 1 should start with the sample count, found {head:?}"
            ))
        })?;
    let mut data = Dataset {
        features: Vec::new(),
        labels: Vec::new(),
    };
    for (no, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let fields: Vec<&str> = line.split(',').collect();
        if fields.len() != FEATURES + 1 {
            return Err(DataError(format!(
                "line {}: expected {} comma-separated values, found {}",
                no + 1,
                FEATURES + 1,
                fields.len()
            )));
        }
        for f in &fields[..FEATURES] {
            let v: f32 = f
                .trim()
                .parse()
                .map_err(|_| DataError(format!("line {}: {f:?} is not a number", no + 1)))?;
            data.features.push(v);
        }
        let label = match fields[FEATURES].trim() {
            "0" => 0.0,
            "1" => 1.0,
            other => {
                return Err(DataError(format!(
                    "line {}: label {other:?} is not 0 or 1",
                    no + 1
                )))
            }
        };
        data.labels.push(label);
    }
    if data.len() != declared {
        return Err(DataError(format!(
            "the header declares {declared} samples but the file has {}",
            data.len()
        )));
    }
    Ok(data)
}

/// The 80/20 split of the tutorial: a permutation from `seed` (PyTorch's `randperm`), the first
/// `len - ceil(len / 5)` samples for training (455 of 569) and the rest for testing (114).
pub fn split(data: &Dataset, seed: u64) -> (Dataset, Dataset) {
    let mut gen = ddp::sampler::CpuGenerator::new(seed);
    let perm = ddp::sampler::randperm(data.len(), &mut gen);
    let test_len = data.len().div_ceil(5);
    let train_len = data.len() - test_len;
    (
        data.select(&perm[..train_len]),
        data.select(&perm[train_len..]),
    )
}

/// Standardises every feature with the mean and standard deviation of `reference` (the
/// training set), so test data is scaled the same way.
pub fn standardize(reference: &Dataset, targets: &mut [&mut Dataset]) {
    let n = reference.len().max(1) as f64;
    let mut mean = [0f64; FEATURES];
    let mut var = [0f64; FEATURES];
    for row in reference.features.chunks_exact(FEATURES) {
        for (m, &v) in mean.iter_mut().zip(row) {
            *m += f64::from(v) / n;
        }
    }
    for row in reference.features.chunks_exact(FEATURES) {
        for ((s, &v), m) in var.iter_mut().zip(row).zip(&mean) {
            *s += (f64::from(v) - m).powi(2) / n;
        }
    }
    for target in targets.iter_mut() {
        for row in target.features.chunks_exact_mut(FEATURES) {
            for ((v, m), s) in row.iter_mut().zip(&mean).zip(&var) {
                let sd = s.sqrt().max(1e-12);
                *v = ((f64::from(*v) - m) / sd) as f32;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_file_has_569_samples_212_malignant() {
        let data = parse(CSV).unwrap();
        assert_eq!(data.len(), 569);
        assert_eq!(data.features.len(), 569 * FEATURES);
        assert_eq!(data.labels.iter().filter(|&&l| l == 0.0).count(), 212);
        // First sample of the file, checked by eye against the CSV.
        assert_eq!(data.features[0], 17.99);
        assert_eq!(data.labels[0], 0.0);
    }

    #[test]
    fn the_split_is_455_and_114_and_covers_every_sample_once() {
        let data = parse(CSV).unwrap();
        let (train, test) = split(&data, 42);
        assert_eq!((train.len(), test.len()), (455, 114));
        let mut all: Vec<Vec<u32>> = train
            .features
            .chunks_exact(FEATURES)
            .chain(test.features.chunks_exact(FEATURES))
            .map(|r| r.iter().map(|v| v.to_bits()).collect())
            .collect();
        let mut orig: Vec<Vec<u32>> = data
            .features
            .chunks_exact(FEATURES)
            .map(|r| r.iter().map(|v| v.to_bits()).collect())
            .collect();
        all.sort();
        orig.sort();
        assert_eq!(all, orig);
    }

    #[test]
    fn standardized_training_features_have_zero_mean_and_unit_variance() {
        let data = parse(CSV).unwrap();
        let (mut train, mut test) = split(&data, 42);
        let reference = train.clone();
        standardize(&reference, &mut [&mut train, &mut test]);
        for f in 0..FEATURES {
            let col: Vec<f64> = train
                .features
                .chunks_exact(FEATURES)
                .map(|r| f64::from(r[f]))
                .collect();
            let mean = col.iter().sum::<f64>() / col.len() as f64;
            let var = col.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / col.len() as f64;
            assert!(
                mean.abs() < 1e-4 && (var - 1.0).abs() < 1e-3,
                "feature {f}: {mean} {var}"
            );
        }
    }

    #[test]
    fn bad_files_are_refused_with_the_line_number() {
        assert!(parse("").unwrap_err().0.contains("empty"));
        let err = parse("1,30,a,b\n1,2,3\n").unwrap_err();
        assert!(err.0.contains("line 2"), "{err}");
        let row = vec!["1"; FEATURES].join(",");
        let err = parse(&format!("2,30,a,b\n{row},0\n")).unwrap_err();
        assert!(err.0.contains("declares 2"), "{err}");
    }
}
