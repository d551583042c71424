"""The fused op's PyNative fast path (ms_groupnorm/backends/cpu_pyboost.py, on by default,
$MS_GROUPNORM_PYBOOST=0 opts out): chosen only in PYNATIVE_MODE, and bitwise the results
of the aot ops: forward with and without a recorded gradient, the module's own autograd
node, @ms.jit inside PyNative. Built once per machine (a minute or more the first time)."""
import mindspore as ms
import numpy as np
import pytest

from cases import DTYPES, make_inputs, tensor
from ms_groupnorm import GroupNormSiLU, group_norm_silu
from ms_groupnorm.backends import cpu_pyboost
from ms_groupnorm.ops import routing
from test_pyboost import assert_bitwise

SHAPE, G = (3, 6, 5, 2), 3


def _layer_grads(x_t, w_t, gamma, beta):
    layer = GroupNormSiLU(G, SHAPE[1])
    layer.gamma.set_data(tensor(gamma, ms.float32))
    layer.beta.set_data(tensor(beta, ms.float32))
    z = layer(x_t)
    dx, (dgamma, dbeta) = ms.grad(lambda inp: (layer(inp).astype(ms.float32) * w_t).sum(), grad_position=0,
                                  weights=layer.trainable_params())(x_t)
    return z, dx, dgamma, dbeta


@pytest.mark.parametrize("data_dtype,stat_dtype", [DTYPES[0], DTYPES[4]])
def test_layer_forward_and_gradients_bitwise_equal_to_aot(fast_path, rng, data_dtype, stat_dtype):
    x, w, gamma, beta, _, _ = make_inputs(rng, SHAPE, G, data_dtype, ms.float32)
    x_t, w_t = tensor(x, data_dtype), tensor(w, ms.float32)
    fast = _layer_grads(x_t, w_t, gamma, beta)
    fast_path(False)
    slow = _layer_grads(x_t, w_t, gamma, beta)
    for got, want, name in zip(fast, slow, ("z", "dx", "dgamma", "dbeta")):
        assert_bitwise(got, want, name)


def test_recorded_forward_goes_through_the_module_autograd(fast_path, rng, monkeypatch):
    x, w, _, _, _, _ = make_inputs(rng, SHAPE, G, ms.float32, ms.float32)
    x_t, w_t = tensor(x, ms.float32), tensor(w, ms.float32)
    op = routing.silu_forward_op(G, 1e-5, 1.0, (True, False, False))
    calls = []
    autograd, plain = op.module_autograd, op.module_forward
    monkeypatch.setattr(op, "module_autograd", lambda *args: calls.append("autograd") or autograd(*args))
    monkeypatch.setattr(op, "module_forward", lambda *args: calls.append("plain") or plain(*args))
    dx = ms.grad(lambda inp: (group_norm_silu(inp, G) * w_t).sum())(x_t)
    assert calls == ["autograd"] and np.abs(dx.asnumpy()).max() > 0  # a real gradient, not the zero trap
    group_norm_silu(x_t, G)
    assert calls == ["autograd", "plain"]


def test_jit_inside_pynative_bitwise(fast_path, rng):
    x, w, gamma, beta, _, _ = make_inputs(rng, SHAPE, G, ms.float32, ms.float32)
    x_t, w_t, g_t, b_t = (tensor(a, ms.float32) for a in (x, w, gamma, beta))

    def loss(inp, g, b):
        return (group_norm_silu(inp, G, g, b) * w_t).sum()

    fast = ms.jit(ms.grad(loss, grad_position=(0, 1, 2)))(x_t, g_t, b_t)
    fast_path(False)
    slow = ms.grad(loss, grad_position=(0, 1, 2))(x_t, g_t, b_t)
    for got, want, name in zip(fast, slow, ("dx", "dgamma", "dbeta")):
        assert_bitwise(got, want, name)


def test_module_backward_bitwise_equal_to_aot(pyboost_module, rng):
    x, dz, gamma, beta, mean, rstd = make_inputs(rng, SHAPE, G, ms.bfloat16, ms.float32)
    args = (tensor(dz, ms.bfloat16), tensor(x, ms.bfloat16), tensor(mean, ms.float32), tensor(rstd, ms.float32),
            tensor(gamma, ms.float32), tensor(beta, ms.float32))
    fast = cpu_pyboost.backward("group_norm_silu", (G, 1.4), (True, True, True))(*args)
    slow = routing._backward_op(routing.GROUP_NORM_SILU.backward, (G, 1.4), (True, True, True), "cpu")(*args)
    for got, want, name in zip(fast, slow, ("dx", "dgamma", "dbeta")):
        assert_bitwise(got, want, name)
