"""The three AscendC operators give the same bits on every core count.

The core count decides how the host tiling splits the work (group-resident or split by channel,
HxW chunks sized with or without the workspace, groups across N, the HxW split for few tasks), so
a sweep over core counts reaches every split a shape can take. The cases are shapes near those
switches (and the items a task moves at once: mode 1's channels an item, mode 3's groups a
batch); each runs on the twin at every core count of CORE_COUNTS and must match the 1-core
launch byte for byte. (Two such switches once changed the bits: see
test_ascendc_twin.py, test_the_split_chosen_by_the_core_count_does_not_change_the_bits.)
"""
import numpy as np
import pytest

from ms_groupnorm import reference
import twin

CORE_COUNTS = (1, 2, 3, 5, 7, 16, 17, 47, 48)
# (N, C, HxW, G, output mask); every case switches split at least once over CORE_COUNTS
CASES = {
    "resident_to_channel": (8, 8, 2000, 2, (True, True, True)),
    "resident_to_channel_n47": (47, 2, 250, 1, (True, True, True)),
    "chunks_to_channel_dx_only": (3, 16, 8200, 2, (True, False, False)),
    # group-resident by (n, g), groups across N and split by channel, over the sweep
    "resident_across_n_channel": (4, 8, 3000, 2, (True, True, True)),
    "stats_only_across_n_to_channel": (2, 12, 3000, 2, (False, True, True)),
    # 16-bit: groups across N (1-2 cores) to the channel split (3 cores on), which its one-channel items
    # (a 20-channel group resident in fp32) would be short of
    "across_n_short_items_to_channel": (2, 40, 1024, 2, (True, True, True)),
    # mode 1 with several short channels an item (few cores) to the channel split (many cores)
    "channel_rows_to_channel_split": (4, 512, 255, 2, (True, True, True)),
    # mode 1 over rows of 49 (one run an item, spread by Gather; broadcast gamma blocks): group tasks,
    # the channel split for few groups and where whole groups load the cores unevenly (2 and 5 cores
    # of 3 groups), its next group's sums loaded ahead; with two groups a sample, groups switching
    "short_rows_uneven_split": (3, 512, 49, 1, (True, True, True)),
    "short_rows_two_groups": (2, 768, 49, 2, (True, True, True)),
    # rows of 97 (no broadcast blocks: over 64 floats), the dx pass on runs: group tasks (1-2 cores),
    # the channel split, and its held items (47-48 cores), whose dx pass reads the held runs
    "short_rows_dx_runs_held": (2, 320, 97, 1, (True, True, True)),
    # mode 3 (HxW == 1): the groups a task takes in one batch follow the core count (5,760 groups: more
    # than a small launch's one core takes)
    "hw_one_group_runs": (4, 1440, 1, 1440, (True, True, True)),
    # mode 3 with many samples: tasks of whole samples whose sums are one workspace row each
    "hw_one_sample_runs": (201, 24, 1, 3, (True, True, True)),
    # the same with D = 2: a batch loads one sample's gamma (beta) rows and copies them in UB
    "hw_one_sample_runs_d2": (400, 64, 1, 32, (True, True, True)),
    # stage 2 of those tasks' rows (48) folds them as a tree, all in one load on every core count (with
    # 264 channels a stage-2 slice, on 1 core, held 45 rows a load before)
    "hw_one_sample_rows_folded": (96, 264, 1, 2, (True, True, True)),
    # its columns (groups of D <= 8 unpadded): D = 5 (a sums tree with an odd level), D = 1 (a column
    # is the run), and G = 72 (a task's sums added a column at a time)
    "hw_one_columns_d5": (200, 40, 1, 8, (True, True, True)),
    "hw_one_columns_d1": (400, 16, 1, 16, (True, True, True)),
    "hw_one_columns_g72": (150, 144, 1, 72, (True, True, True)),
    # a task of more samples than a batch in columns: the full batch's sums as a tree (D = 2, G = 64:
    # batches of 6 samples, one level and three rows left; D = 1, G = 32: 16 samples, four levels), the
    # task's last batch sample by sample
    "hw_one_columns_tree_d2": (432, 128, 1, 64, (True, True, True)),
    "hw_one_columns_tree_d1": (960, 32, 1, 32, (True, True, True)),
    # a small launch of 2,048 one-channel groups: one task on one core, four batches in columns
    "hw_one_one_core_columns": (32, 64, 1, 64, (True, True, True)),
    # mode 0 with one channel a group: batches of groupRows groups a core's tasks allow (dx only: no
    # groups across N), and with dgamma/dbeta the same or groups across N
    "group_rows_dx_only": (6, 64, 12, 64, (True, False, False)),
    "group_rows_to_across_n": (40, 10, 1200, 10, (True, True, True)),
    # batches of up to 40 groups (one core) down to a group a task (47 and 48 cores: the per-group path)
    "group_rows_to_groups_dx_only": (2, 20, 50, 20, (True, False, False)),
    # dgamma/dbeta only: batches of the 6 samples of a group; the fused backward still loads every
    # channel's gamma and beta (its swish gradient needs them)
    "group_rows_across_n_stats_only": (6, 64, 12, 64, (False, True, True)),
    # groups of 3 channels (32x96x7x7 G32): batches of samples of one group (a DMA per channel), three a
    # core whatever the core count (its split is the shape's)
    "group_rows_d3": (32, 96, 49, 32, (True, True, True)),
    # groups of 8, dx only: batches of (n, g) groups, their size following the core count
    "group_rows_d8_dx_only": (12, 64, 20, 8, (True, False, False)),
}
# Cases whose split is the shape's alone: the same on every core count (its sums' order follows it)
SHAPE_SPLITS = {"hw_one_sample_runs", "hw_one_sample_runs_d2", "hw_one_sample_rows_folded", "group_rows_across_n_stats_only", "hw_one_columns_d5",
                "group_rows_d3",
                "hw_one_columns_d1", "hw_one_columns_g72", "hw_one_columns_tree_d2", "hw_one_columns_tree_d1",
                "hw_one_one_core_columns"}
OPERATORS = ("GroupNormGradMs", "GroupNormSiluGradMs", "GroupNormSiluMs")


def launch(operator, arrays, G, mask, cores, dtype):
    if operator == "GroupNormSiluMs":
        y, mean, rstd, tiling = twin.twin_forward(arrays["x"], arrays["gamma"], arrays["beta"], G,
                                                          core_num=cores, param_dtype="float32")
        return [y, mean, rstd], tiling
    args = (arrays["dy"], arrays["x"], arrays["mean"], arrays["rstd"], arrays["gamma"])
    kwargs = dict(mask=mask, core_num=cores, data_dtype=dtype, stat_dtype="float32")
    if operator == "GroupNormSiluGradMs":
        *outputs, tiling = twin.twin_silu_backward(*args, arrays["beta"], G, swish_scale=0.8, **kwargs)
    else:
        *outputs, tiling = twin.twin_backward(*args, G, **kwargs)
    return outputs, tiling


def split_of(tiling):
    return tuple(tiling.get(k) for k in ("mode", "splitByChannel", "groupAcrossN", "hwSlices", "chunkElems",
                                         "channelsPerItem", "groupsPerTask", "hwOneSamples", "numTasks", "groupRows",
                                         "affineAhead"))


# fp32 data shows a rounding difference most often (in 16-bit, dx's rounding can hide it)
@pytest.mark.default_sample(case=["resident_to_channel", "chunks_to_channel_dx_only"],
                            operator=["GroupNormGradMs", "GroupNormSiluGradMs"], dtype=["float32", "float32"])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("operator", OPERATORS)
@pytest.mark.parametrize("case", list(CASES))
def test_every_core_count_gives_the_bits_of_one_core(case, operator, dtype):
    N, C, HxW, G, mask = CASES[case]
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((N, C, HxW)) * 1.5 + 0.75).astype(dtype)
    arrays = {"x": x, "dy": rng.standard_normal((N, C, HxW)).astype(dtype),
              "gamma": (rng.standard_normal(C) + 1.0).astype(np.float32),
              "beta": rng.standard_normal(C).astype(np.float32)}
    _, mean, rstd = reference.forward(x.astype(np.float64), None, None, G)
    arrays["mean"], arrays["rstd"] = mean.astype(np.float32), rstd.astype(np.float32)
    results, splits = {}, set()
    for cores in CORE_COUNTS:
        outputs, tiling = launch(operator, arrays, G, mask, cores, dtype)
        results[cores] = [None if o is None else o.tobytes() for o in outputs]
        splits.add(split_of(tiling))
    if operator != "GroupNormSiluMs" and case in SHAPE_SPLITS:
        assert len(splits) == 1, f"{case}: the split follows the core count: {splits}"
    elif operator != "GroupNormSiluMs":  # the forward's tiling fields differ; its split may stay the same
        assert len(splits) > 1, f"{case}: every core count took {splits}: the case no longer switches"
    differ = [cores for cores in CORE_COUNTS if results[cores] != results[1]]
    assert not differ, f"{case}, {operator}: {differ} cores differ from 1 core"


# Cases of the forward alone (the backward's split of them does not switch over CORE_COUNTS):
# (N, C, HxW, G)
FORWARD_CASES = {
    # split groups staged in slices of 2^k rows, taken in batches of rows (the last slice shorter; a
    # part ring on few cores)
    "staged_slices_row_batches": (1, 520, 49, 1),
    # one staged slice a block of 128 rows (5 and 7 cores), loaded in pieces of whole batches, each
    # with its own event (fp32: four batches of 8 rows a piece); the part ring (1-3 cores), slices of one
    # batch (16+)
    "staged_slices_in_pieces": (1, 512, 255, 2),
    # slices streamed with four loads in flight (5 and 7 cores); the part ring (1-3), staged slices (16+)
    "streamed_slices_deep": (1, 64, 4096, 2),
    # HxW == 1 with groups of 5: batches of groups as columns, a multiple of G groups a batch, their
    # size and count following the core count
    "hw_one_group_columns": (300, 40, 1, 8),
    # groups of one channel (D = 1) in batches of rows, their size following the core count
    "channel_rows_batches": (60, 20, 100, 20),
    # mode 0 a group at a time: four loads in flight where a block has at least four groups (1-6 cores)
    "resident_deep_loads": (6, 12, 49, 4),
}


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("case", list(FORWARD_CASES))
def test_the_forward_batches_give_the_bits_of_one_core(case, dtype):
    N, C, HxW, G = FORWARD_CASES[case]
    rng = np.random.default_rng(5)
    arrays = {"x": (rng.standard_normal((N, C, HxW)) * 1.5 + 0.75).astype(dtype),
              "gamma": (rng.standard_normal(C) + 1.0).astype(np.float32),
              "beta": rng.standard_normal(C).astype(np.float32)}
    results, plans = {}, set()
    for cores in CORE_COUNTS:
        outputs, tiling = launch("GroupNormSiluMs", arrays, G, None, cores, dtype)
        results[cores] = [o.tobytes() for o in outputs]
        plans.add(tuple(tiling[k] for k in ("mode", "sliceCount", "ringParts", "partItems", "groupRows", "numTasks",
                                         "xBuffers")))
    assert len(plans) > 1, f"{case}: every core count took {plans}: the case no longer switches"
    differ = [cores for cores in CORE_COUNTS if results[cores] != results[1]]
    assert not differ, f"{case}: {differ} cores differ from 1 core"


# Mode 0's table of every group's gamma (+ beta), loaded once a core: the fused backward takes it
# only where a core has many tasks (the host tiling's kAffineTableSiluTasks), so the core count
# switches between it and the next group's gamma/beta a task ahead; both give the same fp32 values.
# Groups of nine channels (groups of up to 8 take batches of groupRows instead).
@pytest.mark.parametrize("mask", [(True, False, False), (True, True, True)])
def test_the_affine_table_chosen_by_the_core_count_gives_the_bits_of_one_core(mask):
    N, C, HxW, G = 2, 2700, 20, 300
    rng = np.random.default_rng(5)
    x = (rng.standard_normal((N, C, HxW)) * 1.5 + 0.75).astype(np.float32)
    arrays = {"x": x, "dy": rng.standard_normal((N, C, HxW)).astype(np.float32),
              "gamma": (rng.standard_normal(C) + 1.0).astype(np.float32),
              "beta": rng.standard_normal(C).astype(np.float32)}
    _, mean, rstd = reference.forward(x.astype(np.float64), None, None, G)
    arrays["mean"], arrays["rstd"] = mean.astype(np.float32), rstd.astype(np.float32)
    results, tables = {}, set()
    for cores in (1, 5, 16):
        outputs, tiling = launch("GroupNormSiluGradMs", arrays, G, mask, cores, "float32")
        results[cores] = [None if o is None else o.tobytes() for o in outputs]
        tables.add((tiling["mode"], tiling["groupAcrossN"], tiling["affineAhead"]))
    if mask == (True, False, False):  # dx only: mode 0 by (n, g) on every core count
        assert tables == {(0, 0, 1), (0, 0, 2)}, f"the table no longer follows the core count: {tables}"
    assert results[5] == results[1] and results[16] == results[1]


# One sample whose gamma/beta arrays of all C channels do not fit (float32, C = 2080): the part
# ring's blocks hold arrays of their own groups' channels instead, sized by the core count (on one
# core, all C: none); the channels' coefficients are the same values either way.
@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_the_block_channel_arrays_give_the_bits_of_one_core(dtype):
    N, C, HxW, G = 1, 2080, 512, 65
    rng = np.random.default_rng(7)
    arrays = {"x": (rng.standard_normal((N, C, HxW)) * 1.5 + 0.75).astype(dtype),
              "gamma": (rng.standard_normal(C) + 1.0).astype(np.float32),
              "beta": rng.standard_normal(C).astype(np.float32)}
    results, arrays_of = {}, {}
    for cores in CORE_COUNTS:
        outputs, tiling = launch("GroupNormSiluMs", arrays, G, None, cores, dtype)
        assert tiling["ringParts"] > 0, f"{cores} cores: not the part ring"
        results[cores] = [o.tobytes() for o in outputs]
        arrays_of[cores] = tiling["coefElems"] if tiling["coefPerBlock"] else 0
    assert arrays_of[1] == 0 and 0 < arrays_of[48] < C, arrays_of
    differ = [cores for cores in CORE_COUNTS if results[cores] != results[1]]
    assert not differ, f"{differ} cores differ from 1 core"
