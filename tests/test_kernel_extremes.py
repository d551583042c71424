"""Extreme magnitudes through the CPU kernels (ctypes, GroupNorm and the fused GroupNorm +
SiLU, forward and backward) against the float64 reference: spreads whose float32 squares
overflow (|x - mean| > ~1.8e19) or underflow (|x - mean| < ~1e-19 with eps = 0), float32
lane sums that overflow although the result is finite, and the largest fp16 values. A group
that the float32 row loops cannot sum is summed again in double (kernels/cpu/wide_range_rows.h);
these tests pin that the answer is then right, on every ISA build and for any thread count.
"""
import numpy as np
import pytest

import mindspore as ms
from cases import assert_close, rounded
from kernel_arrays import DTYPE_NAME, from_storage, to_storage
from ms_groupnorm import reference
from ms_groupnorm.backends import cpu_kernels
from test_kernel import run_backward, run_forward
from test_kernel_simd import _available_isas, isa_control  # noqa: F401  (fixture)
from test_silu_kernel import run_backward as run_silu_backward
from test_silu_kernel import run_forward as run_silu_forward

SHAPE, G = (2, 6, 37), 3  # a vector tail in every row

# (id, spread, offset, eps): x = offset + spread * N(0, 1), rounded to the data dtype.
MAGNITUDES = [
    pytest.param(1e20, 0.0, 1e-5, id="spread-1e20"),  # squares overflow float32
    pytest.param(3e36, 0.0, 1e-5, id="spread-3e36"),  # the float32 lane sums of x overflow too
    pytest.param(1e29, 1e30, 1e-5, id="mean-1e30"),  # large mean and spread
    pytest.param(1e-25, 0.0, 0.0, id="spread-1e-25-eps0"),  # squares underflow, rstd 1e25
    pytest.param(1e-22, 3e-21, 0.0, id="mean-3e-21-eps0"),
]
# (data dtype, statistics dtype): fp16 cannot hold these magnitudes (see test_fp16_extremes).
WIDE_DTYPES = [
    pytest.param(ms.float32, ms.float32, id="fp32"),
    pytest.param(ms.bfloat16, ms.bfloat16, id="bf16"),
    pytest.param(ms.bfloat16, ms.float32, id="bf16-fp32stats"),
]


def _inputs(rng, spread, offset, data_dtype, stat_dtype, shape=SHAPE):
    C = shape[1]
    x = rounded(offset + spread * rng.standard_normal(shape), data_dtype)
    dy = rounded(rng.standard_normal(shape), data_dtype)
    gamma = rounded(1 + 0.3 * rng.standard_normal(C), stat_dtype)
    beta = rounded(0.2 * rng.standard_normal(C), stat_dtype)
    return x, dy, gamma, beta


def _exact_statistics(x, G, eps, stat_dtype):
    """The float64 statistics rounded to the statistics dtype: what a caller saves."""
    _, mean, rstd = reference.forward(x, None, None, G, eps)
    return rounded(mean, stat_dtype), rounded(rstd, stat_dtype)


LARGEST = {ms.float32: 3.4028234663852886e38, ms.bfloat16: 3.3895313892515355e38, ms.float16: 65504.0}


def assert_relative(got, want, dtype, name):
    """tests/cases.py's assert_close (|err| <= tol * (max|want| + |want|)) without its floor of
    1e-30 on max|want|: the gradients of x ~ 1e36 are ~1e-36, and the floor would pass anything."""
    assert_close(np.asarray(got, np.float64) * _unit(want), np.asarray(want, np.float64) * _unit(want), dtype, name)


def _unit(want):
    """A power of two that brings max|want| near 1 (exact, so the relative errors are unchanged)."""
    largest = np.abs(np.asarray(want, np.float64)).max(initial=0.0)
    return 2.0 ** -np.frexp(largest)[1] if largest > 0 else 1.0


def _assert_outputs(got, want, dtypes, names):
    for out, ref, dtype, name in zip(got, want, dtypes, names):
        assert np.all(np.abs(ref) <= LARGEST[dtype]), f"{name}: the exact result does not fit {dtype}"
        assert_relative(out, ref, dtype, name)


@pytest.mark.parametrize("data_dtype,stat_dtype", WIDE_DTYPES)
@pytest.mark.parametrize("spread,offset,eps", MAGNITUDES)
def test_forward_at_extreme_magnitudes(rng, spread, offset, eps, data_dtype, stat_dtype):
    x, _, gamma, beta = _inputs(rng, spread, offset, data_dtype, stat_dtype)
    y, mean, rstd = run_forward(x, gamma, beta, G, eps, data_dtype, stat_dtype)
    want_y, want_mean, want_rstd = reference.forward(x, gamma, beta, G, eps)
    _assert_outputs((mean, rstd), (want_mean, want_rstd), (stat_dtype, stat_dtype), ("mean", "rstd"))
    # y from float32 statistics: data-dtype accuracy (as tests/test_kernel.py's forward test)
    assert_relative(y, want_y, stat_dtype if stat_dtype != ms.float32 else data_dtype, "y")


@pytest.mark.parametrize("data_dtype,stat_dtype", WIDE_DTYPES)
@pytest.mark.parametrize("spread,offset,eps", MAGNITUDES)
def test_backward_at_extreme_magnitudes(rng, spread, offset, eps, data_dtype, stat_dtype):
    x, dy, gamma, _ = _inputs(rng, spread, offset, data_dtype, stat_dtype)
    mean, rstd = _exact_statistics(x, G, eps, stat_dtype)
    got = run_backward(x, dy, gamma, mean, rstd, G, data_dtype, stat_dtype)
    want = reference.backward(dy, x, mean, rstd, gamma, G)
    _assert_outputs(got, want, (data_dtype, stat_dtype, stat_dtype), ("dx", "dgamma", "dbeta"))


@pytest.mark.parametrize("data_dtype,stat_dtype", WIDE_DTYPES)
@pytest.mark.parametrize("spread,offset,eps", MAGNITUDES)
def test_fused_forward_at_extreme_magnitudes(rng, spread, offset, eps, data_dtype, stat_dtype):
    x, _, gamma, beta = _inputs(rng, spread, offset, data_dtype, stat_dtype)
    z, mean, rstd = run_silu_forward(x, gamma, beta, G, data_dtype, stat_dtype, swish_scale=1.3, eps=eps)
    want_z, want_mean, want_rstd = reference.silu_forward(x, gamma, beta, G, eps, 1.3)
    _assert_outputs((mean, rstd), (want_mean, want_rstd), (stat_dtype, stat_dtype), ("mean", "rstd"))
    assert_relative(z, want_z, stat_dtype if stat_dtype != ms.float32 else data_dtype, "z")


@pytest.mark.parametrize("data_dtype,stat_dtype", WIDE_DTYPES)
@pytest.mark.parametrize("spread,offset,eps", MAGNITUDES)
def test_fused_backward_at_extreme_magnitudes(rng, spread, offset, eps, data_dtype, stat_dtype):
    x, dz, gamma, beta = _inputs(rng, spread, offset, data_dtype, stat_dtype)
    mean, rstd = _exact_statistics(x, G, eps, stat_dtype)
    got = run_silu_backward(dz, x, mean, rstd, gamma, beta, G, data_dtype, stat_dtype, swish_scale=1.3)
    want = reference.silu_backward(dz, x, mean, rstd, gamma, beta, G, 1.3)
    _assert_outputs(got, want, (data_dtype, stat_dtype, stat_dtype), ("dx", "dgamma", "dbeta"))


def test_backward_of_x_near_1e25_with_exact_statistics(rng):
    """The reported case: x ~ 1e25 and exact float64 statistics; dx was 23 % off."""
    x, dy, gamma, _ = _inputs(rng, 1e25, 0.0, ms.float32, ms.float32, shape=(2, 8, 64))
    mean, rstd = _exact_statistics(x, 4, 1e-5, ms.float32)
    got = run_backward(x, dy, gamma, mean, rstd, 4, ms.float32, ms.float32)
    want = reference.backward(dy, x, mean, rstd, gamma, 4)
    _assert_outputs(got, want, (ms.float32,) * 3, ("dx", "dgamma", "dbeta"))


@pytest.mark.parametrize("data_dtype", [ms.float32, ms.bfloat16])
def test_forward_when_the_lane_sums_of_x_overflow(data_dtype):
    """A group whose first 64 elements (the shift of the first sum) are small and whose other
    elements are near the float32 maximum: every float32 lane of sum(x - shift) overflows,
    while the mean and the variance are finite."""
    x = np.zeros((1, 2, 160))
    x[0, :, 64:] = rounded(np.linspace(1.5e38, 2.5e38, 96), data_dtype)
    y, mean, rstd = run_forward(x, np.ones(2), np.zeros(2), 1, 1e-5, data_dtype, ms.float32)
    want_y, want_mean, want_rstd = reference.forward(x, np.ones(2), np.zeros(2), 1, 1e-5)
    _assert_outputs((mean, rstd), (want_mean, want_rstd), (ms.float32,) * 2, ("mean", "rstd"))
    assert_close(y, want_y, data_dtype, "y")


@pytest.mark.parametrize("fused", [False, True], ids=["group_norm", "fused"])
def test_backward_when_the_lane_sums_of_dy_overflow(rng, fused):
    """dy of +-2e38 at elements 0, 32 and 64 of a row (float32 lane 0 of each sum): the lane
    overflows, the channel's sum of dy (2e38) does not. (beta = 5 puts the fused op's
    sigmoid near 1, so its dz * dz/dy is about dy.)"""
    shape, groups = (1, 4, 96), 2
    x = rounded(rng.standard_normal(shape), ms.float32)
    x[..., [0, 32, 64]] = 0.0
    dy = rounded(rng.standard_normal(shape), ms.float32)
    dy[..., [0, 32]], dy[..., 64] = 2e38, -2e38
    gamma, beta = np.full(4, 0.25), np.full(4, 5.0)
    mean, rstd = _exact_statistics(x, groups, 1e-5, ms.float32)
    if fused:
        got = run_silu_backward(dy, x, mean, rstd, gamma, beta, groups, ms.float32, ms.float32)
        want = reference.silu_backward(dy, x, mean, rstd, gamma, beta, groups)
    else:
        got = run_backward(x, dy, gamma, mean, rstd, groups, ms.float32, ms.float32)
        want = reference.backward(dy, x, mean, rstd, gamma, groups)
    _assert_outputs(got, want, (ms.float32,) * 3, ("dx", "dgamma", "dbeta"))


def test_fp16_extremes(rng):
    """fp16 holds |x| <= 65504: its squares (< 1.8e10) and products with dy never leave the
    float32 range, so its largest values and smallest spreads are right on the float32 path."""
    # (spread, offset, eps, dy scale): dy as large as dx = rstd * dy allows
    for spread, offset, eps, dy_scale in [(2e4, 0.0, 1e-5, 3e4), (1e3, 6e4, 1e-5, 3e4), (1e-4, 0.0, 0.0, 0.03)]:
        x = rounded(np.clip(offset + spread * rng.standard_normal(SHAPE), -65504, 65504), ms.float16)
        dy = rounded(np.clip(dy_scale * rng.standard_normal(SHAPE), -65504, 65504), ms.float16)
        gamma, beta = np.ones(SHAPE[1]), np.zeros(SHAPE[1])
        y, mean, rstd = run_forward(x, gamma, beta, G, eps, ms.float16, ms.float32)
        want_y, want_mean, want_rstd = reference.forward(x, gamma, beta, G, eps)
        _assert_outputs((mean, rstd), (want_mean, want_rstd), (ms.float32,) * 2, ("mean", "rstd"))
        assert_close(y, want_y, ms.float16, "y")
        got = run_backward(x, dy, gamma, mean, rstd, G, ms.float16, ms.float32)
        want = reference.backward(dy, x, mean, rstd, gamma, G)
        _assert_outputs(got, want, (ms.float16, ms.float32, ms.float32), ("dx", "dgamma", "dbeta"))


def _mixed_groups(rng):
    """(1, 6, 2100), 3 groups: ordinary, huge, tiny; 2100 elements per row make a second
    float32 block, so the block-wise schedule really splits the groups."""
    x = rng.standard_normal((1, 6, 2100))
    x[:, 2:4] *= 1e24
    x[:, 4:6] *= 1e-24
    return x.astype(np.float32), rng.standard_normal((1, 6, 2100)).astype(np.float32)


def test_extreme_groups_give_the_same_bits_for_any_thread_count(isa_control, rng):  # noqa: F811
    """The groups the float32 loops cannot sum are summed again in double, decided per group
    from values that do not depend on the schedule: 1, 2 and 4 threads (group-wise, and with
    fewer groups than threads block- and channel-wise) give the same bits, in every build."""
    x, dy = _mixed_groups(rng)
    gamma = (1 + 0.1 * rng.standard_normal(6)).astype(np.float32)
    for isa in _available_isas():
        isa_control.MsGroupNormSelectIsa(isa.encode())
        results = []
        for threads in (1, 2, 4):
            isa_control.MsGroupNormSetNumThreads(threads)
            y, mean, rstd = run_forward(x, gamma, gamma, 3, 0.0, ms.float32, ms.float32)
            z, _, _ = run_silu_forward(x, gamma, gamma, 3, ms.float32, ms.float32, eps=0.0)
            grads = run_backward(x, dy, gamma, mean, rstd, 3, ms.float32, ms.float32)
            silu_grads = run_silu_backward(dy, x, mean, rstd, gamma, gamma, 3, ms.float32, ms.float32)
            results.append([a.tobytes() for a in (y, mean, rstd, z, *grads, *silu_grads)])
        assert results[1] == results[0] and results[2] == results[0], isa
        want_y, want_mean, want_rstd = reference.forward(x, gamma, gamma, 3, 0.0)
        np.testing.assert_allclose(rstd, want_rstd, rtol=2e-5, err_msg=f"rstd ({isa})")
        assert_relative(y, want_y, ms.float32, f"y ({isa})")


def test_ordinary_groups_keep_the_float32_path(rng):
    """A group that needs the double sums does not change its neighbours: the ordinary group
    of a mixed input gives the bits it gives alone."""
    x, dy = _mixed_groups(rng)
    gamma = np.ones(6, np.float32)
    y, mean, rstd = run_forward(x, gamma, gamma, 3, 1e-5, ms.float32, ms.float32)
    y0, mean0, rstd0 = run_forward(x[:, :2], gamma[:2], gamma[:2], 1, 1e-5, ms.float32, ms.float32)
    assert y[:, :2].tobytes() == y0.tobytes() and mean[:, :1].tobytes() == mean0.tobytes()
    dx, _, _ = run_backward(x, dy, gamma, mean, rstd, 3, ms.float32, ms.float32)
    dx0, _, _ = run_backward(x[:, :2], dy[:, :2], gamma[:2], mean0, rstd0, 1, ms.float32, ms.float32)
    assert dx[:, :2].tobytes() == dx0.tobytes()


@pytest.mark.parametrize("spread,offset,eps", MAGNITUDES)
def test_2d_input_at_extreme_magnitudes(rng, spread, offset, eps):
    """HxW = 1 runs sample by sample (point loops over a sample's C values); a sample with a
    group for the double loops takes the group-wise steps for its groups. Forward and
    backward of a (5, 12) input, 3 groups, against the float64 reference."""
    shape, groups = (5, 12), 3
    x, dy, gamma, beta = _inputs(rng, spread, offset, ms.float32, ms.float32, shape=shape)
    y, mean, rstd = run_forward(x, gamma, beta, groups, eps, ms.float32, ms.float32)
    want_y, want_mean, want_rstd = reference.forward(x, gamma, beta, groups, eps)
    _assert_outputs((mean, rstd), (want_mean, want_rstd), (ms.float32, ms.float32), ("mean", "rstd"))
    assert_relative(y, want_y, ms.float32, "y")
    mean, rstd = _exact_statistics(x, groups, eps, ms.float32)
    got = run_backward(x, dy, gamma, mean, rstd, groups, ms.float32, ms.float32)
    want = reference.backward(dy, x, mean, rstd, gamma, groups)
    _assert_outputs(got, want, (ms.float32, ms.float32, ms.float32), ("dx", "dgamma", "dbeta"))


def test_2d_mixed_groups_give_the_same_bits_by_sample_and_by_group(isa_control, rng):  # noqa: F811
    """A (4, 6) input, 3 groups of which one is huge and one tiny in sample 1 only: 1, 2 and
    4 threads run sample by sample, 5 threads (more than N) group-wise; the same bits in
    every build, and the right answer."""
    x = rng.standard_normal((4, 6))
    x[1, 2:4] *= 1e24
    x[1, 4:6] *= 1e-24
    x, dy = x.astype(np.float32), rng.standard_normal((4, 6)).astype(np.float32)
    gamma = (1 + 0.1 * rng.standard_normal(6)).astype(np.float32)
    for isa in _available_isas():
        isa_control.MsGroupNormSelectIsa(isa.encode())
        results = []
        for threads in (1, 2, 4, 5):
            isa_control.MsGroupNormSetNumThreads(threads)
            y, mean, rstd = run_forward(x, gamma, gamma, 3, 0.0, ms.float32, ms.float32)
            grads = run_backward(x, dy, gamma, mean, rstd, 3, ms.float32, ms.float32)
            results.append([a.tobytes() for a in (y, mean, rstd, *grads)])
        assert all(r == results[0] for r in results[1:]), isa
        want_y, want_mean, want_rstd = reference.forward(x, gamma, gamma, 3, 0.0)
        np.testing.assert_allclose(rstd, want_rstd, rtol=2e-5, err_msg=f"rstd ({isa})")
        assert_relative(y, want_y, ms.float32, f"y ({isa})")
        want = reference.backward(dy, x, mean, rstd, gamma, 3)
        _assert_outputs(grads, want, (ms.float32, ms.float32, ms.float32), ("dx", "dgamma", "dbeta"))
