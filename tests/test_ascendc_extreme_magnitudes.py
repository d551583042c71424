"""The AscendC kernels with finite data of extreme magnitude, run on the CPU twin against the
float64 reference: the forward GroupNormSiluMs (SiLU off and on) and the backward kernels
GroupNormGradMs and GroupNormSiluGradMs.

In fp32 a sum of squares overflows once |x - mean| passes about 1.8e19 (sqrt(FLT_MAX)), or
earlier, by a factor sqrt(M), for a group of M elements; a sum of x overflows once M * |x| passes
FLT_MAX, and x - mean itself once |x| + |mean| does. Each of these results is finite, so the kernels
must give it: the forward scales the group by a power of two on the rare path where a sum leaves the
safe range, the backward does so where mean and 1 / rstd say x - mean could overflow. fp16 data
cannot reach these magnitudes (|x| <= 65504), so it is checked at its own range limit; bf16 has
fp32's range."""
import numpy as np
import pytest

from ms_groupnorm import reference
import twin
from test_ascendc_twin import as_float64, relative_error, storage

FLT_MAX = float(np.finfo(np.float32).max)

# name: (shape, G, core_num, ub_bytes, forward mode)
FORWARD_CASES = {
    "resident": ((2, 4, 6, 5), 2, 4, twin.UB_910B, "group_resident"),
    "resident_hw1": ((3, 12), 3, 48, twin.UB_910B, "group_resident"),
    "resident_short_rows": ((2, 16, 3, 4), 2, 4, twin.UB_910B, "group_resident"),  # one Mul/Add for all rows
    "chunked": ((2, 2, 1999), 1, 2, 32 * 1024, "chunked"),
    "chunked_split": ((1, 3, 5000), 1, 48, 32 * 1024, "chunked"),  # slices through the workspace
    "ring_partial": ((2, 12, 1024), 1, 1, 32 * 1024, "chunked"),  # the part ring, partly resident
}

# name: (data dtype, the magnitude of the spread, the offset of the mean): fp32 and bf16 from the
# first overflow of the squares to the edge of the range; fp16 at its own limit.
MAGNITUDES = {
    "fp32_1e20": ("float32", 1e20, 0.0),
    "fp32_1e30_offset": ("float32", 1e30, 3e30),
    "fp32_edge": ("float32", 0.3 * FLT_MAX, 0.0),  # |x| up to about FLT_MAX: x - x[0] overflows too
    "fp32_sum_only": ("float32", 1e10, 1e36),  # squares fine, the sum of x overflows only without the shift
    "bf16_1e25": ("bfloat16", 1e25, 0.0),
    "bf16_edge": ("bfloat16", 0.3 * FLT_MAX, 0.0),
    "fp16_edge": ("float16", 16000.0, 0.0),
    # nine in ten elements near -0.9 FLT_MAX, one in ten near +0.9 FLT_MAX: x - mean > FLT_MAX
    "fp32_lopsided": ("float32", None, 0.0),
}

Y_TOL = {"float32": 2e-6, "bfloat16": 8e-3, "float16": 1e-3}
STAT_TOL = 2e-6  # mean error relative to max(1, |mean|, std); rstd relative


# The default run keeps, per kernel mode, the magnitudes that reach each overflow (the squares, the
# sum, x - shift / x - mean) once; the rest of the matrix is exhaustive.
DEFAULT_MAGNITUDES = {"fp32_1e20", "fp32_lopsided", "bf16_edge", "fp16_edge"}


def matrix(cases, flags):
    params = []
    for case in cases:
        for magnitude in MAGNITUDES:
            for flag in flags:
                default = magnitude in DEFAULT_MAGNITUDES and (flag == flags[-1] or magnitude == "fp32_lopsided")
                marks = () if default else (pytest.mark.exhaustive,)
                params.append(pytest.param(case, magnitude, flag, marks=marks, id=f"{case}-{magnitude}-{flag}"))
    return params


def extreme_values(shape, magnitude, offset, seed, dtype):
    rng = np.random.default_rng(seed)
    if magnitude is None:
        x = np.where(rng.uniform(size=shape) < 0.9, -0.9, 0.9) * FLT_MAX * rng.uniform(0.9, 1.0, shape)
        x.reshape(-1)[::7] = 0.9 * FLT_MAX  # every group has both signs
    else:
        x = rng.uniform(-1.0, 1.0, shape) * magnitude + offset
    limit = float(np.finfo(np.float16).max) if dtype == "float16" else FLT_MAX
    return storage(np.clip(x, -limit, limit), dtype)


@pytest.mark.parametrize("case, magnitude, activate", matrix(FORWARD_CASES, [False, True]))
def test_forward_right_at_extreme_magnitudes(case, magnitude, activate):
    shape, G, cores, ub, mode = FORWARD_CASES[case]
    dtype, spread, offset = MAGNITUDES[magnitude]
    x = extreme_values(shape, spread, offset, 5, dtype)
    C = shape[1]
    rng = np.random.default_rng(6)
    gamma = storage(rng.standard_normal(C) + 1.0, dtype)
    beta = storage(rng.standard_normal(C) * 0.5, dtype)
    y, mean, rstd, tiling = twin.twin_forward(x, gamma, beta, G, activate_silu=activate, data_dtype=dtype,
                                             param_dtype=dtype, ub_bytes=ub, core_num=cores)
    assert twin.FORWARD_MODE_NAMES[tiling["mode"]] == mode
    x64, g64, b64 = (as_float64(a, dtype) for a in (x, gamma, beta))
    y_ref, mean_ref, rstd_ref = reference.forward(x64, g64, b64, G)
    if activate:
        y_ref = y_ref / (1.0 + np.exp(-y_ref))
    assert np.isfinite(mean).all() and np.isfinite(rstd).all() and (rstd > 0).all()
    std = 1.0 / rstd_ref
    mean_err = float(np.max(np.abs(mean - mean_ref) / np.maximum(np.maximum(1.0, np.abs(mean_ref)), std)))
    rstd_err = float(np.max(np.abs(rstd - rstd_ref) / rstd_ref))
    y_err = relative_error(y, y_ref, dtype)
    assert y_err <= Y_TOL[dtype], (y_err, mean_err, rstd_err)
    assert mean_err <= STAT_TOL, mean_err
    assert rstd_err <= STAT_TOL, rstd_err


# name: (N, C, HxW, G, core_num, backward mode) -- one case per mode of the backward kernel
BACKWARD_CASES = {
    "resident": (2, 8, 9, 2, 2, "group_resident"),
    "channel_two_pass": (2, 16, 3000, 2, 4, "channel_two_pass"),
    "hw_chunks": (3, 16, 8200, 2, 6, "hw_chunks"),  # 48 channels: fewer would take the HxW split
    "hw_slices": (1, 3, 9000, 1, 48, "channel_two_pass"),  # 3 channels x 4 HxW slices
    "channel_split": (47, 2, 250, 1, 48, "channel_two_pass"),
    "hw_one": (3, 12, 1, 3, 48, "hw_one"),
}
BACKWARD_TOL = {"float32": 2e-5, "bfloat16": 6e-3, "float16": 1e-3}


def backward_inputs(N, C, HxW, G, magnitude, seed=9):
    dtype, spread, offset = MAGNITUDES[magnitude]
    x = extreme_values((N, C, HxW), spread, offset, seed, dtype)
    rng = np.random.default_rng(seed + 1)
    arrays = {"x": x, "dy": storage(rng.standard_normal((N, C, HxW)), dtype),
              "gamma": storage(rng.standard_normal(C) + 1.0, dtype),
              "beta": storage(rng.standard_normal(C) * 0.5, dtype)}
    _, mean, rstd = reference.forward(as_float64(x, dtype), None, None, G)
    arrays["mean"], arrays["rstd"] = storage(mean, dtype), storage(rstd, dtype)
    exact = {name: as_float64(a, dtype) for name, a in arrays.items()}
    return arrays, exact, dtype


@pytest.mark.parametrize("case, magnitude, silu", matrix(BACKWARD_CASES, [False, True]))
def test_backward_right_at_extreme_magnitudes(case, magnitude, silu):
    N, C, HxW, G, cores, mode = BACKWARD_CASES[case]
    arrays, exact, dtype = backward_inputs(N, C, HxW, G, magnitude)
    common = dict(data_dtype=dtype, stat_dtype=dtype, core_num=cores)
    if silu:
        got = twin.twin_silu_backward(arrays["dy"], arrays["x"], arrays["mean"], arrays["rstd"],
                                              arrays["gamma"], arrays["beta"], G, 1.0, **common)
        want = reference.silu_backward(exact["dy"], exact["x"], exact["mean"], exact["rstd"], exact["gamma"],
                                       exact["beta"], G, 1.0)
    else:
        got = twin.twin_backward(arrays["dy"], arrays["x"], arrays["mean"], arrays["rstd"],
                                         arrays["gamma"], G, **common)
        want = reference.backward(exact["dy"], exact["x"], exact["mean"], exact["rstd"], exact["gamma"], G)
    assert twin.MODE_NAMES[got[3]["mode"]] == mode
    for name, out, ref in zip(("dx", "dgamma", "dbeta"), got[:3], want):
        err = relative_error(out, ref.reshape(out.shape), dtype)
        assert err <= BACKWARD_TOL[dtype], f"{name}: relative error {err:.3g}"


@pytest.mark.parametrize("magnitude", ["fp32_1e20", "fp32_lopsided", "bf16_edge"])
def test_forward_rare_path_bit_identical_across_core_counts_and_schedules(magnitude):
    # the rescaled path through the workspace slices gives the bits of one block's cascade
    shape, G, _, ub, _ = FORWARD_CASES["chunked_split"]
    dtype, spread, offset = MAGNITUDES[magnitude]
    x = extreme_values(shape, spread, offset, 5, dtype)
    gamma = storage(np.linspace(0.5, 1.5, shape[1]), dtype)
    beta = storage(np.linspace(-0.5, 0.5, shape[1]), dtype)
    runs = [twin.twin_forward(x, gamma, beta, G, data_dtype=dtype, param_dtype=dtype, ub_bytes=ub, core_num=cores,
                             policy=policy, execution=execution)
            for cores, policy, execution in ((1, "concurrent", "immediate"), (48, "concurrent", "immediate"),
                                             (7, "reverse", "deferred"), (16, "forward", "immediate"))]
    assert runs[1][3]["sliceCount"] > 1 and runs[0][3]["sliceCount"] == 1
    for other in runs[1:]:
        for a, b in zip(runs[0][:3], other[:3]):
            assert np.array_equal(a.view(np.uint8), b.view(np.uint8))
