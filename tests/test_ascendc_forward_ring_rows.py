"""GroupNormSiluMs's part ring with a part's rows one batch for the vector unit (tiling bcastElems > 0
with ringParts > 0, kernel group_norm_silu_ms_ring_rows.h): short channel rows (HxW 5 to 242) in
groups too large for mode 0. The chunks are still the rows and each row's arithmetic is that of a
row at a time, so a launch gives the bits of the same launch with bcastElems 0 (the per-row path of
the same parts and slots), through the two-pass rows, the rows of a large mean, the coefficient
tables on either unit and the rescaled rows of a group beyond fp32's safe range."""
import numpy as np
import pytest

import twin
from test_ascendc_forward_group_rows import launch, same_values
from test_ascendc_forward_twin import (DTYPES, MEAN_TOL, RSTD_TOL, SCALED_GROUP_FACTOR, SMALL_UB, as_float64,
                                       errors, expected, shifted_inputs, storage)

# (shape, G, UB, cores): 7x7, 3x5, 1x17 and 242-long rows; C not a multiple of 8; groups whose
# channels start unaligned in the block's gamma/beta arrays (D 402, 333: scalar coefficient tables)
SHAPES = [((3, 402, 49), 1, SMALL_UB, 2), ((2, 1206, 15), 3, SMALL_UB, 2), ((4, 333, 17), 1, SMALL_UB, 2),
          ((3, 400, 242), 2, twin.UB_910B, 3), ((4, 512, 49), 1, twin.UB_910B, 4), ((2, 999, 49), 3, twin.UB_910B, 3)]


def tiling_for(shape, G, dtype_key, ub, cores, silu=True):
    data_dtype, param_dtype, _ = DTYPES[dtype_key]
    return twin.forward_tiling(shape[0], shape[1], int(np.prod(shape[2:])), G, data_dtype, param_dtype,
                               activate_silu=silu, ub_bytes=ub, core_num=cores)


def inputs(shape, dtype_key, data):
    """'centred', 'big_mean' or 'channel_offsets' (a mean of up to 240 a channel: rows whose mean^2 > var
    take the two passes within a part of other rows)."""
    return shifted_inputs(shape, dtype_key, data, 11, 7)


def assert_batches_keep_the_bits(arrays, exact, tiling, G, dtype_key, ub, cores):
    """The launch with row batches gives the values of the same launch a row at a time (bcastElems 0),
    within the float64 reference's tolerances."""
    batched = launch(arrays, tiling, ub, cores)
    assert same_values(batched, launch(arrays, {**tiling, "bcastElems": 0}, ub, cores))
    y_err, mean_err, rstd_err = errors(batched, expected(exact, G, "silu"), DTYPES[dtype_key][0])
    assert y_err <= DTYPES[dtype_key][2] and mean_err <= MEAN_TOL and rstd_err <= RSTD_TOL, (y_err, mean_err,
                                                                                           rstd_err)


@pytest.mark.parametrize("data", ["centred", "big_mean", "channel_offsets"])
@pytest.mark.parametrize("dtype_key", ["fp32", "fp16", "bf16", "fp16_fp32"])
@pytest.mark.parametrize("shape,G,ub,cores", SHAPES)
def test_row_batches_give_the_bits_of_a_row_at_a_time(shape, G, ub, cores, dtype_key, data):
    tiling = tiling_for(shape, G, dtype_key, ub, cores)
    assert tiling["ringParts"] > 0 and tiling["bcastElems"] > 0 and tiling["chunksPerRow"] == 1
    arrays, exact = inputs(shape, dtype_key, data)
    assert_batches_keep_the_bits(arrays, exact, tiling, G, dtype_key, ub, cores)


@pytest.mark.parametrize("dtype_key", ["fp32", "bf16"])
def test_a_group_out_of_the_safe_range_rescales_its_rows(dtype_key):
    """Group 0's x times 2^120: its rows' sums of squares overflow fp32, each takes the scaled path on
    its own and y the rescaled one; every group keeps the bits of the per-row path."""
    shape, G, ub, cores = (2, 402, 5), 1, SMALL_UB, 2
    data_dtype, _, tolerance = DTYPES[dtype_key]
    arrays, exact = inputs(shape, dtype_key, "centred")
    first = exact["x"].copy()
    first[0] *= SCALED_GROUP_FACTOR
    arrays["x"] = storage(first, data_dtype)
    exact["x"] = as_float64(arrays["x"], data_dtype)
    tiling = tiling_for(shape, G, dtype_key, ub, cores, silu=False)
    assert tiling["ringParts"] > 0 and tiling["bcastElems"] > 0
    batched = launch(arrays, tiling, ub, cores)
    assert same_values(batched, launch(arrays, {**tiling, "bcastElems": 0}, ub, cores))
    y_err, mean_err, rstd_err = errors(batched, expected(exact, G, "plain"), data_dtype)
    assert y_err <= tolerance and mean_err <= MEAN_TOL and rstd_err <= RSTD_TOL
    assert abs(batched[1][0, 0]) > 2.0 ** 110  # the scaled group's mean, in x's units


def test_a_part_costs_a_few_vector_instructions_not_a_few_a_row():
    """4x512x7x7 G1: 512 rows of 49 a group; a row at a time is over a dozen vector instructions a
    row, a batch a few dozen a part."""
    shape, G = (4, 512, 49), 1
    tiling = tiling_for(shape, G, "fp16", twin.UB_910B, 4)
    arrays, _ = inputs(shape, "fp16", "centred")
    launch(arrays, tiling, twin.UB_910B, 4)
    batched = twin.forward_last_stats()[0]["vec_calls"]
    launch(arrays, {**tiling, "bcastElems": 0}, twin.UB_910B, 4)
    per_row = twin.forward_last_stats()[0]["vec_calls"]
    assert per_row >= 12 * 512 and batched * 20 <= per_row, (batched, per_row)


def test_split_groups_keep_a_row_a_chunk():
    """Fewer groups than cores: the groups are split into slices of rows, one row a chunk (the chunks of
    the ring, so the bits do not depend on the core count); a staged slice of 2^k >= 8 rows lands at
    rowPitch by one copy and goes through the vector unit in batches of rows (partItems without the ring)."""
    one, many = (tiling_for((2, 402, 49), 1, "fp32", SMALL_UB, c) for c in (1, 48))
    assert one["ringParts"] > 0 and one["bcastElems"] > 0 and one["chunkElems"] > one["rowPitch"]
    assert many["sliceCount"] > 1 and many["ringParts"] == 0 and many["staged"] == 1
    assert many["partItems"] % 8 == 0 and many["bcastElems"] > 0 and many["sliceItems"] % 8 == 0
    assert many["chunksPerRow"] == one["chunksPerRow"] == 1 and many["rowsPerItem"] == 1


# (shape, G, UB, cores) of staged split slices in batches of rows: 7x7 rows on a small UB, rows of 255
# (not a 32-byte multiple), 300 rows in slices of 8 whose last has 4 (and one of a row: its x - shift
# kept across SyncAll), and 31-long rows in slices of 64
SLICE_SHAPES = [((2, 402, 49), 1, SMALL_UB, 48), ((2, 512, 255), 2, twin.UB_910B, 48),
                ((1, 300, 31), 1, twin.UB_910B, 48), ((1, 300, 31), 1, twin.UB_910B, 7),
                ((1, 297, 31), 1, twin.UB_910B, 48)]


@pytest.mark.parametrize("data", ["centred", "big_mean", "channel_offsets"])
@pytest.mark.parametrize("dtype_key", ["fp32", "fp16", "bf16", "fp16_fp32"])
@pytest.mark.parametrize("shape,G,ub,cores", SLICE_SHAPES)
def test_staged_slices_in_row_batches_give_the_bits_of_a_row_at_a_time(shape, G, ub, cores, dtype_key, data):
    tiling = tiling_for(shape, G, dtype_key, ub, cores)
    if tiling["sliceCount"] == 1:  # (16-bit 1x300x31 fits mode 0)
        assert tiling["mode"] == 0 and dtype_key != "fp32"
        return
    assert tiling["staged"] == 1 and tiling["partItems"] > 0 and tiling["bcastElems"] > 0
    arrays, exact = inputs(shape, dtype_key, data)
    assert_batches_keep_the_bits(arrays, exact, tiling, G, dtype_key, ub, cores)


def test_a_staged_slice_out_of_the_safe_range_rescales_its_rows():
    """A split group's x times 2^120: its slices' rows take the scaled path one by one and its y the
    rescaled one, with the bits of a row at a time."""
    shape, G, ub, cores = (2, 402, 49), 1, SMALL_UB, 48
    arrays, exact = inputs(shape, "fp32", "centred")
    first = exact["x"].copy()
    first[0] *= SCALED_GROUP_FACTOR
    arrays["x"] = storage(first, "float32")
    exact["x"] = as_float64(arrays["x"], "float32")
    tiling = tiling_for(shape, G, "fp32", ub, cores, silu=False)
    assert tiling["sliceCount"] > 1 and tiling["partItems"] > 0 and tiling["bcastElems"] > 0
    batched = launch(arrays, tiling, ub, cores)
    assert same_values(batched, launch(arrays, {**tiling, "bcastElems": 0}, ub, cores))
    y_err, mean_err, rstd_err = errors(batched, expected(exact, G, "plain"), "float32")
    assert y_err <= DTYPES["fp32"][2] and mean_err <= MEAN_TOL and rstd_err <= RSTD_TOL
    assert abs(batched[1][0, 0]) > 2.0 ** 110


def test_a_staged_slice_costs_a_few_round_trips_not_two_a_row():
    """8x512x255 G2 fp16 on 48 cores: slices of 128 rows; a row at a time is two ReduceSum round
    trips a row (the twin's API V -> S waits), batches none."""
    shape, G = (8, 512, 255), 2
    tiling = tiling_for(shape, G, "fp16", twin.UB_910B, 48)
    arrays, _ = inputs(shape, "fp16", "centred")
    launch(arrays, tiling, twin.UB_910B, 48)
    batched = max(s["api_flag_pairs"] for s in twin.forward_last_stats())
    batched_vec = max(s["vec_calls"] for s in twin.forward_last_stats())
    launch(arrays, {**tiling, "bcastElems": 0}, twin.UB_910B, 48)
    per_row = max(s["api_flag_pairs"] for s in twin.forward_last_stats())
    per_row_vec = max(s["vec_calls"] for s in twin.forward_last_stats())
    assert per_row >= 2 * 3 * 128 and batched == 0, (batched, per_row)
    assert batched_vec * 5 <= per_row_vec, (batched_vec, per_row_vec)


def test_a_part_reads_each_row_sum_once_on_the_scalar_unit():
    """4x512x7x7 G1 fp16, centred data: every row's moments come from x itself, and the scalar unit
    reads its two sums once (they enter the cascade as they are checked), not once to check every row
    and again to add it: 4 a row); the rest (the group's shift, statistics, tables) is a few hundred."""
    shape, G = (4, 512, 49), 1
    tiling = tiling_for(shape, G, "fp16", twin.UB_910B, 4)
    arrays, _ = inputs(shape, "fp16", "centred")
    launch(arrays, tiling, twin.UB_910B, 4)
    reads = twin.forward_last_stats()[0]["scalar_ub"]
    assert reads <= 3 * 512, reads
