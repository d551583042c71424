"""The AscendC GroupNormSiluMs forward kernel (GroupNorm, then optionally SiLU/Swish, with
float32 mean/rstd), run on the CPU twin against the float64 reference: every tiling mode x
the five dtype pairs x SiLU off / on / on with swish_scale != 1, the shape classes, results
bit-identical across core counts and block schedules, the host's input checks, and the
twin's rules for the vector math the forward adds (Exp, Sqrt, Div)."""
import contextlib
import math
import re

import numpy as np
import pytest

from ms_groupnorm import reference
import twin
from test_ascendc_twin import as_float64, storage

# (x dtype, gamma/beta dtype, tolerance on y relative to max(1, max |y|)). mean and rstd are
# float32 computed from the same rounded inputs as the reference, so their tolerance does not
# depend on the pair; y's is the rounding of the stored output (half an ulp) plus fp32 work.
DTYPES = {
    "fp32": ("float32", "float32", 2e-6),
    "fp16": ("float16", "float16", 1e-3),
    "bf16": ("bfloat16", "bfloat16", 8e-3),
    "fp16_fp32": ("float16", "float32", 1e-3),
    "bf16_fp32": ("bfloat16", "float32", 8e-3),
}
MEAN_TOL = 2e-6  # |mean error| / max(1, |mean|)
RSTD_TOL = 2e-6  # relative

# (activate_silu, swish_scale)
ACTIVATIONS = {"plain": (False, 1.0), "silu": (True, 1.0), "swish_1.7": (True, 1.7)}

SMALL_UB = 32 * 1024  # forces the chunked mode on shapes small enough to run fast

# name: (shape, G, core_num, ub_bytes, expected mode), the mode for every dtype pair.
CASES = {
    "resident_unaligned_hw": ((2, 8, 3, 3), 2, 4, twin.UB_910B, "group_resident"),
    "resident_aligned_hw": ((3, 6, 32), 3, 4, twin.UB_910B, "group_resident"),
    "resident_g_equals_c": ((2, 6, 5, 5), 6, 48, twin.UB_910B, "group_resident"),
    "resident_g1_rank4": ((2, 5, 7, 9), 1, 3, twin.UB_910B, "group_resident"),
    "resident_rank5": ((2, 4, 3, 4, 5), 2, 48, twin.UB_910B, "group_resident"),
    "resident_hw1_rank2": ((3, 12), 3, 48, twin.UB_910B, "group_resident"),
    "resident_hw1_g_equals_c": ((2, 6, 1), 6, 4, twin.UB_910B, "group_resident"),
    "resident_ng_below_cores": ((1, 4, 50), 2, 48, twin.UB_910B, "group_resident"),
    "resident_ng_above_cores": ((4, 16, 6), 8, 5, twin.UB_910B, "group_resident"),
    # groups of 3 rows of 7x7, 6 a block: four group loads in flight (the deep queue, xBuffers 5)
    "resident_deep_loads": ((6, 12, 49), 4, 4, twin.UB_910B, "group_resident"),
    # the same groups, 3 a block (4 on the tail blocks): two loads ahead through three x buffers
    "resident_two_ahead": ((7, 12, 49), 4, 8, twin.UB_910B, "group_resident"),
    # rows of 12 at a pitch of 16: one Mul and one Add (mask 12, a repeat a row) scale and shift them
    "resident_short_rows": ((3, 48, 12), 3, 4, twin.UB_910B, "group_resident"),
    "resident_stats_in_two_batches": ((2, 300, 2), 300, 2, twin.UB_910B, "group_resident"),  # 300 > 256
    "chunked_910b_ub": ((2, 2, 20000), 1, 2, twin.UB_910B, "chunked"),
    "chunked_unaligned": ((3, 2, 1999), 2, 4, SMALL_UB, "chunked"),
    "chunked_many_short_rows": ((1, 600, 5), 1, 48, SMALL_UB, "chunked"),
    "chunked_hw1_vector_coef": ((2, 3000), 1, 4, SMALL_UB, "chunked"),
    "chunked_ng_above_cores": ((3, 4, 1500), 2, 4, SMALL_UB, "chunked"),
    "chunked_split_g1": ((1, 3, 5000), 1, 48, SMALL_UB, "chunked"),  # N * G = 1 < 48: slices over blocks
    "chunked_split_uneven": ((2, 6, 1777), 3, 40, SMALL_UB, "chunked"),
    "chunked_split_pairs": ((1, 21, 700), 1, 16, SMALL_UB, "chunked"),  # 21 chunks: slices of 2, the last of 1
    # too large for mode 0: the part ring, each group's parts resident between the passes
    "chunked_staged_groups": ((3, 8, 3136), 2, 2, twin.UB_910B, "chunked"),
    # the part ring with partial residency: 12 one-row parts, some read twice (16-bit: 5 resident in 7 slots)
    "ring_partial": ((4, 12, 1024), 1, 2, SMALL_UB, "chunked"),
    # the part ring with parts of two padded rows (600 of 608), 6 of 10 resident in 8 slots (16-bit)
    "ring_parts_of_rows": ((4, 20, 600), 1, 2, SMALL_UB, "chunked"),
    # short rows (HxW 5) in groups too large for mode 0: the part ring, a part's rows one batch for the
    # vector unit (bcastElems > 0); D = 402, so group 1's channels start unaligned in the block's
    # gamma/beta arrays (its coefficient tables on the scalar unit, group 0's on the vector unit)
    "ring_row_batches": ((2, 1206, 5), 3, 2, SMALL_UB, "chunked"),
    # the same path, one group's x times 2^120 (SCALED_GROUP_CASES): its rows' sums overflow fp32, so
    # each row's statistics take the scaled path on their own, and y the rescaled one
    "ring_rows_rescaled_group": ((2, 402, 5), 1, 2, SMALL_UB, "chunked"),
    # HxW = 1 (gamma/beta along the row), too large for mode 0: the whole group in one x buffer
    "staged_hw1_vector_coef": ((3, 1352), 1, 1, 40 * 1024, "chunked"),  # staged with 16-bit gamma/beta
    # HxW = 1 in batches of groups (tiling groupRows): a small UB makes several batches a block (groups of
    # 2: a batch's columns, group_norm_silu_ms_group_columns.h)
    "rows_batches_small_ub": ((40, 64), 32, 2, SMALL_UB, "group_resident"),
    # the same, one group's x times 2^120 (SCALED_GROUP_CASES): its sum of squares overflows fp32, so
    # its batch takes the rescaled path
    "rows_rescaled_group": ((6, 16), 8, 2, twin.UB_910B, "group_resident"),
    # batches of groups of 15 channels (60 bytes in fp32): rows spread by Gather, several batches a block
    # (groups of 2..8 channels, as rows_batches_small_ub's, go as columns)
    "rows_spread_by_gather": ((40, 120), 8, 2, SMALL_UB, "group_resident"),
    # groups of one channel (D = 1, HxW 9) in batches of rows: 960 groups, several batches a block, groups
    # from x itself and groups of the two passes in one batch
    "channel_rows_batches": ((40, 24, 9), 24, 2, SMALL_UB, "group_resident"),
    # the same path, one group's x times 2^120 (SCALED_GROUP_CASES): its sums overflow fp32, so its
    # batch takes the rare path for it
    "channel_rows_rescaled_group": ((30, 20, 100), 20, 3, twin.UB_910B, "group_resident"),
    # batches of groups of 257 channels: a DMA burst a row (Gather is for rows under 64 elements)
    "rows_long_groups": ((11, 257), 1, 2, twin.UB_910B, "group_resident"),
    "empty_hw0": ((2, 4, 0), 2, 48, twin.UB_910B, "empty_groups"),
    "empty_c0": ((3, 0, 4), 1, 48, twin.UB_910B, "empty_groups"),
}


def silu(y, scale):
    return y / (1.0 + np.exp(-scale * y))


def make_inputs(shape, data_dtype, param_dtype, seed, offset=0.75):
    """Kernel storage arrays and their exact float64 values (a non-zero mean, so that the
    centring matters)."""
    rng = np.random.default_rng(seed)
    C = shape[1]
    arrays = {"x": storage(rng.standard_normal(shape) * 1.5 + offset, data_dtype),
              "gamma": storage(rng.standard_normal(C) + 1.0, param_dtype),
              "beta": storage(rng.standard_normal(C) * 0.5, param_dtype)}
    exact = {name: as_float64(a, data_dtype if name == "x" else param_dtype) for name, a in arrays.items()}
    return arrays, exact


def shifted_inputs(shape, dtype_key, data, seed, channel_period):
    """make_inputs for the batched paths' tests, x shifted by ``data``: 'centred' (mean 0.75: most rows'
    moments from x itself), 'big_mean' (mean 3000: every row's two passes), any other name a mean of
    40 * (c % channel_period) added by channel (rows of both kinds in one batch)."""
    data_dtype, param_dtype, _ = DTYPES[dtype_key]
    arrays, exact = make_inputs(shape, data_dtype, param_dtype, seed, offset=3000.0 if data == "big_mean" else 0.75)
    if data not in ("centred", "big_mean"):
        x = exact["x"] + 40.0 * (np.arange(shape[1]) % channel_period)[None, :, None]
        arrays["x"] = storage(x, data_dtype)
        exact["x"] = as_float64(arrays["x"], data_dtype)
    return arrays, exact


# Cases whose first group's x is scaled by 2^120 (exact in fp32 and bf16; fp16 cannot hold it).
SCALED_GROUP_CASES = {"rows_rescaled_group", "ring_rows_rescaled_group", "channel_rows_rescaled_group"}
SCALED_GROUP_FACTOR = 2.0 ** 120


def case_inputs(case, data_dtype, param_dtype, seed):
    """make_inputs for CASES[case], with SCALED_GROUP_CASES' first group scaled."""
    shape, G = CASES[case][:2]
    arrays, exact = make_inputs(shape, data_dtype, param_dtype, seed)
    if case in SCALED_GROUP_CASES:
        assert data_dtype != "float16", "2^120 is beyond fp16"
        first = exact["x"].copy()
        first[0, :shape[1] // G] *= SCALED_GROUP_FACTOR
        arrays["x"] = storage(first, data_dtype)
        exact["x"] = as_float64(arrays["x"], data_dtype)
    return arrays, exact


def expected(exact, G, activation, eps=1e-5):
    activate, scale = ACTIVATIONS[activation]
    y, mean, rstd = reference.forward(exact["x"], exact["gamma"], exact["beta"], G, eps)
    return (silu(y, scale) if activate else y), mean, rstd


def run(shape, G, dtype_key, activation="silu", core_num=48, ub_bytes=twin.UB_910B, data_seed=3,
        eps=1e-5, **launch):
    data_dtype, param_dtype, _ = DTYPES[dtype_key]
    arrays, exact = make_inputs(shape, data_dtype, param_dtype, data_seed)
    activate, scale = ACTIVATIONS[activation]
    y, mean, rstd, tiling = twin.twin_forward(arrays["x"], arrays["gamma"], arrays["beta"], G, eps=eps,
                                             activate_silu=activate, swish_scale=scale, data_dtype=data_dtype,
                                             param_dtype=param_dtype, ub_bytes=ub_bytes, core_num=core_num,
                                             **launch)
    return (y, mean, rstd), tiling, exact


def errors(got, want, data_dtype):
    y, mean, rstd = got
    y_ref, mean_ref, rstd_ref = want
    y64 = as_float64(y, data_dtype)
    y_err = float(np.max(np.abs(y64 - y_ref), initial=0.0) / max(1.0, float(np.max(np.abs(y_ref), initial=0.0))))
    mean_err = float(np.max(np.abs(mean - mean_ref) / np.maximum(1.0, np.abs(mean_ref)), initial=0.0))
    rstd_err = float(np.max(np.abs(rstd - rstd_ref) / np.abs(rstd_ref), initial=0.0))
    return y_err, mean_err, rstd_err


@pytest.mark.parametrize("activation", list(ACTIVATIONS))
@pytest.mark.parametrize("dtype_key", list(DTYPES))
@pytest.mark.parametrize("case", [c for c in CASES if not c.startswith("empty")])
def test_forward_matches_the_float64_reference(case, dtype_key, activation):
    shape, G, cores, ub, mode = CASES[case]
    got, tiling, exact = run(shape, G, dtype_key, activation, core_num=cores, ub_bytes=ub)
    assert twin.FORWARD_MODE_NAMES[tiling["mode"]] == mode
    assert got[0].dtype == storage(np.zeros(1), DTYPES[dtype_key][0]).dtype and got[0].shape == shape
    assert got[1].dtype == np.float32 and got[1].shape == (shape[0], G)  # float32 statistics for every pair
    assert got[2].dtype == np.float32 and got[2].shape == (shape[0], G)
    y_err, mean_err, rstd_err = errors(got, expected(exact, G, activation), DTYPES[dtype_key][0])
    assert y_err <= DTYPES[dtype_key][2], (y_err, mean_err, rstd_err)
    assert mean_err <= MEAN_TOL, mean_err
    assert rstd_err <= RSTD_TOL, rstd_err


@pytest.mark.parametrize("case", ["empty_hw0", "empty_c0"])
def test_empty_groups_give_mean_0_and_rstd_nan(case):
    shape, G, cores, ub, mode = CASES[case]
    (y, mean, rstd), tiling, _ = run(shape, G, "bf16_fp32", core_num=cores, ub_bytes=ub)
    assert twin.FORWARD_MODE_NAMES[tiling["mode"]] == mode and y.size == 0
    assert np.all(mean == 0.0) and np.all(np.isnan(rstd))  # as the CPU kernel and aclnnGroupNorm document


def test_no_samples_launches_one_idle_block():
    (y, mean, rstd), tiling, _ = run((0, 4, 3), 2, "fp32")
    assert tiling["numTasks"] == 0 and tiling["blockDim"] == 1 and y.size == mean.size == rstd.size == 0


# ---------------------------------------------------------------- modes on the real UB
@pytest.mark.parametrize("core_num", [40, 48])
def test_sd_like_shapes_select_the_expected_mode_on_the_910b_ub(core_num):
    """What the 192 KiB UB decides for the SD-like shapes (x fp16, gamma fp32)."""
    def mode(shape):
        return twin.FORWARD_MODE_NAMES[twin.forward_tiling(*shape, "float16", "float32", core_num=core_num)["mode"]]

    modes = {shape: mode(shape)
             for shape in [(2, 64, 1024, 32), (4, 256, 1024, 32), (2, 320, 4096, 32), (1, 3, 50176, 1),
                           (4, 1280, 64, 32), (8, 512, 1, 32)]}
    assert modes == {(2, 64, 1024, 32): "group_resident", (4, 256, 1024, 32): "group_resident",
                     (2, 320, 4096, 32): "chunked", (1, 3, 50176, 1): "chunked",
                     (4, 1280, 64, 32): "group_resident", (8, 512, 1, 32): "group_resident"}


def test_ub_plan_fits_and_uses_the_reserve_rule():
    for shape in [(2, 64, 1024, 32), (2, 320, 4096, 32), (1, 3, 50176, 1), (2, 20000, 1, 1)]:
        for data, param in [("float32", "float32"), ("bfloat16", "float32")]:
            t = twin.forward_tiling(*shape, data, param)
            assert 0 < t["ubBytes"] <= twin.UB_910B - twin.UB_RESERVE
            if t["mode"] == 1:
                assert t["chunkElems"] % 16 == 0 and t["chunksPerRow"] * t["chunkElems"] >= t["rowLen"]


def test_a_resident_group_larger_than_the_copy_row_limit_is_chunked():
    """DataCopyPad takes at most 4095 rows (blockCount): a group of more channels is chunked
    even when it would fit in UB."""
    t = twin.forward_tiling(1, 4096, 2, 1, "float16", ub_bytes=4 * 1024 * 1024)
    assert twin.FORWARD_MODE_NAMES[t["mode"]] == "chunked"
    t = twin.forward_tiling(1, 4095, 2, 1, "float16", ub_bytes=4 * 1024 * 1024)
    assert twin.FORWARD_MODE_NAMES[t["mode"]] == "group_resident"


# ---------------------------------------------------------------- numerics
@pytest.mark.parametrize("shape, mode", [((2, 2, 20000), "chunked"), ((2, 4, 300), "group_resident")])
def test_statistics_survive_a_mean_far_larger_than_the_spread(shape, mode):
    """x = 3000 + 0.01 * noise in float32: the shifted two-pass statistics keep rstd and y to
    fp32 accuracy, where the one-pass formula (sum x^2 - (sum x)^2 / M) in float32 loses every
    digit of the variance (and centring with the rounded mean would cost y 1e-2)."""
    rng = np.random.default_rng(5)
    G = 1
    x = (3000.0 + 0.01 * rng.standard_normal(shape)).astype(np.float32)
    gamma = np.ones(shape[1], np.float32)
    beta = np.zeros(shape[1], np.float32)
    y, mean, rstd, tiling = twin.twin_forward(x, gamma, beta, G, activate_silu=False)
    assert twin.FORWARD_MODE_NAMES[tiling["mode"]] == mode
    y_ref, mean_ref, rstd_ref = reference.forward(x.astype(np.float64), None, None, G)
    assert np.max(np.abs(rstd - rstd_ref) / rstd_ref) < 1e-6
    assert np.max(np.abs(mean - mean_ref)) <= 1.3e-4  # half an ulp of 3000 in float32: the stored mean's rounding
    assert np.max(np.abs(y - y_ref)) < 1e-5
    flat = x.reshape(2, -1)
    naive_var = (np.sum(flat * flat, axis=1, dtype=np.float32) / np.float32(flat.shape[1]) -
                 np.square(np.sum(flat, axis=1, dtype=np.float32) / np.float32(flat.shape[1])))
    naive_rstd = 1.0 / np.sqrt(np.maximum(naive_var, 0) + 1e-5)
    assert np.max(np.abs(naive_rstd - rstd_ref.ravel()) / rstd_ref.ravel()) > 0.5  # what the safe method avoids


def test_swish_saturates_without_nan():
    """Large |s * y|: exp overflows to inf and y / inf is the limit 0; no NaN."""
    shape, G = (1, 4, 64), 2
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    gamma = np.full(4, 50.0, np.float32)
    beta = np.zeros(4, np.float32)
    y, _, _, _ = twin.twin_forward(x, gamma, beta, G, swish_scale=40.0)
    want = reference.forward(x.astype(np.float64), gamma, beta, G)[0]
    want = want * (0.5 * (1 + np.tanh(0.5 * 40.0 * want)))  # a form without overflow
    assert not np.any(np.isnan(y)) and np.max(np.abs(y - want)) / np.max(np.abs(want)) < 2e-5


# ---------------------------------------------------------------- determinism
SCHEDULES = [("concurrent", 0, "immediate"), ("reverse", 0, "immediate"), ("shuffle", 11, "immediate"),
             ("interleave", 5, "immediate"), ("forward", 0, "deferred"), ("interleave", 9, "deferred")]


def test_groups_are_split_into_slices_only_when_chunked_and_fewer_than_the_cores():
    split = {case: twin.forward_tiling(int(np.prod(shape[:1])), shape[1], int(np.prod(shape[2:], dtype=np.int64)), G,
                                      ub_bytes=ub, core_num=cores)["sliceCount"]
             for case, (shape, G, cores, ub, _) in CASES.items()}
    assert split["chunked_split_g1"] > 1 and split["chunked_split_uneven"] > 1 and split["chunked_many_short_rows"] > 1
    pairs = twin.forward_tiling(1, 21, 700, 1, ub_bytes=SMALL_UB, core_num=16)
    assert (pairs["sliceCount"], pairs["sliceItems"]) == (11, 2)  # uneven: the last slice has one chunk
    assert split["chunked_910b_ub"] == split["chunked_unaligned"] == 1  # N * G >= cores
    assert split["resident_ng_below_cores"] == 1  # a resident group is never split
    t = twin.forward_tiling(1, 3, 5000, 1, ub_bytes=SMALL_UB, core_num=48)
    assert t["numTasks"] == t["sliceCount"] and t["sliceItems"] & (t["sliceItems"] - 1) == 0  # a power of two


def test_ring_plans_on_the_910b_ub():
    """Whole groups too large for mode 0 go through the part ring: resident between the passes
    where they fit with a slot to spare (x read once), else partly resident (8x320x64x64 fp32:
    160 KB of x in a 191 KB UB); a split group's slice is staged."""
    plan = {(shape, data): twin.forward_tiling(*shape, data, "float32", core_num=48)
            for shape, data in [((16, 128, 3136, 32), "float32"), ((16, 128, 3136, 32), "float16"),
                                ((8, 320, 4096, 32), "float16"), ((8, 320, 4096, 32), "float32"),
                                ((1, 3, 50176, 1), "float32")]}
    assert all(t["mode"] == 1 for t in plan.values())
    full = [plan[k] for k in [((16, 128, 3136, 32), "float32"), ((16, 128, 3136, 32), "float16"),
                              ((8, 320, 4096, 32), "float16")]]
    assert all(0 < t["ringParts"] == t["ringResident"] < t["xBuffers"] <= 8 for t in full)
    partial = plan[(8, 320, 4096, 32), "float32"]
    assert 0 < partial["ringResident"] < partial["ringParts"] and partial["xBuffers"] <= 8
    assert all(t["ubBytes"] <= twin.UB_910B - twin.UB_RESERVE for t in plan.values())
    split = plan[(1, 3, 50176, 1), "float32"]
    assert split["sliceCount"] > 1 and split["staged"] == 1 and split["ringParts"] == 0
    # a group a block (1x512x64x64 G32 fp32: 32 groups, 256 KB each): y buffers before resident parts, as
    # no next group's work runs beside this one's last stores (4 of 16 resident with 2 y buffers: 24.9 us
    # on the twin; 2 of 16 with 4: 20.3 us)
    one = twin.forward_tiling(1, 512, 4096, 32, "float32", "float32", core_num=48)
    assert one["tasksPerCore"] == 1 and one["tailCores"] == 0 and one["ringParts"] == 16
    assert one["yBuffers"] == 4 and one["ringResident"] == 2, (one["yBuffers"], one["ringResident"])


def test_short_groups_a_group_at_a_time_keep_four_loads_in_flight():
    """Mode 0 a group at a time with at least four groups a block: five x buffers (four loads in flight
    while one group is computed, the deep queue), which the twin's block finishes sooner than with three
    (32x96x7x7 G32 fp16: 22 groups a block of 147 elements, each computed in less than a load's latency),
    with the same bits; a block of fewer groups keeps three."""
    deep = twin.forward_tiling(32, 96, 49, 32, "float16", core_num=48)
    assert deep["mode"] == 0 and deep["groupRows"] == 0 and deep["tasksPerCore"] >= 4 and deep["xBuffers"] == 5
    few = twin.forward_tiling(6, 12, 49, 4, "float16", core_num=8)
    assert few["mode"] == 0 and few["tasksPerCore"] < 4 and few["xBuffers"] == 3
    rng = np.random.default_rng(5)
    x = rng.standard_normal((32, 96, 49)).astype(np.float16)
    gamma = rng.standard_normal(96).astype(np.float16)
    beta = rng.standard_normal(96).astype(np.float16)
    ends, outputs = [], []
    for buffers in (5, 3):
        y, mean, rstd = (np.zeros_like(x), np.zeros((32, 32), np.float32), np.zeros((32, 32), np.float32))
        twin.forward_launch([x, gamma, beta, y, mean, rstd], {**deep, "xBuffers": buffers}, core_num=48)
        ends.append(max(s["end_ns"] for s in twin.forward_last_stats()))
        outputs.append((y.tobytes(), mean.tobytes(), rstd.tobytes()))
    assert outputs[0] == outputs[1]
    assert ends[0] < 0.85 * ends[1], ends


def test_ring_chunks_do_not_depend_on_the_split():
    """The ring picks the chunk (its rows) before the split is decided, so a group split over
    the cores computes the same chunk statistics as the ring on one core."""
    for shape, data in [((3, 8, 3136, 2), "bfloat16"), ((4, 12, 1024, 1), "float16"), ((4, 20, 600, 1), "float32")]:
        ub = twin.UB_910B if shape[2] == 3136 else SMALL_UB
        one, many = (twin.forward_tiling(*shape, data, "float32", ub_bytes=ub, core_num=c) for c in (1, 48))
        assert one["ringParts"] > 0 and many["sliceCount"] > 1 and many["ringParts"] == 0
        assert (one["chunkElems"], one["rowsPerItem"], one["chunksPerRow"]) == \
            (many["chunkElems"], many["rowsPerItem"], many["chunksPerRow"])


def test_a_launch_of_few_long_rows_gets_smaller_chunks():
    """Few groups of long rows (1x3x224x224 G1: three rows of 50176) are chunked into at least 48
    chunks (not below 1024 elements), so a split spreads each group over that many blocks (48 on
    48 cores); the chunk comes from the shape, dtypes and UB, the same on any core count."""
    for data in ("float32", "float16"):
        plans = [twin.forward_tiling(1, 3, 50176, 1, data, core_num=c) for c in (1, 8, 48)]
        assert len({(t["chunkElems"], t["chunksPerRow"]) for t in plans}) == 1
        assert 3 * plans[0]["chunksPerRow"] >= 48 and plans[0]["chunkElems"] >= 1024
        assert plans[2]["sliceCount"] == 48  # more blocks than the largest chunks that fit would give
    many = twin.forward_tiling(64, 3, 50176, 1, "float32", core_num=48)  # enough chunks: the largest that fit
    assert many["chunkElems"] > twin.forward_tiling(1, 3, 50176, 1, "float32", core_num=48)["chunkElems"]


def test_channel_coefficients_pay_one_vector_barrier_per_group_not_per_row():
    """Mode 0 with many short rows (4x1280x8x8 G32: 40 rows of 64 per group) scales every row,
    then shifts every row: an Adds depends only on its own row's Muls, so the compiler's V barrier
    between the two comes once (alternating Muls/Adds row by row paid one per row)."""
    shape, G = (2, 1280, 64), 32
    got, tiling, _ = run(shape, G, "fp32", core_num=1)
    assert twin.FORWARD_MODE_NAMES[tiling["mode"]] == "group_resident" and tiling["rows"] == 40
    barriers = twin.forward_last_stats()[0]["auto_v_barriers"]
    assert barriers < 20 * 2 * G, barriers  # 64 groups; per row it was more than 40 a group


@pytest.mark.parametrize("case, short", [("resident_short_rows", True), ("resident_unaligned_hw", False)])
def test_short_rows_scale_and_shift_in_one_instruction_each(case, short):
    """Mode 0 with rows of one vector repeat at most: every row's scale and shift are broadcast
    into a 32-byte block (Brcb), and one Mul and one Add (repeat form) scale and shift all the rows
    of a group, instead of a Muls and an Adds a row (4x1280x8x8: 80 instructions a group). Not
    where a group's gamma/beta do not start 32-byte aligned in the block's arrays (D % 8 != 0)."""
    shape, G, cores, ub, _ = CASES[case]
    got, tiling, _ = run(shape, G, "fp16", core_num=1, ub_bytes=ub)
    assert (tiling["bcastElems"] > 0) == short
    if short:
        # a group: Cast in, Adds (- shift), the row sums (one WholeReduceSum of every row, at a pitch)
        # and their ReduceSum, Adds (- mean), Mul (squares), the same two, Duplicate/Sqrt/Div (rstd),
        # the 5 of the scale and shift, SiLU's 4, Cast out; a block: the 1.0 constant, gamma/beta casts
        calls = twin.forward_last_stats()[0]["vec_calls"]
        assert tiling["rows"] <= 255 and tiling["rowLen"] <= 64
        assert calls == 3 + shape[0] * G * (2 * 2 + 7 + 5 + 5), calls
    shape, G = (2, 1280, 64), 32  # 40 rows of 64 a group: 13 + 5 instructions a group, not 13 + 80
    run(shape, G, "fp32", core_num=1)
    assert twin.forward_last_stats()[0]["vec_calls"] <= 2 * G * 20


@pytest.mark.parametrize("case", ["chunked_staged_groups", "chunked_split_g1", "ring_partial", "ring_parts_of_rows"])
def test_staged_tasks_read_x_once(case):
    """The GM bytes the blocks read: x once, plus the parts of the ring that are not resident
    once more, gamma/beta and the slice entries (a streamed chunked plan reads x twice)."""
    shape, G, cores, ub, _ = CASES[case]
    got, tiling, _ = run(shape, G, "bf16_fp32", core_num=cores, ub_bytes=ub)
    reads = sum(s["gm_read_bytes"] for s in twin.forward_last_stats())
    x_bytes = 2 * int(np.prod(shape))
    if tiling["ringParts"]:  # rows of the parts after the resident ones are read again
        again = tiling["rows"] - min(tiling["rows"], tiling["ringResident"] * tiling["partItems"] * tiling["rowsPerItem"])
        assert 0 <= again < tiling["rows"] and (again > 0) == case.startswith("ring")
        x_bytes = x_bytes * (tiling["rows"] + again) // tiling["rows"]
    extra = tiling["usedCores"] * (2 * 4 * shape[1] + 8 * 4 * 64 + 4)  # gamma, beta, slice entries, the shift
    assert x_bytes <= reads <= x_bytes + extra, (reads, x_bytes)


@pytest.mark.parametrize("case", ["resident_ng_above_cores", "resident_short_rows", "resident_hw1_rank2",
                                  "chunked_ng_above_cores",
                                  "chunked_split_g1", "chunked_split_uneven", "chunked_split_pairs",
                                  "chunked_staged_groups", "ring_parts_of_rows"])
def test_bit_identical_across_core_counts_and_schedules(case):
    """Also across the split of a group into slices (48 cores) or not (1 core): the slices'
    statistics combine in the same pairwise tree as one block's."""
    shape, G, _, ub, _ = CASES[case]
    results = []
    for cores in (1, 3, 7, 48):
        for policy, seed, execution in SCHEDULES:
            got, _, _ = run(shape, G, "bf16_fp32", core_num=cores, ub_bytes=ub, policy=policy, seed=seed,
                            execution=execution)
            results.append(got)
    for other in results[1:]:
        for a, b in zip(results[0], other):
            assert a.tobytes() == b.tobytes()


# ---------------------------------------------------------------- launches the kernel must not survive
def test_a_launch_with_a_short_output_buffer_faults():
    """The kernel writes exactly y, mean and rstd: a y buffer declared one element short is
    caught as an out-of-bounds GM write, not silently overrun."""
    shape, G = (2, 4, 10), 2
    arrays, _ = make_inputs(shape, "float32", "float32", 1)
    tiling = twin.forward_tiling(2, 4, 10, G)
    y = np.zeros(shape, np.float32)
    mean = np.zeros((2, G), np.float32)
    rstd = np.zeros((2, G), np.float32)
    buffers = [arrays["x"], arrays["gamma"], arrays["beta"], y, mean, rstd]
    sizes = [b.nbytes for b in buffers]
    twin.forward_launch(buffers, tiling, buffer_bytes=sizes)
    for index in (3, 4, 5):
        short = list(sizes)
        short[index] -= 4
        with pytest.raises(twin.TwinFault, match="outside|GM"):
            twin.forward_launch(buffers, tiling, buffer_bytes=short)


def test_a_ub_smaller_than_the_plan_faults():
    shape, G = (2, 64, 1024), 32
    arrays, _ = make_inputs(shape, "float32", "float32", 1)
    tiling = twin.forward_tiling(2, 64, 1024, G)
    outs = [np.zeros(shape, np.float32), np.zeros((2, G), np.float32), np.zeros((2, G), np.float32)]
    with pytest.raises(twin.TwinFault, match="UB overflow"):
        twin.forward_launch([arrays["x"], arrays["gamma"], arrays["beta"], *outs], tiling,
                           ub_bytes=tiling["ubBytes"] - 32)


# ---------------------------------------------------------------- host checks
GOOD = ((2, 6, 4), (6,), (6,), 3)


@pytest.mark.parametrize("change, status, words", [
    ({0: None}, 5, "input 'x' is missing"),
    ({1: None}, 5, "input 'gamma' is missing"),
    ({2: None}, 5, "input 'beta' is missing"),
    ({3: None}, 5, "attribute 'num_groups' is missing"),
    ({0: (6,)}, 1, "input 'x' must have rank >= 2"),
    ({0: (2, 6, -1)}, 1, "input 'x' has a negative dimension"),
    ({3: 0}, 1, "'num_groups' must be > 0"),
    ({3: -3}, 1, "'num_groups' must be > 0"),
    ({3: 4}, 1, "'num_groups' (4) must divide C = 6"),
    ({1: (5,)}, 1, "input 'gamma' must have C = 6 elements"),
    ({2: (2, 6)}, 1, "input 'beta' must have C = 6 elements"),
])
def test_host_rejects_bad_inputs_naming_the_parameter(change, status, words):
    args = [change.get(i, GOOD[i]) for i in range(4)]
    got, message = twin.forward_check_inputs(*args)
    assert got == status and words in message and message.startswith("GroupNormSiluMs: ")


def test_host_accepts_good_inputs():
    assert twin.forward_check_inputs(*GOOD) == (0, "")
    assert twin.forward_check_inputs((2, 0, 4), (0,), (0,), 1)[0] == 0


@pytest.mark.parametrize("x, gamma, beta, ok", [
    ("float32", "float32", "float32", True), ("float16", "float16", "float16", True),
    ("bfloat16", "bfloat16", "bfloat16", True), ("float16", "float32", "float32", True),
    ("bfloat16", "float32", "float32", True),
    ("float32", "float16", "float16", False), ("float16", "bfloat16", "bfloat16", False),
    ("bfloat16", "float16", "float16", False), ("float16", "float32", "float16", False),
    ("float32", "float32", "bfloat16", False),
])
def test_host_dtype_rule(x, gamma, beta, ok):
    status, message = twin.forward_check_dtypes(x, gamma, beta)
    assert (status == 0) == ok
    if not ok:
        assert status == 2 and ("'gamma'" in message or "'beta'" in message)
        # the tiling takes one parameter dtype: a gamma/beta mismatch is CheckDtypes' alone
        with pytest.raises(ValueError, match="bad dtype pair") if gamma == beta else contextlib.nullcontext():
            twin.forward_tiling(2, 4, 3, 2, x, gamma)


@pytest.mark.parametrize("eps, swish_scale, ok", [
    (1e-5, 1.0, True), (1e-30, -2.5, True), (0.5, 0.0, True),
    (0.0, 1.0, False), (-1e-5, 1.0, False), (math.nan, 1.0, False), (math.inf, 1.0, False),
    (1e-5, math.inf, False), (1e-5, -math.inf, False), (1e-5, math.nan, False),
])
def test_host_attribute_rule(eps, swish_scale, ok):
    """eps must be finite and > 0, swish_scale finite: a direct aclnn caller gets the refusal our
    Python layer gives, not an infinite or NaN rstd (CheckAttributes, which the tiling applies)."""
    with contextlib.nullcontext() if ok else pytest.raises(ValueError, match="bad attribute"):
        twin.forward_tiling(2, 4, 3, 2, eps=eps, swish_scale=swish_scale)


# ---------------------------------------------------------------- twin rules of Exp / Sqrt / Div
def test_twin_math_values():
    a = np.linspace(-3, 3, 32).astype(np.float32)
    b = np.linspace(0.5, 2, 32).astype(np.float32)
    e, s, d = twin.forward_math_probe("math_values", np.abs(a), b, execution="deferred")
    assert np.allclose(e, np.exp(np.abs(a)), rtol=1e-6) and np.array_equal(s, np.sqrt(np.abs(a)))
    assert np.array_equal(d, np.abs(a) / b)


@pytest.mark.parametrize("probe, words", [("exp_misaligned", "not 32-byte aligned"),
                                          ("sqrt_overrun", "overrun the buffer"),
                                          ("div_negative_count", "negative count")])
def test_twin_math_rules(probe, words):
    with pytest.raises(twin.TwinFault, match=words):
        twin.forward_math_probe(probe, np.ones(32, np.float32), np.ones(32, np.float32))


# ---------------------------------------------------------------- the registration contract
# What the MindSpore wiring (aclnnGroupNormSiluMs) is written against; CANN generates the
# aclnn API from the OpDef in this order: inputs, attributes, outputs.
CONTRACT = {"inputs": ["x", "gamma", "beta"], "outputs": ["y", "mean", "rstd"],
            "attrs": [("num_groups", "REQUIRED", "Int"), ("eps", "OPTIONAL", "Float"),
                      ("activate_silu", "OPTIONAL", "Bool"), ("swish_scale", "OPTIONAL", "Float")]}


def test_op_definition_matches_the_contract():
    root = twin.ascendc_dir()
    source = (root / "op_host" / "group_norm_silu_ms.cpp").read_text()
    assert re.search(r"OP_ADD\(GroupNormSiluMs\)", source)
    assert re.findall(r'this->Input\("(\w+)"\)\.ParamType\(REQUIRED\)', source) == CONTRACT["inputs"]
    assert re.findall(r'this->Output\("(\w+)"\)', source) == CONTRACT["outputs"]
    assert re.findall(r'this->Attr\("(\w+)"\)\.AttrType\((\w+)\)\.(\w+)\(', source) == CONTRACT["attrs"]
    # mean and rstd are float32 for all five pairs; y follows x
    assert re.search(r'Output\("mean"\)[^;]*DataType\(stat\)', source)
    assert re.search(r'Output\("rstd"\)[^;]*DataType\(stat\)', source)
    assert re.search(r"stat\(data\.size\(\), ge::DT_FLOAT\)", source)
    assert re.search(r'Output\("y"\)[^;]*DataType\(data\)', source)
    # the kernel entry takes the GM arguments in the OpDef's order
    kernel = (root / "op_kernel" / "group_norm_silu_ms.cpp").read_text()
    entry = re.search(r"void group_norm_silu_ms\(([^)]*)\)", kernel).group(1)
    params = [p.split()[-1] for p in entry.split(",")]
    assert params == CONTRACT["inputs"] + CONTRACT["outputs"] + ["workspace", "tiling"]
