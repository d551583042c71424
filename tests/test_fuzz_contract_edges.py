"""Seeded fuzzing of what a second fuzz round found (tests/test_typed_errors.py and
tests/test_second_order.py hold one case each): second-order gradients of random shapes and
forms against torch float64, keyword inputs under ``to_float``, parameters of a wrong size,
non-Tensor inputs and the ``swish_scale`` range. The default run takes a fixed-seed sample
of each category; ``--exhaustive`` many more."""
import mindspore as ms
import numpy as np
import pytest
from mindspore import Parameter, Tensor

import ms_groupnorm as mg
from ms_groupnorm import ParamInvalidError, ParamTypeError
from ms_groupnorm.ops.checks import MAX_SWISH_SCALE
from test_second_order import check
from test_typed_errors import LAYERS

SAMPLE, EXHAUSTIVE = 3, 30
FORMS = ("group_norm", "GroupNorm", "GroupNormSiLU", "group_norm_silu", "mint.GroupNormSiLU")


def _rng(category, exhaustive):
    return np.random.default_rng([sum(map(ord, category)), exhaustive])


def _shape(rng, min_group_size=1):
    """(shape, groups): rank 2 to 5, each group of at least ``min_group_size`` elements."""
    groups = int(rng.integers(1, 4))
    spatial = tuple(int(v) for v in rng.integers(1, 4, size=int(rng.integers(0, 4))))
    hxw = int(np.prod(spatial)) if spatial else 1
    per_group = max(1, -(-min_group_size // hxw))  # channels per group, enough elements
    channels = groups * int(rng.integers(per_group, per_group + 2))
    return (int(rng.integers(1, 3)), channels) + spatial, groups


def _second_order_cases(exhaustive):
    rng = _rng("second order", exhaustive)
    for i in range(EXHAUSTIVE if exhaustive else SAMPLE):
        shape, groups = _shape(rng, min_group_size=4)  # a smaller group's second derivative is ~0
        dtype = "float64" if i % 3 == 2 else "float32"  # float64: the CPU kernels' group_norm only
        form = FORMS[i % len(FORMS)] if dtype == "float32" else "group_norm"
        yield form, shape, groups, dtype, dtype, bool(rng.integers(2))


def _check_second_order(mode, exhaustive):
    for case in _second_order_cases(exhaustive):
        check(*case)


def test_second_order(mode):
    _check_second_order(mode, False)


@pytest.mark.exhaustive
def test_second_order_exhaustive(mode):
    _check_second_order(mode, True)


def _check_contract_edges(exhaustive):
    """Per case: a random layer and shape; its keyword call under to_float(float16) equals the
    positional one; a gamma/beta of another size raises the ValueError naming it; a random
    non-Tensor input to the functional forms raises ParamTypeError."""
    rng = _rng("contract edges", exhaustive)
    ms.set_context(mode=ms.PYNATIVE_MODE)
    for _ in range(EXHAUSTIVE if exhaustive else SAMPLE):
        name = str(rng.choice(list(LAYERS)))
        shape, groups = _shape(rng)
        x = Tensor(rng.standard_normal(shape).astype(np.float32))
        layer = LAYERS[name](groups, shape[1]).to_float(ms.float16)
        keyword = "input" if name.startswith("mint") else "x"
        by_keyword = layer(**{keyword: x})
        assert by_keyword.dtype == ms.float16, name
        np.testing.assert_array_equal(by_keyword.asnumpy(), layer(x).asnumpy())

        param = str(rng.choice(["gamma", "beta"]))
        attribute = {"gamma": "weight", "beta": "bias"}[param] if name.startswith("mint") else param
        wrong = shape[1] + int(rng.choice([-1, 1])) * groups if shape[1] > groups else shape[1] + groups
        setattr(layer, attribute, Parameter(Tensor(np.ones(wrong, np.float32)), name=attribute))
        with pytest.raises(ValueError, match=f"'{param}' must hold num_channels={shape[1]}"):
            layer(x)

        value = [None, 1.5, int(rng.integers(9)), "x", x.asnumpy(), x.asnumpy().tolist(), (x,)][int(rng.integers(7))]
        fn = mg.group_norm if rng.integers(2) else mg.group_norm_silu
        with pytest.raises(ParamTypeError, match="input must be a mindspore.Tensor"):
            fn(value, groups)


def test_contract_edges():
    _check_contract_edges(False)


@pytest.mark.exhaustive
def test_contract_edges_exhaustive():
    _check_contract_edges(True)


def _check_swish_scales(exhaustive):
    """Any finite swish_scale: finite gradients matching float64 up to the documented bound,
    ParamInvalidError beyond it."""
    rng = _rng("swish scale", exhaustive)
    for _ in range(EXHAUSTIVE if exhaustive else SAMPLE):
        scale = float(np.sign(rng.standard_normal()) * 10.0 ** rng.uniform(-3, 38.5))
        # >= 8 elements a group: dx of a smaller one cancels below float32's resolution
        shape, groups = _shape(rng, min_group_size=8)
        N, C = shape[:2]
        HxW = int(np.prod(shape[2:])) if len(shape) > 2 else 1
        x = Tensor(rng.standard_normal((N, C, HxW)).astype(np.float32))
        dz = Tensor(rng.standard_normal((N, C, HxW)).astype(np.float32))
        gamma = Tensor((1 + 0.2 * rng.standard_normal(C)).astype(np.float32))
        beta = Tensor((0.1 * rng.standard_normal(C)).astype(np.float32))
        if abs(scale) > MAX_SWISH_SCALE:
            with pytest.raises(ParamInvalidError, match="swish_scale"):
                mg.group_norm_silu_forward(x, gamma, beta, N, C, HxW, groups, 1e-5, scale)
            continue
        _, mean, rstd = mg.group_norm_silu_forward(x, gamma, beta, N, C, HxW, groups, 1e-5, scale)
        outs = mg.group_norm_silu_backward(dz, x, mean, rstd, gamma, beta, N, C, HxW, groups, swish_scale=scale)
        inputs = [t.asnumpy().astype(np.float64) for t in (dz, x, mean, rstd, gamma, beta)]
        expected = mg.reference.silu_backward(*inputs, groups, swish_scale=scale)
        for ours, ref, name in zip(outs, expected, ("dx", "dgamma", "dbeta")):
            ours = ours.asnumpy()
            assert np.isfinite(ours).all(), (name, scale)
            np.testing.assert_allclose(ours, ref, rtol=1e-4, atol=1e-4 * max(np.abs(ref).max(), 1e-30),
                                       err_msg=f"{name} at swish_scale={scale:.3g}")


def test_swish_scales():
    _check_swish_scales(False)


@pytest.mark.exhaustive
def test_swish_scales_exhaustive():
    _check_swish_scales(True)
