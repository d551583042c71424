"""The twin API that CANN's own 910B kernels use beyond ours (kernels/ascendc/twin/kernel_operator_common.h,
the mask register and Copy of kernel_operator_strided.h), each rule with a probe that keeps it and one
that breaks it (kernels/ascendc/twin/twin_probes_common.cc):
  * the vector mask register: a level-0 form with isSetMask = false computes under the mask the last
    instruction left, not its own argument; count forms leave it full (asc-devkit dav_c220 AddImpl);
  * Copy (level 0, mask count mode) with CopyRepeatParams, and its stride and bounds rules;
  * InitOutput: a GM fill from the UB above the TPipe's buffers, V -> MTE3 inside, MTE3 left in flight;
  * GetTPipePtr(): the block's live TPipe, a fault without one; ASSERT: a fault when false;
  * DataCopyPad UB -> GM with the uint16 DataCopyParams."""
import numpy as np
import pytest

from ms_groupnorm.backends import twin as ascendc_twin
from ms_groupnorm.backends.twin import TwinFault


def probe(name, **kwargs):
    kwargs.setdefault("block_dim", 1)
    return ascendc_twin.twin_probe(name, **kwargs)


def _mask_case(x, lanes):
    """What Copy(8 lanes, 2 repeats) into zeros, then Add over `lanes` lanes per repeat, gives."""
    y = np.zeros(128, np.float32)
    for r in range(2):
        y[r * 64:r * 64 + 8] = x[r * 64:r * 64 + 8]
        y[r * 64:r * 64 + lanes] += x[r * 64:r * 64 + lanes]
    return y


def test_add_without_set_mask_runs_under_the_mask_copy_left():
    x = np.arange(1, 129, dtype=np.float32)
    out = probe("mask_register_after_copy", out_len=128, init=x)
    np.testing.assert_array_equal(out, _mask_case(x, 8))  # not 64, the Add's own argument


def test_a_count_form_leaves_the_mask_full():
    x = np.arange(1, 129, dtype=np.float32)
    out = probe("mask_register_after_count_form", out_len=128, init=x)
    np.testing.assert_array_equal(out, _mask_case(x, 64))


@pytest.mark.parametrize("name, message", [
    ("copy_dst_stride_zero", r"Copy: dstStride 0 is undefined"),
    ("copy_overrun", r"Copy dst: .* overrun the buffer"),
])
def test_copy_keeps_the_level_zero_rules(name, message):
    with pytest.raises(TwinFault, match=message):
        probe(name, out_len=128, init=np.zeros(128, np.float32))


def test_init_output_fills_gm():
    out = probe("init_output", out_len=5000, init=np.full(5000, np.nan, np.float32))  # 2 bursts of 2040 + tail
    np.testing.assert_array_equal(out, np.full(5000, 7.0, np.float32))


@pytest.mark.parametrize("name, message", [
    ("init_output_without_pipe", r"GetTPipePtr\(\): no TPipe"),
    ("init_output_past_gm", r"InitOutput.*outside"),
    ("init_output_then_overwrite", r"pipe hazard: V Duplicate .* still being read by MTE3 InitOutput"),
])
def test_init_output_rules(name, message):
    with pytest.raises(TwinFault, match=message):
        probe(name, out_len=64)


def test_init_output_then_barrier_may_reuse_the_popped_ub():
    np.testing.assert_array_equal(probe("init_output_barrier_then_overwrite", out_len=64), np.full(64, 7.0))


def test_pipe_ptr_is_the_live_pipe():
    probe("pipe_ptr_fetch")
    with pytest.raises(TwinFault, match=r"GetTPipePtr\(\): no TPipe"):
        probe("pipe_ptr_after_pipe_gone")


def test_false_assert_stops_the_launch():
    with pytest.raises(TwinFault, match=r"ASSERT\(GetBlockNum\(\) == 0 && \"block dim must be zero\"\) failed"):
        probe("assert_false")


def test_copy_pad_with_data_copy_params():
    out = probe("copy_params_store", out_len=16, init=np.full(16, -1.0, np.float32))
    want = np.full(16, -1.0, np.float32)
    want[0:5] = np.arange(0, 5)
    want[7:12] = np.arange(16, 21)
    np.testing.assert_array_equal(out, want)
