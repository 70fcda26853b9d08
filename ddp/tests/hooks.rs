//! Post-accumulate-grad hooks on a small tch model: when and where they fire,
//! what `.grad` holds then, removal, and errors crossing the C++ boundary.

use std::sync::{Arc, Mutex};
use std::thread::{self, ThreadId};

use ddp::hooks::{GradHookHandle, GradHooks, GradReadyCallback, HookError};
use tch::nn::{self, Module};
use tch::{Device, Kind, Tensor};

/// Three Linear layers; parameters in registration order
/// `[l1.w, l1.b, l2.w, l2.b, l3.w, l3.b]`.
struct Mlp {
    _vs: nn::VarStore,
    layers: Vec<nn::Linear>,
}

impl Mlp {
    fn new(seed: i64) -> Self {
        tch::manual_seed(seed);
        let vs = nn::VarStore::new(Device::Cpu);
        let root = vs.root();
        let layers = vec![
            nn::linear(&root / "l1", 8, 16, Default::default()),
            nn::linear(&root / "l2", 16, 16, Default::default()),
            nn::linear(&root / "l3", 16, 4, Default::default()),
        ];
        Self { _vs: vs, layers }
    }

    fn params(&self) -> Vec<Tensor> {
        self.layers
            .iter()
            .flat_map(|l| {
                let bias = l.bs.as_ref().expect("linear layers have a bias");
                [l.ws.shallow_clone(), bias.shallow_clone()]
            })
            .collect()
    }

    fn loss(&self, x: &Tensor) -> Tensor {
        let h = self.layers[0].forward(x).relu();
        let h = self.layers[1].forward(&h).relu();
        self.layers[2].forward(&h).square().sum(Kind::Float)
    }
}

/// What a hook saw: parameter index, thread, copy of `.grad` (if defined).
type Seen = Arc<Mutex<Vec<(usize, ThreadId, Option<Tensor>)>>>;

fn recording_callback(params: Vec<Tensor>, seen: Seen) -> Arc<GradReadyCallback> {
    let params = Mutex::new(params);
    Arc::new(move |i: usize| {
        let grad = params.lock().map_err(|e| e.to_string())?[i].grad();
        let copy = grad.defined().then(|| grad.copy());
        seen.lock()
            .map_err(|e| e.to_string())?
            .push((i, thread::current().id(), copy));
        Ok(())
    })
}

fn layer_of(index: usize) -> usize {
    index / 2
}

#[test]
fn hooks_fire_once_per_parameter_after_accumulation_on_the_calling_thread() {
    let model = Mlp::new(0);
    let params = model.params();
    let seen: Seen = Arc::default();
    let hooks = GradHooks::register_all(&params, recording_callback(model.params(), seen.clone()))
        .expect("register");
    assert_eq!(hooks.len(), 6);
    assert_eq!(hooks.indices().collect::<Vec<_>>(), vec![0, 1, 2, 3, 4, 5]);

    let x = Tensor::randn([5, 8], (Kind::Float, Device::Cpu));
    model.loss(&x).backward();

    let seen = seen.lock().unwrap();
    let order: Vec<usize> = seen.iter().map(|(i, _, _)| *i).collect();
    let mut sorted = order.clone();
    sorted.sort_unstable();
    assert_eq!(
        sorted,
        vec![0, 1, 2, 3, 4, 5],
        "once per parameter: {order:?}"
    );
    // Reverse order of use: every parameter of a later layer before any of an
    // earlier one.
    let layers: Vec<usize> = order.iter().map(|&i| layer_of(i)).collect();
    assert!(
        layers.windows(2).all(|w| w[0] >= w[1]),
        "layers in reverse order of use: {order:?}"
    );
    // The CPU engine runs the hooks on the thread that called backward.
    let me = thread::current().id();
    assert!(seen.iter().all(|(_, t, _)| *t == me));
    // `.grad` is defined when the hook runs and already holds the final value.
    for (i, _, grad) in seen.iter() {
        let grad = grad
            .as_ref()
            .unwrap_or_else(|| panic!("grad of {i} undefined at hook time"));
        assert!(
            grad.equal(&params[*i].grad()),
            "grad of {i} changed after its hook"
        );
    }
}

#[test]
fn with_gradient_accumulation_hooks_fire_in_every_backward() {
    let model = Mlp::new(1);
    let params = model.params();
    let seen: Seen = Arc::default();
    let _hooks = GradHooks::register_all(&params, recording_callback(model.params(), seen.clone()))
        .expect("register");

    // Two micro-batches, separate forwards (the first graph is freed before
    // the second exists), no zero_grad in between.
    let x1 = Tensor::randn([3, 8], (Kind::Float, Device::Cpu));
    let x2 = Tensor::randn([3, 8], (Kind::Float, Device::Cpu));
    model.loss(&x1).backward();
    let after_first: Vec<Tensor> = params.iter().map(|p| p.grad().copy()).collect();
    model.loss(&x2).backward();

    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 12);
    let (first, second) = seen.split_at(6);
    for (i, _, grad) in first {
        assert!(grad.as_ref().unwrap().equal(&after_first[*i]));
    }
    for (i, _, grad) in second {
        // At the second hook `.grad` already holds the sum of both passes.
        assert!(grad.as_ref().unwrap().equal(&params[*i].grad()));
        assert!(!grad.as_ref().unwrap().equal(&after_first[*i]));
    }
    let order1: Vec<usize> = first.iter().map(|(i, _, _)| *i).collect();
    let order2: Vec<usize> = second.iter().map(|(i, _, _)| *i).collect();
    assert_eq!(order1, order2);
}

#[test]
fn hooks_of_a_backward_on_another_thread_run_on_that_thread() {
    let seen: Seen = Arc::default();
    let seen2 = seen.clone();
    let worker = thread::spawn(move || {
        let model = Mlp::new(2);
        let hooks =
            GradHooks::register_all(&model.params(), recording_callback(model.params(), seen2))
                .expect("register");
        let x = Tensor::randn([2, 8], (Kind::Float, Device::Cpu));
        model.loss(&x).backward();
        drop(hooks);
        thread::current().id()
    });
    let worker_id = worker.join().expect("worker");
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 6);
    assert!(seen.iter().all(|(_, t, _)| *t == worker_id));
}

#[test]
fn dropped_hooks_no_longer_fire() {
    let model = Mlp::new(3);
    let params = model.params();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let c = calls.clone();
    let callback: Arc<GradReadyCallback> = Arc::new(move |i| {
        c.lock().unwrap().push(i);
        Ok(())
    });
    let mut hooks = GradHooks::register_all(&params, callback.clone()).expect("register");
    let single =
        GradHookHandle::register_shared(&params[5], 105, callback.clone()).expect("register");
    assert_eq!(single.index(), 105);
    let x = Tensor::randn([2, 8], (Kind::Float, Device::Cpu));

    model.loss(&x).backward();
    assert_eq!(calls.lock().unwrap().len(), 7);

    single.remove();
    model.loss(&x).backward();
    assert_eq!(calls.lock().unwrap().len(), 13);

    hooks.clear();
    assert!(hooks.is_empty());
    model.loss(&x).backward();
    assert_eq!(calls.lock().unwrap().len(), 13);
    // Only this test's Arc is left: the hooks released their callbacks.
    assert_eq!(Arc::strong_count(&callback), 1);
}

#[test]
fn a_callback_may_drop_its_own_handle() {
    let model = Mlp::new(4);
    let params = model.params();
    let slot: Arc<Mutex<Option<GradHookHandle>>> = Arc::default();
    let calls = Arc::new(Mutex::new(0usize));
    let (s, c) = (slot.clone(), calls.clone());
    let handle = GradHookHandle::register(&params[0], 0, move |_| {
        *c.lock().unwrap() += 1;
        // Dropping the handle frees this closure's context once the call
        // returns; the trampoline keeps it alive until then.
        drop(s.lock().unwrap().take());
        Ok(())
    })
    .expect("register");
    *slot.lock().unwrap() = Some(handle);
    let x = Tensor::randn([2, 8], (Kind::Float, Device::Cpu));
    model.loss(&x).backward();
    model.loss(&x).backward();
    assert_eq!(*calls.lock().unwrap(), 1);
    assert!(slot.lock().unwrap().is_none());
}

#[test]
fn a_callback_error_fails_the_backward_with_its_message() {
    let model = Mlp::new(5);
    let params = model.params();
    let _h = GradHookHandle::register(&params[3], 3, |i| {
        Err(format!("reducer refused parameter {i}"))
    })
    .expect("register");
    let x = Tensor::randn([2, 8], (Kind::Float, Device::Cpu));
    let err = model.loss(&x).f_backward().expect_err("backward must fail");
    let text = err.to_string();
    assert!(text.contains("reducer refused parameter 3"), "{text}");
}

#[test]
fn a_panicking_callback_fails_the_backward_without_unwinding_into_cpp() {
    let model = Mlp::new(6);
    let params = model.params();
    let _h =
        GradHookHandle::register(&params[2], 2, |i| panic!("boom in hook {i}")).expect("register");
    let x = Tensor::randn([2, 8], (Kind::Float, Device::Cpu));
    let err = model.loss(&x).f_backward().expect_err("backward must fail");
    let text = err.to_string();
    assert!(
        text.contains("panicked") && text.contains("boom in hook 2"),
        "{text}"
    );
    // The process is fine and libtorch still works.
    let ok = Tensor::ones([2], (Kind::Float, Device::Cpu)).sum(Kind::Float);
    assert_eq!(ok.double_value(&[]), 2.0);
}

#[test]
fn registration_refuses_tensors_without_an_accumulate_grad_node() {
    let no_grad = Tensor::zeros([3], (Kind::Float, Device::Cpu));
    match GradHookHandle::register(&no_grad, 7, |_| Ok(())) {
        Err(HookError::Register { index: 7, message }) => {
            assert!(message.contains("does not require grad"), "{message}")
        }
        other => panic!("expected a registration error, got {other:?}"),
    }
    let leaf = Tensor::zeros([3], (Kind::Float, Device::Cpu)).set_requires_grad(true);
    let non_leaf = &leaf * 2.0;
    match GradHookHandle::register(&non_leaf, 8, |_| Ok(())) {
        Err(HookError::Register { index: 8, message }) => {
            assert!(message.contains("not a leaf"), "{message}")
        }
        other => panic!("expected a registration error, got {other:?}"),
    }
    // A failing registration inside a set registers nothing.
    let params = vec![leaf.shallow_clone(), no_grad];
    let calls = Arc::new(Mutex::new(0usize));
    let c = calls.clone();
    let result = GradHooks::register_all(
        &params,
        Arc::new(move |_| {
            *c.lock().unwrap() += 1;
            Ok(())
        }),
    );
    assert!(matches!(result, Err(HookError::Register { index: 1, .. })));
    (&leaf * 3.0).sum(Kind::Float).backward();
    assert_eq!(*calls.lock().unwrap(), 0);
}
