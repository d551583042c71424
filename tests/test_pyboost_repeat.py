"""Repeated PyNative training steps with default settings (the fast path wherever it is on)
compared with the float64 reference, every gradient, every time.

Why repeated, on fresh layers: a launch-ordering fault between the fast path's kernels and
MindSpore's own ops (a consumer reading an output before our kernel wrote it) shows up only
in some steps -- zero gradients, intermittently. One step proves nothing; 25 fresh layers in
a row per layer type and dtype make such a race visible, while each step stays cheap.
"""
import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor

from cases import TOLERANCE, rounded, tensor, to_numpy
from ms_groupnorm import GroupNorm, GroupNormSiLU, reference

REPEATS = 25
SHAPE, G = (2, 6, 4, 5), 3

CASES = [
    pytest.param(GroupNorm, ms.float32, id="GroupNorm-fp32"),
    pytest.param(GroupNorm, ms.float16, id="GroupNorm-fp16"),
    pytest.param(GroupNormSiLU, ms.float32, id="GroupNormSiLU-fp32"),
    pytest.param(GroupNormSiLU, ms.bfloat16, id="GroupNormSiLU-bf16"),
]


def _reference_gradients(layer_class, x, w, gamma, beta):
    """(dx, dgamma, dbeta) of sum(layer(x) * w) in float64."""
    if layer_class is GroupNormSiLU:
        _, mean, rstd = reference.silu_forward(x, gamma, beta, G)
        return reference.silu_backward(w, x, mean, rstd, gamma, beta, G)
    _, mean, rstd = reference.forward(x, gamma, beta, G)
    return reference.backward(w, x, mean, rstd, gamma, G)


def _errors(got, want):
    """max |got - want| relative to max |want|, per gradient."""
    return [float(np.abs(to_numpy(g) - r).max() / max(np.abs(r).max(), 1e-30)) for g, r in zip(got, want)]


def _one_step(layer_class, dtype, seed):
    """One value_and_grad step on a fresh layer; returns the three relative errors."""
    rng = np.random.default_rng(seed)
    C = SHAPE[1]
    x = rounded(rng.standard_normal(SHAPE) * 1.5 + 0.5, dtype)
    w = rounded(rng.standard_normal(SHAPE), dtype)
    gamma = rounded(rng.standard_normal(C), ms.float32)
    beta = rounded(rng.standard_normal(C), ms.float32)
    layer = layer_class(G, C, gamma_init=Tensor(gamma, ms.float32), beta_init=Tensor(beta, ms.float32))
    weight = tensor(w, ms.float32)  # holds dtype values: the cast's gradient hands the layer exactly w

    def loss(inp):
        # float32 loss: MindSpore's CPU Mul has no bfloat16 kernel in PyNative
        return (layer(inp).astype(ms.float32) * weight).sum()

    grad_fn = ms.value_and_grad(loss, grad_position=0, weights=layer.trainable_params())
    _, (dx, (dgamma, dbeta)) = grad_fn(tensor(x, dtype))
    return _errors((dx, dgamma, dbeta), _reference_gradients(layer_class, x, w, gamma, beta))


@pytest.mark.parametrize("layer_class, dtype", CASES)
def test_fresh_layers_in_a_row_match_the_reference(layer_class, dtype):
    ms.set_context(mode=ms.PYNATIVE_MODE)
    tol = TOLERANCE[dtype]
    wrong = []
    for step in range(REPEATS):
        errors = _one_step(layer_class, dtype, seed=step)
        if max(errors) > tol:
            wrong.append((step, ["%.3g" % e for e in errors]))
    assert not wrong, (
        f"{len(wrong)} of {REPEATS} steps gave a wrong gradient (dx, dgamma, dbeta relative errors, "
        f"bound {tol}): {wrong[:5]}")
