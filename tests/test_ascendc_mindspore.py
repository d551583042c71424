"""ms_groupnorm.GroupNorm trains through the AscendC kernel's code on CPU: with
MS_GROUPNORM_BACKEND=twin the backward is the twin library (the unmodified
op_kernel source on the twin AscendC API) behind ops.Custom(func_type="aot")."""
import mindspore as ms
import numpy as np
import pytest
from mindspore import nn

import ms_groupnorm
from ms_groupnorm import reference
from ms_groupnorm.ops import routing
import twin



class WeightedSum(nn.Cell):
    def __init__(self, net, weight):
        super().__init__()
        self.net = net
        self.weight = ms.Tensor(weight)

    def construct(self, x):
        return (self.net(x).astype(ms.float32) * self.weight).sum()


def expected_step(x, weight, gamma, beta, G, lr, eps=1e-5):
    _, mean, rstd = reference.forward(x, gamma, beta, G, eps)
    dx, dgamma, dbeta = reference.backward(weight, x, mean, rstd, gamma, G)
    return dx, gamma - lr * dgamma, beta - lr * dbeta


@pytest.mark.parametrize("dtype,tol", [(ms.float32, 1e-5), (ms.float16, 3e-3)], ids=["fp32", "fp16_fp32_params"])
def test_training_step_through_the_twin(mode, twin_backend, dtype, tol):
    rng = np.random.default_rng(0)
    N, C, H, W, G, lr = 2, 6, 5, 7, 3, 0.1
    x = rng.standard_normal((N, C, H, W)) + 0.5
    weight = rng.standard_normal((N, C, H, W)).astype(np.float32)
    x_np_dtype = {ms.float32: np.float32, ms.float16: np.float16}[dtype]
    x_in = x.astype(x_np_dtype).astype(np.float64)  # what the kernel sees
    net = ms_groupnorm.GroupNorm(G, C, gamma_init=ms.Tensor(rng.standard_normal(C).astype(np.float32) + 1),
                                 beta_init=ms.Tensor(rng.standard_normal(C).astype(np.float32)))
    gamma0, beta0 = net.gamma.asnumpy().astype(np.float64), net.beta.asnumpy().astype(np.float64)
    assert twin.twin_library_path() in routing.backward_op(G).func  # the backward really is the twin

    loss_net = WeightedSum(net, weight)
    grad_x = ms.grad(loss_net, grad_position=0)(ms.Tensor(x_in, dtype))
    nn.TrainOneStepCell(loss_net, nn.SGD(net.trainable_params(), learning_rate=lr))(ms.Tensor(x_in, dtype))

    # y is cast to float32 before the weighting, so dy reaches the backward rounded to dtype.
    dy = weight.astype(np.dtype(x_np_dtype)).astype(np.float64)
    want_dx, want_gamma, want_beta = expected_step(x_in, dy, gamma0, beta0, G, lr)
    scale = max(1.0, np.abs(want_dx).max())
    assert np.abs(grad_x.asnumpy().astype(np.float64) - want_dx).max() / scale < tol
    np.testing.assert_allclose(net.gamma.asnumpy(), want_gamma, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(net.beta.asnumpy(), want_beta, rtol=1e-4, atol=1e-4)


def test_twin_faults_surface_as_errors(twin_backend, monkeypatch):
    """A twin device whose UB is too small for any tiling fails the step: the twin is on the path."""
    monkeypatch.setenv("MS_GROUPNORM_TWIN_UB", "1024")  # below any real UB: tiling refuses
    ms.set_context(mode=ms.PYNATIVE_MODE)
    net = ms_groupnorm.GroupNorm(2, 4)
    x = ms.Tensor(np.ones((2, 4, 3), np.float32))
    with pytest.raises(RuntimeError):
        ms.grad(lambda t: net(t).sum())(x).asnumpy()


def test_default_backend_is_the_cpu_kernel(monkeypatch):
    monkeypatch.delenv(routing.BACKEND_ENV, raising=False)
    assert routing.backend_name() == "cpu"
    assert routing._op_backend() in ("cpu", routing.PYBOOST_BACKEND)  # the PyNative fast path runs the CPU kernel
    monkeypatch.setenv("MS_GROUPNORM_PYBOOST", "0")  # the aot op, whose library can be inspected
    assert "ascendc_twin" not in routing.backward_op(2).func
    monkeypatch.setenv(routing.BACKEND_ENV, "nonsense")
    with pytest.raises(ValueError, match="MS_GROUPNORM_BACKEND"):
        routing.backward_op(2)
