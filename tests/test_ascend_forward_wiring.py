"""The Ascend forward wiring (MindSpore's own GroupNorm primitive + our backward as bprop),
exercised on CPU where that primitive also runs, with the CPU backward standing in for
the AscendC operator."""
import mindspore as ms
import numpy as np
from mindspore import Parameter, Tensor, nn

from cases import assert_close
from ms_groupnorm import reference
from ms_groupnorm.ops import routing
from ms_groupnorm.backends import ascend
from ms_groupnorm.ops import double_backward


def second_order(G, mask=(True, True, True)):
    """The bprop routing gives a forward's backward Cell (mean/rstd are x's statistics)."""
    return double_backward.group_norm_backward_bprop(G, mask, double_backward.OF_X)


class Net(nn.Cell):
    def __init__(self, forward, C):
        super().__init__()
        rng = np.random.default_rng(3)
        self.forward = forward
        self.gamma = Parameter(Tensor(rng.standard_normal(C).astype(np.float32)), name="gamma")
        self.beta = Parameter(Tensor(rng.standard_normal(C).astype(np.float32)), name="beta")

    def construct(self, x, w):
        return (self.forward(x, self.gamma, self.beta)[0] * w).sum()


def test_builtin_forward_feeds_our_backward(mode, rng):
    G, shape = 3, (2, 6, 4, 5)
    net = Net(ascend.AscendForward(G, 1e-5, routing.backward_op(G)), shape[1])
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(shape).astype(np.float32)
    dx, (dgamma, dbeta) = ms.grad(net, grad_position=0, weights=[net.gamma, net.beta])(Tensor(x), Tensor(w))
    gamma, beta = net.gamma.asnumpy(), net.beta.asnumpy()
    y, mean, rstd = reference.forward(x, gamma, beta, G)
    want = reference.backward(w, x, mean, rstd, gamma, G)
    assert_close(net(Tensor(x), Tensor(w)), np.array((y * w).sum()), ms.float32, "loss")
    for got, ref, name in zip((dx, dgamma, dbeta), want, ("dx", "dgamma", "dbeta")):
        assert_close(got, ref, ms.float32, name)


def test_forward_op_picks_the_ascend_wiring_on_ascend(monkeypatch):
    """GRAPH_MODE: AscendForward over the aot AscendBackward. PYNATIVE_MODE: the Ascend
    module, with our forward when GroupNormSiluMs is installed, else AscendForward over
    the module's backward (ops.Custom takes tensors only there)."""
    from ms_groupnorm.backends import ascend_pyboost

    class Module:
        group_norm = group_norm_autograd = group_norm_grad = object()

    monkeypatch.setattr(routing, "backend_name", lambda: "ascend")
    monkeypatch.setattr(ascend, "AscendBackward", lambda group, mask, second_order: ("ascend backward", group, mask))
    monkeypatch.setattr(ascend_pyboost, "module", lambda: Module)
    routing._forward_op.cache_clear()
    routing._backward_op.cache_clear()
    monkeypatch.setattr(ascend_pyboost, "installed", lambda op_type: False)
    try:
        ms.set_context(mode=ms.GRAPH_MODE)
        op = routing.forward_op(4, 1e-5)
        assert type(op).__name__ == "AscendForward"
        assert op.backward == ("ascend backward", 4, (True, True, True))
        ms.set_context(mode=ms.PYNATIVE_MODE)
        op = routing.forward_op(4, 1e-5)
        assert type(op).__name__ == "AscendForward" and isinstance(op.backward, ascend.PynativeAscendBackward)
        monkeypatch.setattr(ascend_pyboost, "installed", lambda op_type: True)
        routing._forward_op.cache_clear()
        op = routing.forward_op(4, 1e-5)
        assert isinstance(op, ascend.PynativeAscendForward) and op.autograd is Module.group_norm_autograd
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
        routing._forward_op.cache_clear()
        routing._backward_op.cache_clear()


class ForwardInCannOrder(nn.Cell):
    """Stands in for GroupNormSiluMs: CANN's argument order and call-time attributes; the CPU
    forward computes (statistics in gamma's dtype, float32 here)."""

    def __init__(self, G):
        super().__init__()
        self.inner = routing._forward_op(routing.GROUP_NORM, (G, 1e-5), (True, True, True), "cpu")

    def construct(self, x, gamma, beta, num_groups, eps, activate_silu, swish_scale):
        return self.inner(x, gamma, beta)


class BackwardInCannOrder(nn.Cell):
    def __init__(self, G):
        super().__init__()
        self.inner = routing._backward_op(routing.GROUP_NORM.backward, (G,), (True, True, True), "cpu")

    def construct(self, dy, mean, rstd, x, gamma, num_groups, dx_req, dgamma_req, dbeta_req):
        return self.inner(dy, x, mean, rstd, gamma)


def test_own_forward_wiring_trains_with_float32_statistics(mode, rng):
    """AscendOwnForward (GRAPH_MODE's forward when GroupNormSiluMs is installed) with CPU
    stand-ins in CANN's order at the operator boundary: float16 input, float32 statistics
    reach the backward, gradients match the reference."""
    G, shape = 3, (2, 6, 4, 5)
    backward = ascend.AscendBackward(G, (True, True, True), second_order(G), op=BackwardInCannOrder(G))
    forward = ascend.AscendOwnForward((G, 1e-5, False, 1.0), backward, op=ForwardInCannOrder(G))
    net = Net(forward, shape[1])
    x = rng.standard_normal(shape).astype(np.float16)
    w = rng.standard_normal(shape).astype(np.float32)
    _, mean, _ = forward(Tensor(x), net.gamma, net.beta)
    assert mean.dtype == ms.float32
    dx, (dgamma, dbeta) = ms.grad(net, grad_position=0, weights=[net.gamma, net.beta])(Tensor(x), Tensor(w))
    gamma = net.gamma.asnumpy()
    x64 = x.astype(np.float64)
    _, mean, rstd = reference.forward(x64, gamma, net.beta.asnumpy(), G)
    want = reference.backward(w.astype(np.float16).astype(np.float64), x64, mean, rstd, gamma, G)
    assert_close(dx, want[0], ms.float16, "dx")
    assert_close(dgamma, want[1], ms.float32, "dgamma")
    assert_close(dbeta, want[2], ms.float32, "dbeta")
