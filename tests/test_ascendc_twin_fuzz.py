"""Seeded random launches of the three AscendC operators on the twin, against the float64 reference:
shapes, dtypes, output masks, core counts, swish scales and pipe execution nobody picked by hand.

The case tables (test_ascendc_twin.py, test_ascendc_silu_grad_twin.py, test_ascendc_forward_twin.py)
pin each tiling path with a chosen shape; here the shape generator leans towards what breaks
tilings (HxW = 1, short and odd rows, a group of one channel, G = 1, groups beyond the UB, few cores)
and every launch must match float64 within the same tolerances. The default tier runs one batch;
--exhaustive runs them all. test_the_draws_reach_every_path checks that the generator still reaches
every mode and flag it is meant to exercise, so it cannot quietly shrink to easy shapes."""
import numpy as np
import pytest

import test_ascendc_forward_twin as forward_cases
import test_ascendc_silu_grad_twin as silu_cases
import test_ascendc_twin as grad_cases
import twin

BATCHES = 30
LAUNCHES_PER_BATCH = 30
MAX_ELEMENTS = 1_500_000  # keeps a launch under a second on the twin
OPERATORS = ("grad", "silu_grad", "forward")
CORE_COUNTS = (48, 48, 40, 20, 7, 1)


def random_shape(rng):
    """(N, C, HxW, G), at most MAX_ELEMENTS elements."""
    G = int(rng.choice([1, 1, 2, 3, 4, 7, 8, 16, 32, 64]))
    channels = int(rng.choice([1, 1, 2, 3, 5, 8, 16, 33])) if rng.random() < 0.7 else int(rng.integers(1, 200))
    C = G * channels
    r = rng.random()
    if r < 0.3:
        HxW = 1
    elif r < 0.6:
        HxW = int(rng.integers(2, 70))
    elif r < 0.9:
        HxW = int(rng.integers(70, 1200))
    else:
        HxW = int(rng.integers(1200, 70000))
    N = int(rng.choice([1, 2, 3, 5, 8, 17, 47, 64, 100, 300]))
    while N * C * HxW > MAX_ELEMENTS and N > 1:
        N = max(1, N // 2)
    while N * C * HxW > MAX_ELEMENTS and HxW > 1:
        HxW //= 2
    while N * C * HxW > MAX_ELEMENTS and C > G:
        C -= G
    return N, C, HxW, G


def draw(seed):
    """One launch: (operator, shape, dtype key, options)."""
    rng = np.random.default_rng(seed)
    shape = random_shape(rng)
    operator = OPERATORS[seed % len(OPERATORS)]
    options = {"core_num": int(rng.choice(CORE_COUNTS))}
    if operator == "forward":
        dtype_key = str(rng.choice(list(forward_cases.DTYPES)))
        options["activation"] = str(rng.choice(list(forward_cases.ACTIVATIONS)))
        return operator, shape, dtype_key, options
    dtype_key = str(rng.choice(list(grad_cases.DTYPES)))
    mask = tuple(bool(b) for b in rng.random(3) < 0.8)
    options["mask"] = mask if any(mask) else (True, True, True)
    options["execution"] = str(rng.choice(["immediate", "deferred"]))
    if operator == "silu_grad":
        options["swish_scale"] = float(rng.choice([1.0, 1.7]))
    return operator, shape, dtype_key, options


def check_launch(seed):
    operator, (N, C, HxW, G), dtype_key, options = draw(seed)
    where = f"seed {seed}: {operator} {N}x{C}x{HxW} G{G} {dtype_key} {options}"
    if operator == "forward":
        got, _, exact = forward_cases.run((N, C, HxW), G, dtype_key, options["activation"],
                                          core_num=options["core_num"], data_seed=seed)
        y_err, mean_err, rstd_err = forward_cases.errors(got, forward_cases.expected(exact, G, options["activation"]),
                                                         forward_cases.DTYPES[dtype_key][0])
        assert y_err <= forward_cases.DTYPES[dtype_key][2], (where, "y", y_err)
        assert mean_err <= forward_cases.MEAN_TOL, (where, "mean", mean_err)
        assert rstd_err <= forward_cases.RSTD_TOL, (where, "rstd", rstd_err)
    elif operator == "grad":
        got, want, _ = grad_cases.run_case((N, C, HxW), G, dtype_key, mask=options["mask"],
                                           core_num=options["core_num"], data_seed=seed,
                                           execution=options["execution"])
        try:
            grad_cases.check_against_reference(got, want, dtype_key, options["mask"])
        except AssertionError as error:
            raise AssertionError(f"{where}: {error}") from None
    else:
        arrays, exact = silu_cases.silu_inputs((N, C, HxW), G, dtype_key, seed=seed)
        got = silu_cases.run_silu(arrays, G, dtype_key, options["swish_scale"], mask=options["mask"],
                                  core_num=options["core_num"], execution=options["execution"])
        try:
            silu_cases.check(got[:3], silu_cases.expected(exact, G, options["swish_scale"]), dtype_key,
                             options["mask"])
        except AssertionError as error:
            raise AssertionError(f"{where}: {error}") from None


@pytest.mark.default_sample(batch=[0])
@pytest.mark.parametrize("batch", range(BATCHES))
def test_random_launches_match_the_float64_reference(batch):
    for seed in range(batch * LAUNCHES_PER_BATCH, (batch + 1) * LAUNCHES_PER_BATCH):
        check_launch(seed)


def _paths(seed):
    """The tiling paths a draw takes (tilings only: no launch)."""
    operator, (N, C, HxW, G), dtype_key, options = draw(seed)
    if operator == "forward":
        data_dtype, param_dtype, _ = forward_cases.DTYPES[dtype_key]
        tiling = twin.forward_tiling(N, C, HxW, G, data_dtype, param_dtype, core_num=options["core_num"])
        paths = {"forward " + twin.FORWARD_MODE_NAMES[tiling["mode"]]}
        flags = ("staged", "groupRows", "groupRowsGather", "ringParts", "sliceCount")
        return paths | {f"forward {flag}" for flag in flags if tiling[flag] > 1 or
                        (flag in ("staged", "groupRowsGather") and tiling[flag] == 1)}
    data_dtype, stat_dtype, _, _ = grad_cases.DTYPES[dtype_key]
    tiling = twin.twin_tiling(N, C, HxW, G, data_dtype, stat_dtype, core_num=options["core_num"],
                              mask=options["mask"], silu=operator == "silu_grad")
    paths = {"backward " + twin.MODE_NAMES[tiling["mode"]]}
    flags = ("splitByChannel", "groupAcrossN", "needWorkspace", "hwOneGather", "groupRows")
    paths |= {f"backward {flag}" for flag in flags if tiling[flag] != 0}
    if operator == "silu_grad" and tiling["groupRows"] != 0:
        paths.add("silu_grad groupRows")
    return paths | ({"backward hwSlices"} if tiling["hwSlices"] > 1 else set())


def test_the_draws_reach_every_path():
    reached = set()
    for seed in range(BATCHES * LAUNCHES_PER_BATCH):
        reached |= _paths(seed)
    wanted = {"backward " + name for name in twin.MODE_NAMES.values()} | \
        {"forward group_resident", "forward chunked"} | \
        {f"backward {flag}" for flag in ("splitByChannel", "groupAcrossN", "needWorkspace", "hwOneGather",
                                         "hwSlices", "groupRows")} | {"silu_grad groupRows"} | \
        {f"forward {flag}" for flag in ("staged", "groupRows", "groupRowsGather", "ringParts", "sliceCount")}
    assert wanted <= reached, sorted(wanted - reached)
