"""ms_groupnorm.GroupNorm as a drop-in for mindspore.nn.GroupNorm, in both modes."""
import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor, nn

import ms_groupnorm
from cases import assert_close, tensor, to_numpy
from ms_groupnorm import reference


def reference_grads(x, w, gamma, beta, G):
    """y and the gradients of sum(y * w) for x, gamma, beta."""
    y, mean, rstd = reference.forward(x, gamma, beta, G)
    return (y,) + reference.backward(w, x, mean, rstd, gamma, G)


def grads(cell, x, w):
    loss = WeightedSum(cell)
    dx, (dgamma, dbeta) = ms.grad(loss, grad_position=0, weights=[cell.gamma, cell.beta])(x, w)
    return dx, dgamma, dbeta


class WeightedSum(nn.Cell):
    def __init__(self, cell):
        super().__init__()
        self.cell = cell

    def construct(self, x, w):
        return (self.cell(x).astype(ms.float32) * w).sum()


def random_affine(cell, rng):
    C = cell.num_channels
    cell.gamma.set_data(Tensor(rng.standard_normal(C).astype(np.float32)))
    cell.beta.set_data(Tensor(rng.standard_normal(C).astype(np.float32)))


@pytest.mark.parametrize("shape,G", [((2, 6, 5, 4), 3), ((4, 8), 2), ((2, 4, 3, 2, 2), 4), ((3, 10, 17), 5)])
def test_matches_reference_and_builtin(mode, rng, shape, G):
    ours, builtin = ms_groupnorm.GroupNorm(G, shape[1]), nn.GroupNorm(G, shape[1])
    random_affine(ours, rng)
    builtin.gamma.set_data(ours.gamma.value().copy())
    builtin.beta.set_data(ours.beta.value().copy())
    x = rng.standard_normal(shape).astype(np.float32)
    w = rng.standard_normal(shape).astype(np.float32)
    want = reference_grads(x, w, ours.gamma.asnumpy(), ours.beta.asnumpy(), G)
    got = (ours(Tensor(x)),) + grads(ours, Tensor(x), Tensor(w))
    names = ("y", "dx", "dgamma", "dbeta")
    for g, r, name in zip(got, want, names):
        assert_close(g, r, ms.float32, name)
    if len(shape) != 4:
        return  # the built-in kernel handles (N, C, H, W) in both modes; compare only there
    theirs = (builtin(Tensor(x)),) + grads(builtin, Tensor(x), Tensor(w))
    for g, t, name in zip(got, theirs, names):
        assert_close(g, to_numpy(t), ms.float32, name + " vs nn.GroupNorm")


def test_float16_matches_builtin(mode, rng):
    shape, G = (2, 8, 6, 6), 4
    ours, builtin = ms_groupnorm.GroupNorm(G, 8, dtype=ms.float16), nn.GroupNorm(G, 8, dtype=ms.float16)
    x = Tensor(rng.standard_normal(shape).astype(np.float16))
    w = Tensor(rng.standard_normal(shape).astype(np.float32))
    for g, t, name in zip((ours(x),) + grads(ours, x, w), (builtin(x),) + grads(builtin, x, w),
                          ("y", "dx", "dgamma", "dbeta")):
        assert g.dtype == t.dtype == ms.float16, name
        assert_close(g, to_numpy(t), ms.float16, name)


@pytest.mark.parametrize("dtype", [ms.float16, ms.bfloat16])
def test_low_precision_input_with_float32_parameters(mode, rng, dtype):
    shape, G = (2, 6, 7, 3), 3
    cell = ms_groupnorm.GroupNorm(G, 6)
    random_affine(cell, rng)
    x = to_numpy(tensor(rng.standard_normal(shape), dtype))
    w = rng.standard_normal(shape)
    y = cell(tensor(x, dtype))
    dx, dgamma, dbeta = grads(cell, tensor(x, dtype), tensor(w, ms.float32))
    assert (y.dtype, dx.dtype, dgamma.dtype, dbeta.dtype) == (dtype, dtype, ms.float32, ms.float32)
    want = reference_grads(x, w, cell.gamma.asnumpy(), cell.beta.asnumpy(), G)
    for g, r, dt, name in zip((y, dx, dgamma, dbeta), want, (dtype, dtype, ms.float32, ms.float32),
                              ("y", "dx", "dgamma", "dbeta")):
        # dgamma/dbeta sum float32 products of exactly represented inputs with the
        # float32-rounded stats: float32 accuracy, checked at fp16 tolerance for margin.
        assert_close(g, r, dt if dt != ms.float32 else ms.float16, name)


def test_affine_false(mode, rng):
    cell = ms_groupnorm.GroupNorm(2, 4, affine=False)
    assert not cell.trainable_params()
    x = rng.standard_normal((3, 4, 5)).astype(np.float32)
    w = rng.standard_normal((3, 4, 5)).astype(np.float32)
    dx = ms.grad(WeightedSum(cell), grad_position=0)(Tensor(x), Tensor(w))
    want = reference_grads(x, w, None, None, 2)
    assert_close(cell(Tensor(x)), want[0], ms.float32, "y")
    assert_close(dx, want[1], ms.float32, "dx")


def test_jit_function_wrapping_grad(mode, rng):
    cell = ms_groupnorm.GroupNorm(3, 6)
    random_affine(cell, rng)
    loss = WeightedSum(cell)
    grad_fn = ms.value_and_grad(loss, grad_position=0, weights=cell.trainable_params())

    @ms.jit
    def step(x, w):
        return grad_fn(x, w)

    x = rng.standard_normal((2, 6, 4)).astype(np.float32)
    w = rng.standard_normal((2, 6, 4)).astype(np.float32)
    value, (dx, (dgamma, dbeta)) = step(Tensor(x), Tensor(w))
    want = reference_grads(x, w, cell.gamma.asnumpy(), cell.beta.asnumpy(), 3)
    assert value.asnumpy() == pytest.approx(float((want[0] * w).sum()), rel=1e-5, abs=1e-5)
    for g, r, name in zip((dx, dgamma, dbeta), want[1:], ("dx", "dgamma", "dbeta")):
        assert_close(g, r, ms.float32, name)


def test_train_one_step_moves_parameters_by_lr_times_gradient(mode, rng):
    cell = ms_groupnorm.GroupNorm(2, 4)
    random_affine(cell, rng)
    x = rng.standard_normal((3, 4, 6)).astype(np.float32)
    w = rng.standard_normal((3, 4, 6)).astype(np.float32)
    gamma0, beta0 = cell.gamma.asnumpy().copy(), cell.beta.asnumpy().copy()
    _, _, dgamma, dbeta = reference_grads(x, w, gamma0, beta0, 2)
    lr = 0.125  # a power of two: lr * grad is exact, so only the gradient's own error remains
    step = nn.TrainOneStepCell(WeightedSum(cell), nn.SGD(cell.trainable_params(), learning_rate=lr))
    step(Tensor(x), Tensor(w))
    assert_close(cell.gamma.asnumpy(), gamma0 - lr * dgamma, ms.float32, "gamma")
    assert_close(cell.beta.asnumpy(), beta0 - lr * dbeta, ms.float32, "beta")


def test_dynamic_shapes_in_graph_mode(rng):
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        cell = ms_groupnorm.GroupNorm(3, 6)
        random_affine(cell, rng)
        loss = WeightedSum(cell)
        grad_fn = ms.grad(loss, grad_position=0, weights=cell.trainable_params())
        loss.set_inputs(Tensor(shape=[None, 6, None], dtype=ms.float32), Tensor(shape=[None, 6, None],
                                                                                dtype=ms.float32))
        for shape in [(2, 6, 5), (3, 6, 9), (1, 6, 2)]:
            x = rng.standard_normal(shape).astype(np.float32)
            w = rng.standard_normal(shape).astype(np.float32)
            dx, (dgamma, dbeta) = grad_fn(Tensor(x), Tensor(w))
            want = reference_grads(x, w, cell.gamma.asnumpy(), cell.beta.asnumpy(), 3)
            assert dx.shape == shape
            for g, r, name in zip((dx, dgamma, dbeta), want[1:], ("dx", "dgamma", "dbeta")):
                assert_close(g, r, ms.float32, f"{name} {shape}")
            assert_close(loss(Tensor(x), Tensor(w)), np.array((want[0] * w).sum()), ms.float32, "loss")
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def test_same_signature_errors_and_repr_as_builtin():
    ours, theirs = ms_groupnorm.GroupNorm(2, 6, eps=1e-3), nn.GroupNorm(2, 6, eps=1e-3)
    assert ours.extend_repr() == theirs.extend_repr()
    assert [p.name for p in ours.get_parameters()] == [p.name for p in theirs.get_parameters()] == ["gamma", "beta"]
    with pytest.raises(ValueError, match="must be divided by 'num_groups'"):
        ms_groupnorm.GroupNorm(4, 6)
    for bad in [dict(num_groups=0, num_channels=4), dict(num_groups=2, num_channels=4, eps=1),
                dict(num_groups=2, num_channels=4, affine=1)]:
        with pytest.raises((ValueError, TypeError)):
            nn.GroupNorm(**bad)
        with pytest.raises((ValueError, TypeError)):
            ms_groupnorm.GroupNorm(**bad)


def test_wrong_channel_count_is_rejected(mode):
    with pytest.raises(ValueError, match="num_channels"):
        ms_groupnorm.GroupNorm(2, 6)(Tensor(np.zeros((2, 4, 3), np.float32)))


def test_rank_above_8_is_rejected(mode):
    with pytest.raises(ValueError, match="rank 2 to 8"):
        ms_groupnorm.GroupNorm(2, 2)(Tensor(np.zeros((1, 2) + (1,) * 7, np.float32)))
