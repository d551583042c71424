"""Seeded fuzzing of hostile input through the contract functions and group_norm, in both
modes: extreme magnitudes, hostile scalars, strided views, empty float16/bfloat16 tensors.

Every case either matches the float64 reference or raises our typed error for the rule it
breaks (``expected_error`` states the rule independently of the checks' code). The default
run takes a fixed-seed sample of each category (a few seconds each); ``--exhaustive``
runs many more. Magnitudes above 1e19 overflow the sum of squares in float32 until the
kernels scale it: those cases are written but expected to fail (strict), so the day they
pass the mark must go.
"""
import math

import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor

import ms_groupnorm as g
from cases import assert_close, rounded, tensor, to_numpy
from ms_groupnorm import ParamInvalidError, ParamTypeError, reference
from ms_groupnorm.ops.checks import MAX_SWISH_SCALE
from test_hostile_input import call

F32, F16, BF16 = ms.float32, ms.float16, ms.bfloat16
# Cases per category: the default run's sample (a graph compiles per call, ~0.5 s each)
# and the exhaustive tier's.
SAMPLE = {"pynative": 12, "graph": 2}
EXHAUSTIVE = 120


@pytest.fixture
def fuzz_mode(request):
    ms.set_context(mode=ms.GRAPH_MODE if request.param == "graph" else ms.PYNATIVE_MODE)
    yield request.param
    ms.set_context(mode=ms.PYNATIVE_MODE)


def _rng(category, mode, exhaustive):
    """A fixed seed per category, mode and tier."""
    return np.random.default_rng([sum(map(ord, category)), mode == "graph", exhaustive])


# ---- extreme magnitudes: the spread |x - mean| at scales whose variance float32 holds
# (1e-15 to 1e17: var 1e-30 to 1e34, summed over at most 2*16 elements), means up to 100x
# the spread; float16 within its range. Below 1e-19 the variance leaves float32's normal
# range while eps (>= 1.2e-38, see ops.checks.as_float32_number) dominates it anyway.
FINITE_SCALES = {F32: [1e-15, 1e-6, 1e6, 1e12, 1e17], BF16: [1e-15, 1e-6, 1e6, 1e12, 1e17],
                 F16: [1e-2, 1e-1, 10.0, 100.0]}
HUGE_SCALES = {F32: [1e20, 1e25, 1e30], BF16: [1e20, 1e25, 1e30]}  # beyond ~1.8e19 the sum of squares overflows


def _magnitude_case(rng, scales):
    dtype = list(scales)[int(rng.integers(len(scales)))]
    G = int(rng.integers(1, 4))
    C = G * int(rng.integers(1, 3))
    # >= 8 elements per group: dx of a two-element group is a cancellation far below its
    # terms, which float32 cannot resolve at any magnitude
    shape = (int(rng.integers(1, 3)), C, int(rng.integers(8, 17)))
    scale = float(rng.choice(scales[dtype]))
    offset = float(rng.choice([0.0, 1.0, 100.0])) * scale  # a mean far from 0 relative to the spread
    return dict(dtype=dtype, G=G, shape=shape, scale=scale, offset=offset, fused=bool(rng.random() < 0.3))


def _check_magnitude_case(mode, rng, case):
    dtype, G, shape = case["dtype"], case["G"], case["shape"]
    x = rounded(rng.standard_normal(shape) * case["scale"] + case["offset"], dtype)
    N, C, HxW = shape[0], shape[1], shape[2]
    stat = F32 if dtype != F32 and rng.random() < 0.5 else dtype
    gamma = rounded(rng.uniform(0.5, 1.5, C), stat)
    beta = rounded(rng.uniform(-0.5, 0.5, C), stat)
    eps = max(1e-5 * min(case["scale"] ** 2, 1.0), 1e-37)  # below the variance: it must not decide the answer
    fn = g.group_norm_silu_forward if case["fused"] else g.group_norm_forward
    out, mean, rstd = call(mode, fn, (tensor(x, dtype),), tensor(gamma, stat), tensor(beta, stat), N, C, HxW, G,
                           eps)
    ref = (reference.silu_forward if case["fused"] else reference.forward)(x, gamma, beta, G, eps)
    assert_close(out, ref[0], dtype, f"out of {case}")
    assert_close(mean, ref[1], stat, f"mean of {case}")
    assert_close(rstd, ref[2], stat, f"rstd of {case}")
    dy = rounded(rng.standard_normal(shape), dtype)
    mean_np, rstd_np = to_numpy(mean), to_numpy(rstd)
    dx, dgamma, dbeta = call(mode, g.group_norm_backward, (tensor(dy, dtype), tensor(x, dtype), mean, rstd),
                             tensor(gamma, stat), N, C, HxW, G)
    want = reference.backward(dy, x, mean_np, rstd_np, gamma, G)
    assert_close(dx, want[0], dtype, f"dx of {case}")
    assert_close(dgamma, want[1], stat, f"dgamma of {case}")
    assert_close(dbeta, want[2], stat, f"dbeta of {case}")


def _run_magnitudes(mode, scales, count, exhaustive):
    rng = _rng("magnitudes" + str(scales[F32][0]), mode, exhaustive)
    for _ in range(count):
        _check_magnitude_case(mode, rng, _magnitude_case(rng, scales))


# Beyond ~1.8e19 a float32 sum of squares overflows: the kernels take their wide-range (double) path there.
MAGNITUDES = {"finite": FINITE_SCALES, "beyond_1e19": HUGE_SCALES}


@pytest.mark.parametrize("magnitudes", list(MAGNITUDES))
@pytest.mark.parametrize("fuzz_mode", ["pynative", "graph"], indirect=True)
def test_extreme_magnitudes(fuzz_mode, magnitudes):
    _run_magnitudes(fuzz_mode, MAGNITUDES[magnitudes], SAMPLE[fuzz_mode], False)


@pytest.mark.exhaustive
@pytest.mark.parametrize("magnitudes", list(MAGNITUDES))
@pytest.mark.parametrize("fuzz_mode", ["pynative", "graph"], indirect=True)
def test_extreme_magnitudes_exhaustive(fuzz_mode, magnitudes):
    _run_magnitudes(fuzz_mode, MAGNITUDES[magnitudes], EXHAUSTIVE, True)


# ---- hostile scalars: one argument at a time replaced by a value from these pools; the
# expected outcome is stated here from the rule of docs/contract.md ("Scalar arguments").
INT64 = (-2 ** 63, 2 ** 63 - 1)
F32_NORMAL, F32_MAX = float(np.finfo(np.float32).tiny), float(np.finfo(np.float32).max)


def int_pool(value):
    """Ways to pass the size ``value``: numpy integers of it (accepted) and hostile ones."""
    return [value, np.int64(value), np.int32(value), np.uint8(value), np.int16(value),  # accepted
            True, np.bool_(True), float(value), np.float32(value), str(value), [value], np.array(value),
            (value,), None, 2 ** 63, -2 ** 63 - 1, 2 ** 64, 10 ** 30]


FLOAT_POOL = [1e-5, np.float32(1e-3), np.float64(1e-5), np.float16(0.01), 1, np.int32(2), 0.25,  # accepted
              True, np.bool_(False), [1e-5], np.array([1e-5]), "1e-5", None, 10 ** 400, 1e300, 1e39, -1e39,
              3.5e38, 1e-40, 1e-320, float("nan"), float("inf")]
MASK_POOL = [(True, False, True), [True, True, False], (np.bool_(True), np.bool_(False), np.bool_(True)),
             np.array([True, True, True]), (1, 1, 1), (True, True), "TTT", None, [True, None, True]]


REFUSED_BY_MINDSPORE = object()  # a graph constant MindSpore cannot convert (docs/contract.md)


def _graph_sees(value):
    """What a graph constant becomes before any of our code sees it: numpy scalars Python
    ones, floats rounded to float32 (ints stay ints); an int beyond int64 MindSpore refuses."""
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, int) and not INT64[0] <= value <= INT64[1]:
        return REFUSED_BY_MINDSPORE
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, (float, np.floating)):
        with np.errstate(over="ignore", under="ignore"):
            return float(np.float32(value))
    return value


def expected_int(value, wanted):
    """None (accepted) or the error class for a size argument whose right value is ``wanted``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        return ParamTypeError
    if not INT64[0] <= int(value) <= INT64[1] or int(value) != wanted:
        return ParamInvalidError
    return None


def expected_float(value, positive):
    """None or the error class for eps (``positive``: the contracts' eps > 0) or swish_scale."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        return ParamTypeError
    try:
        number = float(value)
    except OverflowError:
        return ParamInvalidError
    with np.errstate(over="ignore", under="ignore"):
        held = abs(float(np.float32(number)))
    if math.isnan(number) or (number != 0 and not F32_NORMAL <= held <= F32_MAX):
        return ParamInvalidError
    if positive and not number > 0:
        return ParamInvalidError
    return None


def expected_mask(value):
    if (not isinstance(value, (tuple, list)) or len(value) != 3
            or not all(isinstance(bit, (bool, np.bool_)) for bit in value)):
        return ParamInvalidError
    return None


N, C, HXW, G = 2, 4, 3, 2
ENTRIES = {  # entry point -> its scalar arguments, with the rule each follows
    "forward": ("N", "C", "HxW", "group", "eps"),
    "silu_forward": ("N", "C", "HxW", "group", "eps", "swish_scale"),
    "backward": ("N", "C", "HxW", "group", "output_mask"),
    "silu_backward": ("N", "C", "HxW", "group", "output_mask", "swish_scale"),
    "group_norm": ("num_groups", "eps"),
}
RIGHT = dict(N=N, C=C, HxW=HXW, group=G, num_groups=G, eps=1e-5, swish_scale=1.0, output_mask=(True, True, True))


def _scalar_case(rng):
    entry = list(ENTRIES)[int(rng.integers(len(ENTRIES)))]
    name = ENTRIES[entry][int(rng.integers(len(ENTRIES[entry])))]
    if name == "output_mask":
        pool = MASK_POOL
    elif name in ("eps", "swish_scale"):
        pool = FLOAT_POOL
    else:
        pool = int_pool(RIGHT[name])
    return entry, name, pool[int(rng.integers(len(pool)))]


def _expected(mode, entry, name, value):
    """(value as the checks will see it, None or the expected error class)."""
    if mode == "graph":
        value = _graph_sees(value)
        if value is REFUSED_BY_MINDSPORE:
            return value, RuntimeError
    if name == "output_mask":
        return value, expected_mask(value)
    if name in ("eps", "swish_scale"):
        error = expected_float(value, positive=name == "eps" and entry != "group_norm")
        if error is None and name == "swish_scale" and abs(float(value)) > MAX_SWISH_SCALE:
            error = ParamInvalidError  # the fused kernels' accurate range
        return value, error
    return value, expected_int(value, RIGHT[name])


def _scalar_call(mode, entry, scalars, x, dy, mean, rstd):
    s = scalars
    if entry == "group_norm":
        return call(mode, g.group_norm, (x,), s["num_groups"], None, None, s["eps"])
    sizes = (s["N"], s["C"], s["HxW"], s["group"])
    if entry == "forward":
        return call(mode, g.group_norm_forward, (x,), None, None, *sizes, s["eps"])
    if entry == "silu_forward":
        return call(mode, g.group_norm_silu_forward, (x,), None, None, *sizes, s["eps"], s["swish_scale"])
    if entry == "backward":
        return call(mode, g.group_norm_backward, (dy, x, mean, rstd), None, *sizes, s["output_mask"])
    return call(mode, g.group_norm_silu_backward, (dy, x, mean, rstd), None, None, *sizes, s["output_mask"],
                s["swish_scale"])


def _scalar_reference(entry, s, x, dy, mean, rstd):
    """float64 outputs of the valid call, None where output_mask drops one."""
    eps, scale = float(s["eps"]), float(s["swish_scale"])
    if entry in ("group_norm", "forward"):
        return reference.forward(x, None, None, G, eps)[:1 if entry == "group_norm" else 3]
    if entry == "silu_forward":
        return reference.silu_forward(x, None, None, G, eps, scale)
    if entry == "backward":
        grads = reference.backward(dy, x, mean, rstd, None, G)
    else:
        grads = reference.silu_backward(dy, x, mean, rstd, None, None, G, scale)
    return tuple(grad if bit else None for grad, bit in zip(grads, s["output_mask"]))


def _check_scalar_case(mode, rng, entry, name, value):
    x_np = rounded(rng.standard_normal((N, C, HXW)), F32)
    dy_np = rounded(rng.standard_normal((N, C, HXW)), F32)
    _, mean_np, rstd_np = reference.forward(x_np, None, None, G)
    mean_np, rstd_np = rounded(mean_np, F32), rounded(rstd_np, F32)
    seen, error = _expected(mode, entry, name, value)
    scalars = dict(RIGHT, **{name: value})
    args = (tensor(x_np, F32), tensor(dy_np, F32), tensor(mean_np, F32), tensor(rstd_np, F32))
    what = f"{entry}({name}={value!r}) in {mode}"
    if error is not None:
        with pytest.raises(error) as info:
            _scalar_call(mode, entry, scalars, *args)
        if error is RuntimeError:
            assert "Unable to cast Python instance" in str(info.value), what
        else:
            assert f"{name}=" in str(info.value) or name in str(info.value), f"{what}: {info.value}"
        return
    got = _scalar_call(mode, entry, scalars, *args)
    got = got if isinstance(got, tuple) else (got,)
    want = _scalar_reference(entry, dict(RIGHT, **{name: seen}), x_np, dy_np, mean_np, rstd_np)
    for out, ref, index in zip(got, want, range(3)):
        if ref is None:
            assert out is None, what
        else:
            assert_close(out, ref, F32, f"output {index} of {what}")


def _run_scalars(mode, count, exhaustive):
    rng = _rng("scalars", mode, exhaustive)
    for _ in range(count):
        _check_scalar_case(mode, rng, *_scalar_case(rng))


@pytest.mark.parametrize("fuzz_mode", ["pynative", "graph"], indirect=True)
def test_hostile_scalars(fuzz_mode):
    _run_scalars(fuzz_mode, 3 * SAMPLE[fuzz_mode], False)


@pytest.mark.exhaustive
@pytest.mark.parametrize("fuzz_mode", ["pynative", "graph"], indirect=True)
def test_hostile_scalars_exhaustive(fuzz_mode):
    _run_scalars(fuzz_mode, 2 * EXHAUSTIVE, True)


# ---- huge group with C = 0: only group = 1 is valid; nothing is left pending afterwards
ZERO_CHANNEL_GROUPS = [1, 2, 3, 2 ** 31, 2 ** 40, 2 ** 62, 2 ** 63 - 1, 2 ** 64]


def _check_zero_channel_case(mode, rng):
    shape = (int(rng.integers(0, 4)), 0, int(rng.integers(0, 5)))
    group = ZERO_CHANNEL_GROUPS[int(rng.integers(len(ZERO_CHANNEL_GROUPS)))]
    use_group_norm = rng.random() < 0.3
    x = Tensor(np.zeros(shape, np.float32))
    args = (group,) if use_group_norm else (None, None, shape[0], 0, shape[2], group)
    fn = g.group_norm if use_group_norm else g.group_norm_forward
    if mode == "graph" and group > INT64[1]:
        error = RuntimeError  # MindSpore cannot hold the constant (docs/contract.md)
    else:
        error = None if group == 1 else ParamInvalidError
    if error is not None:
        with pytest.raises(error):
            call(mode, fn, (x,), *args)
    else:
        out = call(mode, fn, (x,), *args)
        out = out if isinstance(out, tuple) else (out,)
        assert out[0].shape == shape
    # a pending MindSpore exception would break the next call
    assert_close(g.group_norm(Tensor(np.ones((1, 2, 2), np.float32)), 1), np.zeros((1, 2, 2)), F32, "next call")


@pytest.mark.parametrize("fuzz_mode", ["pynative", "graph"], indirect=True)
def test_huge_group_without_channels(fuzz_mode):
    rng = _rng("zero channels", fuzz_mode, False)
    for _ in range(SAMPLE[fuzz_mode]):
        _check_zero_channel_case(fuzz_mode, rng)


# ---- strided views in GRAPH_MODE: the contract functions on non-contiguous inputs give
# the float64 reference's answer and bitwise the results of contiguous copies


def _view(rng, base):
    kind = int(rng.integers(3))
    if kind == 0:
        return base[::2]
    if kind == 1:
        return base[:, :, ::2] if base.shape[2] > 1 else base[::2]
    return base.transpose(0, 1, 3, 2) if base.ndim == 4 else base[:, :, 1:]


def _check_strided_case(rng):
    G = int(rng.integers(1, 3))
    C = G * int(rng.integers(1, 3))
    # two spatial dims of 4-6: every group keeps >= 8 elements after the view (dx of a
    # two-element group is a cancellation ~1e-4 of its terms, below float32's resolution)
    spatial = [int(rng.integers(4, 7)) for _ in range(2)]
    base_shape = (2 * int(rng.integers(1, 3)), C, *spatial)
    x = _view(rng, Tensor(rng.standard_normal(base_shape).astype(np.float32)))
    dy = _view(np.random.default_rng(int(rng.integers(2 ** 31))), Tensor(rng.standard_normal(base_shape)
                                                                          .astype(np.float32)))
    if dy.shape != x.shape:
        dy = Tensor(rng.standard_normal(x.shape).astype(np.float32))
    Nv, Cv, HxW = x.shape[0], x.shape[1], math.prod(x.shape[2:])
    fused = bool(rng.random() < 0.5)
    forward = g.group_norm_silu_forward if fused else g.group_norm_forward
    got = call("graph", forward, (x,), None, None, Nv, Cv, HxW, G)
    copies = call("graph", forward, (x.contiguous(),), None, None, Nv, Cv, HxW, G)
    x_np = x.asnumpy().astype(np.float64)
    want = (reference.silu_forward if fused else reference.forward)(x_np, None, None, G)
    for out, copy, ref, name in zip(got, copies, want, ("out", "mean", "rstd")):
        np.testing.assert_array_equal(out.asnumpy(), copy.asnumpy(), err_msg=f"{name} of a {x.shape} view")
        assert_close(out, ref, F32, name)
    mean, rstd = got[1], got[2]
    if fused:
        grads = call("graph", g.group_norm_silu_backward, (dy, x, mean, rstd), None, None, Nv, Cv, HxW, G)
        want = reference.silu_backward(dy.asnumpy(), x_np, to_numpy(mean), to_numpy(rstd), None, None, G)
    else:
        grads = call("graph", g.group_norm_backward, (dy, x, mean, rstd), None, Nv, Cv, HxW, G)
        want = reference.backward(dy.asnumpy(), x_np, to_numpy(mean), to_numpy(rstd), None, G)
    for out, ref, name in zip(grads, want, ("dx", "dgamma", "dbeta")):
        assert_close(out, ref, F32, f"{name} of a {x.shape} view")


def test_strided_views_in_graph_mode():
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        rng = _rng("strided", "graph", False)
        for _ in range(SAMPLE["graph"]):
            _check_strided_case(rng)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


@pytest.mark.exhaustive
def test_strided_views_in_graph_mode_exhaustive():
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        rng = _rng("strided", "graph", True)
        for _ in range(EXHAUSTIVE // 4):
            _check_strided_case(rng)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


# ---- empty float16/bfloat16 tensors through every entry point


def _check_empty_case(mode, rng):
    data = [F16, BF16][int(rng.integers(2))]
    stat = F32 if rng.random() < 0.5 else data
    G = int(rng.integers(1, 3))
    C = G * int(rng.integers(1, 3))
    empty = int(rng.integers(2))  # which size is 0: N or HxW
    shape = (0, C, int(rng.integers(1, 4))) if empty == 0 else (int(rng.integers(1, 4)), C, 0)
    shape = shape + (1,) * int(rng.integers(0, 2))
    Nv, HxW = shape[0], math.prod(shape[2:])
    x = Tensor(np.zeros(shape, np.float32)).astype(data)
    gamma = Tensor(np.ones(C, np.float32)).astype(stat) if rng.random() < 0.5 else None
    entry = int(rng.integers(6))
    what = f"entry {entry}, {shape} {data} with {stat} statistics in {mode}"
    if entry in (0, 1):
        fn = g.group_norm_silu_forward if entry else g.group_norm_forward
        out, mean, rstd = call(mode, fn, (x,), gamma, None, Nv, C, HxW, G)
        assert out.shape == shape and out.dtype == data, what
        assert mean.shape == rstd.shape == (Nv, G) and mean.dtype == (stat if gamma is not None else data), what
        assert not to_numpy(mean).any() and np.isnan(to_numpy(rstd)).all(), what
    elif entry in (2, 3):
        stats = Tensor(np.zeros((Nv, G), np.float32)).astype(stat)
        if entry == 2:
            grads = call(mode, g.group_norm_backward, (x, x, stats, stats), gamma, Nv, C, HxW, G)
        else:
            grads = call(mode, g.group_norm_silu_backward, (x, x, stats, stats), gamma, None, Nv, C, HxW, G)
        assert grads[0].shape == shape and grads[0].dtype == data, what
        for grad in grads[1:]:
            assert grad.shape == (C,) and grad.dtype == stat and not to_numpy(grad).any(), what
    else:
        fn = g.group_norm_silu if entry == 5 else g.group_norm
        y = call(mode, fn, (x,), G, gamma)
        assert y.shape == shape and y.dtype == data, what
        layer = (g.GroupNormSiLU if entry == 5 else g.GroupNorm)(G, C, dtype=stat)
        y = layer(x)
        assert y.shape == shape and y.dtype == data, what


@pytest.mark.parametrize("fuzz_mode", ["pynative", "graph"], indirect=True)
def test_empty_low_precision_tensors(fuzz_mode):
    rng = _rng("empty", fuzz_mode, False)
    for _ in range(SAMPLE[fuzz_mode]):
        _check_empty_case(fuzz_mode, rng)


@pytest.mark.exhaustive
@pytest.mark.parametrize("fuzz_mode", ["pynative", "graph"], indirect=True)
def test_empty_low_precision_tensors_exhaustive(fuzz_mode):
    rng = _rng("empty", fuzz_mode, True)
    for _ in range(EXHAUSTIVE):
        _check_empty_case(fuzz_mode, rng)
