"""Second-order gradients on the Ascend routes, run on CPU (the simulation of
tests/test_ascend_simulated.py for PyNative, CPU stand-ins in CANN's argument order for the
GRAPH_MODE Cells), against torch's float64 double backward (tests/test_second_order.py).

Without a bprop of their own, the backward Cells raised "bprop not defined", and the
PyNative module's backward (which records nothing) gave zeros."""
import mindspore as ms
import numpy as np
import pytest
import torch
from mindspore import Tensor

import ms_groupnorm as mg
from ms_groupnorm.backends import ascend
from ms_groupnorm.ops import double_backward
from test_ascend_forward_wiring import BackwardInCannOrder, ForwardInCannOrder
from test_ascend_simulated import simulated  # noqa: F401  (the fixture)
from test_second_order import EPS, _torch_backward_formula, check


@pytest.mark.parametrize("form", ["GroupNorm", "GroupNormSiLU", "group_norm"])
def test_pynative_module_second_order(simulated, form):  # noqa: F811
    """The module's autograd node differentiated: its Backward calls the package's hook,
    which records the module's backward with ops.double_backward as its bprop."""
    module = simulated(with_forward=True, with_silu_grad=True)
    check(form, (2, 6, 2, 3), 3, "float32", "float32", True)
    assert module.differentiable_backward is not None
    name = "group_norm_silu_grad" if "SiLU" in form else "group_norm_grad"
    assert any(call[0] == name for call in module.calls), "the module's backward ran"


def test_pynative_backward_function_differentiated(simulated):  # noqa: F811
    """group_norm_backward on the module, differentiated w.r.t. every input (mean and rstd too)."""
    simulated(with_forward=True)
    rng = np.random.default_rng(5)
    N, C, HxW, G = 2, 4, 3, 2
    arrays = [rng.standard_normal((N, C, HxW)), rng.standard_normal((N, C, HxW)), rng.standard_normal((N, G)),
              0.5 + rng.random((N, G)), 1 + 0.3 * rng.standard_normal(C)]
    arrays = [a.astype(np.float32).astype(np.float64) for a in arrays]
    cot = [rng.standard_normal((N, C, HxW)), rng.standard_normal(C), rng.standard_normal(C)]

    def ours(dy, x, mean, rstd, gamma):
        outs = mg.group_norm_backward(dy, x, mean, rstd, gamma, N, C, HxW, G)
        return sum((Tensor(w.astype(np.float32)) * o).sum() for w, o in zip(cot, outs))

    grads = ms.grad(ours, grad_position=(0, 1, 2, 3, 4))(*[Tensor(a.astype(np.float32)) for a in arrays])
    t = [torch.tensor(a, requires_grad=True) for a in arrays]
    loss = sum((torch.tensor(w) * o).sum() for w, o in zip(cot, _torch_backward_formula(*t, G)))
    expected = torch.autograd.grad(loss, t)
    for name, g, e in zip(("dy", "x", "mean", "rstd", "gamma"), grads, expected):
        e = e.numpy()
        assert np.abs(e).max() > 1e-2, name
        np.testing.assert_allclose(g.asnumpy(), e, rtol=2e-4, atol=2e-4 * max(1, np.abs(e).max()), err_msg=name)


def test_graph_cells_second_order(mode):
    """AscendOwnForward over AscendBackward (the GRAPH_MODE route with GroupNormSiluMs
    installed), operators replaced by CPU stand-ins in CANN's order: d/dx of a function of
    the gradient, in both modes."""
    G, shape = 3, (2, 6, 2, 3)
    mask = (True, True, True)
    backward = ascend.AscendBackward(G, mask, double_backward.group_norm_backward_bprop(G, mask, double_backward.OF_X),
                                     op=BackwardInCannOrder(G))
    forward = ascend.AscendOwnForward((G, EPS, False, 1.0), backward, op=ForwardInCannOrder(G))
    rng = np.random.default_rng(6)
    x = rng.standard_normal(shape).astype(np.float32)
    c = rng.standard_normal(shape).astype(np.float32)
    gamma = (1 + 0.3 * rng.standard_normal(shape[1])).astype(np.float32)
    beta = (0.2 * rng.standard_normal(shape[1])).astype(np.float32)
    gamma_ms, beta_ms, c_ms = Tensor(gamma), Tensor(beta), Tensor(c)

    def loss(x):
        return (forward(x, gamma_ms, beta_ms)[0] ** 3).sum()

    def outer(x):
        dx = ms.grad(loss)(x)
        return (c_ms * dx * dx).sum()

    ours = ms.grad(outer)(Tensor(x)).asnumpy()
    tx = torch.tensor(x.astype(np.float64), requires_grad=True)
    y = torch.nn.functional.group_norm(tx, G, torch.tensor(gamma, dtype=torch.float64),
                                       torch.tensor(beta, dtype=torch.float64), EPS)
    (dx,) = torch.autograd.grad((y ** 3).sum(), tx, create_graph=True)
    (expected,) = torch.autograd.grad((torch.tensor(c, dtype=torch.float64) * dx ** 2).sum(), tx)
    expected = expected.numpy()
    scale = np.abs(expected).max()
    assert scale > 1e-3
    assert np.abs(ours - expected).max() / scale <= 2e-3
