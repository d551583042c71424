"""Seeded fuzzing of ms_groupnorm.GroupNorm against mindspore.nn.GroupNorm and of
group_norm against ops.group_norm: random shapes (rank 2-5), dtypes (float32, float16,
float64; bfloat16 in GRAPH_MODE, where nn.GroupNorm has a CPU kernel), parameter dtypes,
eps (0 and negative included), affine or not, modes and syntax levels, sometimes with a
dynamic-shape graph. Every output and gradient is measured against the float64 reference
of the same (rounded) inputs: ours must be within the project's tolerance for the dtype
or at least as close as MindSpore's own."""
import math

import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor, nn, ops

import ms_groupnorm
from cases import TOLERANCE
from ms_groupnorm import group_norm, reference

CASES_PER_RUN = 10  # per (mode, syntax level): 30 cases, about a minute on two busy cores
TOL = {**TOLERANCE, ms.float64: 1e-10}


def _rounded(array, dtype):
    return Tensor(np.asarray(array, np.float64)).astype(dtype).astype(ms.float64).asnumpy()


def _as64(t):
    return t.astype(ms.float64).asnumpy()


class _LayerLoss(nn.Cell):
    def __init__(self, layer, w):
        super().__init__()
        self.layer, self.w = layer, w

    def construct(self, x):
        return (self.layer(x).astype(ms.float64) * self.w).sum()


class _FunctionLoss(nn.Cell):
    def __init__(self, fn, groups, eps, w, affine):
        super().__init__()
        self.fn, self.groups, self.eps, self.w, self.affine = fn, groups, eps, w, affine

    def construct(self, x, gamma, beta):
        if self.affine:
            y = self.fn(x, self.groups, gamma, beta, self.eps)
        else:
            y = self.fn(x, self.groups, None, None, self.eps)
        return (y.astype(ms.float64) * self.w).sum()


def _random_case(rng, mode):
    dtypes = [ms.float32, ms.float16, ms.float64] + ([ms.bfloat16] if mode == "graph" else [])
    dtype = dtypes[int(rng.integers(len(dtypes)))]
    G = int(rng.integers(1, 4))
    C = G * int(rng.integers(1, 4))
    spatial = [int(rng.integers(1, 6)) for _ in range(int(rng.integers(0, 4)))]
    if C // G * math.prod(spatial) < 2:
        spatial.append(2)  # a one-element group has no spread: eps <= 0 would divide by zero
    shape = (int(rng.integers(1, 4)), C, *spatial)
    eps = float(rng.choice([1e-5, 1e-3, 0.0, 0.25, -1e-6]))
    param_dtype = ms.float32 if dtype in (ms.float16, ms.bfloat16) and rng.random() < 0.5 else dtype
    return dict(shape=shape, G=G, dtype=dtype, param_dtype=param_dtype, eps=eps, affine=bool(rng.random() < 0.8),
                mean=float(rng.choice([0.0, 3.0, 50.0])), dynamic=mode == "graph" and rng.random() < 0.3)


def _inputs(rng, case):
    shape, C = case["shape"], case["shape"][1]
    x = _rounded(rng.standard_normal(shape) + case["mean"], case["dtype"])
    w = _rounded(rng.standard_normal(shape), case["dtype"])
    gamma = _rounded(rng.uniform(0.5, 1.5, C), case["param_dtype"]) if case["affine"] else np.ones(C)
    beta = _rounded(rng.uniform(-0.5, 0.5, C), case["param_dtype"]) if case["affine"] else np.zeros(C)
    return x, w, gamma, beta


def _expected(case, x, w, gamma, beta):
    """float64 (y, dx, dgamma, dbeta) and the scale each one's error is measured against:
    the size of the terms it is summed from, not of the result, which cancellation can make
    arbitrarily small (dx of a two-element group at mean 50 is ~1e-5 from terms ~1)."""
    G = case["G"]
    y, mean, rstd = reference.forward(x, gamma, beta, G, case["eps"])
    want = (y,) + reference.backward(w, x, mean, rstd, gamma, G)
    N, C = x.shape[:2]
    per_channel = np.repeat(rstd, C // G, axis=1).reshape((N, C) + (1,) * (x.ndim - 2))
    xhat = (x - np.repeat(mean, C // G, axis=1).reshape(per_channel.shape)) * per_channel
    axes = (0,) + tuple(range(2, x.ndim))
    terms = (np.abs(y), np.abs(per_channel * gamma.reshape((1, C) + (1,) * (x.ndim - 2)) * w),
             np.abs(w * xhat).sum(axis=axes), np.abs(w).sum(axis=axes))
    scales = [max(np.abs(r).max(initial=0.0), t.max(initial=0.0), 1e-30) for r, t in zip(want, terms)]
    return want, scales


def _run_layer(cls, case, x, w, gamma, beta, level):
    layer = cls(case["G"], case["shape"][1], eps=case["eps"], affine=case["affine"], dtype=case["param_dtype"])
    layer.gamma.set_data(Tensor(gamma).astype(case["param_dtype"]))
    layer.beta.set_data(Tensor(beta).astype(case["param_dtype"]))
    loss = _LayerLoss(layer, Tensor(w))
    loss.set_jit_config(ms.JitConfig(jit_syntax_level=level))
    x_t = Tensor(x).astype(case["dtype"])
    if case["dynamic"]:
        loss.set_inputs(Tensor(shape=[None, case["shape"][1]] + [None] * (len(case["shape"]) - 2),
                               dtype=case["dtype"]))
    weights = [layer.gamma, layer.beta] if case["affine"] else []
    dx, grads = ms.grad(loss, grad_position=0, weights=weights)(x_t)
    y = layer(x_t)
    assert y.dtype == dx.dtype == case["dtype"]
    out = [_as64(y), _as64(dx)]
    return out + ([_as64(g) for g in grads] if case["affine"] else [None, None])


def _run_function(fn, case, x, w, gamma, beta, level):
    loss = _FunctionLoss(fn, case["G"], case["eps"], Tensor(w), case["affine"])
    loss.set_jit_config(ms.JitConfig(jit_syntax_level=level))
    args = [Tensor(x).astype(case["dtype"]), Tensor(gamma).astype(case["dtype"]), Tensor(beta).astype(case["dtype"])]
    dx, dgamma, dbeta = ms.grad(loss, grad_position=(0, 1, 2))(*args)
    y = fn(args[0], case["G"], args[1] if case["affine"] else None, args[2] if case["affine"] else None,
           case["eps"])
    out = [_as64(y), _as64(dx)]
    return out + ([_as64(dgamma), _as64(dbeta)] if case["affine"] else [None, None])


def _compare(ours, theirs, expected, case, what):
    tol = TOL[case["dtype"]]
    want, scales = expected
    for name, got, other, ref, scale in zip(("y", "dx", "dgamma", "dbeta"), ours, theirs, want, scales):
        if got is None:
            continue
        err = np.abs(got - ref).max() / scale
        their_err = np.abs(other - ref).max() / scale if other is not None else np.inf
        assert np.isfinite(err) and err <= max(tol, their_err * 1.0001), (
            f"{what} {name}: error {err:.3g} (relative to its terms' size {scale:.3g}) > tolerance {tol} and "
            f"MindSpore's {their_err:.3g}; case {case}")


# The default tier: PyNative, and GRAPH in STRICT syntax (its dynamic shapes and bfloat16 included).
@pytest.mark.default_sample(mode=["pynative", "graph"], level=["LAX", "STRICT"])
@pytest.mark.parametrize("mode,level", [("pynative", "LAX"), ("graph", "LAX"), ("graph", "STRICT")])
def test_fuzz_against_mindspore(mode, level):
    ms.set_context(mode=ms.PYNATIVE_MODE if mode == "pynative" else ms.GRAPH_MODE)
    rng = np.random.default_rng({"pynative": 101, "graph": 202}[mode] + (level == "STRICT"))
    try:
        for index in range(CASES_PER_RUN):
            case = _random_case(rng, mode)
            x, w, gamma, beta = _inputs(rng, case)
            want = _expected(case, x, w, gamma, beta)
            what = f"case {index} ({mode}, {level}) layer"
            ours = _run_layer(ms_groupnorm.GroupNorm, case, x, w, gamma, beta, level)
            theirs = _run_layer(nn.GroupNorm, case, x, w, gamma, beta, level)
            _compare(ours, theirs, want, case, what)
            if case["param_dtype"] == case["dtype"]:  # ops.group_norm takes weight in the input's dtype only
                case_fn = dict(case, dynamic=False)
                what = f"case {index} ({mode}, {level}) group_norm"
                _compare(_run_function(group_norm, case_fn, x, w, gamma, beta, level),
                         _run_function(ops.group_norm, case_fn, x, w, gamma, beta, level), want, case_fn, what)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
