"""The Ascend forward wiring (MindSpore's own GroupNorm primitive + our backward as bprop),
exercised on CPU where that primitive also runs, with the CPU backward standing in for
the AscendC operator."""
import mindspore as ms
import numpy as np
from mindspore import Parameter, Tensor, nn

from cases import assert_close
from ms_groupnorm import _ops, ascend, reference


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
    net = Net(ascend.AscendForward(G, 1e-5, _ops.backward_op(G)), shape[1])
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
    from ms_groupnorm import _ascend_pyboost

    class Module:
        group_norm = group_norm_autograd = group_norm_grad = object()

    monkeypatch.setattr(_ops, "backend_name", lambda: "ascend")
    monkeypatch.setattr(ascend, "AscendBackward", lambda group, mask: ("ascend backward", group, mask))
    monkeypatch.setattr(_ascend_pyboost, "module", lambda: Module)
    _ops._forward_op.cache_clear()
    _ops._backward_op.cache_clear()
    try:
        ms.set_context(mode=ms.GRAPH_MODE)
        op = _ops.forward_op(4, 1e-5)
        assert type(op).__name__ == "AscendForward"
        assert op.backward == ("ascend backward", 4, (True, True, True))
        ms.set_context(mode=ms.PYNATIVE_MODE)
        monkeypatch.setattr(_ascend_pyboost, "forward_installed", lambda: False)
        op = _ops.forward_op(4, 1e-5)
        assert type(op).__name__ == "AscendForward" and isinstance(op.backward, ascend.PynativeAscendBackward)
        monkeypatch.setattr(_ascend_pyboost, "forward_installed", lambda: True)
        _ops._forward_op.cache_clear()
        op = _ops.forward_op(4, 1e-5)
        assert isinstance(op, ascend.PynativeAscendForward) and op.autograd is Module.group_norm_autograd
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)
        _ops._forward_op.cache_clear()
        _ops._backward_op.cache_clear()
