"""GroupNormSiluMs on HxW = 1 in batches of groups (tiling groupRows, kernel
group_norm_silu_ms_group_rows.h): each group's arithmetic is that of one group at a time, so a launch
with batches gives the bits of the same launch with groupRows 0 (the per-group path of mode 0), on
every core count, and through the rescaled path of a group whose sums leave fp32's safe range."""
import numpy as np
import pytest

import twin
from test_ascendc_forward_twin import (ACTIVATIONS, DTYPES, MEAN_TOL, RSTD_TOL, SCALED_GROUP_FACTOR, SMALL_UB,
                                       as_float64, errors, expected, make_inputs, storage)

# (N, C, G): D = C / G from 1 to 770 (rows of several 64-column parts); several batches a block
# where the UB is small
SHAPES = [(40, 64, 32), (9, 24, 3), (33, 7, 7), (17, 128, 2), (5, 6, 6), (64, 48, 16), (11, 257, 1),
          (6, 1540, 2)]


def per_group_tiling(tiling):
    """The per-group plan of mode 0 for the same launch: one group (a row of D) a task, gamma/beta
    loaded a task (coefElems D rounded up to 16), the statistics in batches of the block's groups."""
    D, pitch = tiling["D"], tiling["rowPitch"]
    stat_batch = min(-(-(tiling["tasksPerCore"] + 1) // 8) * 8, 256)
    return {**tiling, "groupRows": 0, "groupRowsGather": 0, "chunkElems": pitch, "xBufferElems": pitch, "coefElems": -(-D // 16) * 16,
            "bcastElems": 0, "statBatch": stat_batch, "partialElems": 8,
            "reduceWorkElems": max(8, -(-pitch // 64 + 7) // 8 * 8)}


def launch(arrays, tiling, ub, cores):
    N, C = arrays["x"].shape[:2]
    G = tiling["G"]
    y = np.full_like(arrays["x"], 0x7F)
    mean = np.full((N, G), 12345.0, np.float32)
    rstd = np.full((N, G), 12345.0, np.float32)
    twin.forward_launch([arrays["x"], arrays["gamma"], arrays["beta"], y, mean, rstd], tiling, ub, cores)
    return y, mean, rstd


def same_values(a, b):
    """Bit-identical, except the payload and sign of NaNs."""
    for x, y in zip(a, b):
        x, y = np.asarray(x), np.asarray(y)
        nan = np.isnan(x.astype(np.float64)) & np.isnan(y.astype(np.float64))
        if not np.array_equal(x.view(np.uint8).reshape(x.size, -1)[~nan.ravel()],
                              y.view(np.uint8).reshape(y.size, -1)[~nan.ravel()]):
            return False
    return True


def tiling_for(shape, G, dtype_key, activation, ub=twin.UB_910B, cores=48):
    data_dtype, param_dtype, _ = DTYPES[dtype_key]
    activate, scale = ACTIVATIONS[activation]
    return twin.forward_tiling(shape[0], shape[1], 1, G, data_dtype, param_dtype, activate_silu=activate,
                               swish_scale=scale, ub_bytes=ub, core_num=cores)


@pytest.mark.parametrize("dtype_key", ["fp32", "fp16", "bf16", "fp16_fp32"])
@pytest.mark.parametrize("N,C,G", SHAPES)
def test_batches_of_groups_give_the_bits_of_a_group_at_a_time(N, C, G, dtype_key):
    data_dtype, param_dtype, tolerance = DTYPES[dtype_key]
    arrays, exact = make_inputs((N, C), data_dtype, param_dtype, 5)
    for ub, cores in ((twin.UB_910B, 48), (SMALL_UB, 2)):
        tiling = tiling_for((N, C), G, dtype_key, "silu", ub, cores)
        if ub == SMALL_UB and C // G > 64 and tiling["groupRows"] == 0:
            continue  # long rows in 32 KiB: a batch does not fit, the group-at-a-time path runs
        assert tiling["groupRows"] > 0 and twin.FORWARD_MODE_NAMES[tiling["mode"]] == "group_resident"
        batched = launch(arrays, tiling, ub, cores)
        assert same_values(batched, launch(arrays, per_group_tiling(tiling), ub, cores))
        y_err, mean_err, rstd_err = errors(batched, expected(exact, G, "silu"), data_dtype)
        assert y_err <= tolerance and mean_err <= MEAN_TOL and rstd_err <= RSTD_TOL


def test_a_small_ub_takes_several_batches_a_block():
    tiling = tiling_for((40, 64), 32, "fp32", "silu", SMALL_UB, 2)
    assert 0 < tiling["groupRows"] * 3 <= tiling["tasksPerCore"]


@pytest.mark.parametrize("dtype_key", ["fp32", "bf16"])
def test_a_group_out_of_the_safe_range_rescales_only_itself(dtype_key):
    """One group's x times 2^120: its sum of squares overflows fp32, its batch takes the rescaled
    path, and every group keeps the bits of the per-group path (which rescales that group alone)."""
    data_dtype, param_dtype, tolerance = DTYPES[dtype_key]
    shape, G = (6, 16), 8
    arrays, exact = make_inputs(shape, data_dtype, param_dtype, 7)
    first = exact["x"].copy()
    first[0, :2] *= SCALED_GROUP_FACTOR
    arrays["x"] = storage(first, data_dtype)
    exact["x"] = as_float64(arrays["x"], data_dtype)
    tiling = tiling_for(shape, G, dtype_key, "plain", cores=2)
    assert tiling["groupRows"] > 0
    batched = launch(arrays, tiling, twin.UB_910B, 2)
    assert same_values(batched, launch(arrays, per_group_tiling(tiling), twin.UB_910B, 2))
    y_err, mean_err, rstd_err = errors(batched, expected(exact, G, "plain"), data_dtype)
    assert y_err <= tolerance and mean_err <= MEAN_TOL and rstd_err <= RSTD_TOL
    assert abs(batched[1][0, 0]) > 2.0 ** 110  # the scaled group's mean, in x's units


def test_the_core_count_changes_the_batches_not_the_bits():
    arrays, _ = make_inputs((300, 40), "float32", "float32", 2)
    results, batches = [], set()
    for cores in (1, 3, 7, 48):
        tiling = tiling_for((300, 40), 8, "fp32", "silu", cores=cores)
        batches.add(tiling["groupRows"])
        results.append(launch(arrays, tiling, twin.UB_910B, cores))
    assert len(batches) > 1
    assert all(same_values(results[0], r) for r in results[1:])


@pytest.mark.parametrize("shape,G,batched", [((4, 2040), 1, True), ((4, 2041), 1, False),  # rowPitch 2040 / 2048
                                             ((4, 64, 2), 32, False)])  # HxW 2
def test_batches_are_for_rows_of_at_most_255_blocks(shape, G, batched):
    N, C = shape[:2]
    tiling = twin.forward_tiling(N, C, int(np.prod(shape[2:], dtype=np.int64)), G)
    assert (tiling["groupRows"] > 0) == batched


@pytest.mark.parametrize("N,C,G,dtype_key,gather", [
    (8000, 64, 32, "fp32", 2), (40, 64, 32, "bf16", 2), (9, 24, 3, "fp16", 2),  # D = 2, 2, 8: columns
    (9, 24, 3, "fp32", 2),         # D = 8 fp32: rows of 32 bytes, still columns for the vector work
    (12, 120, 8, "fp32", 1),       # D = 15: rows spread by Gather
    (12, 192, 8, "fp32", 0),       # D = 24 fp32: rows of 96 bytes, the batch is one burst
    (11, 257, 1, "fp32", 0),       # D = 257: Gather would cost more than a burst a row
])
def test_short_rows_move_as_one_run_through_gather(N, C, G, dtype_key, gather):
    """Batches whose rows are not 32-byte multiples and shorter than 64 elements load x and store y
    as one contiguous run, spread into the rows and packed back by Gather (groupRowsGather 1); groups of
    2..8 elements are spread into D columns of the batch instead (groupRowsGather 2, a multiple of G
    groups a batch)."""
    tiling = tiling_for((N, C), G, dtype_key, "silu")
    assert tiling["groupRows"] > 0 and tiling["groupRowsGather"] == gather
    assert tiling["ubBytes"] <= twin.UB_910B and (not gather or tiling["chunkElems"] <= 255 * 64)
    if gather == 2:
        assert tiling["groupRows"] % G == 0 and tiling["chunkElems"] == C // G * -(-tiling["groupRows"] // 8) * 8


def test_columns_cost_a_few_instructions_a_batch_not_repeats_a_group():
    """8000x64 G32 fp16 (5,333 groups of 2 a core): as rows each row-wise step is a vector repeat a
    group; as columns it is an instruction over the batch's columns."""
    tiling = tiling_for((8000, 64), 32, "fp16", "silu")
    arrays, _ = make_inputs((8000, 64), "float16", "float16", 3)
    launch(arrays, tiling, twin.UB_910B, 48)
    columns = max(s["vec_repeats"] for s in twin.forward_last_stats())
    rows_tiling = {**tiling, "groupRowsGather": 1, "groupRows": 284, "chunkElems": 284 * 16, "xBufferElems": 284 * 16,
                   "coefElems": (284 + 32) * 16, "bcastElems": 11 * 288 + 8 * 248, "statBatch": 2 * 288,
                   "reduceWorkElems": 8}
    launch(arrays, rows_tiling, twin.UB_910B, 48)
    rows = max(s["vec_repeats"] for s in twin.forward_last_stats())
    assert columns * 4 <= rows, (columns, rows)
