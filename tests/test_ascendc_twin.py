"""The AscendC GroupNormGradMs kernel, run on the CPU twin, against the float64 reference:
every tiling mode x fp32/fp16/bf16/mixed x output masks, plus bit-identical results
under several block orders and interleavings (the determinism claim)."""
import numpy as np
import pytest

from ms_groupnorm import reference
import twin

# (data dtype, stat dtype, tolerance on dx, tolerance on dgamma/dbeta), tolerances relative
# to max(1, max |reference|). The reference sees the same rounded inputs as the kernel, so
# the error is fp32 arithmetic plus the rounding of the stored outputs.
DTYPES = {
    "fp32": ("float32", "float32", 2e-5, 2e-5),
    "fp16": ("float16", "float16", 1e-3, 1e-3),
    "bf16": ("bfloat16", "bfloat16", 6e-3, 6e-3),
    "fp16_fp32": ("float16", "float32", 1e-3, 2e-5),
    "bf16_fp32": ("bfloat16", "float32", 6e-3, 2e-5),
}

# (N, C, HxW, G, core_num, expected mode, expected split by channel): the core count is
# part of the case because it decides between the group and the channel split.
CASES = {
    "resident_unaligned_hw": (2, 8, 9, 2, 2, "group_resident", 0),
    "resident_aligned_hw": (3, 6, 32, 3, 4, "group_resident", 0),
    "resident_c_per_g_1": (2, 4, 7, 4, 4, "group_resident", 0),
    # the coarser "group across N" split would add 16 channels x 2000 x (6 or 12) B per core: not taken
    "resident_workspace_n8": (8, 8, 2000, 2, 4, "group_resident", 0),
    "channel_two_pass": (2, 16, 3000, 2, 4, "channel_two_pass", 0),
    # a group too large for mode 0 over short channels: 64 channels of 49 an item (one DMA each)
    "channel_rows": (2, 400, 49, 1, 2, "channel_two_pass", 0),
    # 3 groups on 2 cores load them unevenly: split by channel, the first core's channels in two groups
    # (the second group's sums loaded while the first's dx runs); rows of 49: an item one run, spread
    "channel_split_short_rows": (3, 512, 49, 1, 2, "channel_two_pass", 1),
    # N*G < cores: split by channel, unless the group-across-N split costs little more (it does here)
    "across_n_small": (1, 8, 50, 2, 48, "group_resident", 0),
    # one channel a group, 96 tasks a core: batches of groupRows groups by (n, g) in every dtype (with
    # rows of 352, 16-bit data took the groups across N)
    "group_rows": (64, 3, 700, 3, 2, "group_resident", 0),
    # the same across N: a batch is up to 64 samples of one group (70: two batches a group)
    "group_rows_across_n": (70, 5, 9, 5, 2, "group_resident", 0),
    # groups of 3 channels across N: batches of 6 samples, each loaded and stored a DMA per channel
    "group_rows_d3_across_n": (16, 48, 49, 16, 4, "group_resident", 0),
    # split by channel (across N would add 92 channels x 250 x (6 or 12) B per core); stage 2's
    # workspace loads (47 rows) reach the UB of the 16-bit dx stores just before them
    "channel_split_n47": (47, 2, 250, 1, 48, "channel_two_pass", 1),
    # split by channel, an item a run of a core's consecutive channels of one group (6-8 of 801
    # elements, one DMA; 7-8 tasks a core, the runs cut at the ends of groups of 10 channels)
    "channel_split_rows": (4, 30, 801, 3, 16, "channel_two_pass", 1),
    # a channel larger than the UB: its 9 HxW slices (4 channels) fit one at a time
    "hw_slices_channel_larger_than_ub": (2, 2, 20000, 1, 2, "channel_two_pass", 1),
    # 48 channels (fewer would take the HxW split); 8200 elements do not fit in 16-bit either
    "hw_chunks_unaligned_n3": (3, 16, 8200, 2, 6, "hw_chunks", 0),
    # 48 channels: the cores are busy without the HxW split
    "hw_chunks_channel_split": (1, 48, 9001, 24, 48, "hw_chunks", 1),
    # fewer than 48 channels: HxW split into slices ((n, c, slice) tasks, per-slice sums in the
    # workspace, dgamma/dbeta by each group's owner after SyncAll): 1x3x224x224 G1 as 3 x 16 slices,
    # channels that are groups (D = 1) as 5 x 2, and slices in chunks (48 slices of 9008 elements)
    "hw_slices": (1, 3, 50176, 1, 48, "channel_two_pass", 1),
    "hw_slices_c_per_g_1": (2, 5, 5000, 5, 48, "channel_two_pass", 1),
    "hw_slices_chunks": (1, 1, 432048, 1, 48, "hw_chunks", 1),
    # N = 1: each group's owner stores dgamma/dbeta from the slice sums its dx task combined
    "hw_slices_n1_small": (1, 2, 5000, 1, 48, "channel_two_pass", 1),
    # a small launch: one task of every sample on one core, which stores dgamma/dbeta (no workspace)
    "hw_one": (3, 12, 1, 3, 48, "hw_one", 0),
    # 603 groups of 4: more vector work than one core takes; tasks of groups of one sample, sums in the
    # workspace
    "hw_one_groups_workspace": (3, 804, 1, 201, 48, "hw_one", 0),
    # rows of D = 100 (not a multiple of 16, >= 64): a DMA burst a group, no Gather
    "hw_one_long_rows": (4, 100, 1, 1, 48, "hw_one", 0),
    # a small K with the workspace and stage 2 (132 groups, tasks of 3): stage 2 lays UB out over the
    # phase-1 buffers the last stores still read (the PIPE_ALL before it)
    "hw_one_workspace_small_k": (44, 48, 1, 3, 48, "hw_one", 0),
    "hw_one_c_per_g_1": (2, 6, 1, 6, 4, "hw_one", 0),
    "hw_one_minimal": (1, 1, 1, 1, 48, "hw_one", 0),
    # many samples: tasks of whole samples (ceil(201 / 48) = 5, the last task one sample), several a core,
    # each task's per-channel sums one workspace row
    "hw_one_samples": (201, 24, 1, 3, 4, "hw_one", 0),
    # 10 samples a task in batches of 4 (a 1024-channel sample is 4096 elements of UB per array)
    "hw_one_sample_batches": (480, 1024, 1, 1, 48, "hw_one", 0),
    # groups of D <= 8 channels in columns (unpadded): tasks of 5 samples of 8 groups of 2, several a core,
    # each task's sums packed back into channel order for its workspace row (in 16-bit a small launch)
    "hw_one_columns": (201, 16, 1, 8, 4, "hw_one", 0),
    # the same in one small task (D = 5), which stores dgamma/dbeta itself
    "hw_one_columns_small": (8, 40, 1, 8, 48, "hw_one", 0),
    # one-channel groups in columns: tasks of groups of one sample, the column stored as workspace rows
    "hw_one_columns_d1_groups": (12, 480, 1, 480, 4, "hw_one", 0),
    # tasks of 9 samples in batches of 6 (groups of 2, G = 64): a full batch's sums as a tree (one level,
    # three rows left), the last three samples one by one; tasks of 20 in batches of 16 (D = 1): four levels
    "hw_one_columns_tree": (432, 128, 1, 64, 48, "hw_one", 0),
    "hw_one_columns_tree_levels": (960, 32, 1, 32, 48, "hw_one", 0),
    # small launches of more than 128 groups moved as one run: 2,048 one-channel groups in columns (four
    # batches, each a tree) and 300 groups of 2 in rows of 16, each one task on one core
    "hw_one_one_core_columns": (32, 64, 1, 64, 48, "hw_one", 0),
    "hw_one_one_core_rows": (20, 30, 1, 15, 48, "hw_one", 0),
}


# One case per tiling mode and work split (group-resident across N and with the workspace,
# channel two-pass by group and by channel, HxW chunks by group and by channel, HxW = 1): the
# default run's sample of the matrices over CASES; --exhaustive runs every case.
PER_MODE = ["resident_unaligned_hw", "resident_workspace_n8", "channel_two_pass", "channel_rows", "channel_split_n47",
            "channel_split_rows", "hw_chunks_unaligned_n3", "hw_chunks_channel_split", "hw_slices", "hw_one",
            "hw_one_groups_workspace"]
# The cases that take the HxW split.
HW_SLICES = ["hw_slices", "hw_slices_c_per_g_1", "hw_slices_chunks", "hw_slices_channel_larger_than_ub",
             "hw_slices_n1_small"]

# Cases whose tiling takes groupAcrossN (mode 0 tasks are groups g over every n: dgamma/dbeta
# summed by the core, no workspace, SyncAll or stage 2); every other case uses the workspace.
ACROSS_N = {"resident_unaligned_hw", "resident_aligned_hw", "resident_c_per_g_1", "across_n_small",
            "group_rows_across_n", "group_rows_d3_across_n"}


def to_bf16_bits(values):
    """float values -> bfloat16 bit patterns (round to nearest even)."""
    bits = np.ascontiguousarray(values, np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def storage(values, dtype):
    if dtype == "bfloat16":
        return to_bf16_bits(values)
    return np.ascontiguousarray(values, {"float32": np.float32, "float16": np.float16}[dtype])


def as_float64(array, dtype):
    if array is None:
        return None
    if dtype == "bfloat16":
        return (array.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return array.astype(np.float64)


def make_inputs(shape, G, data_dtype, stat_dtype, seed):
    """Kernel storage arrays and their exact float64 values (mean/rstd from the reference
    forward of a non-zero-mean x, so xhat is not trivially small)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 1.5 + 0.75
    dy = rng.standard_normal(shape)
    gamma = rng.standard_normal(shape[1]) + 1.0
    arrays = {"x": storage(x, data_dtype), "dy": storage(dy, data_dtype), "gamma": storage(gamma, stat_dtype)}
    _, mean, rstd = reference.forward(as_float64(arrays["x"], data_dtype), None, None, G)
    arrays["mean"] = storage(mean, stat_dtype)
    arrays["rstd"] = storage(rstd, stat_dtype)
    exact = {name: as_float64(a, data_dtype if name in ("x", "dy") else stat_dtype) for name, a in arrays.items()}
    return arrays, exact


def hw_one_in_one_task(tiling):
    """A small HxW = 1 launch: one task of every sample, whose core stores dgamma/dbeta."""
    return twin.MODE_NAMES[tiling["mode"]] == "hw_one" and tiling["hwOneSamples"] == tiling["N"] > 0 \
        and tiling["numTasks"] == 1


def relative_error(got, want, dtype):
    got = as_float64(got, dtype)
    return float(np.max(np.abs(got - want), initial=0.0) / max(1.0, float(np.max(np.abs(want), initial=0.0))))


def run_case(shape, G, dtype_key, mask=(True, True, True), core_num=48, policy="concurrent", seed=0,
             ub_bytes=twin.UB_910B, data_seed=7, execution="immediate"):
    data_dtype, stat_dtype, _, _ = DTYPES[dtype_key]
    arrays, exact = make_inputs(shape, G, data_dtype, stat_dtype, data_seed)
    dx, dgamma, dbeta, tiling = twin.twin_backward(
        arrays["dy"], arrays["x"], arrays["mean"], arrays["rstd"], arrays["gamma"], G, mask=mask,
        data_dtype=data_dtype, stat_dtype=stat_dtype, ub_bytes=ub_bytes, core_num=core_num, policy=policy,
        seed=seed, execution=execution)
    want = reference.backward(exact["dy"], exact["x"], exact["mean"], exact["rstd"], exact["gamma"], G)
    return (dx, dgamma, dbeta), want, tiling


def check_against_reference(got, want, dtype_key, mask):
    data_dtype, stat_dtype, tol_dx, tol_stat = DTYPES[dtype_key]
    for name, out, ref, dtype, tol, wanted in (("dx", got[0], want[0], data_dtype, tol_dx, mask[0]),
                                              ("dgamma", got[1], want[1], stat_dtype, tol_stat, mask[1]),
                                              ("dbeta", got[2], want[2], stat_dtype, tol_stat, mask[2])):
        if not wanted:
            assert out is None
            continue
        err = relative_error(out, ref.reshape(-1).reshape(out.shape), dtype)
        assert err <= tol, f"{name}: relative error {err:.3g} > {tol:g}"


# "deferred": every pipe's work waits until a synchronisation forces it (twin_pipes.h), so a
# missing synchronisation gives wrong numbers as well as a hazard report.
@pytest.mark.default_sample(case=PER_MODE, dtype_key=list(DTYPES), execution=["immediate", "deferred"])
@pytest.mark.parametrize("execution", ["immediate", "deferred"])
@pytest.mark.parametrize("dtype_key", list(DTYPES))
@pytest.mark.parametrize("case", list(CASES))
def test_every_mode_and_dtype_matches_reference(case, dtype_key, execution):
    N, C, HxW, G, cores, mode, split = CASES[case]
    got, want, tiling = run_case((N, C, HxW), G, dtype_key, core_num=cores, execution=execution)
    assert twin.MODE_NAMES[tiling["mode"]] == mode
    assert tiling["splitByChannel"] == split
    assert tiling["groupAcrossN"] == (case in ACROSS_N)
    assert (tiling["hwSlices"] > 1) == (case in HW_SLICES)
    check_against_reference(got, want, dtype_key, (True, True, True))


MASKS = [(True, False, False), (False, True, True), (False, True, False), (False, False, True)]


@pytest.mark.default_sample(case=["resident_unaligned_hw", "resident_workspace_n8", "channel_split_n47",
                                   "hw_chunks_unaligned_n3", "hw_slices_c_per_g_1", "hw_one"],
                             mask=MASKS, execution=["immediate", "deferred"])
@pytest.mark.parametrize("execution", ["immediate", "deferred"])
@pytest.mark.parametrize("mask", MASKS, ids=lambda m: "".join("1" if b else "0" for b in m))
@pytest.mark.parametrize("case", ["resident_unaligned_hw", "resident_workspace_n8", "channel_split_n47",
                                  "hw_chunks_unaligned_n3", "hw_slices_c_per_g_1", "hw_one"])
def test_output_mask(case, mask, execution):
    N, C, HxW, G, cores, _, _ = CASES[case]
    got, want, tiling = run_case((N, C, HxW), G, "fp16_fp32", mask=mask, core_num=cores, execution=execution)
    check_against_reference(got, want, "fp16_fp32", mask)
    # Skipped work: no workspace and no stage 2 unless dgamma/dbeta (or the channel split) need
    # them and the group-across-N split does not sum them in phase 1.
    stats_via_workspace = (mask[1] or mask[2]) and not tiling["groupAcrossN"] and not hw_one_in_one_task(tiling)
    assert (tiling["stage2Cores"] > 0) == (stats_via_workspace and tiling["hwSlices"] == 1)
    assert tiling["needWorkspace"] == int(stats_via_workspace or tiling["splitByChannel"] == 1)


@pytest.mark.parametrize("mask", [(True, True, False), (True, False, True), (False, True, True)],
                         ids=["110", "101", "011"])
def test_hw_split_with_one_sample_stores_dgamma_dbeta_from_the_dx_tasks(mask):
    # N = 1 with dx: no owner load of the slice rows; without dx the owner path loads them
    N, C, HxW, G, cores, _, _ = CASES["hw_slices_n1_small"]
    got, want, tiling = run_case((N, C, HxW), G, "fp32", mask=mask, core_num=cores, execution="deferred")
    assert tiling["hwSlices"] > 1 and tiling["N"] == 1
    check_against_reference(got, want, "fp32", mask)


@pytest.mark.parametrize("case", ["channel_two_pass", "hw_slices_channel_larger_than_ub"])
def test_held_items_change_the_traffic_not_the_bits(case):
    # the same tiling but for the UB left over: fewer (or no) items kept from the sums pass to
    # the dx pass, the same outputs bit for bit, and dy and x re-read for the items not held
    N, C, HxW, G, cores, _, _ = CASES[case]
    runs = []
    for ub in (twin.UB_910B, twin.UB_910B - 48 * 1024):
        got, want, tiling = run_case((N, C, HxW), G, "fp32", core_num=cores, ub_bytes=ub, execution="deferred")
        check_against_reference(got, want, "fp32", (True, True, True))
        gm = sum(s["gm_read_bytes"] for s in twin.twin_last_stats())
        runs.append(([o.tobytes() for o in got], tiling, gm))
    (bits, big, gm_big), (bits_small, small, gm_small) = runs
    assert (big["mode"], big["chunkElems"]) == (small["mode"], small["chunkElems"])
    assert big["heldItems"] > small["heldItems"] and bits == bits_small
    if big["splitByChannel"]:
        assert gm_small > gm_big
    else:  # whole channels per item: held items x (dy, x) x HxW x 4 bytes less, per task
        assert gm_small - gm_big == (big["heldItems"] - small["heldItems"]) * 2 * HxW * 4 * big["numTasks"]


# Both backward operators, and the three masks the stage-2 bit checks take: everything, one
# parameter gradient alone, dx with the other.
BOTH_OPERATORS = pytest.mark.parametrize("silu", [False, True], ids=["grad", "fused"])
MASKS_ALL_DGAMMA_DX_DBETA = pytest.mark.parametrize(
    "mask", [(True, True, True), (False, True, False), (True, False, True)], ids=["all", "dgamma", "dx_dbeta"])


def launch_inputs(shape, G, dtype_key, seed, silu):
    """(data dtype, stat dtype, arrays, exact, beta) of a launch of either operator: beta, a ramp over
    the channels, only for the fused one."""
    data_dtype, stat_dtype, _, _ = DTYPES[dtype_key]
    arrays, exact = make_inputs(shape, G, data_dtype, stat_dtype, seed)
    beta = storage(np.linspace(-1.5, 1.5, shape[1]), stat_dtype) if silu else None
    return data_dtype, stat_dtype, arrays, exact, beta


# The channel split's items are runs of a core's consecutive channels of one group (one DMA of up
# to channelsPerItem rows, HxW rounded up to 16 apart in UB; each channel's sums its own row's):
# on 16 cores 6-8 channels an item, with 48 KiB of UB 1-2 (runs cut shorter, items not held); on
# one core the tiling splits by group instead. Each matches the reference, all with the same bits.
@BOTH_OPERATORS
@pytest.mark.parametrize("dtype_key", ["fp32", "fp16_fp32", "bf16"])
def test_channel_split_items_of_several_channels_keep_the_bits(dtype_key, silu):
    N, C, HxW, G, cores, _, _ = CASES["channel_split_rows"]
    data_dtype, stat_dtype, _, _ = DTYPES[dtype_key]
    arrays, exact = make_inputs((N, C, HxW), G, data_dtype, stat_dtype, 11)
    beta = storage(np.linspace(-1.0, 1.0, C), stat_dtype)
    args = (arrays["dy"], arrays["x"], arrays["mean"], arrays["rstd"], arrays["gamma"])
    if silu:
        want = reference.silu_backward(exact["dy"], exact["x"], exact["mean"], exact["rstd"], exact["gamma"],
                                       as_float64(beta, stat_dtype), G, 1.3)
    else:
        want = reference.backward(exact["dy"], exact["x"], exact["mean"], exact["rstd"], exact["gamma"], G)
    results, items = [], []
    for core_num, ub in ((cores, twin.UB_910B), (cores, 48 * 1024), (1, twin.UB_910B)):
        kwargs = dict(data_dtype=data_dtype, stat_dtype=stat_dtype, core_num=core_num, ub_bytes=ub,
                      execution="deferred")
        got = (twin.twin_silu_backward(*args, beta, G, swish_scale=1.3, **kwargs) if silu
               else twin.twin_backward(*args, G, **kwargs))
        check_against_reference(got[:3], want, dtype_key, (True, True, True))
        tiling = got[3]
        items.append((tiling["splitByChannel"], tiling["channelsPerItem"]))
        results.append([o.tobytes() for o in got[:3]])
    assert items[0][0] == 1 and items[0][1] > items[1][1] and items[1][0] == 1 and items[2][0] == 0
    assert results[1] == results[0] and results[2] == results[0]


def test_masked_outputs_are_not_written():
    """The launch gets no dgamma/dbeta buffers at all: a write would be a GM fault."""
    data, exact = make_inputs((2, 8, 9), 2, "float32", "float32", 3)
    tiling = twin.twin_tiling(2, 8, 9, 2, "float32", mask=(True, False, False), core_num=2)
    dx = np.zeros_like(data["x"])
    twin.twin_launch([data["dy"], data["mean"], data["rstd"], data["x"], data["gamma"], dx, None, None], tiling,
                       core_num=2)
    want = reference.backward(exact["dy"], exact["x"], exact["mean"], exact["rstd"], exact["gamma"], 2)[0]
    assert relative_error(dx, want, "float32") < 2e-5


@pytest.mark.parametrize("shape", [(0, 4, 5), (2, 4, 0)], ids=["N0", "HxW0"])
def test_empty_input_gives_zero_dgamma_dbeta(shape):
    data = {k: np.zeros(s, np.float32) for k, s in
            {"x": shape, "dy": shape, "mean": (shape[0], 2), "rstd": (shape[0], 2), "gamma": (4,)}.items()}
    dx, dgamma, dbeta, _ = twin.twin_backward(data["dy"], data["x"], data["mean"], data["rstd"], data["gamma"], 2)
    assert dx.size == 0
    np.testing.assert_array_equal(dgamma, 0.0)
    np.testing.assert_array_equal(dbeta, 0.0)


def test_gamma_none_means_ones():
    data, exact = make_inputs((2, 6, 10), 3, "float32", "float32", 5)
    got = twin.twin_backward(data["dy"], data["x"], data["mean"], data["rstd"], None, 3)
    want = reference.backward(exact["dy"], exact["x"], exact["mean"], exact["rstd"], None, 3)
    for out, ref in zip(got[:3], want):
        assert relative_error(out, ref.reshape(out.shape), "float32") < 2e-5


# Block orders and interleavings of the twin; interleave hands over at every API call.
SCHEDULES = [("concurrent", 0, "immediate"), ("forward", 0, "immediate"), ("reverse", 0, "immediate"),
             ("shuffle", 1, "immediate"), ("shuffle", 2, "deferred"), ("interleave", 3, "immediate"),
             ("interleave", 4, "deferred"), ("concurrent", 0, "deferred")]


@pytest.mark.default_sample(case=["hw_one_groups_workspace", "hw_chunks_channel_split", "hw_slices_c_per_g_1"],
                             dtype_key=["fp32", "bf16_fp32"])
@pytest.mark.parametrize("case", ["resident_unaligned_hw", "resident_workspace_n8", "across_n_small",
                                  "hw_chunks_channel_split", "hw_chunks_unaligned_n3", "hw_one_groups_workspace",
                                  *HW_SLICES])
@pytest.mark.parametrize("dtype_key", ["fp32", "bf16_fp32"])
def test_outputs_are_bit_identical_across_block_schedules(case, dtype_key):
    N, C, HxW, G, cores, _, _ = CASES[case]
    cores = min(cores, 8)  # few blocks keep the interleaved runs quick; still several blocks per SyncAll
    results = []
    for policy, seed, execution in SCHEDULES:
        got, _, tiling = run_case((N, C, HxW), G, dtype_key, core_num=cores, policy=policy, seed=seed,
                                  execution=execution)
        results.append([o.tobytes() for o in got])
    assert tiling["blockDim"] > 1
    for (policy, seed, execution), result in zip(SCHEDULES[1:], results[1:]):
        assert result == results[0], f"{policy}/{seed}/{execution} differs from the concurrent run"


# The HxW split's slices and the order their sums are added in depend on the shape only: the
# same bits on 48, 40, 7 and 1 cores (1 core: every task, every group's dgamma/dbeta on one block),
# under several block orders and pipe executions.
@pytest.mark.default_sample(case=["hw_slices"], dtype_key=["fp32"])
@pytest.mark.parametrize("case", HW_SLICES)
@pytest.mark.parametrize("dtype_key", ["fp32", "bf16_fp32"])
def test_hw_split_is_bit_identical_across_core_counts(case, dtype_key):
    N, C, HxW, G, _, _, _ = CASES[case]
    results = []
    for cores, policy, execution in [(48, "concurrent", "immediate"), (40, "reverse", "deferred"),
                                     (7, "shuffle", "deferred"), (1, "forward", "immediate")]:
        got, want, tiling = run_case((N, C, HxW), G, dtype_key, core_num=cores, policy=policy, execution=execution)
        check_against_reference(got, want, dtype_key, (True, True, True))
        assert tiling["hwSlices"] > 1 and tiling["phase1Cores"] == min(cores, tiling["numTasks"])
        results.append([o.tobytes() for o in got])
    assert all(r == results[0] for r in results[1:])


# The core count also decides the tiling's split, and with it the mode and the UB left for chunks:
# 8x8x2000 G2 is group-resident (mode 0) on 16 cores and split by channel on 17; 47x2x250 G1 is
# group-resident on 47 and split on 48; 3x16x8200 G2 asked for dx only (fused kernel) is in HxW
# chunks by group on 3 cores, with no workspace, and by channel on 7. Each pair must give the same
# bits: mode 0 used to multiply xhat by b where the split multiplies x - mean by rstd * b, and the
# chunks used to be sized with the launch's own workspace (6080 elements on 3 cores, 6064 on 7:
# the sums added in another order).
MODE_SWITCHES = {"resident_workspace_n8": ((16, 17), (True, True, True)),
                 "channel_split_n47": ((47, 48), (True, True, True)),
                 "hw_chunks_unaligned_n3": ((3, 7), (True, False, False)),
                 # 2x400x49 G1: 64 channels an item on 2 cores, one channel a task (the split) on 3
                 "channel_rows": ((2, 3), (True, True, True))}


@pytest.mark.default_sample(case=["resident_workspace_n8", "hw_chunks_unaligned_n3", "channel_rows"],
                            dtype_key=["fp16_fp32"],
                            silu=[False, True])
@pytest.mark.parametrize("silu", [False, True])
@pytest.mark.parametrize("dtype_key", ["fp32", "fp16_fp32", "bf16_fp32"])
@pytest.mark.parametrize("case", list(MODE_SWITCHES))
def test_the_split_chosen_by_the_core_count_does_not_change_the_bits(case, dtype_key, silu):
    N, C, HxW, G, _, _, _ = CASES[case]
    core_counts, mask = MODE_SWITCHES[case]
    data_dtype, stat_dtype, _, _ = DTYPES[dtype_key]
    arrays, _ = make_inputs((N, C, HxW), G, data_dtype, stat_dtype, 7)
    beta = storage(np.linspace(-1.0, 1.0, C), stat_dtype)
    results, splits = [], []
    for cores in core_counts:
        args = (arrays["dy"], arrays["x"], arrays["mean"], arrays["rstd"], arrays["gamma"])
        kwargs = dict(mask=mask, data_dtype=data_dtype, stat_dtype=stat_dtype, core_num=cores)
        if silu:
            got = twin.twin_silu_backward(*args, beta, G, swish_scale=1.3, **kwargs)
        else:
            got = twin.twin_backward(*args, G, **kwargs)
        splits.append((got[3]["mode"], got[3]["splitByChannel"]))
        results.append([None if o is None else o.tobytes() for o in got[:3]])
    assert splits[0] != splits[1], f"both core counts took {splits[0]}: the case no longer switches"
    assert results[0] == results[1], f"{splits[0]} and {splits[1]} give different bits"


# Mode 0 with rows of <= 64 floats and the group in one item: every row's gamma (and beta) broadcast
# into a 32-byte block and one Mul (Add) over all the rows (tiling bcastElems) instead of a Muls (Adds)
# per row. 4x1280x8x8 G32 is the anchor (40 rows of 64); 2x80x7x7 G8 has D = 10 (Brcb's last repeat
# reads rows past the group) and rows of 49 in a stride of 64; 3x27x5x5 G3 rows of 25 (D = 9: groups of
# up to 8 channels this short take batches of groupRows instead). The same launch
# with bcastElems 0 takes the per-row path: the same bits, and both match the reference.
@BOTH_OPERATORS
@pytest.mark.parametrize("shape,G,dtype_key", [((4, 1280, 64), 32, "fp16_fp32"), ((2, 80, 49), 8, "bf16"),
                                               ((3, 27, 25), 3, "fp32")], ids=["4x1280x8x8", "2x80x7x7", "3x27x5x5"])
def test_short_rows_take_broadcast_blocks_with_the_per_row_bits(shape, G, dtype_key, silu):
    N, C, HxW = shape
    D = C // G
    data_dtype, stat_dtype, arrays, exact, beta = launch_inputs(shape, G, dtype_key, 5, silu)
    tiling = twin.twin_tiling(N, C, HxW, G, data_dtype, stat_dtype, silu=silu, swish_scale=-0.5)
    assert twin.MODE_NAMES[tiling["mode"]] == "group_resident" and tiling["channelsPerItem"] == D
    assert tiling["bcastElems"] == (3 if silu else 1) * 8 * (-(-D // 8) * 8)  # (-k gamma, -k beta,) rstd gamma
    assert twin.twin_tiling(N, C, 81, G, silu=silu)["bcastElems"] == 0  # rows of 96 floats: per row

    def launch(t):
        outs = [np.full_like(arrays[name], 0x7F) for name in ("x", "gamma", "gamma")]  # garbage to overwrite
        twin.twin_launch([arrays["dy"], arrays["mean"], arrays["rstd"], arrays["x"], arrays["gamma"], *outs,
                                  beta], t, execution="deferred")
        return outs

    got = launch(tiling)
    assert [o.tobytes() for o in got] == [o.tobytes() for o in launch({**tiling, "bcastElems": 0})]
    check_against_reference(got, _reference_grads(exact, beta, stat_dtype, G, silu, -0.5), dtype_key,
                            (True, True, True))


# Mode 1 with rows of <= 64 floats broadcasts the rstd gamma_c blocks of the whole group (BroadcastRows):
# a group of more than 2040 channels needs more than 255 Brcb repeats. The count was cast to 8 bits, so
# 2048 channels took 0 repeats and every dx was NaN (2056: 1 repeat, all but 8 rows NaN). Groups
# around the limit, with dx against the reference; 2040 still in one instruction.
@pytest.mark.parametrize("shape,dtype_key", [((1, 2048, 16), "fp32"), ((1, 2056, 16), "fp16_fp32"),
                                             ((2, 2048, 16), "bf16"), ((1, 2040, 16), "fp32")],
                         ids=["2048", "2056", "2x2048x16", "2040"])
def test_broadcast_blocks_of_a_group_past_255_repeats(shape, dtype_key):
    N, C, HxW = shape
    data_dtype, stat_dtype, _, _ = DTYPES[dtype_key]
    tiling = twin.twin_tiling(N, C, HxW, 1, data_dtype, stat_dtype)
    assert twin.MODE_NAMES[tiling["mode"]] == "channel_two_pass" and tiling["bcastElems"] == 8 * (-(-C // 8) * 8)
    arrays, exact = make_inputs(shape, 1, data_dtype, stat_dtype, 11)
    got = twin.twin_backward(arrays["dy"], arrays["x"], arrays["mean"], arrays["rstd"], arrays["gamma"], 1,
                             data_dtype=data_dtype, stat_dtype=stat_dtype)
    check_against_reference(got, _reference_grads(exact, None, stat_dtype, 1, False, 1.0), dtype_key,
                            (True, True, True))


# Mode 0 with groups of up to 8 channels (both backward operators): a core's groups go groupRows at a time, each
# vector step over all the rows with each group's own mean, rstd and gamma (+ beta). The same launch with groupRows 0
# (a group an item, the next group's gamma a task ahead) gives the same bits, and both match the
# reference: with the workspace (64x3x352 G3 on 2 cores, 16-element aligned rows), dx only with rows
# of 12 (no 32-byte multiple in 16-bit) and of 37, and the batches' last one short; across N, batches
# of samples of one group (rows C x HxW apart in GM), 70 samples in two batches. Groups of 2, 3 and 8
# channels: c1, c2 from the scalar unit's copy of WholeReduceSum's tree, and across N a DMA per channel.
@pytest.mark.parametrize("shape,G,cores,dtype_key,mask,across", [
    ((64, 3, 352), 3, 2, "fp32", (True, True, True), 0), ((64, 3, 352), 3, 2, "fp32", (False, True, True), 0),
    ((6, 64, 12), 64, 2, "fp16_fp32", (True, False, False), 0), ((5, 30, 37), 30, 3, "fp16", (True, False, False), 0),
    ((18, 17, 37), 17, 4, "fp32", (True, True, True), 1), ((70, 5, 9), 5, 2, "bf16", (True, True, True), 1),
    ((70, 5, 9), 5, 2, "fp16_fp32", (False, True, False), 1),
    ((64, 6, 96), 3, 2, "fp32", (True, True, True), 1), ((6, 128, 12), 64, 2, "fp16", (True, False, False), 0),
    ((32, 96, 49), 32, 48, "fp16_fp32", (True, True, True), 1), ((70, 40, 9), 5, 2, "bf16", (True, True, True), 1),
    ((70, 10, 9), 5, 2, "fp32", (False, False, True), 1), ((64, 6, 96), 3, 48, "fp32", (True, True, True), 0)],
    ids=["64x3x352_all", "64x3x352_stats", "6x64x12_dx", "5x30x37_dx", "across_18x17x37", "across_70x5x9",
         "across_70x5x9_dgamma", "d2_64x6x96_all", "d2_6x128x12_dx", "d3_across_32x96x7x7", "d8_across_70x40x9",
         "d2_across_70x10x9_dbeta", "d2_64x6x96_workspace"])
@BOTH_OPERATORS
def test_group_rows_keep_the_per_group_bits(shape, G, cores, dtype_key, mask, across, silu):
    """The fused backward's batches too: each row's swish gradient from its own gamma_c, beta_c and
    centring (gamma and beta of every channel loaded once a core, also without dx), with swish_scale
    -0.5 (a scale that is not 1 reaches both AffineT products)."""
    N, C, HxW = shape
    data_dtype, stat_dtype, _, _ = DTYPES[dtype_key]
    arrays, exact = make_inputs(shape, G, data_dtype, stat_dtype, 5)
    beta = storage(np.random.default_rng(6).standard_normal(C), stat_dtype) if silu else None
    scale = -0.5 if silu else 1.0
    tiling = twin.twin_tiling(N, C, HxW, G, data_dtype, stat_dtype, core_num=cores, mask=mask, silu=silu,
                              swish_scale=scale)
    assert tiling["groupRows"] > 1 and tiling["groupAcrossN"] == across
    per_group = {**tiling, "groupRows": 0, "chunkElems": C // G * tiling["residentStride"], "statElems": 16,
                 "affineAhead": 1 if mask[0] or silu else 0, "loadBuffers": 2, "dxBuffers": 2}

    def launch(t):
        outs = [np.full_like(arrays[name], 0x7F) for name in ("x", "gamma", "gamma")]  # garbage to overwrite
        twin.twin_launch([arrays["dy"], arrays["mean"], arrays["rstd"], arrays["x"], arrays["gamma"], *outs, beta],
                         t, core_num=cores, execution="deferred")
        return outs

    got = launch(tiling)
    assert [o.tobytes() for o in got] == [o.tobytes() for o in launch(per_group)]
    want = _reference_grads(exact, beta, stat_dtype, G, silu, scale)
    check_against_reference([g if m else None for g, m in zip(got, mask)], want, dtype_key, mask)


# Stage 2 with C a multiple of 8 and at most 64 (tiling stage2WholeRows): one block loads whole
# workspace rows, one burst per array, and adds both arrays with one two-repeat Add per sample,
# where slices of 8 channels on C / 8 blocks load a burst per sample and array. 32x32x28x28 G8 is
# the anchor; 300x16x5x5 G4 has more samples than a load holds (255 x 8 / C = 127: three loads,
# the last short). The same launch with the sliced stage 2 gives the same bits, for each output
# mask (one array or both), and both match the reference.
@BOTH_OPERATORS
@MASKS_ALL_DGAMMA_DX_DBETA
@pytest.mark.parametrize("shape,G,dtype_key", [((32, 32, 784), 8, "fp16"), ((300, 16, 25), 4, "fp32")],
                         ids=["32x32x28x28", "300x16x5x5"])
def test_short_channel_rows_reach_stage2_whole_with_the_sliced_bits(shape, G, dtype_key, mask, silu):
    N, C, HxW = shape
    data_dtype, stat_dtype, arrays, exact, beta = launch_inputs(shape, G, dtype_key, 6, silu)
    tiling = twin.twin_tiling(N, C, HxW, G, data_dtype, stat_dtype, mask=mask, silu=silu)
    assert (tiling["stage2WholeRows"], tiling["stage2Cores"], tiling["stage2PieceElems"]) == (1, 1, C)
    assert tiling["stage2RowsPerLoad"] == min(N, 255 * 8 // C) and not tiling["groupAcrossN"]
    for other_c, why in ((72, "C > 64"), (36, "C not a multiple of 8")):
        other = twin.twin_tiling(N, other_c, HxW, other_c // 4)
        assert other["stage2Cores"] > 1 and other["stage2WholeRows"] == 0, why
    sliced = {**tiling, "stage2WholeRows": 0, "stage2SliceElems": 8, "stage2Cores": C // 8, "stage2PieceElems": 8}

    got = _launch_into_garbage(arrays, beta, mask, tiling)
    assert _bytes_of(got) == _bytes_of(_launch_into_garbage(arrays, beta, mask, sliced))
    if silu:
        want = reference.silu_backward(exact["dy"], exact["x"], exact["mean"], exact["rstd"], exact["gamma"],
                                       as_float64(beta, stat_dtype), G, 1.0)
    else:
        want = reference.backward(exact["dy"], exact["x"], exact["mean"], exact["rstd"], exact["gamma"], G)
    check_against_reference(got, want, dtype_key, mask)


# The channel split of short rows (rowsGather 2) with dx and dgamma/dbeta keeps stage 2's buffers among
# phase 1's (tiling stage2Ahead): a block issues its slice's one workspace load after its first dx task
# and sums it after its dx pass, with no pipe reset. 64x512x7x7 G1 is the row it is for; 8x257x7x7 G1
# (C not a multiple of 8: a short last slice) and 2x320x97 G1 (rows over 64 floats) on 48 cores. The
# same launch with stage 2 after the dx pass (stage2Ahead 0) gives the same bits, for each mask with
# dx and one array or both, and both match the reference.
@pytest.mark.parametrize("mask", [(True, True, True), (True, False, True), (True, True, False)],
                         ids=["all", "dx_dbeta", "dx_dgamma"])
@pytest.mark.parametrize("shape,dtype_key", [((8, 257, 49), "fp16"), ((2, 320, 97), "fp32"),
                                             ((64, 512, 49), "bf16")], ids=["8x257x7x7", "2x320x97", "64x512x7x7"])
def test_short_rows_stage2_ahead_gives_the_bits_of_stage2_after_the_dx_pass(shape, dtype_key, mask):
    N, C, HxW = shape
    data_dtype, stat_dtype, _, _ = DTYPES[dtype_key]
    arrays, exact = make_inputs(shape, 1, data_dtype, stat_dtype, 7)
    tiling = twin.twin_tiling(N, C, HxW, 1, data_dtype, stat_dtype, mask=mask)
    assert (tiling["stage2Ahead"], tiling["splitByChannel"], tiling["rowsGather"]) == (1, 1, 2)
    assert tiling["stage2PieceElems"] == tiling["stage2SliceElems"] and tiling["stage2RowsPerLoad"] == N
    after = {**tiling, "stage2Ahead": 0, "ubBytesStage2": 65536}

    got = _launch_into_garbage(arrays, None, mask, tiling)
    assert _bytes_of(got) == _bytes_of(_launch_into_garbage(arrays, None, mask, after))
    want = reference.backward(exact["dy"], exact["x"], exact["mean"], exact["rstd"], exact["gamma"], 1)
    check_against_reference(got, want, dtype_key, mask)


# N == 1 with the channel split (no HxW split) and dgamma/dbeta: each phase-1 task stores its channels'
# dgamma/dbeta (tiling ownStats), where stage 2 would add its one workspace row to zero after the dx
# pass. 1x2048x16 G1 is the row it is for; 1x512x7x7 G1 (short rows on runs, both operators) and
# 1x200x999 G4 (rows over 64 floats). The same launch with stage 2 (ownStats 0, one row a block's slice)
# gives the same bits, for masks with and without dx, and both match the reference.
@BOTH_OPERATORS
@MASKS_ALL_DGAMMA_DX_DBETA
@pytest.mark.parametrize("shape,G,dtype_key", [((1, 2048, 16), 1, "fp16"), ((1, 512, 49), 1, "bf16"),
                                               ((1, 200, 999), 4, "fp32")], ids=["1x2048x16", "1x512x7x7", "1x200x999"])
def test_one_sample_channel_split_stores_its_stats_with_the_bits_of_stage2(shape, G, dtype_key, mask, silu):
    N, C, HxW = shape
    data_dtype, stat_dtype, arrays, exact, beta = launch_inputs(shape, G, dtype_key, 8, silu)
    tiling = twin.twin_tiling(N, C, HxW, G, data_dtype, stat_dtype, mask=mask, silu=silu)
    assert (tiling["ownStats"], tiling["splitByChannel"], tiling["hwSlices"]) == (1, 1, 1)
    assert tiling["stage2Cores"] == 0 and tiling["reduceRows"] == 0
    piece = (-(-C // 48) + 7) // 8 * 8  # the host's stage-2 slice: ceil(C / 48) rounded up to 8
    stage2 = {**tiling, "ownStats": 0, "reduceRows": 1, "stage2SliceElems": piece, "stage2Cores": -(-C // piece),
              "stage2PieceElems": piece, "stage2RowsPerLoad": 1, "ubBytesStage2": 65536}
    stage2["blockDim"] = max(tiling["blockDim"], stage2["stage2Cores"])

    got = _launch_into_garbage(arrays, beta, mask, tiling)
    assert _bytes_of(got) == _bytes_of(_launch_into_garbage(arrays, beta, mask, stage2))
    check_against_reference(got, _reference_grads(exact, beta, stat_dtype, G, silu, 1.0), dtype_key, mask)


# Modes 1-2 hold a task's first items in UB from its sums pass to its dx pass; the dx pass takes
# them in turn with the loaded ones (then the rest), so the load buffers free while it converts a
# held item. 2x100x64x64 G10 holds 4 of 10 items (loaded items left over), 2x24x64x64 G8 (fused)
# 2 of 3 (held items left over), 2x100x50x50 G10 (fused) 3 of 10. The same launch holding nothing
# takes its dx items in order, from GM: the same bits, and both match the reference.
@pytest.mark.parametrize("shape,G,dtype_key,silu,held", [((2, 100, 4096), 10, "fp16", False, 4),
                                                          ((2, 24, 4096), 8, "fp16", True, 2),
                                                          ((2, 100, 2500), 10, "fp32", True, 3)],
                         ids=["2x100x64x64", "2x24x64x64-fused", "2x100x50x50-fused"])
def test_held_items_interleaved_in_the_dx_pass_keep_the_in_order_bits(shape, G, dtype_key, silu, held):
    N, C, HxW = shape
    data_dtype, stat_dtype, arrays, exact, beta = launch_inputs(shape, G, dtype_key, 7, silu)
    # 10 cores: whole groups load them evenly enough for the group split (8 would take the channel split)
    tiling = twin.twin_tiling(N, C, HxW, G, data_dtype, stat_dtype, core_num=10, silu=silu)
    assert twin.MODE_NAMES[tiling["mode"]] == "channel_two_pass" and not tiling["splitByChannel"]
    assert tiling["heldItems"] == held

    def launch(t):
        outs = [np.full_like(arrays[name], 0x7F) for name in ("x", "gamma", "gamma")]  # garbage to overwrite
        twin.twin_launch([arrays["dy"], arrays["mean"], arrays["rstd"], arrays["x"], arrays["gamma"], *outs,
                                  beta], t, core_num=10, execution="deferred")
        return outs

    got = launch(tiling)
    assert [o.tobytes() for o in got] == [o.tobytes() for o in launch({**tiling, "heldItems": 0})]
    check_against_reference(got, _reference_grads(exact, beta, stat_dtype, G, silu, 1.0), dtype_key,
                            (True, True, True))


def _launch_into_garbage(arrays, beta, mask, tiling):
    """The backward launch of ``tiling`` (deferred) into outputs filled with garbage for it to overwrite,
    None where ``mask`` leaves an output out."""
    outs = [np.full_like(arrays[name], 0x7F) if wanted else None
            for name, wanted in zip(("x", "gamma", "gamma"), mask)]
    twin.twin_launch([arrays["dy"], arrays["mean"], arrays["rstd"], arrays["x"], arrays["gamma"], *outs, beta],
                     tiling, execution="deferred")
    return outs


def _bytes_of(outputs):
    return [None if o is None else o.tobytes() for o in outputs]


def _reference_grads(exact, beta, stat_dtype, G, silu, swish_scale):
    """float64 (dx, dgamma, dbeta) of the launch's rounded inputs: GroupNorm's, or the fused op's."""
    if silu:
        return reference.silu_backward(exact["dy"], exact["x"], exact["mean"], exact["rstd"], exact["gamma"],
                                       as_float64(beta, stat_dtype), G, swish_scale)
    return reference.backward(exact["dy"], exact["x"], exact["mean"], exact["rstd"], exact["gamma"], G)


# The device's workspace is not cleared before a launch; the twin's starts as NaN. A kernel that
# adds its per-slice sums into the workspace (atomic add) instead of storing them computes right
# only on a zeroed workspace: on the twin its outputs are NaN.
@pytest.mark.slow
@pytest.mark.exhaustive
def test_a_kernel_that_adds_into_the_workspace_gets_nan(tmp_path):
    from test_ascendc_silu_grad_twin import build_mutant, with_library
    store = "  StoreToWorkspace(wsDbGm_, cell, len, db);\n"  # every task's db partials, through the sums queue
    library = build_mutant(tmp_path, "op_kernel/group_norm_grad_ms_channels.h", store,
                           "  SetAtomicAdd<float>();\n" + store + "  SetAtomicNone();\n")
    N, C, HxW, G, cores, _, _ = CASES["hw_slices_c_per_g_1"]
    got, _, _ = with_library(library, lambda: run_case((N, C, HxW), G, "fp32", core_num=cores))
    assert np.isnan(got[0]).all() and np.isnan(got[2]).all()  # dx and dbeta: every db partial is NaN + db


# Mode 3 with groups of <= 64 channels: a batch's per-group scalars broadcast into a block a group and
# applied to every group at once, its sums by WholeReduceSum (HwOneBatch's vector coefficients). The
# same launch with chunkElems cut to the task's rows (or one sample), where the coefficient arrays do not
# fit, takes the per-group path: the same bits, and both match the reference. 201x24 G3 (D = 8) takes
# tasks of whole samples; 3x804 G201 (D = 4) runs of groups, its K raised to hold the coefficients;
# 100x160 G10 (D = 16) tasks of two samples.
@BOTH_OPERATORS
@pytest.mark.parametrize("shape,G,cores,dtype_key,per_group_elems",
                         [((201, 24, 1), 3, 4, "fp32", 48), ((3, 804, 1), 201, 48, "bf16", 48),
                          ((100, 160, 1), 10, 48, "fp16_fp32", 160)], ids=["201x24", "3x804", "100x160"])
def test_hw_one_vector_coefficients_keep_the_per_group_bits(shape, G, cores, dtype_key, per_group_elems, silu):
    N, C, HxW = shape
    data_dtype, stat_dtype, arrays, exact, beta = launch_inputs(shape, G, dtype_key, 5, silu)
    tiling = twin.twin_tiling(N, C, HxW, G, data_dtype, stat_dtype, core_num=cores, silu=silu,
                                      swish_scale=-0.5)
    assert twin.MODE_NAMES[tiling["mode"]] == "hw_one" and tiling["chunkElems"] > per_group_elems

    def launch(t):
        outs = [np.full_like(arrays[name], 0x7F) for name in ("x", "gamma", "gamma")]  # garbage to overwrite
        twin.twin_launch([arrays["dy"], arrays["mean"], arrays["rstd"], arrays["x"], arrays["gamma"], *outs,
                                  beta], t, core_num=cores, execution="deferred")
        return outs

    got = launch(tiling)
    assert [o.tobytes() for o in got] == [o.tobytes() for o in launch({**tiling, "chunkElems": per_group_elems})]
    check_against_reference(got, _reference_grads(exact, beta, stat_dtype, G, silu, -0.5), dtype_key,
                            (True, True, True))


# Mode 3 loads a batch's mean and rstd into a stat slot of statWindowElems groups; a batch of whole
# samples with more groups a sample than the default window (256) needs a slot of a sample at least:
# 100x516 G258 in fp16 takes tasks of whole samples (its sample's rows fit K), which once overran the slot.
# (The fused backward's K, one fp32 buffer smaller, holds no such sample.)
def test_hw_one_samples_of_more_groups_than_the_default_stat_window():
    N, C, G = 100, 516, 258
    tiling = twin.twin_tiling(N, C, 1, G, "float16", "float16")
    assert tiling["hwOneSamples"] > 0 and tiling["statWindowElems"] >= G
    arrays, exact = make_inputs((N, C, 1), G, "float16", "float16", 3)
    got = twin.twin_backward(arrays["dy"], arrays["x"], arrays["mean"], arrays["rstd"], arrays["gamma"], G,
                             data_dtype="float16", stat_dtype="float16")
    check_against_reference(got[:3], _reference_grads(exact, None, "float16", G, False, 1.0), "fp16",
                            (True, True, True))


# ---------------------------------------------------------------- one C API for both operator libraries
def test_operator_libraries_export_one_c_api():
    """The backward and forward libraries export the same entry points (twin_c_api.h), so twin.py
    declares them once; what differs travels in arrays the libraries name element by element."""
    import shutil
    import subprocess
    if shutil.which("nm") is None:
        pytest.skip("nm (binutils) is not installed")

    def c_api(path):
        symbols = subprocess.run(["nm", "-D", "--defined-only", path], capture_output=True, text=True,
                                 check=True).stdout.split()
        return {s for s in symbols if s.startswith(("GnmsTwin", "GnsmsTwin"))}

    backward, forward = c_api(twin.twin_library_path()), c_api(twin.forward_library_path())
    assert backward == forward
    assert backward == {"GnmsTwinArrayNames", "GnmsTwinTilingFields", "GnmsTwinTiling", "GnmsTwinLaunch",
                        "GnmsTwinCheckInputs", "GnmsTwinCheckDtypes", "GnmsTwinCostModel", "GnmsTwinLastStats",
                        "GnmsTwinFieldNames"}
    for lib in (twin._twin_cdll(), twin._forward_cdll()):
        for array in twin._ARRAYS:
            assert all(twin._array_names(lib, array))
        assert lib.GnmsTwinArrayNames(len(twin._ARRAYS)) is None  # the arrays end there
    assert twin._array_names(twin._twin_cdll(), "inputs") == ("dy", "mean", "rstd", "x", "gamma")
    assert twin._array_names(twin._forward_cdll(), "buffers") == ("x", "gamma", "beta", "y", "mean", "rstd")


@pytest.mark.parametrize("data, stat, ok", [("float32", "float32", True), ("float16", "float32", True),
                                            ("bfloat16", "bfloat16", True), ("float32", "float16", False),
                                            ("float16", "bfloat16", False)])
def test_backward_dtype_rule_matches_its_tiling(data, stat, ok):
    """GnmsTwinCheckDtypes of the backward library: the pair its tiling accepts."""
    status, message = twin._check_dtypes(twin._twin_cdll(), {"dataType": data, "statType": stat})
    assert (status == 0) == ok and (ok or "statistics" in message)
    if not ok:
        with pytest.raises(ValueError, match="bad dtype pair"):
            twin.twin_tiling(2, 4, 3, 2, data, stat)
    with pytest.raises(KeyError, match="statType"):  # packed by name: a missing element is refused
        twin._check_dtypes(twin._twin_cdll(), {"dataType": data})


@pytest.mark.parametrize("dtype_key", ["fp32", "fp16_fp32"])
def test_hw_one_group_larger_than_mode_3_takes_the_channel_split(dtype_key):
    """A 2-D input whose group (4096 channels) mode 3 cannot hold in fp32 takes the channel split, an
    item a run of one-element channels, and matches float64 (16-bit data: mode 3 holds it)."""
    got, want, tiling = run_case((1, 4096, 1), 1, dtype_key, execution="deferred")
    mode = "channel_two_pass" if dtype_key == "fp32" else "hw_one"
    assert twin.MODE_NAMES[tiling["mode"]] == mode and tiling["splitByChannel"] == int(dtype_key == "fp32")
    check_against_reference(got, want, dtype_key, (True, True, True))
