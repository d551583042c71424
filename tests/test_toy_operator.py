"""A third operator added as docs/how-it-works.md says, touching nothing but its descriptions,
its (reference-only) kernel and this test: GroupNorm then ReLU, z = max(y, 0).

Its two descriptions carry no C entry, so ops.routing runs their float64 references as ops
(backends/reference_ops.py). The routing, the caches, the forward's bprop feeding the saved
statistics to the backward, the output mask and both execution modes are the package's own:
nothing here is written for this operator but its maths."""
import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor, nn, ops

from ms_groupnorm import reference
from ms_groupnorm.ops import routing
from ms_groupnorm.ops.descriptions import Description

MASK_ATTRS = (("dx_is_require", "bool"), ("dgamma_is_require", "bool"), ("dbeta_is_require", "bool"))


def relu_forward(x, gamma, beta, num_groups, eps=1e-5):
    y, mean, rstd = reference.forward(x, gamma, beta, num_groups, eps)
    return np.maximum(y, 0.0), mean, rstd


def relu_backward(dz, x, mean, rstd, gamma, beta, num_groups):
    y = reference.recompute_y(x, mean, rstd, gamma, beta, num_groups)
    dy = dz * (y > 0)
    return reference.backward(dy, x, mean, rstd, gamma, num_groups)


GROUP_NORM_RELU_GRAD = Description(
    name="toy_group_norm_relu", entry=None, reg_name="ToyGroupNormReluGrad",
    inputs=("dz", "x", "mean", "rstd", "gamma", "beta"), outputs=("dx", "dgamma", "dbeta"),
    attrs=(("group", "int"),) + MASK_ATTRS, reference=relu_backward, pyboost=None)
GROUP_NORM_RELU = Description(
    name="toy_group_norm_relu", entry=None, reg_name="ToyGroupNormRelu",
    inputs=("x", "gamma", "beta"), outputs=("z", "mean", "rstd"), attrs=(("group", "int"), ("eps", "float")),
    reference=relu_forward, pyboost=None, saved=("x", "mean", "rstd", "gamma", "beta"), backward=GROUP_NORM_RELU_GRAD)

G, SHAPE = 3, (2, 6, 4, 5)


class Loss(nn.Cell):
    def __init__(self, op, weights):
        super().__init__()
        self.op, self.weights = op, Tensor(weights)

    def construct(self, x, gamma, beta):
        return ops.sum(self.op(x, gamma, beta)[0] * self.weights)


@pytest.fixture
def data():
    rng = np.random.default_rng(3)
    x = rng.standard_normal(SHAPE).astype(np.float32)
    gamma = (1 + 0.3 * rng.standard_normal(SHAPE[1])).astype(np.float32)
    beta = (0.5 * rng.standard_normal(SHAPE[1])).astype(np.float32)
    weights = rng.standard_normal(SHAPE).astype(np.float32)
    return x, gamma, beta, weights


def test_the_toy_operator_runs_and_trains_from_its_description(mode, data):
    x, gamma, beta, weights = data
    op = routing.forward_op_for(GROUP_NORM_RELU, (G, 1e-5))
    assert routing.forward_op_for(GROUP_NORM_RELU, (G, 1e-5)) is op  # cached like every op
    z, mean, rstd = op(Tensor(x), Tensor(gamma), Tensor(beta))
    x64, gamma64, beta64 = (a.astype(np.float64) for a in (x, gamma, beta))
    want = relu_forward(x64, gamma64, beta64, G)
    for got, expected in zip((z, mean, rstd), want):
        np.testing.assert_allclose(got.asnumpy(), expected, rtol=1e-5, atol=1e-6)
    assert (z.asnumpy() == 0).mean() > 0.2  # ReLU clipped something: the test sees the toy's maths

    grads = ms.grad(Loss(op, weights), grad_position=(0, 1, 2))(Tensor(x), Tensor(gamma), Tensor(beta))
    want = relu_backward(weights.astype(np.float64), x64, want[1], want[2], gamma64, beta64, G)
    for got, expected in zip(grads, want):
        np.testing.assert_allclose(got.asnumpy(), expected, rtol=1e-4, atol=1e-5)


def test_the_toy_backward_honours_the_mask(mode, data):
    x, gamma, beta, weights = data
    x64, gamma64, beta64 = (a.astype(np.float64) for a in (x, gamma, beta))
    _, mean, rstd = reference.forward(x64, gamma64, beta64, G)
    backward = routing.backward_op_for(GROUP_NORM_RELU_GRAD, (G,), (True, False, True))
    dx, dgamma, dbeta = backward(Tensor(weights), Tensor(x), Tensor(mean.astype(np.float32)),
                                 Tensor(rstd.astype(np.float32)), Tensor(gamma), Tensor(beta))
    want = relu_backward(weights.astype(np.float64), x64, mean, rstd, gamma64, beta64, G)
    assert dgamma.shape == (0,)
    np.testing.assert_allclose(dx.asnumpy(), want[0], rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(dbeta.asnumpy(), want[2], rtol=1e-4, atol=1e-5)
