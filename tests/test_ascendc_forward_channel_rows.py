"""GroupNormSiluMs with groups of one channel (D = 1, HxW > 1) in batches of rows (tiling groupRows > 0
with vectorCoef 0, kernel group_norm_silu_ms_channel_rows.h): each group's arithmetic is that of mode 0
a group at a time, so a launch gives the values of the same launch with groupRows 0 (bit for bit; the
NaNs of a group with an inf may differ in sign), through groups from x itself, groups of the two passes
(a large mean) mixed in one batch, and the rare path of a group beyond fp32's safe range."""
import numpy as np
import pytest

import twin
from test_ascendc_forward_group_rows import launch, same_values
from test_ascendc_forward_twin import (DTYPES, MEAN_TOL, RSTD_TOL, SCALED_GROUP_FACTOR, SMALL_UB, as_float64,
                                       errors, expected, shifted_inputs, storage)

# (shape, G, UB, cores): rows of 9, 49 (one repeat), 100 and 444 (several 64-column pieces); a small UB
# for several batches a block
SHAPES = [((40, 24, 9), 24, SMALL_UB, 2), ((20, 16, 49), 16, twin.UB_910B, 7), ((10, 32, 100), 32, SMALL_UB, 5),
          ((6, 100, 444), 100, twin.UB_910B, 48)]


def tiling_for(shape, G, dtype_key, ub, cores, silu=True):
    data_dtype, param_dtype, _ = DTYPES[dtype_key]
    return twin.forward_tiling(shape[0], shape[1], int(np.prod(shape[2:])), G, data_dtype, param_dtype,
                               activate_silu=silu, ub_bytes=ub, core_num=cores)


def per_group_tiling(tiling):
    """Mode 0 a group at a time for the same launch (what the tiling chose before the batches)."""
    pitch = tiling["rowPitch"]
    stat_batch = min(-(-(tiling["tasksPerCore"] + 2) // 8) * 8, 256)
    return {**tiling, "groupRows": 0, "chunkElems": pitch, "xBufferElems": pitch, "bcastElems": 0,
            "statBatch": stat_batch, "reduceWorkElems": max(8, -(-(-(-pitch // 64)) // 8) * 8)}


def inputs(shape, dtype_key, data):
    """'centred', 'big_mean' or 'mixed' (a mean of 0 or 40 by channel: both kinds in a batch)."""
    return shifted_inputs(shape, dtype_key, data, 13, 2)


@pytest.mark.parametrize("data", ["centred", "big_mean", "mixed"])
@pytest.mark.parametrize("dtype_key", ["fp32", "fp16", "bf16", "fp16_fp32"])
@pytest.mark.parametrize("shape,G,ub,cores", SHAPES)
def test_batches_of_channel_rows_give_the_bits_of_a_group_at_a_time(shape, G, ub, cores, dtype_key, data):
    tiling = tiling_for(shape, G, dtype_key, ub, cores)
    assert tiling["groupRows"] > 0 and tiling["vectorCoef"] == 0 and tiling["D"] == 1
    arrays, exact = inputs(shape, dtype_key, data)
    batched = launch(arrays, tiling, ub, cores)
    assert same_values(batched, launch(arrays, per_group_tiling(tiling), ub, cores))
    y_err, mean_err, rstd_err = errors(batched, expected(exact, G, "silu"), DTYPES[dtype_key][0])
    assert y_err <= DTYPES[dtype_key][2] and mean_err <= MEAN_TOL and rstd_err <= RSTD_TOL, (y_err, mean_err,
                                                                                           rstd_err)


@pytest.mark.parametrize("dtype_key", ["fp32", "bf16"])
def test_a_group_out_of_the_safe_range_takes_the_rare_path_alone(dtype_key):
    shape, G, ub, cores = (30, 20, 100), 20, SMALL_UB, 3
    data_dtype, _, tolerance = DTYPES[dtype_key]
    arrays, exact = inputs(shape, dtype_key, "mixed")
    x = exact["x"].copy()
    x[0, 0] *= SCALED_GROUP_FACTOR
    arrays["x"] = storage(x, data_dtype)
    exact["x"] = as_float64(arrays["x"], data_dtype)
    tiling = tiling_for(shape, G, dtype_key, ub, cores, silu=False)
    assert tiling["groupRows"] > 0
    batched = launch(arrays, tiling, ub, cores)
    assert same_values(batched, launch(arrays, per_group_tiling(tiling), ub, cores))
    y_err, mean_err, rstd_err = errors(batched, expected(exact, G, "plain"), data_dtype)
    assert y_err <= tolerance and mean_err <= MEAN_TOL and rstd_err <= RSTD_TOL
    assert abs(batched[1][0, 0]) > 2.0 ** 110


def test_few_groups_keep_a_group_at_a_time():
    """48 groups or fewer (about one a block): a batch of one costs more than it saves, so mode 0 takes
    them one by one, from the shape alone (not the core count)."""
    assert tiling_for((1, 4, 199), 4, "fp32", twin.UB_910B, 48)["groupRows"] == 0
    assert tiling_for((1, 4, 199), 4, "fp32", twin.UB_910B, 1)["groupRows"] == 0
    assert tiling_for((456, 698, 444), 698, "fp16", twin.UB_910B, 48)["groupRows"] > 0


def test_a_batch_costs_a_few_instructions_not_a_dozen_a_group():
    shape, G = (6, 100, 444), 100
    tiling = tiling_for(shape, G, "fp16", twin.UB_910B, 48)
    arrays, _ = inputs(shape, "fp16", "centred")
    launch(arrays, tiling, twin.UB_910B, 48)
    batched = max(s["vec_calls"] for s in twin.forward_last_stats())
    launch(arrays, per_group_tiling(tiling), twin.UB_910B, 48)
    per_group = max(s["vec_calls"] for s in twin.forward_last_stats())
    assert batched * 2 <= per_group, (batched, per_group)
