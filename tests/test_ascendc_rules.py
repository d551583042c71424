"""The CPU twin enforces the hardware rules: each test makes a deliberately broken launch
(of the real GroupNormGradMs kernel where a launch parameter can break it, otherwise of a
small broken kernel from twin_probes*.cc) and checks that the twin stops it and says why.
The ordering probes show that running blocks in several orders would expose a missing
barrier or an order-dependent reduction, which is what gives the determinism test teeth."""
import numpy as np
import pytest

from ms_groupnorm import reference
import twin
from twin import TwinFault


def kernel_buffers(N, C, HxW, G, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, C, HxW)).astype(np.float32)
    dy = rng.standard_normal((N, C, HxW)).astype(np.float32)
    _, mean, rstd = reference.forward(x, None, None, G)
    gamma = rng.standard_normal(C).astype(np.float32)
    return [dy, mean.astype(np.float32), rstd.astype(np.float32), x, gamma, np.zeros_like(x),
            np.zeros(C, np.float32), np.zeros(C, np.float32)]


# ---------------------------------------------------------------- the real kernel, broken launches
def test_good_launch_runs():
    buffers = kernel_buffers(4, 16, 200, 4)
    twin.twin_launch(buffers, twin.twin_tiling(4, 16, 200, 4, core_num=8), core_num=8)
    assert np.all(np.isfinite(buffers[5]))


def test_ub_overuse_is_caught():
    # Tiled for a 192 KiB UB (the whole group resident), launched on a core with 96 KiB.
    tiling = twin.twin_tiling(4, 32, 1500, 4, ub_bytes=196608, core_num=8)
    assert twin.MODE_NAMES[tiling["mode"]] == "group_resident" and tiling["ubBytesPhase1"] > 98304
    with pytest.raises(TwinFault, match=r"UB overflow: .* above the 98304-byte unified buffer"):
        twin.twin_launch(kernel_buffers(4, 32, 1500, 4), tiling, ub_bytes=98304, core_num=8)


def test_too_many_blocks_is_caught():
    # 64 groups -> 48 blocks (dx only: with dgamma/dbeta the 16 groups would go across N on 16 blocks)
    tiling = twin.twin_tiling(4, 16, 64, 16, core_num=48, mask=(True, False, False))
    assert tiling["blockDim"] == 48
    with pytest.raises(TwinFault, match=r"launch of 48 blocks on a device with 40 vector cores"):
        twin.twin_launch(kernel_buffers(4, 16, 64, 16), tiling, core_num=40)


@pytest.mark.parametrize("index,name", [(3, "x"), (0, "dy"), (5, "dx"), (6, "dgamma"), (1, "mean")])
def test_gm_out_of_bounds_is_caught(index, name):
    # The launch declares one buffer one element shorter than the shapes say.
    buffers = kernel_buffers(2, 8, 33, 2)
    sizes = [b.nbytes for b in buffers]
    sizes[index] -= 4
    tiling = twin.twin_tiling(2, 8, 33, 2, core_num=4)
    with pytest.raises(TwinFault, match="outside every buffer the launch was given"):
        twin.twin_launch(buffers, tiling, core_num=4, buffer_bytes=sizes)


def test_unaligned_datacopy_length_is_caught():
    # A tiling that claims 32-byte rows for HxW = 33 fp32 (132 bytes) makes the kernel use
    # plain DataCopy where only DataCopyPad is legal. Groups of 9 channels: groups of up to 8
    # take the batched path (groupRows), which this flag does not steer.
    tiling = twin.twin_tiling(2, 18, 33, 2, core_num=4)
    assert tiling["copyAligned"] == 0 and tiling["groupRows"] == 0
    tiling["copyAligned"] = 1
    tiling["channelsPerItem"] = 1  # one row per copy: several rows of unpadded UB would go by DataCopyPad
    with pytest.raises(TwinFault, match=r"not a multiple of 32 bytes \(unaligned transfers need DataCopyPad\)"):
        twin.twin_launch(kernel_buffers(2, 18, 33, 2), tiling, core_num=4)


def test_unaligned_ub_address_is_caught():
    # Resident channels packed at a stride of HxW = 9 floats instead of a 16-element multiple.
    tiling = twin.twin_tiling(2, 8, 9, 2, core_num=2)
    assert twin.MODE_NAMES[tiling["mode"]] == "group_resident" and tiling["residentStride"] == 16
    tiling["residentStride"] = 9
    with pytest.raises(TwinFault, match=r"UB operand address \d+ is not 32-byte aligned"):
        twin.twin_launch(kernel_buffers(2, 8, 9, 2), tiling, core_num=2)


def test_ub_buffer_overrun_is_caught():
    # Chunks claimed longer than the staging buffers the kernel allocates (48 channels: no HxW split).
    tiling = twin.twin_tiling(3, 16, 8200, 2, core_num=2)
    assert twin.MODE_NAMES[tiling["mode"]] == "hw_chunks" and tiling["hwSlices"] == 1
    tiling["chunkElems"] += 64  # 64 more fp32 elements per buffer outgrow the 1 KiB reserve the plan leaves
    tiling["chunksPerChannel"] = -(-8200 // tiling["chunkElems"])
    with pytest.raises(TwinFault, match=r"UB overflow|overrun the buffer"):
        twin.twin_launch(kernel_buffers(3, 16, 8200, 2), tiling, core_num=2)


# ---------------------------------------------------------------- broken mini kernels
@pytest.mark.parametrize("probe,message", [
    ("deque_before_enque", r"DeQue on an empty queue \(DeQue before EnQue\)"),
    ("enque_beyond_depth", r"EnQue beyond the queue depth of 1"),
    ("alloc_beyond_buffers", r"all 2 buffers of the queue are in flight"),
    ("double_free", r"already freed \(double free\)"),
    ("use_after_free", r"used while it is freed"),
    ("use_while_queued", r"used while it is still in its queue"),
    ("use_after_reset", r"used while it is released by TPipe::Reset"),
    ("unaligned_ub_address", r"UB operand address 12 is not 32-byte aligned"),
    ("unaligned_datacopy_length", r"length of 48 bytes is not a multiple of 32 bytes"),
    ("ub_overflow", r"UB overflow: .* 262144 bytes, above the 196608-byte unified buffer"),
    ("operand_overrun", r"65 elements .* overrun the buffer"),
    ("gm_out_of_bounds", r"DataCopyPad GM->UB: global-memory access of 260 bytes .* outside every buffer"),
])
@pytest.mark.parametrize("policy", ["concurrent", "forward"])
def test_broken_kernels_are_caught(probe, message, policy):
    with pytest.raises(TwinFault, match=message):
        twin.twin_probe(probe, block_dim=3, policy=policy)


def test_copy_pad_takes_at_most_4095_blocks():
    # DataCopyPad's blockCount range is [0, 4095] (asc-devkit's DataCopyPad GM->UB and UB->GM pages):
    # 4095 one-float rows copy, 4096 are refused in either direction.
    out = twin.twin_probe("copy_pad_in_4095_rows", block_dim=1, out_len=4096)
    assert out.shape == (4096,)
    for name in ("copy_pad_in_4096_rows", "copy_pad_out_4096_rows"):
        with pytest.raises(TwinFault, match=r"blockCount 4096 is beyond 4095"):
            twin.twin_probe(name, block_dim=1, out_len=4096)


@pytest.mark.parametrize("policy", ["concurrent", "forward", "reverse", "shuffle", "interleave"])
def test_syncall_skipped_by_one_block_is_caught(policy):
    with pytest.raises(TwinFault, match=r"SyncAll mismatch"):
        twin.twin_probe("syncall_skipped", block_dim=4, policy=policy, seed=5)


@pytest.mark.parametrize("policy,seed", [("concurrent", 0), ("forward", 0), ("reverse", 0), ("shuffle", 1),
                                         ("interleave", 2), ("interleave", 3)])
def test_syncall_is_a_real_barrier(policy, seed):
    n = 6
    out = twin.twin_probe("exchange_with_syncall", block_dim=n, policy=policy, seed=seed, out_len=2 * n)
    np.testing.assert_array_equal(out[n:], [(b + 1) % n + 1 for b in range(n)])


def test_missing_barrier_shows_up_under_different_orders():
    n = 6
    forward = twin.twin_probe("exchange_without_syncall", block_dim=n, policy="forward", out_len=2 * n)
    reverse = twin.twin_probe("exchange_without_syncall", block_dim=n, policy="reverse", out_len=2 * n)
    assert not np.array_equal(forward[n:], reverse[n:])


def test_order_dependent_reduction_shows_up_under_different_orders():
    # fp32 atomic adds of 1e8, 3, -1e8, 5, ...: the rounding depends on the order.
    results = {twin.twin_probe("atomic_accumulate", block_dim=8, policy=p, seed=s, out_len=8)[0]
               for p, s in [("forward", 0), ("reverse", 0), ("shuffle", 1), ("shuffle", 2), ("shuffle", 3)]}
    assert len(results) > 1


def test_the_device_checks_core_count_for_probes_too():
    with pytest.raises(TwinFault, match="blockDim must be in"):
        twin.twin_probe("exchange_with_syncall", block_dim=9, core_num=8, out_len=18)
