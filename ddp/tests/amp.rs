//! `ddp::amp`: CPU autocast really computes in bf16/f16 and restores libtorch's state on exit
//! (also after a panic, also when nested); the loss scaler follows PyTorch's growth/backoff rule
//! step by step (checked by hand), refuses misuse, and with a process group skips a step on
//! every rank when only one rank saw a non-finite gradient.

mod threads;

use std::panic::{catch_unwind, AssertUnwindSafe};

use ddp::amp::{
    autocast, autocast_dtype, is_autocast_enabled, AmpError, GradScaler, GradScalerConfig,
    GradScalerState,
};
use ddp::optim::{Optimizer, OptimizerKind};
use tch::nn::{self, Module};
use tch::{Device, Kind, Tensor};
use threads::run_ranks;

fn floats(t: &Tensor) -> Vec<f32> {
    let t = t.detach().to_kind(Kind::Float).reshape([-1]);
    let mut out = vec![0f32; t.numel()];
    t.copy_data(&mut out, t.numel());
    out
}

fn ramp(n: i64, shape: &[i64], scale: f64) -> Tensor {
    (Tensor::arange(n, tch::kind::FLOAT_CPU) * scale - 0.3).reshape(shape)
}

#[test]
fn cpu_autocast_runs_a_linear_layer_in_bf16() {
    let vs = nn::VarStore::new(Device::Cpu);
    let linear = nn::linear(vs.root() / "fc", 8, 4, Default::default());
    let x = ramp(24, &[3, 8], 0.137);

    assert!(!is_autocast_enabled(Device::Cpu).expect("state"));
    let y = autocast(Device::Cpu, Kind::BFloat16, true, || {
        assert!(is_autocast_enabled(Device::Cpu).expect("state"));
        assert_eq!(autocast_dtype(Device::Cpu).expect("dtype"), Kind::BFloat16);
        linear.forward(&x)
    })
    .expect("autocast");
    assert_eq!(
        y.kind(),
        Kind::BFloat16,
        "linear is on CPU autocast's bf16 list"
    );
    assert!(!is_autocast_enabled(Device::Cpu).expect("state"));

    // The same as casting the operands to bf16 by hand ...
    let bias = linear.bs.as_ref().expect("bias");
    let by_hand = x.to_kind(Kind::BFloat16).linear(
        &linear.ws.to_kind(Kind::BFloat16),
        Some(bias.to_kind(Kind::BFloat16)),
    );
    assert_eq!(floats(&y), floats(&by_hand));
    // ... and not the float32 result.
    let full = linear.forward(&x);
    assert_eq!(full.kind(), Kind::Float);
    assert_ne!(floats(&y), floats(&full));
}

#[test]
fn autocast_regions_nest_and_restore() {
    let x = ramp(12, &[3, 4], 0.31);
    let w = ramp(8, &[2, 4], -0.17);
    let out = autocast(Device::Cpu, Kind::BFloat16, true, || {
        let inner_off = autocast(Device::Cpu, Kind::BFloat16, false, || x.matmul(&w.tr()))
            .expect("inner region");
        assert!(
            is_autocast_enabled(Device::Cpu).expect("state"),
            "outer region restored"
        );
        let inner_half = autocast(Device::Cpu, Kind::Half, true, || {
            assert_eq!(autocast_dtype(Device::Cpu).expect("dtype"), Kind::Half);
            x.matmul(&w.tr())
        })
        .expect("inner region");
        assert_eq!(autocast_dtype(Device::Cpu).expect("dtype"), Kind::BFloat16);
        (inner_off, inner_half, x.matmul(&w.tr()))
    })
    .expect("outer region");
    assert_eq!(out.0.kind(), Kind::Float, "autocast disabled inside");
    assert_eq!(out.1.kind(), Kind::Half);
    assert_eq!(out.2.kind(), Kind::BFloat16);
    assert!(!is_autocast_enabled(Device::Cpu).expect("state"));
}

#[test]
fn a_panic_inside_autocast_still_leaves_the_region() {
    let r = catch_unwind(AssertUnwindSafe(|| {
        let _ = autocast(Device::Cpu, Kind::BFloat16, true, || {
            panic!("inside autocast")
        });
    }));
    assert!(r.is_err(), "the panic goes on");
    assert!(!is_autocast_enabled(Device::Cpu).expect("state"));
    let y = ramp(4, &[2, 2], 1.0).matmul(&ramp(4, &[2, 2], 0.5));
    assert_eq!(y.kind(), Kind::Float);
}

#[test]
fn autocast_state_is_per_thread() {
    autocast(Device::Cpu, Kind::BFloat16, true, || {
        let other = std::thread::spawn(|| is_autocast_enabled(Device::Cpu).expect("state"))
            .join()
            .expect("thread");
        assert!(!other, "another thread is not inside this region");
    })
    .expect("autocast");
}

#[test]
fn autocast_refuses_what_it_cannot_do() {
    assert!(matches!(
        autocast(Device::Cpu, Kind::Float, true, || ()),
        Err(AmpError::UnsupportedDtype { kind: Kind::Float })
    ));
    assert!(matches!(
        autocast(Device::Mps, Kind::Half, true, || ()),
        Err(AmpError::UnsupportedDevice { .. })
    ));
    if !tch::Cuda::is_available() {
        assert!(matches!(
            autocast(Device::Cuda(0), Kind::Half, true, || ()),
            Err(AmpError::CudaUnavailable)
        ));
    }
    assert!(!is_autocast_enabled(Device::Cpu).expect("state"));
}

/// One parameter, SGD with lr 1, and a loss `sum(p * c)` whose unscaled gradient is `c`.
struct Setup {
    p: Tensor,
    opt: Optimizer,
}

impl Setup {
    fn new(init: &[f32]) -> Setup {
        let p = Tensor::from_slice(init).set_requires_grad(true);
        let opt = Optimizer::new(OptimizerKind::sgd(1.0), vec![p.shallow_clone()]);
        Setup { p, opt }
    }

    fn backward(&mut self, scaler: &GradScaler, c: &[f32]) {
        self.opt.zero_grad().expect("zero_grad");
        let loss = (&self.p * Tensor::from_slice(c)).sum(Kind::Float);
        scaler.scale(&loss).expect("scale").backward();
    }
}

#[test]
fn scaler_growth_and_backoff_follow_the_rule() {
    let mut scaler = GradScaler::new(GradScalerConfig {
        init_scale: 8.0,
        growth_factor: 2.0,
        backoff_factor: 0.5,
        growth_interval: 3,
        enabled: true,
    })
    .expect("scaler");
    let mut s = Setup::new(&[1.0, 2.0]);
    let inf = f32::INFINITY;
    // (gradient, stepped, scale after update, tracker after update), computed by hand:
    // three clean steps grow 8 -> 16; an inf backs off to 8; one clean step; a NaN backs off
    // to 4; three clean steps grow to 8.
    let plan: [([f32; 2], bool, f32, u32); 9] = [
        ([0.5, 0.25], true, 8.0, 1),
        ([0.5, 0.25], true, 8.0, 2),
        ([0.5, 0.25], true, 16.0, 0),
        ([inf, 0.25], false, 8.0, 0),
        ([0.25, 0.5], true, 8.0, 1),
        ([f32::NAN, 0.5], false, 4.0, 0),
        ([0.25, 0.5], true, 4.0, 1),
        ([0.25, 0.5], true, 4.0, 2),
        ([0.25, 0.5], true, 8.0, 0),
    ];
    let mut expect_p = [1.0f32, 2.0];
    for (i, (c, stepped, scale, tracker)) in plan.into_iter().enumerate() {
        s.backward(&scaler, &c);
        let scaled = floats(&s.p.grad());
        if stepped {
            let want: Vec<f32> = c.iter().map(|g| g * scaler.get_scale()).collect();
            assert_eq!(
                scaled,
                want,
                "iteration {i}: gradient scaled by {}",
                scaler.get_scale()
            );
        }
        assert_eq!(
            scaler.step(&mut s.opt).expect("step"),
            stepped,
            "iteration {i}"
        );
        assert_eq!(scaler.found_inf(&s.opt), Some(!stepped));
        if stepped {
            // The optimizer saw the unscaled gradient c: p -= 1.0 * c.
            expect_p[0] -= c[0];
            expect_p[1] -= c[1];
        }
        assert_eq!(floats(&s.p), expect_p, "iteration {i}: parameter");
        scaler.update().expect("update");
        assert_eq!(scaler.get_scale(), scale, "iteration {i}: scale");
        assert_eq!(scaler.growth_tracker(), tracker, "iteration {i}: tracker");
    }
}

#[test]
fn scaler_defaults_are_pytorchs() {
    let c = GradScalerConfig::default();
    assert_eq!(
        (
            c.init_scale,
            c.growth_factor,
            c.backoff_factor,
            c.growth_interval,
            c.enabled
        ),
        (65536.0, 2.0, 0.5, 2000, true)
    );
    let scaler = GradScaler::new(c).expect("scaler");
    assert_eq!(scaler.get_scale(), 65536.0);
}

#[test]
fn scaler_does_not_grow_past_float32() {
    let max_pow2 = 2f64.powi(127);
    let mut scaler = GradScaler::new(GradScalerConfig {
        init_scale: max_pow2,
        growth_interval: 1,
        ..GradScalerConfig::default()
    })
    .expect("scaler");
    let mut s = Setup::new(&[1.0]);
    s.backward(&scaler, &[1e-30]);
    assert!(scaler.step(&mut s.opt).expect("step"));
    scaler.update().expect("update");
    assert_eq!(
        f64::from(scaler.get_scale()),
        max_pow2,
        "2^128 is not a finite f32"
    );
    assert_eq!(scaler.growth_tracker(), 0);
}

#[test]
fn scaler_keeps_a_bf16_loss_in_bf16() {
    let scaler = GradScaler::new(GradScalerConfig::default()).expect("scaler");
    let loss = Tensor::from_slice(&[1.5f32]).to_kind(Kind::BFloat16);
    let scaled = scaler.scale(&loss).expect("scale");
    assert_eq!(scaled.kind(), Kind::BFloat16);
    assert_eq!(floats(&scaled), vec![1.5 * 65536.0]);
}

#[test]
fn scaler_refuses_misuse_like_pytorch() {
    let mut scaler = GradScaler::new(GradScalerConfig::default()).expect("scaler");
    let mut s = Setup::new(&[1.0]);
    assert!(matches!(scaler.update(), Err(AmpError::NoInfChecks)));
    // An optimizer without gradients records no inf check (PyTorch: "No inf checks were
    // recorded for this optimizer", then the same for update()).
    assert!(matches!(
        scaler.step(&mut s.opt),
        Err(AmpError::NoGradients)
    ));
    assert!(matches!(scaler.update(), Err(AmpError::NoInfChecks)));

    let mut scaler = GradScaler::new(GradScalerConfig::default()).expect("scaler");

    s.backward(&scaler, &[1.0]);
    scaler.unscale_(&s.opt).expect("unscale");
    assert!(matches!(
        scaler.unscale_(&s.opt),
        Err(AmpError::AlreadyUnscaled)
    ));
    assert!(scaler
        .step(&mut s.opt)
        .expect("step after an explicit unscale_"));
    assert!(matches!(
        scaler.step(&mut s.opt),
        Err(AmpError::AlreadyStepped)
    ));
    assert!(matches!(
        scaler.unscale_(&s.opt),
        Err(AmpError::UnscaleAfterStep)
    ));
    scaler.update().expect("update");
    // A new iteration starts clean.
    s.backward(&scaler, &[1.0]);
    assert!(scaler.step(&mut s.opt).expect("step"));

    let half = Tensor::from_slice(&[1.0f32])
        .to_kind(Kind::Half)
        .set_requires_grad(true);
    let mut opt = Optimizer::new(OptimizerKind::sgd(0.1), vec![half.shallow_clone()]);
    (&half * 2.0).sum(Kind::Half).backward();
    assert!(matches!(
        scaler.step(&mut opt),
        Err(AmpError::Fp16Gradients { index: 0 })
    ));

    for bad in [
        GradScalerConfig {
            growth_factor: 1.0,
            ..GradScalerConfig::default()
        },
        GradScalerConfig {
            backoff_factor: 1.0,
            ..GradScalerConfig::default()
        },
        GradScalerConfig {
            growth_interval: 0,
            ..GradScalerConfig::default()
        },
        GradScalerConfig {
            init_scale: f64::NAN,
            ..GradScalerConfig::default()
        },
    ] {
        assert!(
            matches!(GradScaler::new(bad), Err(AmpError::InvalidConfig(_))),
            "{bad:?}"
        );
    }
}

#[test]
fn scaler_state_round_trip() {
    let config = GradScalerConfig {
        init_scale: 1024.0,
        growth_interval: 5,
        ..GradScalerConfig::default()
    };
    let mut a = GradScaler::new(config).expect("scaler");
    let mut s = Setup::new(&[1.0]);
    for c in [1.0, f32::INFINITY, 1.0, 1.0] {
        s.backward(&a, &[c]);
        a.step(&mut s.opt).expect("step");
        a.update().expect("update");
    }
    let state = a.state().expect("enabled scaler has a state");
    assert_eq!(
        state,
        GradScalerState {
            scale: 512.0,
            growth_factor: 2.0,
            backoff_factor: 0.5,
            growth_interval: 5,
            growth_tracker: 2
        }
    );
    let mut b = GradScaler::new(GradScalerConfig::default()).expect("scaler");
    b.load_state(&state).expect("load");
    assert_eq!(b.state(), Some(state));
    assert_eq!(b.config().growth_interval, 5);

    let bad = GradScalerState {
        growth_tracker: 5,
        ..state
    };
    assert!(matches!(b.load_state(&bad), Err(AmpError::InvalidState(_))));
    assert_eq!(b.state(), Some(state), "a refused state changes nothing");
}

#[test]
fn a_disabled_scaler_passes_through() {
    let mut scaler = GradScaler::new(GradScalerConfig {
        enabled: false,
        ..GradScalerConfig::default()
    })
    .expect("scaler");
    let mut s = Setup::new(&[1.0]);
    s.backward(&scaler, &[f32::INFINITY]);
    assert_eq!(floats(&s.p.grad()), vec![f32::INFINITY]);
    assert!(
        scaler.step(&mut s.opt).expect("step"),
        "a disabled scaler always steps"
    );
    scaler.update().expect("update");
    assert_eq!(scaler.get_scale(), 1.0);
    assert_eq!(scaler.state(), None);
}

/// Two ranks; only rank 1 sees an inf gradient in the first iteration. Both skip that step and
/// back off to the same scale; in the second (clean) iteration both step.
#[test]
fn a_non_finite_gradient_on_one_rank_skips_the_step_everywhere() {
    let results = run_ranks(2, |pg| {
        let rank = pg.rank();
        let mut scaler = GradScaler::new(GradScalerConfig {
            init_scale: 256.0,
            ..GradScalerConfig::default()
        })
        .expect("scaler")
        .with_process_group(pg);
        let mut s = Setup::new(&[1.0, 1.0]);

        let first = if rank == 1 {
            [0.5, f32::INFINITY]
        } else {
            [0.5, 0.5]
        };
        s.backward(&scaler, &first);
        let stepped_first = scaler.step(&mut s.opt).expect("step");
        let p_after_first = floats(&s.p);
        scaler.update().expect("update");
        let scale_after_first = scaler.get_scale();

        s.backward(&scaler, &[0.25, 0.25]);
        let stepped_second = scaler.step(&mut s.opt).expect("step");
        scaler.update().expect("update");
        (
            stepped_first,
            p_after_first,
            scale_after_first,
            stepped_second,
            floats(&s.p),
        )
    });
    for (rank, (stepped_first, p1, scale1, stepped_second, p2)) in results.into_iter().enumerate() {
        assert!(
            !stepped_first,
            "rank {rank} must skip the step rank 1's inf poisoned"
        );
        assert_eq!(
            p1,
            vec![1.0, 1.0],
            "rank {rank}: parameters unchanged by the skipped step"
        );
        assert_eq!(scale1, 128.0, "rank {rank}: backed off");
        assert!(stepped_second, "rank {rank}: the clean step runs");
        assert_eq!(p2, vec![0.75, 0.75], "rank {rank}");
    }

    // Without a process group, rank 0's scaler alone would have stepped.
    let mut alone = GradScaler::new(GradScalerConfig::default()).expect("scaler");
    let mut s = Setup::new(&[1.0, 1.0]);
    s.backward(&alone, &[0.5, 0.5]);
    assert!(alone.step(&mut s.opt).expect("step"));
}

/// CUDA autocast through the same API (only where libtorch sees a GPU; a no-op elsewhere).
#[test]
fn cuda_autocast_runs_in_f16_when_a_gpu_is_present() {
    if !tch::Cuda::is_available() {
        eprintln!("no CUDA device: CUDA autocast not exercised");
        return;
    }
    let gpu = Device::Cuda(0);
    let x = ramp(12, &[3, 4], 0.31).to_device(gpu);
    let w = ramp(8, &[2, 4], -0.17).to_device(gpu);
    let (y, cpu_enabled) = autocast(gpu, Kind::Half, true, || {
        (
            x.matmul(&w.tr()),
            is_autocast_enabled(Device::Cpu).expect("state"),
        )
    })
    .expect("autocast");
    assert_eq!(y.kind(), Kind::Half);
    assert!(!cpu_enabled, "CUDA autocast leaves CPU autocast alone");
    assert!(!is_autocast_enabled(gpu).expect("state"));
    assert_eq!(x.matmul(&w.tr()).kind(), Kind::Float);
}
