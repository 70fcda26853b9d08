"""Writes ddp/tests/data/optim.json: parameters after each step of
torch.optim.SGD, Adam and AdamW from the project's torch (2.13.0), the fixture
that ddp/tests/optim.rs replays with `ddp::optim::Optimizer`.

Run from the repository root:  .venv/bin/python ddp/tests/gen/gen_optim.py

Two float32 parameters (shapes [3, 7] and [11]: long enough for libtorch's
vectorised loops and their scalar tails) start from seeded `torch.randn`
values. Every step sets each parameter's `.grad` to a stored gradient; the
second parameter has no gradient (`.grad is None`) in the first two steps, so
the optimizer must skip it there, as PyTorch does. The fixture holds the
initial values, the gradients, the parameters after every step and the
optimizer state after the last step, named as `Optimizer::state_tensors`
names it (`<index>.momentum_buffer`, `<index>.exp_avg`, `<index>.exp_avg_sq`,
`<index>.step`).

The optimizers run with `foreach=False`, the single-tensor path that
PyTorch also picks by default for CPU tensors (checked below).
"""

import argparse
import json
import os

import torch

SEED = 20240613
STEPS = 5
SHAPES = [[3, 7], [11]]
# Steps (0-based) in which parameter 1 has no gradient.
NO_GRAD = {1: {0, 1}}

CASES = [
    ("sgd_plain", "sgd", dict(lr=0.1)),
    ("sgd_weight_decay", "sgd", dict(lr=0.1, weight_decay=0.05)),
    ("sgd_momentum", "sgd", dict(lr=0.1, momentum=0.9)),
    ("sgd_dampening", "sgd", dict(lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.02)),
    ("sgd_nesterov", "sgd", dict(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01)),
    ("adam", "adam", dict(lr=0.01)),
    ("adam_weight_decay", "adam", dict(lr=0.01, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1)),
    ("adamw_default", "adamw", dict(lr=0.01)),
    ("adamw_weight_decay", "adamw", dict(lr=0.02, betas=(0.85, 0.98), eps=1e-7, weight_decay=0.1)),
]


def flat(t):
    return [float(x) for x in t.detach().reshape(-1).tolist()]


def make_optimizer(kind, params, hyper, foreach):
    if kind == "sgd":
        return torch.optim.SGD(params, foreach=foreach, **hyper)
    if kind == "adam":
        return torch.optim.Adam(params, foreach=foreach, **hyper)
    return torch.optim.AdamW(params, foreach=foreach, **hyper)


def full_hyper(kind, opt):
    g = opt.param_groups[0]
    if kind == "sgd":
        return dict(
            lr=g["lr"],
            momentum=g["momentum"],
            dampening=g["dampening"],
            weight_decay=g["weight_decay"],
            nesterov=g["nesterov"],
        )
    b1, b2 = g["betas"]
    return dict(lr=g["lr"], beta1=b1, beta2=b2, eps=g["eps"], weight_decay=g["weight_decay"])


def run(kind, hyper, init, grads, foreach):
    params = [p.clone().requires_grad_(True) for p in init]
    opt = make_optimizer(kind, params, hyper, foreach)
    after = []
    for step in range(STEPS):
        for i, p in enumerate(params):
            if step in NO_GRAD.get(i, set()):
                p.grad = None
            else:
                p.grad = grads[step][i].clone()
        opt.step()
        after.append([flat(p) for p in params])
    state = {}
    for i, p in enumerate(params):
        st = opt.state.get(p, {})
        for field in ("momentum_buffer", "exp_avg", "exp_avg_sq"):
            if st.get(field) is not None:
                state[f"{i}.{field}"] = flat(st[field])
        if "step" in st:
            state[f"{i}.step"] = float(st["step"])
    return opt, after, state


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "data", "optim.json"))
    args = ap.parse_args()

    torch.manual_seed(SEED)
    init = [torch.randn(*s, dtype=torch.float32) for s in SHAPES]
    grads = [[torch.randn(*s, dtype=torch.float32) for s in SHAPES] for _ in range(STEPS)]

    cases = []
    for name, kind, hyper in CASES:
        opt, after, state = run(kind, hyper, init, grads, foreach=False)
        # PyTorch's default (foreach=None) takes the same path for CPU tensors.
        _, after_default, _ = run(kind, hyper, init, grads, foreach=None)
        assert after == after_default, f"{name}: the default path differs from foreach=False"
        cases.append(
            dict(
                name=name,
                kind=kind,
                hyper=full_hyper(kind, opt),
                params_after=after,
                state=state,
            )
        )

    data = dict(
        torch_version=torch.__version__,
        seed=SEED,
        steps=STEPS,
        shapes=SHAPES,
        no_grad={str(k): sorted(v) for k, v in NO_GRAD.items()},
        init=[flat(p) for p in init],
        grads=[[flat(g) for g in step] for step in grads],
        cases=cases,
    )
    path = os.path.normpath(args.out)
    with open(path, "w") as f:
        json.dump(data, f, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {path}: {len(cases)} cases, {STEPS} steps")


if __name__ == "__main__":
    main()
