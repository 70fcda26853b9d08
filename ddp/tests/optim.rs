//! `ddp::optim` against `torch.optim` 2.13: SGD (plain, weight decay, momentum, dampening,
//! Nesterov), Adam (with and without weight decay) and AdamW replayed on the gradients of
//! `tests/data/optim.json` (written by `tests/gen/gen_optim.py`); the parameters after every
//! step and the final optimizer state must match PyTorch's within 1e-6 relative.

use ddp::optim::{OptimError, Optimizer, OptimizerKind};
use serde_json::Value;
use tch::{Kind, Tensor};

const REL_TOL: f64 = 1e-6;

fn fixture() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/optim.json");
    let text = std::fs::read_to_string(path).expect("read optim.json");
    serde_json::from_str(&text).expect("parse optim.json")
}

fn floats(v: &Value) -> Vec<f32> {
    v.as_array()
        .expect("array of numbers")
        .iter()
        .map(|x| x.as_f64().expect("number") as f32)
        .collect()
}

fn shapes(f: &Value) -> Vec<Vec<i64>> {
    f["shapes"]
        .as_array()
        .expect("shapes")
        .iter()
        .map(|s| {
            s.as_array()
                .expect("shape")
                .iter()
                .map(|d| d.as_i64().expect("dim"))
                .collect()
        })
        .collect()
}

fn tensor(values: &[f32], shape: &[i64]) -> Tensor {
    Tensor::from_slice(values).reshape(shape)
}

fn values(t: &Tensor) -> Vec<f32> {
    let t = t.detach().to_kind(Kind::Float).reshape([-1]);
    let mut out = vec![0f32; t.numel()];
    t.copy_data(&mut out, t.numel());
    out
}

/// Largest relative difference, failing above the tolerance.
fn assert_close(got: &[f32], want: &[f32], what: &str) -> f64 {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let mut worst = 0f64;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        let (g, w) = (f64::from(g), f64::from(w));
        let rel = (g - w).abs() / w.abs().max(1e-3);
        assert!(
            rel <= REL_TOL,
            "{what}: element {i}: got {g}, want {w} (relative difference {rel:e})"
        );
        worst = worst.max(rel);
    }
    worst
}

fn kind_of(case: &Value) -> OptimizerKind {
    let h = &case["hyper"];
    let num = |k: &str| h[k].as_f64().unwrap_or_else(|| panic!("hyper {k}"));
    match case["kind"].as_str().expect("kind") {
        "sgd" => OptimizerKind::Sgd {
            lr: num("lr"),
            momentum: num("momentum"),
            dampening: num("dampening"),
            weight_decay: num("weight_decay"),
            nesterov: h["nesterov"].as_bool().expect("nesterov"),
        },
        k @ ("adam" | "adamw") => OptimizerKind::Adam {
            lr: num("lr"),
            beta1: num("beta1"),
            beta2: num("beta2"),
            eps: num("eps"),
            weight_decay: num("weight_decay"),
            decoupled: k == "adamw",
        },
        other => panic!("unknown optimizer kind {other}"),
    }
}

/// Steps (0-based) in which parameter `i` gets no gradient.
fn no_grad_steps(f: &Value, i: usize) -> Vec<u64> {
    f["no_grad"]
        .get(i.to_string())
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|s| s.as_u64().expect("step")).collect())
        .unwrap_or_default()
}

/// Sets the gradients of step `step` the way a backward pass does: `sum(p * g)` has gradient
/// `g` with respect to `p`, exactly; parameters without a gradient in this step stay out of the
/// graph.
fn set_grads(f: &Value, params: &[Tensor], opt: &mut Optimizer, step: usize) {
    opt.zero_grad().expect("zero_grad");
    let shapes = shapes(f);
    let mut loss: Option<Tensor> = None;
    for (i, p) in params.iter().enumerate() {
        if no_grad_steps(f, i).contains(&(step as u64)) {
            continue;
        }
        let g = tensor(&floats(&f["grads"][step][i]), &shapes[i]);
        let term = (p * g).sum(Kind::Float);
        loss = Some(match loss {
            None => term,
            Some(l) => l + term,
        });
    }
    loss.expect("some parameter has a gradient").backward();
}

fn fresh_params(f: &Value, init: &[Vec<f32>]) -> Vec<Tensor> {
    shapes(f)
        .iter()
        .zip(init)
        .map(|(s, v)| tensor(v, s).set_requires_grad(true))
        .collect()
}

fn init_values(f: &Value) -> Vec<Vec<f32>> {
    f["init"]
        .as_array()
        .expect("init")
        .iter()
        .map(floats)
        .collect()
}

fn cases(f: &Value) -> &Vec<Value> {
    f["cases"].as_array().expect("cases")
}

#[test]
fn fixture_covers_every_rule() {
    let f = fixture();
    let names: Vec<&str> = cases(&f)
        .iter()
        .map(|c| c["name"].as_str().expect("name"))
        .collect();
    for want in [
        "sgd_plain",
        "sgd_weight_decay",
        "sgd_momentum",
        "sgd_dampening",
        "sgd_nesterov",
        "adam",
        "adam_weight_decay",
        "adamw_default",
        "adamw_weight_decay",
    ] {
        assert!(names.contains(&want), "fixture lacks case {want}");
    }
    assert_eq!(f["steps"].as_u64(), Some(5));
}

#[test]
fn every_step_matches_pytorch() {
    let f = fixture();
    let steps = f["steps"].as_u64().expect("steps") as usize;
    let init = init_values(&f);
    for case in cases(&f) {
        let name = case["name"].as_str().expect("name");
        let params = fresh_params(&f, &init);
        let mut opt = Optimizer::new(
            kind_of(case),
            params.iter().map(Tensor::shallow_clone).collect(),
        );
        let mut worst = 0f64;
        for step in 0..steps {
            set_grads(&f, &params, &mut opt, step);
            opt.step().expect("step");
            for (i, p) in params.iter().enumerate() {
                let want = floats(&case["params_after"][step][i]);
                worst = worst.max(assert_close(
                    &values(p),
                    &want,
                    &format!("{name}: parameter {i} after step {}", step + 1),
                ));
            }
        }
        eprintln!("{name}: largest relative difference to PyTorch {worst:e}");
    }
}

#[test]
fn final_state_matches_pytorch() {
    let f = fixture();
    let steps = f["steps"].as_u64().expect("steps") as usize;
    let init = init_values(&f);
    for case in cases(&f) {
        let name = case["name"].as_str().expect("name");
        let params = fresh_params(&f, &init);
        let mut opt = Optimizer::new(
            kind_of(case),
            params.iter().map(Tensor::shallow_clone).collect(),
        );
        for step in 0..steps {
            set_grads(&f, &params, &mut opt, step);
            opt.step().expect("step");
        }
        let want = case["state"].as_object().expect("state");
        let got = opt.state_tensors();
        let mut got_names: Vec<&str> = got.iter().map(|(n, _)| n.as_str()).collect();
        let mut want_names: Vec<&str> = want.keys().map(String::as_str).collect();
        got_names.sort_unstable();
        want_names.sort_unstable();
        assert_eq!(got_names, want_names, "{name}: state entries");
        for (entry, t) in &got {
            let w = &want[entry.as_str()];
            if entry.ends_with(".step") {
                assert_eq!(
                    t.double_value(&[]),
                    w.as_f64().expect("step"),
                    "{name}: {entry}"
                );
            } else {
                assert_close(&values(t), &floats(w), &format!("{name}: {entry}"));
            }
        }
    }
}

/// Two steps, state saved (deep copies), a new optimizer over parameters holding PyTorch's
/// values after step 2 loads it and runs the remaining steps: the same trajectory.
#[test]
fn resuming_from_saved_state_continues_the_trajectory() {
    let f = fixture();
    let steps = f["steps"].as_u64().expect("steps") as usize;
    let init = init_values(&f);
    let split = 2;
    for case in cases(&f) {
        let name = case["name"].as_str().expect("name");
        let params = fresh_params(&f, &init);
        let mut opt = Optimizer::new(
            kind_of(case),
            params.iter().map(Tensor::shallow_clone).collect(),
        );
        for step in 0..split {
            set_grads(&f, &params, &mut opt, step);
            opt.step().expect("step");
        }
        let saved: Vec<(String, Tensor)> = opt
            .state_tensors()
            .into_iter()
            .map(|(n, t)| (n, t.copy()))
            .collect();
        drop(opt);

        let after_split: Vec<Vec<f32>> = case["params_after"][split - 1]
            .as_array()
            .expect("params")
            .iter()
            .map(floats)
            .collect();
        let resumed = fresh_params(&f, &after_split);
        let mut opt2 = Optimizer::new(
            kind_of(case),
            resumed.iter().map(Tensor::shallow_clone).collect(),
        );
        opt2.load_state_tensors(&saved).expect("load state");
        for step in split..steps {
            set_grads(&f, &resumed, &mut opt2, step);
            opt2.step().expect("step");
            for (i, p) in resumed.iter().enumerate() {
                assert_close(
                    &values(p),
                    &floats(&case["params_after"][step][i]),
                    &format!("{name} (resumed): parameter {i} after step {}", step + 1),
                );
            }
        }
    }
}

#[test]
fn a_parameter_without_gradient_is_left_alone() {
    let p = Tensor::from_slice(&[1.0f32, 2.0]).set_requires_grad(true);
    let q = Tensor::from_slice(&[3.0f32]).set_requires_grad(true);
    let mut opt = Optimizer::new(
        OptimizerKind::Sgd {
            lr: 0.5,
            momentum: 0.9,
            dampening: 0.0,
            weight_decay: 0.1,
            nesterov: false,
        },
        vec![p.shallow_clone(), q.shallow_clone()],
    );
    (&p * 2.0).sum(Kind::Float).backward();
    opt.step().expect("step");
    assert_eq!(values(&q), vec![3.0]);
    // p.grad = 2, + weight decay 0.1 * p: buffer = 2.1, 2.2; p -= 0.5 * buffer
    assert_close(&values(&p), &[1.0 - 0.5 * 2.1, 2.0 - 0.5 * 2.2], "p");
    let names: Vec<String> = opt.state_tensors().into_iter().map(|(n, _)| n).collect();
    assert_eq!(names, vec!["0.momentum_buffer".to_owned()]);
}

#[test]
fn zero_grad_zeroes_in_place() {
    let p = Tensor::from_slice(&[1.0f32, 2.0]).set_requires_grad(true);
    let mut opt = Optimizer::new(OptimizerKind::sgd(0.1), vec![p.shallow_clone()]);
    (&p * 3.0).sum(Kind::Float).backward();
    assert_eq!(values(&p.grad()), vec![3.0, 3.0]);
    opt.zero_grad().expect("zero_grad");
    assert_eq!(values(&p.grad()), vec![0.0, 0.0]);
    (&p * 5.0).sum(Kind::Float).backward();
    assert_eq!(values(&p.grad()), vec![5.0, 5.0]);
}

fn checkpoint_message(r: Result<(), OptimError>) -> String {
    match r {
        Err(OptimError::State(m)) => m,
        other => panic!("expected a checkpoint error, got {other:?}"),
    }
}

#[test]
fn loading_bad_state_names_the_entry_and_changes_nothing() {
    let p = Tensor::from_slice(&[1.0f32, 2.0, 3.0]).set_requires_grad(true);
    let mut opt = Optimizer::new(OptimizerKind::adam(0.1), vec![p.shallow_clone()]);
    (&p * 1.0).sum(Kind::Float).backward();
    opt.step().expect("step");
    let before: Vec<(String, Vec<f32>)> = opt
        .state_tensors()
        .into_iter()
        .map(|(n, t)| (n, values(&t)))
        .collect();

    let wrong_shape = vec![(
        "0.exp_avg".to_owned(),
        Tensor::zeros([2], tch::kind::FLOAT_CPU),
    )];
    let m = checkpoint_message(opt.load_state_tensors(&wrong_shape));
    assert!(
        m.contains("'0.exp_avg'") && m.contains("[2]") && m.contains("[3]"),
        "{m}"
    );

    let out_of_range = vec![(
        "4.exp_avg".to_owned(),
        Tensor::zeros([3], tch::kind::FLOAT_CPU),
    )];
    let m = checkpoint_message(opt.load_state_tensors(&out_of_range));
    assert!(
        m.contains("'4.exp_avg'") && m.contains("parameter 4"),
        "{m}"
    );

    let unknown = vec![(
        "0.velocity".to_owned(),
        Tensor::zeros([3], tch::kind::FLOAT_CPU),
    )];
    let m = checkpoint_message(opt.load_state_tensors(&unknown));
    assert!(
        m.contains("'0.velocity'") && m.contains("unknown field"),
        "{m}"
    );

    let malformed = vec![(
        "exp_avg".to_owned(),
        Tensor::zeros([3], tch::kind::FLOAT_CPU),
    )];
    let m = checkpoint_message(opt.load_state_tensors(&malformed));
    assert!(m.contains("'exp_avg'"), "{m}");

    let bad_step = vec![("0.step".to_owned(), Tensor::from(-1.0f64))];
    let m = checkpoint_message(opt.load_state_tensors(&bad_step));
    assert!(m.contains("'0.step'"), "{m}");

    let after: Vec<(String, Vec<f32>)> = opt
        .state_tensors()
        .into_iter()
        .map(|(n, t)| (n, values(&t)))
        .collect();
    assert_eq!(
        before, after,
        "a failed load must leave the state unchanged"
    );
}
