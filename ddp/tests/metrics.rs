//! `ddp::metrics` with 1-3 ranks as threads over loopback, against values computed by hand.

mod threads;

use ddp::metrics::{
    average, average_many, sum_count, sum_counts, weighted_mean, Accuracy, WeightedMean,
};
use ddp::DdpError;
use threads::run_ranks;

#[test]
fn average_of_a_scalar_over_three_ranks() {
    let losses = [1.0, 2.5, 4.5];
    let got = run_ranks(3, |pg| average(&pg, losses[pg.rank()]).expect("average"));
    // (1 + 2.5 + 4.5) / 3
    assert_eq!(got, vec![8.0 / 3.0; 3]);
}

#[test]
fn average_on_a_single_rank_is_the_value() {
    let got = run_ranks(1, |pg| average(&pg, 0.7).expect("average"));
    assert_eq!(got, vec![0.7]);
}

#[test]
fn average_many_in_one_call() {
    let got = run_ranks(2, |pg| {
        let r = pg.rank() as f64;
        let mut v = [r, 10.0 * r + 1.0, -3.0];
        average_many(&pg, &mut v).expect("average_many");
        v
    });
    // rank 0: [0, 1, -3], rank 1: [1, 11, -3]
    assert_eq!(got, vec![[0.5, 6.0, -3.0]; 2]);
}

#[test]
fn counts_are_summed_exactly() {
    let got = run_ranks(3, |pg| {
        let correct = [3u64, 5, 7][pg.rank()];
        let total = [10u64, 10, 9][pg.rank()];
        let mut c = [correct, total];
        sum_counts(&pg, &mut c).expect("sum_counts");
        (c, sum_count(&pg, 1).expect("sum_count"))
    });
    assert_eq!(got, vec![([15, 29], 3); 3]);
}

#[test]
fn counts_use_the_whole_u64_range() {
    // Thirds of u64::MAX (whose high and low halves both carry): exactly u64::MAX in total,
    // far beyond i64 and f64 precision.
    let third = u64::MAX / 3;
    let parts = [third, third, u64::MAX - 2 * third];
    let got = run_ranks(3, |pg| sum_count(&pg, parts[pg.rank()]).expect("sum_count"));
    assert_eq!(got, vec![u64::MAX; 3]);

    let parts = [(1u64 << 40) + 0xffff_ffff, (1u64 << 33) + 1, 0];
    let got = run_ranks(3, |pg| sum_count(&pg, parts[pg.rank()]).expect("sum_count"));
    assert_eq!(got, vec![(1u64 << 40) + (1 << 33) + (1 << 32); 3]);
}

#[test]
fn a_sum_beyond_u64_fails_on_every_rank() {
    let parts = [u64::MAX, 1];
    let got = run_ranks(2, |pg| match sum_count(&pg, parts[pg.rank()]) {
        Err(DdpError::Metric(m)) => m,
        other => panic!("expected a metric error, got {other:?}"),
    });
    for m in got {
        assert!(m.contains("does not fit in a u64"), "{m}");
    }
}

#[test]
fn weighted_mean_weighs_by_count() {
    // (0.5 * 10 + 0.25 * 30 + 0.75 * 0) / (10 + 30 + 0) = 12.5 / 40
    let contributions = [(0.5, 10.0), (0.25, 30.0), (0.75, 0.0)];
    let got = run_ranks(3, |pg| {
        let (v, w) = contributions[pg.rank()];
        weighted_mean(&pg, v, w).expect("weighted_mean")
    });
    assert_eq!(got, vec![Some(0.3125); 3]);
    // The plain average of the per-rank values would be 0.5: the weights matter.
    assert_ne!(got[0], Some(0.5));
}

#[test]
fn weighted_mean_of_nothing_is_none() {
    let got = run_ranks(2, |pg| weighted_mean(&pg, 1.0, 0.0).expect("weighted_mean"));
    assert_eq!(got, vec![None, None]);
}

#[test]
fn weighted_mean_accumulates_batches() {
    let got = run_ranks(2, |pg| {
        let mut m = WeightedMean::new();
        if pg.rank() == 0 {
            m.add(1.0, 2.0).expect("add");
            m.add(3.0, 2.0).expect("add");
            assert_eq!(m.local(), Some(2.0));
        } else {
            m.add(2.5, 4.0).expect("add");
        }
        m.reduce(&pg).expect("reduce")
    });
    // (1*2 + 3*2 + 2.5*4) / 8 = 18 / 8
    assert_eq!(got, vec![Some(2.25); 2]);
}

#[test]
fn a_non_finite_contribution_fails_on_every_rank() {
    let got = run_ranks(2, |pg| {
        let v = if pg.rank() == 1 { f64::NAN } else { 1.0 };
        match weighted_mean(&pg, v, 3.0) {
            Err(DdpError::Metric(m)) => m,
            other => panic!("expected a metric error, got {other:?}"),
        }
    });
    for m in got {
        assert!(m.contains("not finite"), "{m}");
    }
}

#[test]
fn weighted_mean_refuses_bad_local_input() {
    let mut m = WeightedMean::new();
    assert!(matches!(m.add(1.0, -1.0), Err(DdpError::Metric(_))));
    assert!(matches!(
        m.add(f64::INFINITY, 1.0),
        Err(DdpError::Metric(_))
    ));
    assert_eq!(
        m,
        WeightedMean::new(),
        "refused input must not be accumulated"
    );
}

#[test]
fn accuracy_over_ranks() {
    let got = run_ranks(3, |pg| {
        let mut acc = Accuracy::new();
        match pg.rank() {
            0 => {
                acc.add(4, 6).expect("add");
                acc.add(3, 4).expect("add");
            }
            1 => acc.add(3, 5).expect("add"),
            _ => {}
        }
        acc.reduce(&pg).expect("reduce")
    });
    for a in got {
        assert_eq!(
            a,
            Accuracy {
                correct: 10,
                total: 15
            }
        );
        assert_eq!(a.fraction(), Some(10.0 / 15.0));
    }
    assert_eq!(Accuracy::new().fraction(), None);
    assert!(matches!(
        Accuracy::new().add(3, 2),
        Err(DdpError::Metric(_))
    ));
}
