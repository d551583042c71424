"""What a fuzz round found at the edges of the contracts, one test each: a keyword input under
``to_float``, errors that only the run of a graph can find (dynamic shapes, ``ms.mutable``
num_groups), a Parameter of the wrong size, ``group_norm_silu`` with graph variables, a huge
``swish_scale`` and a non-Tensor input. Each is what ``nn.GroupNorm``, ``ops.group_norm`` or
this project's contract does."""
import mindspore as ms
import numpy as np
import pytest
from mindspore import Parameter, Tensor, nn

import ms_groupnorm as mg
from ms_groupnorm import ParamInvalidError, ParamTypeError
from ms_groupnorm.ops.checks import MAX_SWISH_SCALE

LAYERS = {"GroupNorm": mg.GroupNorm, "GroupNormSiLU": mg.GroupNormSiLU, "mint.GroupNorm": mg.mint.GroupNorm,
          "mint.GroupNormSiLU": mg.mint.GroupNormSiLU}


def _x(shape=(2, 4, 3), dtype=np.float32):
    return Tensor(np.random.default_rng(0).standard_normal(shape).astype(dtype))


@pytest.mark.parametrize("name", list(LAYERS))
def test_to_float_casts_a_keyword_input(name):
    """layer(x=t) / layer(input=t) after to_float(float16) returns float16, as positional does."""
    ms.set_context(mode=ms.PYNATIVE_MODE)
    layer = LAYERS[name](2, 4).to_float(ms.float16)
    keyword = "input" if name.startswith("mint") else "x"
    out = layer(**{keyword: _x()})
    assert out.dtype == ms.float16
    np.testing.assert_array_equal(out.asnumpy(), layer(_x()).asnumpy())


# Each case compiles a graph (~3.4 s): the default run takes every layer once, both input kinds.
@pytest.mark.default_sample(name=list(LAYERS), rank=["dynamic shape", "dynamic rank"])
@pytest.mark.parametrize("rank", ["dynamic shape", "dynamic rank"])
@pytest.mark.parametrize("name", list(LAYERS))
def test_wrong_channels_found_by_the_run_of_a_graph_raise_a_value_error(name, rank):
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        layer = LAYERS[name](2, 4)
        layer.set_inputs(Tensor(shape=[None, None, None] if rank == "dynamic shape" else None, dtype=ms.float32))
        assert layer(_x()).shape == (2, 4, 3)
        with pytest.raises(ValueError, match="num_channels"):
            layer(_x((2, 6, 3)))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def test_groups_not_dividing_a_dynamic_c_raise_a_value_error():
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        class Net(nn.Cell):
            def construct(self, x):
                return mg.group_norm(x, 2)

        net = Net()
        net.set_inputs(Tensor(shape=[None, None, None], dtype=ms.float32))
        assert net(_x()).shape == (2, 4, 3)
        with pytest.raises(ValueError, match="num_groups=2"):
            net(_x((2, 5, 3)))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


@pytest.mark.parametrize("fn", [mg.group_norm, mg.group_norm_silu], ids=["group_norm", "group_norm_silu"])
def test_a_mutable_num_groups_not_dividing_c_raises_a_value_error(fn):
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        @ms.jit
        def run(x, groups):
            return fn(x, groups)

        assert run(_x(), ms.mutable(2)).shape == (2, 4, 3)
        with pytest.raises(ValueError, match="num_groups=3"):
            run(_x(), ms.mutable(3))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


@pytest.mark.parametrize("param", ["gamma", "beta"])
@pytest.mark.parametrize("name", list(LAYERS))
def test_a_parameter_of_the_wrong_size_raises_a_value_error(mode, name, param):
    layer = LAYERS[name](3, 12)
    attribute = {"gamma": "weight", "beta": "bias"}[param] if name.startswith("mint") else param
    setattr(layer, attribute, Parameter(Tensor(np.ones(6, np.float32)), name=attribute))
    with pytest.raises(ValueError, match=f"'{param}' must hold num_channels=12"):
        layer(_x((2, 12, 3)))


@pytest.mark.parametrize("name", list(LAYERS))
def test_an_error_under_to_float_leaves_later_ops_alone(name):
    """MindSpore keeps a Cell's to_float type for every op until its construct returns: after
    our ValueError inside a to_float(float16) layer, every later float32 op of the process ran
    in float16 (found by the seeded fuzz: group_norm_silu_backward returned float16)."""
    ms.set_context(mode=ms.PYNATIVE_MODE)
    layer = LAYERS[name](3, 12).to_float(ms.float16)
    attribute = "weight" if name.startswith("mint") else "gamma"
    setattr(layer, attribute, Parameter(Tensor(np.ones(6, np.float32)), name=attribute))
    with pytest.raises(ValueError):
        layer(_x((2, 12, 3)))
    a = _x()
    assert (a * a).dtype == ms.float32
    assert mg.group_norm_silu_forward(a, None, None, 2, 4, 3, 2)[0].dtype == ms.float32


def test_group_norm_silu_takes_graph_variables_as_group_norm_does():
    """It refused them with "num_groups=None must be an int"."""
    x = _x()
    expected = mg.group_norm_silu(x, 2, eps=1e-3).asnumpy()
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        @ms.jit
        def run(x, groups, eps):
            return mg.group_norm_silu(x, groups, None, None, eps)

        for groups, eps in ((ms.mutable(2), ms.mutable(1e-3)), (2, ms.mutable(1e-3)), (ms.mutable(2), 1e-3)):
            np.testing.assert_allclose(run(x, groups, eps).asnumpy(), expected, rtol=1e-5, atol=1e-6)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def _silu_backward_at(scale):
    N, C, HxW, G = 2, 4, 5, 2
    x, dz = _x((N, C, HxW)), _x((N, C, HxW)) * 0.5
    gamma, beta = Tensor(np.full(C, 1.1, np.float32)), Tensor(np.full(C, 0.1, np.float32))
    _, mean, rstd = mg.group_norm_silu_forward(x, gamma, beta, N, C, HxW, G, 1e-5, scale)
    outs = mg.group_norm_silu_backward(dz, x, mean, rstd, gamma, beta, N, C, HxW, G, swish_scale=scale)
    expected = mg.reference.silu_backward(*[t.asnumpy().astype(np.float64) for t in (dz, x, mean, rstd, gamma, beta)],
                                          G, swish_scale=scale)
    return outs, expected


@pytest.mark.parametrize("scale", [MAX_SWISH_SCALE, -MAX_SWISH_SCALE, 1e20])
def test_swish_scale_up_to_the_bound_gives_finite_right_gradients(scale):
    outs, expected = _silu_backward_at(scale)
    for ours, ref in zip(outs, expected):
        assert np.isfinite(ours.asnumpy()).all()
        np.testing.assert_allclose(ours.asnumpy(), ref, rtol=1e-5, atol=1e-5 * np.abs(ref).max())


@pytest.mark.parametrize("scale", [1e31, -1e36, 1e38])
def test_swish_scale_beyond_the_bound_is_refused(scale):
    """At 1e36 dx was 15 % off, at 1e38 NaN/inf, with no error."""
    with pytest.raises(ParamInvalidError, match="swish_scale"):
        _silu_backward_at(scale)
    with pytest.raises(ParamInvalidError, match="swish_scale"):
        mg.group_norm_silu_forward(_x(), None, None, 2, 4, 3, 2, 1e-5, scale)


@pytest.mark.parametrize("value", [[1.0, 2.0], 3.0, None, "x", np.ones((2, 4, 3), np.float32)],
                         ids=["list", "number", "None", "str", "numpy"])
@pytest.mark.parametrize("fn", [mg.group_norm, mg.group_norm_silu], ids=["group_norm", "group_norm_silu"])
def test_a_non_tensor_input_raises_param_type_error(fn, value):
    with pytest.raises(ParamTypeError, match="input must be a mindspore.Tensor"):
        fn(value, 2)
