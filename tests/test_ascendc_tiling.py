"""The host tiling function of GroupNormGradMs (the plain C++ function the CANN wrapper
calls), through the twin library: the mode ladder for several UB sizes, the work split,
and the UB budget."""
import pytest

import twin

# Unified-buffer bytes per vector core: Atlas A2 (910B) has 192 KiB; 256 KiB as on the
# Atlas training/inference parts with a larger UB (910, 310P); 64 KiB as a small bound.
UB_SIZES = {"ub192k_910b": 196608, "ub256k": 262144, "ub64k": 65536}
FP32_CHANNEL_BYTES_PER_ELEM = 36  # 3 double-buffered staging queues (24) + 3 fp32 work buffers (12)


def tiling(N, C, HxW, G, ub, cores=48, dtype="float32", stat=None, mask=(True, True, True)):
    return twin.twin_tiling(N, C, HxW, G, dtype, stat, ub, cores, mask)


@pytest.mark.parametrize("ub", list(UB_SIZES.values()), ids=list(UB_SIZES))
def test_mode_ladder_follows_what_fits(ub):
    # A small group stays resident.
    t = tiling(8, 32, 64, 8, ub)
    assert twin.MODE_NAMES[t["mode"]] == "group_resident"
    # One channel fits (0.75 of the UB) but a group of 8 channels does not.
    t = tiling(8, 64, ub // 48, 8, ub)
    assert twin.MODE_NAMES[t["mode"]] == "channel_two_pass"
    assert t["chunkElems"] >= t["HxW"] and t["chunksPerChannel"] == 1
    # A single channel is larger than the UB: HxW in chunks, as large as fit.
    t = tiling(8, 64, ub // 20, 8, ub)
    assert twin.MODE_NAMES[t["mode"]] == "hw_chunks"
    assert t["chunksPerChannel"] == -(-t["HxW"] // t["chunkElems"]) >= 2
    # As large as fits outside the reserve: one more step of 16 elements would not fit.
    assert 0 <= ub - twin.UB_RESERVE - t["ubBytesPhase1"] < 16 * FP32_CHANNEL_BYTES_PER_ELEM + 64
    # HxW == 1.
    t = tiling(8, 64, 1, 8, ub)
    assert twin.MODE_NAMES[t["mode"]] == "hw_one"


@pytest.mark.parametrize("ub", list(UB_SIZES.values()), ids=list(UB_SIZES))
@pytest.mark.parametrize("dtype,stat", [("float32", None), ("float16", None), ("bfloat16", "float32")])
@pytest.mark.parametrize("shape", [(8, 32, 64, 8), (8, 64, 3000, 8), (2, 8, 100000, 2), (4, 4096, 1, 32),
                                   (1, 960, 7, 32), (3, 6, 1, 3)])
def test_every_plan_fits_in_the_ub(shape, dtype, stat, ub):
    t = tiling(*shape, ub, dtype=dtype, stat=stat)
    # The plan leaves ops-nn's 1 KiB reserve of the UB unused.
    assert 0 < t["ubBytesPhase1"] <= ub - twin.UB_RESERVE
    if t["groupAcrossN"]:  # dgamma/dbeta summed in phase 1: no stage 2
        assert t["stage2Cores"] == 0 and t["ubBytesStage2"] == 0 and t["needWorkspace"] == 0
    elif t["hwSlices"] > 1:  # the HxW split: dgamma/dbeta summed by each group's owner after SyncAll
        assert t["stage2Cores"] == 0 and t["ubBytesStage2"] == 0 and t["needWorkspace"] == 1
    elif t["needWorkspace"] == 0:  # a small HxW = 1 launch: one task, whose core stores dgamma/dbeta
        assert twin.MODE_NAMES[t["mode"]] == "hw_one" and t["numTasks"] == 1 and t["stage2Cores"] == 0
    else:
        assert 0 < t["ubBytesStage2"] <= ub - twin.UB_RESERVE
    assert t["chunkElems"] % 16 == 0


def test_the_same_shape_descends_the_ladder_as_the_ub_shrinks():
    modes = [twin.MODE_NAMES[tiling(2, 16, 1500, 2, ub, cores=4)["mode"]] for ub in (196608, 65536, 32768)]
    assert modes == ["group_resident", "channel_two_pass", "hw_chunks"]


def test_group_split_when_groups_occupy_the_cores():
    # N*G = 64 >= 48; the group-across-N split would add 8 channels x 1500 x 12 B per core
    t = tiling(4, 64, 1500, 16, 196608, cores=48)
    assert t["groupAcrossN"] == 0
    assert t["splitByChannel"] == 0 and t["numTasks"] == 64
    assert t["phase1Cores"] == 48 and t["tasksPerCore"] == 1 and t["tailCores"] == 16


def test_channel_split_when_groups_are_fewer_than_cores():
    # N*G = 4 < 48; the group-across-N split would add 14 channels x 1000 x 12 B per core
    t = tiling(1, 64, 1000, 4, 196608, cores=48)
    assert t["groupAcrossN"] == 0
    assert t["splitByChannel"] == 1 and t["numTasks"] == 64
    assert t["phase1Cores"] == 48 and t["blockDim"] == 48
    assert t["needWorkspace"] == 1  # dx needs the group sums from the workspace, after SyncAll


@pytest.mark.parametrize("shape,cores", [((5, 30, 10, 3), 7), ((1, 1000, 9, 10), 48), ((3, 12, 1, 3), 48),
                                         ((2, 2, 20000, 1), 3), ((5, 30, 1000, 3), 7)])
def test_tasks_and_stage2_slices_cover_everything_once(shape, cores):
    t = tiling(*shape, 196608, cores=cores)
    assert t["blockDim"] <= cores
    assert t["tasksPerCore"] * t["phase1Cores"] + t["tailCores"] == t["numTasks"]
    assert 0 <= t["tailCores"] < t["phase1Cores"]
    if t["groupAcrossN"]:  # tasks are the G groups (each over every n); no stage 2
        assert t["numTasks"] == t["G"] and t["stage2Cores"] == 0 and t["needWorkspace"] == 0
        return
    if t["hwSlices"] > 1:  # (n, c, slice) tasks; no stage 2
        assert t["numTasks"] == t["N"] * t["C"] * t["hwSlices"] and t["stage2Cores"] == 0
        return
    if t["needWorkspace"] == 0:  # a small HxW = 1 launch: one task of every sample; no stage 2
        assert t["numTasks"] == 1 and t["hwOneSamples"] == t["N"] and t["stage2Cores"] == 0
        return
    assert t["stage2SliceElems"] * t["stage2Cores"] >= t["C"] > t["stage2SliceElems"] * (t["stage2Cores"] - 1)
    assert t["stage2SliceElems"] % 8 == 0  # 32-byte fp32 slices


# The HxW split: fewer than 48 (n, c) channels, each at least 2 x 2048 elements, are cut into
# slices (whole 16-element blocks, >= 2048 elements) until there are about 48 tasks; the cut is
# a function of the shape only, so every core count runs the same slices in the same order.
@pytest.mark.parametrize("shape,slices,slice_elems", [
    ((1, 3, 50176, 1), 16, 3136),   # 1x3x224x224 G1: 3 channels -> 48 tasks
    ((1, 4, 9001, 2), 4, 2256),     # 9001 / 2048 = 4 slices at most
    ((2, 5, 5000, 5), 2, 2512),     # D = 1 (channels are groups): split as well
    ((1, 2, 4095, 1), 1, 4095),     # under 2 x 2048 elements: no split
    ((1, 48, 9001, 2), 1, 9001),    # 48 channels already occupy the cores
])
@pytest.mark.parametrize("cores", [48, 40, 7, 1])
def test_hw_split_depends_on_the_shape_only(shape, slices, slice_elems, cores):
    t = tiling(*shape, 196608, cores=cores)
    assert (t["hwSlices"], t["sliceElems"]) == (slices, slice_elems)
    if slices == 1:
        return
    assert t["splitByChannel"] == 1 and t["groupAcrossN"] == 0 and t["needWorkspace"] == 1
    assert t["numTasks"] == shape[0] * shape[1] * slices and t["phase1Cores"] == min(cores, t["numTasks"])
    assert t["sliceElems"] % 16 == 0 and (slices - 1) * t["sliceElems"] < shape[2] <= slices * t["sliceElems"]
    assert t["stage2Cores"] == 0  # dgamma/dbeta from each group's owner, after SyncAll
    assert t["chunksPerChannel"] == -(-t["sliceElems"] // t["chunkElems"])


def test_hw_split_slices_larger_than_the_ub_go_in_chunks():
    t = tiling(1, 2, 20000, 1, 32768, cores=48)
    assert t["hwSlices"] == 9 and twin.MODE_NAMES[t["mode"]] == "hw_chunks" and t["chunksPerChannel"] >= 2


def test_hw_one_groups_per_task_occupy_the_cores():
    t = tiling(3, 256, 1, 64, 196608, cores=48, mask=(True, False, False))  # (with dgamma/dbeta: one core)
    assert t["groupsPerTask"] == 4 and t["numTasks"] == 48
    t = tiling(1, 8, 1, 8, 196608, cores=48, mask=(True, False, False))  # dx only: nothing to sum
    assert t["groupsPerTask"] == 1 and t["numTasks"] == 8


@pytest.mark.parametrize("shape, one_core", [
    ((1, 8, 1, 8), True), ((3, 12, 1, 3), True), ((32, 12, 1, 4), True),  # 128 groups, 4.5 KiB
    # more than 128 groups where they move as one run (Gather) and their vector work is at most 5,120
    # elements: 150 groups of 4 (rows of 16), 300 of 2 (20x30 G15), 2,048 of 1 in columns (32x64 G64)
    ((3, 200, 1, 50), True), ((20, 30, 1, 15), True), ((32, 64, 1, 64), True),
    ((49, 11, 1, 11), False),      # 539 groups of 1 in rows of 16: 8,624 elements
    ((3, 768, 1, 48), False),      # 144 groups of 16, 27 KiB: a burst each (no Gather), too many
    ((1, 3000, 1, 1), False),      # 36 KiB of dy, x and dx
])
def test_hw_one_small_launch_runs_on_one_core(shape, one_core):
    """A small mode-3 launch with dgamma/dbeta is one task of every sample, on one core, which
    stores dgamma/dbeta: no workspace, SyncAll or stage 2, whatever the core count."""
    for cores in (1, 7, 48):
        t = tiling(*shape, 196608, cores=cores)
        assert twin.MODE_NAMES[t["mode"]] == "hw_one"
        if one_core:
            assert (t["hwOneSamples"], t["numTasks"], t["phase1Cores"], t["blockDim"]) == (shape[0], 1, 1, 1)
            assert t["needWorkspace"] == 0 and t["stage2Cores"] == 0 and t["reduceRows"] == 0
        else:
            assert t["needWorkspace"] == 1 and t["stage2Cores"] > 0


@pytest.mark.parametrize("N, C, G, gather", [
    (8000, 64, 32, True), (32, 64, 64, True), (3, 12, 3, True), (20, 630, 10, True),  # D = 2, 1, 4, 63
    (4096, 512, 32, False), (4, 100, 1, False),  # D = 16 (a sample's rows one burst), D = 100
    (1, 24, 1, False),                           # one group: one burst either way
])
def test_hw_one_gathers_groups_of_fewer_than_64_channels(N, C, G, gather):
    """Groups of D < 64 channels, D not a multiple of 16, move as one contiguous run a batch that
    Gather spreads into the padded rows (and packs dx back); the offset tables' UB is in the plan."""
    t = tiling(N, C, 1, G, 196608)
    assert twin.MODE_NAMES[t["mode"]] == "hw_one" and t["hwOneGather"] == int(gather)
    assert t["ubBytesPhase1"] <= 196608 - twin.UB_RESERVE and (not gather or t["chunkElems"] <= 255 * 64)


def test_hw_one_with_many_samples_takes_tasks_of_whole_samples():
    # 1023 samples: tasks of ceil(1023 / 48) = 22 whole samples, one workspace row each for stage 2, on
    # every core count; without dgamma/dbeta (no sums to order) the runs of groups stay
    for cores in (1, 7, 48):
        t = tiling(1023, 257, 1, 1, 196608, cores=cores)
        assert (t["hwOneSamples"], t["numTasks"], t["reduceRows"]) == (22, 47, 47)
        assert t["chunkElems"] % 272 == 0  # batches of whole samples (257 channels padded to 272)
    t = tiling(1023, 257, 1, 1, 196608, mask=(True, False, False))
    assert t["hwOneSamples"] == 0 and t["numTasks"] == 1023
    assert tiling(48, 257, 1, 1, 196608)["hwOneSamples"] == 0  # one sample a task: the runs of groups


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_across_n_is_not_taken_where_its_items_would_be_short(dtype):
    # 2x640x32x32 G32 16-bit: the fp32 resident group (20 channels of 1024) leaves items of one channel
    # (2 KiB a load), so groups across N would run 40 such items a core; the channel split instead
    t = tiling(2, 640, 1024, 32, 196608, dtype=dtype)
    assert t["splitByChannel"] == 1 and t["groupAcrossN"] == 0
    # items of 16 channels (8 KiB a load): groups across N as before
    t = tiling(2, 1920, 256, 32, 196608, dtype=dtype)
    assert t["groupAcrossN"] == 1 and t["channelsPerItem"] == 16


def test_mask_skips_the_workspace_and_stage2():
    # HxW = 1000: the group-across-N split would add 24 channels x 1000 x 12 B per core
    t = tiling(8, 32, 1000, 8, 196608, mask=(True, False, False))
    assert t["needWorkspace"] == 0 and t["stage2Cores"] == 0
    t = tiling(8, 32, 1000, 8, 196608, mask=(False, True, False))
    assert t["needWorkspace"] == 1 and t["stage2Cores"] > 0 and t["dxRequired"] == 0 and t["groupAcrossN"] == 0
    t = tiling(8, 32, 64, 8, 196608, mask=(False, True, False))  # HxW = 64: summed across N in phase 1
    assert t["groupAcrossN"] == 1 and t["needWorkspace"] == 0 and t["stage2Cores"] == 0
    t = tiling(8, 32, 64, 8, 196608, mask=(False, False, False))
    assert t["numTasks"] == 0 and t["stage2Cores"] == 0 and t["blockDim"] == 1


def test_copy_alignment_flag():
    assert tiling(2, 8, 64, 2, 196608, cores=2)["copyAligned"] == 1       # 256 bytes per fp32 row
    assert tiling(2, 8, 9, 2, 196608, cores=2)["copyAligned"] == 0        # 36 bytes
    assert tiling(2, 8, 16, 2, 196608, cores=2, dtype="float16")["copyAligned"] == 1  # 32 bytes


def test_tiling_keys():
    keys = {(d, s): tiling(2, 4, 8, 2, 196608, dtype=d, stat=s)["key"]
            for d, s in [("float32", None), ("float16", None), ("bfloat16", None), ("float16", "float32"),
                         ("bfloat16", "float32")]}
    assert sorted(keys.values()) == [1, 2, 3, 4, 5]


@pytest.mark.parametrize("args,reason", [
    ((2, 6, 4, 4, 196608), "bad shape"),                     # C % G != 0
    ((2, 6, 4, 0, 196608), "bad shape"),                     # G == 0
    ((2, 6, 4, 3, 1024), "bad platform"),                    # UB too small to be real
    ((1, 20000, 1, 1, 65536), "does not fit"),               # HxW == 1 with C/G = 20000: a group exceeds 64 KiB
])
def test_tiling_rejects(args, reason):
    with pytest.raises(ValueError, match=reason):
        tiling(*args)


def test_statistics_dtype_must_be_data_or_fp32():
    with pytest.raises(ValueError, match="bad dtype"):
        tiling(2, 4, 8, 2, 196608, dtype="float16", stat="bfloat16")
    with pytest.raises(ValueError, match="bad dtype"):
        tiling(2, 4, 8, 2, 196608, dtype="float32", stat="float16")


DX_ONLY = (True, False, False)  # no group-across-N (whose larger plan would fall back to the plain one)


def test_the_ub_reserve_moves_a_plan_down_the_ladder():
    # A resident group (4 channels of HxW fp32 elements) whose plan fits in the whole
    # 192 KiB UB but not outside the 1 KiB reserve must descend to channel_two_pass. The
    # plan's size is read with a larger UB, where the group is resident either way.
    ub = 196608

    def resident_bytes(hxw):  # infinite when even the larger UB cannot hold the group
        t = tiling(1, 4, hxw, 1, ub + 8192, cores=1, mask=DX_ONLY)
        return t["ubBytesPhase1"] if twin.MODE_NAMES[t["mode"]] == "group_resident" else float("inf")

    lo, hi = 1, 4000  # the largest HxW (in steps of 16) whose plan fits in the whole UB
    while lo < hi:
        mid = (lo + hi + 1) // 2
        lo, hi = (mid, hi) if resident_bytes(mid * 16) <= ub else (lo, mid - 1)
    hxw = lo * 16
    assert ub - twin.UB_RESERVE < resident_bytes(hxw) <= ub
    assert twin.MODE_NAMES[tiling(1, 4, hxw, 1, ub, cores=1, mask=DX_ONLY)["mode"]] == "channel_two_pass"


# ---------------------------------------------------------------- host input validation
# ms_groupnorm::grad_tiling::CheckInputs: what the CANN tiling and InferShape run before deriving any size, so
# that a bad call fails with a message instead of the kernel reading GM out of bounds.
GOOD = dict(dy=(2, 6, 5), mean=(2, 3), rstd=(2, 3), x=(2, 6, 5), gamma=(6,), num_groups=3)


def check(**changes):
    args = dict(GOOD, **changes)
    return twin.twin_check_inputs(args["dy"], args["mean"], args["rstd"], args["x"], args["gamma"],
                                          args["num_groups"])


def test_host_check_accepts_a_valid_call():
    assert check() == (0, "")
    assert check(mean=(6,), rstd=(6, 1)) == (0, "")  # N*G elements in any layout, as aclnn checks numel
    assert check(x=(2, 6), dy=(2, 6)) == (0, "")    # no spatial dimensions: HxW = 1


@pytest.mark.parametrize("missing", ["dy", "mean", "rstd", "x", "gamma"])
def test_host_check_rejects_a_missing_input(missing):
    status, message = check(**{missing: None})
    assert twin.TILING_STATUS[status] == "missing input"
    assert f"input '{missing}' is missing" in message


@pytest.mark.parametrize("changes,status,words", [
    (dict(num_groups=None), "missing input", "attribute 'num_groups' is missing"),
    (dict(num_groups=0), "bad shape", "'num_groups' must be > 0"),
    (dict(num_groups=-3), "bad shape", "'num_groups' must be > 0"),
    (dict(num_groups=4, mean=(2, 4), rstd=(2, 4)), "bad shape", "'num_groups' (4) must divide C = 6"),
    (dict(mean=(2, 2)), "bad shape", "input 'mean' must have N*G = 6 elements"),
    (dict(rstd=(3, 3)), "bad shape", "input 'rstd' must have N*G = 6 elements"),
    (dict(gamma=(5,)), "bad shape", "input 'gamma' must have C = 6 elements"),
    (dict(dy=(2, 6, 4)), "bad shape", "input 'dy' must have the shape of 'x'"),
    (dict(dy=(2, 5, 6)), "bad shape", "input 'dy' must have the shape of 'x'"),  # same numel, other shape
    (dict(x=(12,), dy=(12,)), "bad shape", "input 'x' must have rank >= 2"),
    (dict(x=(2, 6, -1), dy=(2, 6, -1)), "bad shape", "input 'x' has a negative dimension"),
])
def test_host_check_rejects_bad_shapes_and_attributes(changes, status, words):
    got_status, message = check(**changes)
    assert twin.TILING_STATUS[got_status] == status
    assert words in message and message.startswith("GroupNormGradMs: ")


def test_two_pass_modes_hold_the_first_items_in_the_ub_left_over():
    # 8x320x64x64 G32: a group (10 channels of 4096) does not fit; the two-pass layout leaves room
    # for 1 fp32 item (32 KiB of dy and x) or 5 16-bit ones, which the dx pass takes from UB; in
    # 16-bit (an item's two loads under a DMA latency's bytes) one of them goes to a third
    # (dy, x) load in flight
    ub = UB_SIZES["ub192k_910b"]
    for dtype, held, loads in (("float32", 1, 2), ("float16", 4, 3), ("bfloat16", 4, 3)):
        t = tiling(8, 320, 4096, 32, ub, dtype=dtype)
        assert twin.MODE_NAMES[t["mode"]] == "channel_two_pass" and t["heldItems"] == held
        assert t["loadBuffers"] == loads
        assert t["ubBytesPhase1"] <= ub - twin.UB_RESERVE
    # every item of a task when they all fit (8 channels of 3000 in 16-bit), never more
    t = tiling(2, 16, 3000, 2, ub, cores=4, dtype="float16")
    assert t["heldItems"] == t["D"] * t["chunksPerChannel"] == 8
    # the channel split holds a core's items across SyncAll: 1x3x224x224 runs one slice per core
    t = tiling(1, 3, 50176, 1, ub)
    assert t["hwSlices"] == 16 and t["heldItems"] == 1
    # nothing to hold: no dx pass (dgamma/dbeta only), or the group resident (mode 0)
    assert tiling(8, 320, 4096, 32, ub, dtype="float16", mask=(False, True, True))["heldItems"] == 0
    assert tiling(8, 32, 64, 8, ub)["heldItems"] == 0


def test_a_resident_group_of_short_items_gets_a_third_load_in_flight_unless_fused():
    # 16x128x56x56 G32 in 16-bit: mode 0, items of one channel (2 x 6.1 KiB, under a DMA latency's
    # 32 KiB), so a third (dy, x) load is in flight, ahead of the dx buffers (still four); the fused
    # operator (vector-bound) keeps two loads and its dx buffers
    ub = UB_SIZES["ub192k_910b"]
    plain = tiling(16, 128, 3136, 32, ub, dtype="float16")
    assert twin.MODE_NAMES[plain["mode"]] == "group_resident"
    assert (plain["loadBuffers"], plain["dxBuffers"]) == (3, 4)
    fused = twin.twin_tiling(16, 128, 3136, 32, "float16", None, ub, 48, (True, True, True), silu=True)
    assert twin.MODE_NAMES[fused["mode"]] == "group_resident" and fused["loadBuffers"] == 2
    # in fp32 the resident group leaves no room for the third load's 2 x 12.25 KiB
    assert tiling(16, 128, 3136, 32, ub)["loadBuffers"] == 2


def test_dx_stores_get_up_to_four_buffers_in_what_is_left():
    ub = UB_SIZES["ub192k_910b"]
    # 16x128x56x56 G32 in 16-bit: the group stays resident and four dx buffers fit beside it;
    # in fp32 the resident group leaves room for the two buffers only
    assert tiling(16, 128, 3136, 32, ub, dtype="float16")["dxBuffers"] == 4
    fp32 = tiling(16, 128, 3136, 32, ub)
    assert twin.MODE_NAMES[fp32["mode"]] == "group_resident" and fp32["dxBuffers"] == 2
    # held items come first: 8x320x64x64 fp32 keeps one item rather than a third dx buffer
    t = tiling(8, 320, 4096, 32, ub)
    assert (t["heldItems"], t["dxBuffers"]) == (1, 2)
    # mode 3 keeps its two
    assert tiling(8, 64, 1, 8, ub)["dxBuffers"] == 2


# Mode 0 by (n, g) with groups of up to 8 channels (both backward operators): a core's many short group tasks go
# groupRows at a time (456x698x444 G698: 6,631 tasks a core, each once a DMA latency); groups of more
# channels keep a group an item.
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_many_one_channel_groups_take_batches_of_group_rows(dtype):
    t = twin.twin_tiling(456, 698, 444, 698, dtype, dtype, core_num=48)
    assert twin.MODE_NAMES[t["mode"]] == "group_resident" and not t["groupAcrossN"]
    assert 1 < t["groupRows"] <= 64 and t["chunkElems"] == t["groupRows"] * t["residentStride"]
    assert t["loadBuffers"] == 2 and t["affineAhead"] == 0 and t["statElems"] >= t["groupRows"]
    fused = twin.twin_tiling(456, 698, 444, 698, dtype, dtype, core_num=48, silu=True)
    assert 1 < fused["groupRows"] <= 64 and fused["chunkElems"] == fused["groupRows"] * fused["residentStride"]
    assert fused["numFloatBufs"] == t["numFloatBufs"] + 2  # the swish gradient's scratch and ones vector
    # groups of up to 8 channels of under 4 KiB of dy and x too (rows D apart in a batch), more keep a group an item
    t2 = twin.twin_tiling(456, 1396, 100, 698, dtype, dtype, core_num=48)
    assert 1 < t2["groupRows"] <= 64 and t2["chunkElems"] == 2 * t2["groupRows"] * t2["residentStride"]
    assert twin.twin_tiling(456, 6282, 44, 698, dtype, dtype, core_num=48)["groupRows"] == 0  # D = 9
