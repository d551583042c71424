"""group_norm_forward / group_norm_backward / group_norm through MindSpore, in GRAPH_MODE
(inside a Cell, compiled) and PYNATIVE_MODE, against the float64 reference."""
import math

import mindspore as ms
import numpy as np
import pytest
from mindspore import nn

from cases import DTYPES, SHAPES, assert_close, make_inputs, tensor, to_numpy
from ms_groupnorm import group_norm, group_norm_backward, group_norm_forward, reference

FP32, BF16_MIXED = DTYPES[0].values, DTYPES[4].values


class Backward(nn.Cell):
    def __init__(self, N, C, HxW, G, mask=(True, True, True)):
        super().__init__()
        self.args = (N, C, HxW, G, mask)

    def construct(self, dy, x, mean, rstd, gamma):
        N, C, HxW, G, mask = self.args
        return group_norm_backward(dy, x, mean, rstd, gamma, N, C, HxW, G, mask)


class Forward(nn.Cell):
    def __init__(self, N, C, HxW, G, eps=1e-5):
        super().__init__()
        self.args = (N, C, HxW, G, eps)

    def construct(self, x, gamma, beta):
        N, C, HxW, G, eps = self.args
        return group_norm_forward(x, gamma, beta, N, C, HxW, G, eps)


def sizes(shape):
    return shape[0], shape[1], math.prod(shape[2:])


def check_backward(rng, shape, G, data_dtype, stat_dtype, mask=(True, True, True), with_gamma=True):
    x, dy, gamma, _, mean, rstd = make_inputs(rng, shape, G, data_dtype, stat_dtype)
    gamma_t = tensor(gamma, stat_dtype) if with_gamma else None
    got = Backward(*sizes(shape), G, mask)(tensor(dy, data_dtype), tensor(x, data_dtype), tensor(mean, stat_dtype),
                                           tensor(rstd, stat_dtype), gamma_t)
    want = reference.backward(dy, x, mean, rstd, gamma if with_gamma else None, G)
    for bit, out, ref, dtype, name in zip(mask, got, want, (data_dtype, stat_dtype, stat_dtype),
                                          ("dx", "dgamma", "dbeta")):
        if not bit:
            assert out is None, name
            continue
        assert out.dtype == dtype, name
        assert_close(out, ref, dtype, name)


# every shape once, the two dtype pairs and the modes walked in step with them
@pytest.mark.default_sample(shape=[p.values[0] for p in SHAPES], data_dtype=[ms.float32, ms.bfloat16],
                            stat_dtype=[ms.float32, ms.float32], mode=["graph", "pynative"])
@pytest.mark.parametrize("data_dtype,stat_dtype", [DTYPES[0], DTYPES[4]])
@pytest.mark.parametrize("shape,G", SHAPES)
def test_backward_shapes(mode, rng, shape, G, data_dtype, stat_dtype):
    check_backward(rng, shape, G, data_dtype, stat_dtype)


@pytest.mark.parametrize("data_dtype,stat_dtype", DTYPES)
def test_backward_dtypes(mode, rng, data_dtype, stat_dtype):
    check_backward(rng, (3, 12, 5, 7), 4, data_dtype, stat_dtype)


@pytest.mark.parametrize("mask", [(True, False, False), (False, True, True), (False, False, True)])
def test_backward_mask(mode, rng, mask):
    check_backward(rng, (2, 6, 11), 3, *FP32, mask=mask)


def test_backward_gamma_none_mixed_precision(mode, rng):
    check_backward(rng, (2, 6, 11), 3, *BF16_MIXED, with_gamma=False)


# every dtype pair (the lists are its real pairs) and every shape once, the modes alternating
@pytest.mark.default_sample(data_dtype=[p.values[0] for p in DTYPES], stat_dtype=[p.values[1] for p in DTYPES],
                            shape=[SHAPES[i].values[0] for i in (0, 3, 4, 7)], mode=["graph", "pynative"])
@pytest.mark.parametrize("data_dtype,stat_dtype", DTYPES)
@pytest.mark.parametrize("shape,G", [SHAPES[0], SHAPES[3], SHAPES[4], SHAPES[7]])
def test_forward(mode, rng, shape, G, data_dtype, stat_dtype):
    x, _, gamma, beta, _, _ = make_inputs(rng, shape, G, data_dtype, stat_dtype)
    y, mean, rstd = Forward(*sizes(shape), G)(tensor(x, data_dtype), tensor(gamma, stat_dtype),
                                              tensor(beta, stat_dtype))
    want_y, want_mean, want_rstd = reference.forward(x, gamma, beta, G)
    assert (y.dtype, mean.dtype, rstd.dtype) == (data_dtype, stat_dtype, stat_dtype)
    assert mean.shape == rstd.shape == (shape[0], G)
    assert_close(mean, want_mean, stat_dtype, "mean")
    assert_close(rstd, want_rstd, stat_dtype, "rstd")
    assert_close(y, want_y, data_dtype if stat_dtype == ms.float32 else stat_dtype, "y")


def test_forward_without_affine(mode, rng):
    x = rng.standard_normal((2, 6, 4, 4))
    y, mean, rstd = Forward(2, 6, 16, 2)(tensor(x, ms.float32), None, None)
    want = reference.forward(x, None, None, 2)
    for got, ref, name in zip((y, mean, rstd), want, ("y", "mean", "rstd")):
        assert_close(got, ref, ms.float32, name)


class GroupNormLoss(nn.Cell):
    """sum(group_norm(x) * w), differentiated by MindSpore through our bprop."""

    def __init__(self, G, affine):
        super().__init__()
        self.G, self.affine = G, affine

    def construct(self, x, w, gamma, beta):
        if self.affine:
            y = group_norm(x, self.G, gamma, beta)
        else:
            y = group_norm(x, self.G)
        return (y.astype(ms.float32) * w).sum()


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("data_dtype,stat_dtype", [DTYPES[0], DTYPES[4]])
def test_group_norm_gradients(mode, rng, affine, data_dtype, stat_dtype):
    shape, G = (3, 8, 5, 3), 4
    x, w, gamma, beta, _, _ = make_inputs(rng, shape, G, data_dtype, stat_dtype)
    net = GroupNormLoss(G, affine)
    args = (tensor(x, data_dtype), tensor(w, ms.float32), tensor(gamma, stat_dtype), tensor(beta, stat_dtype))
    dx, dgamma, dbeta = ms.grad(net, grad_position=(0, 2, 3))(*args)
    _, mean, rstd = reference.forward(x, gamma if affine else None, None, G)
    # The backward uses the float32 mean/rstd the forward normalised with (group_norm keeps
    # float32 statistics for float16/bfloat16 input, with or without weight).
    mean, rstd = (to_numpy(tensor(a, ms.float32)) for a in (mean, rstd))
    want = reference.backward(w, x, mean, rstd, gamma if affine else None, G)
    assert_close(dx, want[0], data_dtype, "dx")
    if affine:
        assert_close(dgamma, want[1], stat_dtype, "dgamma")
        assert_close(dbeta, want[2], stat_dtype, "dbeta")
    else:  # gamma/beta are not used: their gradients are zero
        assert not np.any(to_numpy(dgamma)) and not np.any(to_numpy(dbeta))


class GroupNormOnly(nn.Cell):
    def __init__(self, G):
        super().__init__()
        self.G = G

    def construct(self, x, gamma):
        return group_norm(x, self.G, gamma)


@pytest.mark.parametrize("shape,gamma,G,message", [
    ((2, 6, 4), (6,), 4, "C=6 .*is not divisible by num_groups=4"),
    ((12,), (12,), 3, r"input has rank 1, but the rank must be in \[2, 8\]"),
    ((2, 6, 4), (5,), 3, r"numel\(weight\)=5"),
])
def test_group_norm_checks_its_arguments(mode, shape, gamma, G, message):
    from ms_groupnorm import ParamInvalidError
    with pytest.raises(ParamInvalidError, match=message):
        GroupNormOnly(G)(tensor(np.ones(shape), ms.float32), tensor(np.ones(gamma), ms.float32))
