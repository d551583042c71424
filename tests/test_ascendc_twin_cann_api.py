"""The twin API that CANN's own 910B kernels use beyond ours (kernels/ascendc/twin/kernel_operator_common.h,
the mask register and Copy of kernel_operator_strided.h), each rule with a probe that keeps it and one
that breaks it (kernels/ascendc/twin/twin_probes_common.cc):
  * the vector mask register: a level-0 form with isSetMask = false computes under the mask the last
    instruction left, not its own argument; count forms leave it full (asc-devkit dav_c220 AddImpl);
  * Copy (level 0, mask count mode) with CopyRepeatParams, and its stride and bounds rules;
  * InitOutput: a GM fill from the UB above the TPipe's buffers, V -> MTE3 inside, MTE3 left in flight;
  * GetTPipePtr(): the block's live TPipe, a fault without one; ASSERT: a fault when false;
  * DataCopyPad UB -> GM with the uint16 DataCopyParams;
  * TBuf::Get past the buffer: refused, or under cannCompat clipped to it;
  * a second DeQue of a depth-1 queue's held buffer: refused, or under cannCompat that buffer again;
  * a TQue deeper than it is ever filled: flagged, or under cannCompat not (a recommendation only);
  * Cast float -> float: the A2 rounding modes to an integral value; CAST_NONE refused."""
import numpy as np
import pytest

import twin
from twin import TwinFault


def probe(name, **kwargs):
    kwargs.setdefault("block_dim", 1)
    return twin.twin_probe(name, **kwargs)


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


def _compat(name, compat, init=None, out_len=64, execution="immediate", check_hazards=True):
    """A probe with Config::cannCompat (policy bit 19) on or off."""
    from twin import _policy_code
    import ctypes
    out = np.zeros(out_len, np.float32)
    if init is not None:
        out[:len(init)] = init
    error = ctypes.create_string_buffer(2048)
    status = twin._probe_cdll().GnmsTwinProbe(name.encode(), 1, 48, twin.UB_910B,
                                                     _policy_code("concurrent", execution) | (int(compat) << 19)
                                                     | (0 if check_hazards else 1 << 16), 0,
                                                     out.ctypes.data, out_len, error, len(error))
    if status:
        raise TwinFault(error.value.decode())
    return out


@pytest.mark.parametrize("execution", ["immediate", "deferred"])
def test_a_refill_with_the_same_bytes_is_benign_only_under_cann_compat(execution):
    """CANN's kernels call InitOutput(…, 0) back to back: nothing orders the first call's MTE3 read of the
    popped UB before the second call's V fill, but the fill writes the bytes already there, so no reader
    can see a difference. Strict by default; relaxed per launch; a fill with a new value still faults.
    Deferred, the UB may not hold the first fill's bytes yet: the refill is benign when that fill, with
    the same value, is still the last writer of every byte."""
    hazard = r"pipe hazard: V InitOutput \(Duplicate\) .* still being read by MTE3 InitOutput"
    with pytest.raises(TwinFault, match=hazard):
        _compat("init_output_twice_same_value", False, execution=execution)
    np.testing.assert_array_equal(_compat("init_output_twice_same_value", True, execution=execution),
                                  np.full(64, 7.0))
    for compat in (False, True):
        with pytest.raises(TwinFault, match=hazard):
            _compat("init_output_twice_new_value", compat, execution=execution)


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


def test_a_scalar_wait_orders_what_the_scalar_unit_issues_next():
    """The scalar unit issues every instruction in order and stalls on WaitFlag<V_S>: a load issued after
    that wait cannot overtake the vector work before the SetFlag (CANN's MODE_2 relies on it, through the
    V -> S round trip of ReduceSum). Without the wait the load races the vector write."""
    probe("scalar_wait_orders_later_issue")
    with pytest.raises(TwinFault, match=r"pipe hazard: MTE2 DataCopy GM->UB .* last written by V Duplicate"):
        probe("no_scalar_wait_then_load")


@pytest.mark.parametrize("name, strict", [
    ("pad_row_into_short_view", r"DataCopyPad GM->UB: 8 elements .* overrun the buffer"),
    ("pad_into_veccalc", r"DataCopyPad GM->UB: the data path GM -> VECCALC is not supported"),
    ("copy_vecin_to_vecout", r"DataCopy UB->UB: the data path VECIN -> VECOUT is not supported"),
])
def test_cann_compat_accepts_what_the_hardware_does_and_only_that(name, strict):
    """Strict by default (the documented positions; padding inside the view, as asc-devkit's overflow
    check wants). Under cannCompat the copy runs as asc-devkit dispatches it (by physical memory) and
    moves the right data."""
    x = np.arange(1, 8, dtype=np.float32)
    with pytest.raises(TwinFault, match=strict):
        _compat(name, False, init=x)
    np.testing.assert_array_equal(_compat(name, True, init=x)[8:15], x)


def test_tbuf_get_past_the_buffer_is_refused_unless_cann_compat_and_then_clipped():
    """Get.md (约束说明): len * sizeof(T) must not exceed the TBuf's initialised length; asc-devkit checks it
    in CPU-debug builds only (kernel_tbuf_impl.h), the device just records the length. CANN's
    GroupNormSwishGrad breaks the rule (a one-channel TBuf asked for a group, one channel used). Strict by
    default; under cannCompat the view is clipped to the buffer, so using what exists runs and reading
    past the allocation through the view still faults."""
    x = np.arange(1, 9, dtype=np.float32)
    with pytest.raises(TwinFault, match=r"TBuf::Get: 16 elements, more than the buffer holds \(8\)"):
        _compat("tbuf_get_past_buffer", False, init=x)
    np.testing.assert_array_equal(_compat("tbuf_get_past_buffer", True, init=x)[8:16], x)
    with pytest.raises(TwinFault, match=r"TBuf::Get: 16 elements"):
        _compat("tbuf_get_past_buffer_then_overrun", False, init=x)
    with pytest.raises(TwinFault, match=r"DataCopy GM->UB: 16 elements .* overrun the buffer of a TBuf"):
        _compat("tbuf_get_past_buffer_then_overrun", True, init=x)


def test_a_second_deque_of_a_held_buffer_runs_only_under_cann_compat():
    """DeQue.md (约束说明): a DeQue of an empty queue is abnormal (reported in CPU debugging). On the device a
    depth-1 queue hands back the buffer it last held without waiting (kernel_tquebind_impl.h DeQue), and
    CANN's GroupNormSwishGrad MODE_3 relies on it for gamma and beta. Strict by default; under cannCompat the
    held buffer comes back with its data; once freed, a second DeQue faults either way."""
    x = np.arange(1, 9, dtype=np.float32)
    with pytest.raises(TwinFault, match=r"DeQue on an empty queue"):
        _compat("deque_twice_held", False, init=x)
    np.testing.assert_array_equal(_compat("deque_twice_held", True, init=x)[8:16], x)
    for compat in (False, True):
        with pytest.raises(TwinFault, match=r"DeQue on an empty queue"):
            _compat("deque_twice_after_free", compat, init=x)


def test_cast_round_breaks_ties_away_from_zero():
    """Cast.md: CAST_RINT rounds to nearest even (四舍六入五成双), CAST_ROUND to nearest with ties away from
    zero (四舍五入); CANN's kernels store 16-bit results with CAST_ROUND. Off a tie both agree."""
    h_tie, b_tie = 1 + 2.0 ** -11, 1 + 2.0 ** -8  # halfway between 1 and the next half / bf16 above it
    x = np.array([h_tie, -h_tie, 1 + 3 * 2.0 ** -11, 0.1, -0.1, 0, 65504, 1e-6,
                  b_tie, -b_tie, 1 + 3 * 2.0 ** -9, 0.1, -0.1, 0, 3.0e38, 1e-30], np.float32)
    got = probe("cast_round", out_len=32, init=x)  # out[0:16] through half, out[16:32] through bf16
    rint = probe("cast_rint", out_len=32, init=x)
    assert got[0] == 1 + 2.0 ** -10 and got[1] == -(1 + 2.0 ** -10) and rint[0] == 1.0 and rint[1] == -1.0
    assert got[16 + 8] == 1 + 2.0 ** -7 and got[16 + 9] == -(1 + 2.0 ** -7) and rint[16 + 8] == 1.0
    ties = {0, 1, 24, 25}
    assert all(got[i] == rint[i] for i in range(32) if i not in ties)
    with pytest.raises(TwinFault, match=r"CAST_RINT .* and CAST_ROUND .* only"):
        probe("cast_floor", out_len=32, init=x)


def test_a_deep_queue_never_filled_is_flagged_unless_cann_compat():
    """TQue简介.md: depth >= 2 is not recommended except where two tensors really are queued together; the
    twin flags a depth-2 queue that never held two, as a lint for our kernels. CANN's GroupNormSilu declares
    its x queue so; under cannCompat the lint is off and the data flows as ever."""
    x = np.arange(1, 9, dtype=np.float32)
    with pytest.raises(TwinFault, match=r"TQue of depth 2 never held more than 1 tensor"):
        _compat("deep_queue_held_once", False, init=x)
    out = _compat("deep_queue_held_once", True, init=x)
    np.testing.assert_array_equal(out[8:16], x)
    np.testing.assert_array_equal(out[16:24], x)


def test_cast_float_to_float_rounds_to_an_integral_value():
    """Cast.md, the A2 table: float -> float takes CAST_RINT/FLOOR/CEIL/ROUND/TRUNC (dav_c220's
    vconv_f322f32r/f/c/a/z), each rounding to an integral value. CAST_NONE is not in the row, and dav_c220
    issues no instruction for it (kernel_operator_vec_vconv_impl.h): the twin refuses it at run time, in
    every mode. CANN's GroupNormSilu instantiates Cast<float, float>(CAST_NONE) in its 310P template, which
    its 910B tiling never picks, so it must compile."""
    x = np.array([2.5, -2.5, 1.5, 0.5, -0.5, 2.4, -2.6, 3.0, 1e9 + 0.5, 0.0, -7.5, 7.5, 1.25, -1.25, 100.5, -0.1],
                 np.float32)
    for mode, want in (("rint", np.rint(x)), ("floor", np.floor(x)), ("ceil", np.ceil(x)), ("trunc", np.trunc(x)),
                       ("round", np.sign(x) * np.floor(np.abs(x) + 0.5))):
        np.testing.assert_array_equal(probe(f"cast_float_{mode}", out_len=16, init=x), want.astype(np.float32), mode)
    for compat in (False, True):
        with pytest.raises(TwinFault, match=r"Cast float -> float takes CAST_RINT.*CAST_NONE"):
            _compat("cast_float_none", compat, init=x, out_len=16)


@pytest.mark.parametrize("name, pair", [
    ("hazard_mte2_v", None), ("hazard_v_mte3", None), ("hazard_war_reuse", None),
    ("hazard_v_s", ("V", "S")), ("hazard_s_v", ("S", "V")), ("hazard_mte3_s", ("MTE3", "S")),
])
def test_cann_compat_takes_the_compilers_scalar_pairs_and_no_others(name, pair):
    """bisheng's --cce-auto-sync inserts V <-> S, MTE2 <-> S and MTE3 <-> S synchronisation around
    GetValue/SetValue, nothing between V, MTE2 and MTE3 (关键特性说明.md, 支持的同步类型). CANN's kernels rely on
    it (a SetValue then a Cast in their 16-bit N = 1 path); under cannCompat the S pairs are ordered, every
    other missing synchronisation still stops the launch. The probes are test_ascendc_pipes.py's."""
    init = np.arange(1, 193, dtype=np.float32)
    for execution in ("immediate", "deferred"):
        with pytest.raises(TwinFault, match="pipe hazard"):
            _compat(name, False, init=init, out_len=256, execution=execution)
        if pair is None:
            with pytest.raises(TwinFault, match="pipe hazard"):
                _compat(name, True, init=init, out_len=256, execution=execution)
    if pair is not None:
        # Deferred, the inserted WaitFlag runs the other pipe's work first: the program-order numbers,
        # which the same launch without any synchronisation (hazards unchecked) does not compute.
        in_order = _compat(name, True, init=init, out_len=256)
        np.testing.assert_array_equal(_compat(name, True, init=init, out_len=256, execution="deferred"), in_order)
        unsynchronised = _compat(name, False, init=init, out_len=256, execution="deferred", check_hazards=False)
        assert not np.array_equal(unsynchronised, in_order)
