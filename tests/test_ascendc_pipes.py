"""The twin's pipe model (kernels/ascendc/twin/twin_pipes.h): one probe kernel per hazard kind
that lacks exactly one synchronisation, the flag rules, the TPosition data paths of the copies,
and ReduceSum's documented A2/A3 summation order."""
import numpy as np
import pytest

import twin
from twin import TwinFault

# probe -> (pipe that wrote/read first, pipe that accessed without ordering)
HAZARDS = {
    "hazard_mte2_v": ("MTE2", "V"),
    "hazard_v_mte3": ("V", "MTE3"),
    "hazard_v_s": ("V", "S"),
    "hazard_s_v": ("S", "V"),
    "hazard_war_reuse": ("V", "MTE2"),  # write after read: MTE2 refills a buffer V still reads
    "hazard_mte3_s": ("MTE3", "S"),  # write after read: a scalar write over a buffer MTE3 still stores
}
INPUT = np.arange(1, 193, dtype=np.float32)  # gm[0:64] and gm[128:192] are the probe's inputs


def run_pipe_probe(name, **kwargs):
    return twin.twin_probe(name, block_dim=1, out_len=256, init=INPUT, **kwargs)


def expected_synced():
    out = np.concatenate([INPUT, np.zeros(64, np.float32)])
    out[64:128] = INPUT[0:64] + 1
    out[64] += INPUT[0] + 1  # scale = [out[0], 0, ...] is added to the first 8 results
    out[192:256] = 3 * INPUT[0:64]  # computed from the first input, before the reload
    return out


@pytest.mark.parametrize("execution", ["immediate", "deferred"])
def test_the_synchronised_pipeline_runs_and_computes(execution):
    np.testing.assert_array_equal(run_pipe_probe("hazards_synced", execution=execution), expected_synced())


@pytest.mark.parametrize("probe", list(HAZARDS))
def test_each_missing_sync_is_a_named_hazard(probe):
    first, second = HAZARDS[probe]
    with pytest.raises(TwinFault, match=rf"pipe hazard: {second} .* by {first} .*no {first}->{second} synchronisation"):
        run_pipe_probe(probe)


@pytest.mark.parametrize("probe", list(HAZARDS))
def test_each_missing_sync_gives_wrong_numbers_under_deferred_execution(probe):
    # With the hazard check off, deferred execution runs each pipe's work only when a
    # synchronisation forces it, so the unsynchronised access sees stale data.
    got = run_pipe_probe(probe, execution="deferred", check_hazards=False)
    assert not np.array_equal(got, expected_synced())


def test_a_queue_hand_over_orders_buffer_reuse():
    twin.twin_probe("queue_reuse", block_dim=1, out_len=64)


@pytest.mark.parametrize("probe, message", [
    ("waitflag_without_setflag", r"WaitFlag<V_S>\(0\) by the kernel without a matching SetFlag.*hang"),
    ("setflag_never_waited", r"SetFlag<MTE2_V>\(1\) was never waited for"),
    ("setflag_twice", r"SetFlag<V_MTE3>\(2\) by the kernel while that flag is still set by the kernel"),
])
def test_flag_rules(probe, message):
    with pytest.raises(TwinFault, match=message):
        twin.twin_probe(probe, block_dim=1)


@pytest.mark.parametrize("probe, path", [
    ("path_datacopy_gm_to_vecout", "GM -> VECOUT"),
    ("path_datacopypad_vecccalc_to_gm", "VECCALC -> GM"),
    ("path_ub_to_ub_vecin_to_vecout", "VECIN -> VECOUT"),
])
def test_copies_accept_only_the_documented_tposition_paths(probe, path):
    with pytest.raises(TwinFault, match=f"the data path {path} is not supported"):
        twin.twin_probe(probe, block_dim=1)


def documented_a2_reduce_sum(values):
    """ReduceSum.md (count form, Atlas A2/A3, "方式一"): a binary tree of neighbour pairs inside
    each 64-float repeat, repeat results added in sequence."""
    total = None
    for start in range(0, len(values), 64):
        lanes = np.zeros(64, np.float32)
        chunk = values[start:start + 64]
        lanes[:len(chunk)] = chunk
        while len(lanes) > 1:
            lanes = (lanes[0::2] + lanes[1::2]).astype(np.float32)
        total = lanes[0] if total is None else np.float32(total + lanes[0])
    return total


@pytest.mark.parametrize("layout", ["within_repeat", "across_repeats"])
def test_reduce_sum_follows_the_documented_a2_order(layout):
    values = np.zeros(256, np.float32)
    if layout == "within_repeat":  # pairs first: (1e8 + 1) + (-1e8 + 1) = 0; in sequence it would be 1
        values[:4] = [1e8, 1, -1e8, 1]
    else:  # repeats in sequence: ((1 + 1e8) - 1e8) + 1 = 1; as a tree it would be 0
        values[[0, 64, 128, 192]] = [1, 1e8, -1e8, 1]
    got = twin.twin_probe("reduce_sum_order", block_dim=1, out_len=8 + 256,
                                  init=np.concatenate([np.zeros(8, np.float32), values]))[0]
    want = documented_a2_reduce_sum(values)
    sequential = np.float32(0)
    for v in values:
        sequential = np.float32(sequential + v)
    assert got == want
    assert want != (sequential if layout == "within_repeat" else np.float32(0))
