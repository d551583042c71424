"""ms_groupnorm as a drop-in for mindspore.nn.GroupNorm / ops.group_norm:
low-precision accuracy against float64 (and next to torch's, when installed),
STRICT syntax with dynamic shape and rank, ops.group_norm's keywords, eps values, float64,
error types, in both modes (the ``mode`` fixture of conftest.py)."""
import os
import sys

import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor, nn, ops

import ms_groupnorm
from cases import TOLERANCE
from ms_groupnorm import ParamInvalidError, group_norm, group_norm_backward, group_norm_forward, reference

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
import accuracy_low_precision as accuracy  # noqa: E402  (the measurement docs/accuracy.md quotes)

sys.path.pop(0)

LOW = {"float16": ms.float16, "bfloat16": ms.bfloat16}


def f64(t):
    return t.astype(ms.float32).asnumpy().astype(np.float64) if t.dtype == ms.bfloat16 else \
        t.asnumpy().astype(np.float64)


# ---------------------------------------------------------------- 1. low-precision accuracy
ULP = {ms.float16: 2.0 ** -10, ms.bfloat16: 2.0 ** -7}  # spacing of the values in [1, 2)


@pytest.mark.parametrize("mean", [0.0, 100.0], ids=["mean0", "mean100"])
@pytest.mark.parametrize("dtype_name", list(LOW))
def test_low_precision_parameters_within_one_rounding_of_float64(mode, dtype_name, mean):
    """GroupNorm(..., dtype=float16/bfloat16): y is the correctly rounded float64 value (the
    forward normalises with float32 statistics, never rounded ones), and every output y, dx,
    dgamma, dbeta is within half an ulp of its float64 value plus a float32-accumulation
    margin of 1e-3 ulp of the largest value: a bound from the float64 reference that holds
    on every MindSpore version (MindSpore's own nn.GroupNorm differs between versions).
    Measured (2.10, both modes): at most 0.50 ulp."""
    dtype, shape, groups = LOW[dtype_name], (2, 16, 8, 8), 4
    case = accuracy.make_case(shape, groups, dtype, mean)
    want = accuracy.expected(case, groups)
    got = accuracy.run_mindspore_layer(ms_groupnorm.GroupNorm, case, groups, dtype)
    ours = accuracy.errors(got, want, dtype)
    # One rounding of a float32 result: the float32 statistics' own error (3.8e-6 for the
    # mean at 100) can move an output across a rounding boundary, rarely (0 % measured here).
    assert ours["y not correctly rounded"] <= 0.01, ours
    for name, g, w in zip(accuracy.NAMES, got, want):
        bound = ULP[dtype] * (0.5 * np.abs(w) + 1e-3 * np.abs(w).max())
        excess = np.abs(g - w) - bound
        assert np.all(excess <= 0), f"{name}: error exceeds half an ulp by up to {excess.max():.3g}"


@pytest.mark.parametrize("mean", [0.0, 100.0], ids=["mean0", "mean100"])
@pytest.mark.parametrize("dtype_name", list(LOW))
def test_low_precision_parameters_as_accurate_as_torch(dtype_name, mean):
    pytest.importorskip("torch", reason="torch is not installed: the comparison with torch needs it")
    dtype, shape, groups = LOW[dtype_name], (2, 16, 8, 8), 4
    case = accuracy.make_case(shape, groups, dtype, mean)
    want = accuracy.expected(case, groups)
    ours = accuracy.errors(accuracy.run_mindspore_layer(ms_groupnorm.GroupNorm, case, groups, dtype), want, dtype)
    theirs = accuracy.errors(accuracy.run_torch(case, groups, dtype_name), want, dtype)
    for name in accuracy.NAMES:
        assert ours[name] <= theirs[name] * 1.0001, f"{name}: ours {ours[name]:.3g} vs torch {theirs[name]:.3g}"


def _bfloat16_zeros_on_cpu():
    """Whether MindSpore's PyNative CPU backend has a bfloat16 Zeros kernel (2.7.1 lacks it)."""
    try:
        ops.zeros((1,), ms.bfloat16).astype(ms.float32).asnumpy()
    except TypeError:
        return False
    return True


@pytest.mark.parametrize("dtype", [ms.float16, ms.bfloat16], ids=["fp16", "bf16"])
def test_group_norm_with_low_precision_weight_uses_float32_statistics_in_backward(mode, dtype):
    """group_norm with float16/bfloat16 weight and no weight: the gradients equal the float64
    backward evaluated at the float32 statistics of the forward (not at rounded ones)."""
    if mode == "pynative" and dtype == ms.bfloat16 and not _bfloat16_zeros_on_cpu():
        pytest.skip("this MindSpore has no bfloat16 Zeros CPU kernel, which ms.grad uses here in PYNATIVE_MODE "
                    "(MindSpore 2.7.1)")
    rng = np.random.default_rng(5)
    shape, G = (2, 8, 6), 2
    x = accuracy.rounded(rng.standard_normal(shape) * 0.5 + 100, dtype)
    w = accuracy.rounded(rng.uniform(0.5, 1.5, 8), dtype)
    dy = accuracy.rounded(rng.standard_normal(shape), dtype)
    for weight in (w, None):
        def loss(inp, wt):
            y = group_norm(inp, G, wt) if weight is not None else group_norm(inp, G)
            return (y.astype(ms.float32) * Tensor(dy.astype(np.float32))).sum()  # dy: exact dtype values

        x_t, w_t = Tensor(x.astype(np.float32)).astype(dtype), Tensor(w.astype(np.float32)).astype(dtype)
        dx, dw = ms.grad(loss, grad_position=(0, 1))(x_t, w_t)
        _, mean, rstd = reference.forward(x, weight, None, G)
        mean32, rstd32 = mean.astype(np.float32).astype(np.float64), rstd.astype(np.float32).astype(np.float64)
        want_dx, want_dw, _ = reference.backward(dy, x, mean32, rstd32, weight, G)
        assert dx.dtype == dtype
        scale = np.abs(want_dx).max()
        # float32 statistics: dx within one rounding of the output (bf16 2^-8, fp16 2^-11 relative)
        assert np.abs(f64(dx) - want_dx).max() <= scale * (2 ** -7 if dtype == ms.bfloat16 else 2 ** -10)
        if weight is not None:
            assert dw.dtype == dtype
            assert np.abs(f64(dw) - want_dw).max() <= np.abs(want_dw).max() * TOLERANCE[dtype]


def test_kernel_forward_normalises_with_unrounded_statistics():
    """group_norm_forward keeps the aclnn contract (mean/rstd in gamma's dtype, rounded),
    but y comes from the float32 statistics: correctly rounded even at mean 100."""
    rng = np.random.default_rng(6)
    shape, G = (2, 8, 5, 5), 4
    x = accuracy.rounded(rng.standard_normal(shape) + 100, ms.float16)
    gamma = accuracy.rounded(rng.uniform(0.5, 1.5, 8), ms.float16)
    beta = accuracy.rounded(rng.uniform(-1, 1, 8), ms.float16)
    y, mean, rstd = group_norm_forward(Tensor(x, ms.float16), Tensor(gamma, ms.float16), Tensor(beta, ms.float16),
                                       2, 8, 25, G)
    want_y, want_mean, want_rstd = reference.forward(x, gamma, beta, G)
    assert mean.dtype == rstd.dtype == ms.float16
    np.testing.assert_array_equal(f64(mean), accuracy.rounded(want_mean.astype(np.float32), ms.float16))
    np.testing.assert_array_equal(f64(rstd), accuracy.rounded(want_rstd.astype(np.float32), ms.float16))
    # float32 statistics are not exact either: at mean 100 the float32 mean is off by up to
    # 3.8e-6 (half an ulp), an absolute error of 3.8e-6 * rstd * gamma in y, which moves y
    # across an fp16 rounding boundary for ~1 % of the outputs (98 % were off when y came
    # from the fp16-rounded statistics): within one ulp plus that.
    y = f64(y)
    assert np.mean(y != accuracy.rounded(want_y, ms.float16)) <= 0.02
    one_ulp = np.spacing(np.abs(want_y).astype(np.float16)).astype(np.float64)
    float32_mean_error = 2.0 ** -24 * 128 * want_rstd.max() * gamma.max() * 2  # with a factor 2 of margin
    assert np.all(np.abs(y - want_y) <= one_ulp + float32_mean_error)


# ---------------------------------------------------------------- 2, 3. STRICT, dynamic shape and rank
class _LayerLoss(nn.Cell):
    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def construct(self, x, w):
        return (self.layer(x) * w).sum()


class _FunctionalLoss(nn.Cell):
    def __init__(self, gamma, beta):
        super().__init__()
        self.gamma, self.beta = gamma, beta

    def construct(self, x, w):
        return (group_norm(x, 3, self.gamma, self.beta, 1e-5) * w).sum()


DYNAMIC = {"static": None, "dynamic-shape": [None, 6, None], "dynamic-rank": None}


@pytest.mark.parametrize("inputs", list(DYNAMIC))
@pytest.mark.parametrize("level", ["LAX", "STRICT"])
@pytest.mark.parametrize("form", ["layer", "group_norm"])
def test_graph_syntax_levels_with_dynamic_shape_and_rank(level, inputs, form):
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        rng = np.random.default_rng(7)
        gamma = rng.uniform(0.5, 1.5, 6).astype(np.float32)
        beta = rng.uniform(-0.5, 0.5, 6).astype(np.float32)
        if form == "layer":
            layer = ms_groupnorm.GroupNorm(3, 6)
            layer.gamma.set_data(Tensor(gamma))
            layer.beta.set_data(Tensor(beta))
            net = _LayerLoss(layer)
        else:
            net = _FunctionalLoss(ms.Parameter(Tensor(gamma), name="g"), ms.Parameter(Tensor(beta), name="b"))
        net.set_jit_config(ms.JitConfig(jit_syntax_level=level))
        if inputs == "dynamic-shape":
            net.set_inputs(*[Tensor(shape=DYNAMIC[inputs], dtype=ms.float32)] * 2)
        elif inputs == "dynamic-rank":
            net.set_inputs(*[Tensor(shape=None, dtype=ms.float32)] * 2)
        grad_fn = ms.value_and_grad(net, grad_position=0, weights=net.trainable_params())
        shapes = [(2, 6, 5), (3, 6, 4, 2)] if inputs == "dynamic-rank" else [(2, 6, 5), (4, 6, 3)]
        if inputs == "static":
            shapes = shapes[:1]
        for shape in shapes:
            x = rng.standard_normal(shape).astype(np.float32)
            w = rng.standard_normal(shape).astype(np.float32)
            loss, (dx, (dgamma, dbeta)) = grad_fn(Tensor(x), Tensor(w))
            y, mean, rstd = reference.forward(x, gamma, beta, 3)
            want_dx, want_dgamma, want_dbeta = reference.backward(w, x, mean, rstd, gamma, 3)
            np.testing.assert_allclose(loss.asnumpy(), (y * w).sum(), rtol=1e-5, atol=1e-4)
            for got, want, name in ((dx, want_dx, "dx"), (dgamma, want_dgamma, "dgamma"), (dbeta, want_dbeta, "dbeta")):
                np.testing.assert_allclose(got.asnumpy(), want, rtol=1e-4, atol=1e-5, err_msg=f"{name} {shape}")
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


@pytest.mark.parametrize("level", ["LAX", "STRICT"])
def test_strict_graph_still_rejects_a_wrong_channel_count(level):
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        layer = ms_groupnorm.GroupNorm(2, 6)
        layer.set_jit_config(ms.JitConfig(jit_syntax_level=level))
        layer.set_inputs(Tensor(shape=[None, 4, None], dtype=ms.float32))
        with pytest.raises(ValueError, match="num_channels"):
            layer(Tensor(np.zeros((2, 4, 3), np.float32)))
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


# ---------------------------------------------------------------- 4. keywords
class _Keywords(nn.Cell):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def construct(self, x, w, b):
        return self.fn(input=x, num_groups=2, weight=w, bias=b, eps=1e-3)


def test_keywords_of_ops_group_norm(mode):
    rng = np.random.default_rng(8)
    x = Tensor(rng.standard_normal((2, 4, 3, 3)).astype(np.float32))
    w = Tensor(rng.uniform(0.5, 1.5, 4).astype(np.float32))
    b = Tensor(rng.uniform(-1, 1, 4).astype(np.float32))
    got = _Keywords(group_norm)(x, w, b)
    want = _Keywords(ops.group_norm)(x, w, b)
    np.testing.assert_allclose(got.asnumpy(), want.asnumpy(), rtol=1e-5, atol=1e-5)
    assert ms_groupnorm.group_norm.__code__.co_varnames[:5] == ("input", "num_groups", "weight", "bias", "eps")
    assert ms_groupnorm.group_norm.__defaults__ == (None, None, 1e-05)
    from mindspore import mint  # mint.nn.functional.group_norm has the same keywords
    np.testing.assert_allclose(mint.nn.functional.group_norm(input=x, num_groups=2, weight=w, bias=b,
                                                             eps=1e-3).asnumpy(), got.asnumpy(), rtol=1e-5,
                               atol=1e-5)


# ---------------------------------------------------------------- 5. eps
@pytest.mark.parametrize("eps", [0.0, -1e-3, -5.0, 0.5])
def test_eps_values_as_mindspore(mode, eps):
    """Any float eps, as nn.GroupNorm / ops.group_norm: 0, negative (NaN where a group's
    variance + eps < 0, finite elsewhere), large; same values and same NaNs."""
    rng = np.random.default_rng(9)
    x = (rng.standard_normal((3, 4, 2, 2)) * np.array([0.1, 1, 3, 10]).reshape(1, 4, 1, 1)).astype(np.float32)
    x_t = Tensor(x)
    pairs = [(ms_groupnorm.GroupNorm(4, 4, eps=eps)(x_t), nn.GroupNorm(4, 4, eps=eps)(x_t)),
             (group_norm(x_t, 4, eps=eps), ops.group_norm(x_t, 4, eps=eps))]
    for got, want in pairs:
        got, want = got.asnumpy(), want.asnumpy()
        np.testing.assert_array_equal(np.isnan(got), np.isnan(want))
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    assert np.isnan(pairs[0][0].asnumpy()).any() == (eps == -5.0)


def test_eps_type_errors_are_synchronous(mode):
    x = Tensor(np.ones((2, 4, 3), np.float32))
    with pytest.raises(TypeError):
        ms_groupnorm.GroupNorm(2, 4, eps=1)  # nn.GroupNorm: eps must be a float
    with pytest.raises(TypeError, match="eps"):
        group_norm(x, 2, eps=True)
    np.testing.assert_allclose(group_norm(x, 2, eps=1).asnumpy(), group_norm(x, 2, eps=1.0).asnumpy())
    # The aclnn contract keeps its rule, as documented.
    with pytest.raises(ParamInvalidError, match="eps=0.0 must be a number > 0"):
        group_norm_forward(x, None, None, 2, 4, 3, 2, 0.0)


# ---------------------------------------------------------------- 6. float64
def test_float64_layer_and_group_norm_in_double(mode):
    rng = np.random.default_rng(10)
    shape, G = (3, 6, 4, 5), 3
    x = rng.standard_normal(shape) * 3 + 50
    w = rng.standard_normal(shape)
    gamma, beta = rng.uniform(0.5, 1.5, 6), rng.uniform(-1, 1, 6)
    layer, builtin = ms_groupnorm.GroupNorm(G, 6, dtype=ms.float64), nn.GroupNorm(G, 6, dtype=ms.float64)
    for cell in (layer, builtin):
        cell.gamma.set_data(Tensor(gamma))
        cell.beta.set_data(Tensor(beta))
    y_ref, mean, rstd = reference.forward(x, gamma, beta, G)
    dx_ref, dgamma_ref, dbeta_ref = reference.backward(w, x, mean, rstd, gamma, G)
    results = {}
    for name, cell in (("ours", layer), ("nn", builtin)):
        y = cell(Tensor(x))
        dx, (dgamma, dbeta) = ms.grad(_LayerLoss(cell), grad_position=0, weights=[cell.gamma, cell.beta])(
            Tensor(x), Tensor(w))
        assert y.dtype == dx.dtype == dgamma.dtype == ms.float64
        results[name] = [t.asnumpy() for t in (y, dx, dgamma, dbeta)]
    # eps travels as a float32 op attribute: 1e-5 is off by 2.5e-13, far below these bounds.
    for got, want, name in zip(results["ours"], (y_ref, dx_ref, dgamma_ref, dbeta_ref), NAMES64):
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-10, err_msg=name)
        theirs_err = np.abs(results["nn"][NAMES64.index(name)] - want).max()
        assert np.abs(got - want).max() <= max(theirs_err, 1e-12) * 10, name
    y_fn = group_norm(Tensor(x), G, Tensor(gamma), Tensor(beta))
    np.testing.assert_allclose(y_fn.asnumpy(), y_ref, rtol=1e-10, atol=1e-10)


NAMES64 = ("y", "dx", "dgamma", "dbeta")


def test_float64_finite_difference_gradient_check(mode):
    """What float64 support is for: a central-difference check of dx, tight."""
    rng = np.random.default_rng(11)
    x = rng.standard_normal((2, 4, 3))
    w = rng.standard_normal((2, 4, 3))
    layer = ms_groupnorm.GroupNorm(2, 4, dtype=ms.float64)
    layer.gamma.set_data(Tensor(rng.uniform(0.5, 1.5, 4)))
    loss = _LayerLoss(layer)
    dx = ms.grad(loss, grad_position=0)(Tensor(x), Tensor(w)).asnumpy()
    h = 1e-6
    for index in [(0, 0, 0), (1, 3, 2), (0, 2, 1)]:
        plus, minus = x.copy(), x.copy()
        plus[index] += h
        minus[index] -= h
        numeric = (loss(Tensor(plus), Tensor(w)).asnumpy() - loss(Tensor(minus), Tensor(w)).asnumpy()) / (2 * h)
        assert abs(numeric - dx[index]) <= 1e-7 * max(1.0, abs(dx[index])), index


def test_contract_functions_still_reject_float64(mode):
    x = Tensor(np.ones((2, 4, 3)))
    with pytest.raises(ParamInvalidError, match="float32, float16 or bfloat16") as info:
        group_norm_forward(x, None, None, 2, 4, 3, 2)
    assert info.value.code == 161002
    with pytest.raises(ParamInvalidError) as info:
        group_norm_backward(x, x, Tensor(np.ones((2, 2))), Tensor(np.ones((2, 2))), None, 2, 4, 3, 2)
    assert info.value.code == 161002


def test_float64_is_refused_clearly_on_the_twin_backend(monkeypatch):
    monkeypatch.setenv("MS_GROUPNORM_BACKEND", "ascendc_twin")
    with pytest.raises(TypeError, match="float64 input runs on the CPU kernels only"):
        ms_groupnorm.GroupNorm(2, 4, dtype=ms.float64)(Tensor(np.ones((2, 4, 3))))
    with pytest.raises(TypeError, match="only the CPU kernels support"):
        group_norm(Tensor(np.ones((2, 4, 3))), 2)


# ---------------------------------------------------------------- error types as MindSpore's
@pytest.mark.parametrize("call,error", [
    (lambda: group_norm(Tensor(np.ones((2, 6, 3), np.int32)), 3), TypeError),
    (lambda: group_norm(Tensor(np.ones((2, 6, 3), np.float32)), 4), ValueError),
    (lambda: group_norm(Tensor(np.ones((2, 6, 3), np.float32)), 3.0), TypeError),
    (lambda: group_norm(Tensor(np.ones((2, 6, 3), np.float32)), 3, Tensor(np.ones(5, np.float32))), ValueError),
    (lambda: group_norm(Tensor(np.ones((2, 6, 3), np.float32)), 3, Tensor(np.ones(6, np.float16))), TypeError),
    (lambda: ms_groupnorm.GroupNorm(3, 6)(Tensor(np.ones((2, 6, 3), np.int32))), TypeError),
], ids=["int input", "C % G", "float num_groups", "weight numel", "weight dtype", "layer int input"])
def test_misuse_raises_mindspores_exception_type(mode, call, error):
    # ops.group_norm / nn.GroupNorm raise these types for the same mistakes (TypeError for
    # dtypes and argument types, ValueError for values); ours are also ParamInvalidError.
    with pytest.raises(error):
        call()
