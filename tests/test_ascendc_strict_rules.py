"""Rules of the 910B (dav-c220, arch 2201) that the twin enforces beyond the pipe hazards of
test_ascendc_pipes.py, each with a probe kernel (kernels/ascendc/twin/twin_probes*.cc) that
breaks it and one that keeps it:
  * one event-id pool shared by FetchEventID/AllocEventID, the TQues and ReduceSum
    (asc-devkit impl/basic_api/kernel_tpipe_impl.h, kernel_tquebind_impl.h);
  * ReduceSum (count form) as a vector -> scalar -> vector round trip on its real pipes
    (impl/basic_api/dav_c220/kernel_operator_vec_reduce_impl.h);
  * dependent V -> V pairs: the compiler's barriers (--cce-auto-sync), refused without it;
  * narrowing casts in the INF_NAN and the saturation overflow mode;
  * a TQue declared deeper than it is ever filled."""
import numpy as np
import pytest

import twin
from twin import TwinFault


def probe(name, **kwargs):
    kwargs.setdefault("block_dim", 1)
    return twin.twin_probe(name, **kwargs)


# ---------------------------------------------------------------- one event-id pool
def test_fetched_id_is_not_reserved_so_a_queue_takes_it_too():
    with pytest.raises(TwinFault, match=r"SetFlag<V_MTE3>\(0\) by a TQue while that flag is still set by the "
                                        r"kernel.*hang"):
        probe("event_fetch_then_queue")


def test_allocated_id_is_reserved_until_released():
    probe("event_alloc_then_queue")


def test_a_kernel_wait_on_a_queue_id_leaves_the_queue_hanging():
    with pytest.raises(TwinFault, match=r"WaitFlag<V_MTE3>\(0\) by a TQue without a matching SetFlag.*hang"):
        probe("event_kernel_takes_queue_flag")


def test_reduce_sum_fetches_from_the_same_pool():
    with pytest.raises(TwinFault, match=r"SetFlag<V_S>\(0\) by an API's internal synchronisation while that flag "
                                        r"is still set by the kernel"):
        probe("event_kernel_flag_across_reduce_sum")


def test_the_pool_has_eight_ids_per_event():
    with pytest.raises(TwinFault, match=r"AllocEventID<MTE2_V>: all 8 event ids are allocated"):
        probe("event_pool_exhausted")


# ---------------------------------------------------------------- ReduceSum's round trip
@pytest.mark.parametrize("execution", ["immediate", "deferred"])
def test_reduce_sum_synchronises_its_scalar_store_itself(execution):
    # No kernel synchronisation between ReduceSum and the scalar read, the vector read and the
    # MTE3 copy of its result: ReduceSum waits V_S, S_V and S_MTE3 itself.
    out = probe("reduce_sum_round_trips", out_len=4 * 64, execution=execution)
    for i in range(4):
        assert out[i * 64] == 32.0  # 64 x 0.5
        np.testing.assert_array_equal(out[i * 64 + 8:i * 64 + 16], np.full(8, 0.5 * 4 * 32 / 64, np.float32))
    stats = twin.probe_last_stats()[0]
    assert stats["api_flag_pairs"] == 3 * 4  # V_S, S_V, S_MTE3 per call
    assert stats["scalar_ub"] >= 4  # the store of dst[0] is the scalar unit's


def test_reduce_sum_result_is_a_scalar_write():
    # MTE3 still copies the destination out when ReduceSum's scalar store overwrites it.
    with pytest.raises(TwinFault, match=r"pipe hazard: S ReduceSum \(scalar store of dst\[0\]\).*still being read "
                                        r"by MTE3.*no MTE3->S synchronisation"):
        probe("reduce_sum_store_while_mte3_reads", out_len=128)


def test_a_reduce_sum_round_trip_costs_the_vector_pipe_drain():
    probe("reduce_sum_round_trips", out_len=64)
    one = twin.probe_last_stats()[0]["end_ns"]
    probe("reduce_sum_round_trips", out_len=8 * 64)
    eight = twin.probe_last_stats()[0]["end_ns"]
    assert eight > 7 * one  # each round trip is serial: nothing overlaps it


def test_whole_reduce_sum_sums_each_repeat_as_a_tree_on_the_vector_unit():
    # 4 repeats of 64 floats at a stride of 64: repeat r holds a pattern whose tree sum differs
    # from its sequential sum ((1e8 + 1) + (-1e8 + 1) = 0 pairwise, 1 in sequence).
    values = np.zeros((4, 64), np.float32)
    for r in range(4):
        values[r, :4] = [1e8, 1, -1e8, 1]
        values[r, 8 + r] = r + 1.0  # a distinct value per repeat
    out = probe("whole_reduce_sum_order", out_len=8 + 256, init=np.concatenate([np.zeros(8, np.float32),
                                                                              values.ravel()]))
    want = []
    for r in range(4):
        lanes = values[r].copy()
        while len(lanes) > 1:
            lanes = (lanes[0::2] + lanes[1::2]).astype(np.float32)
        want.append(lanes[0])
    np.testing.assert_array_equal(out[:4], np.array(want, np.float32))
    assert list(out[:4]) == [1.0, 2.0, 3.0, 4.0]  # the pairs cancel first
    stats = twin.probe_last_stats()[0]
    assert stats["api_flag_pairs"] == 0  # no scalar round trip


# ---------------------------------------------------------------- V -> V and --cce-auto-sync
@pytest.mark.parametrize("name, access", [("vector_read_after_write", "reads UB bytes last written"),
                                          ("vector_write_after_read", "writes UB bytes still being read")])
def test_dependent_vector_pairs_need_the_compilers_barrier(name, access):
    probe(name)  # auto-sync (the default build): the compiler inserts one barrier
    assert twin.probe_last_stats()[0]["auto_v_barriers"] == 1
    with pytest.raises(TwinFault, match=rf"V->V dependency without a barrier: V .* {access}.*no "
                                        r"PipeBarrier<PIPE_V> in between"):
        probe(name, auto_sync=False)


@pytest.mark.parametrize("name", ["vector_pair_with_barrier", "vector_independent"])
def test_ordered_or_independent_vector_ops_need_no_compiler_barrier(name):
    probe(name, auto_sync=False)
    assert twin.probe_last_stats()[0]["auto_v_barriers"] == 0


def test_compiler_barriers_are_costed():
    # The one compiler barrier of the probe costs vec_barrier_cycles on the V pipe's timeline.
    default = twin.probe_cost_model()
    ends = {}
    try:
        for cycles in (0.0, 1000.0):
            twin.probe_cost_model(vec_barrier_cycles=cycles)
            probe("vector_read_after_write")
            ends[cycles] = twin.probe_last_stats()[0]["end_ns"]
    finally:
        twin.probe_cost_model(**default)
    assert ends[1000.0] - ends[0.0] == pytest.approx(1000.0 / default["clock_ghz"])


# ---------------------------------------------------------------- narrowing casts
SPECIAL = np.array([np.inf, -np.inf, np.nan, 70000.0, -70000.0, 1.5, 3.0e38, 65520.0,
                    65504.0, -0.0, 1e-8, 2.0, 3.0, 4.0, 5.0, 6.0], np.float32)
HALF_MAX, BF16_MAX = 65504.0, float(np.array([0x7F7F0000], np.uint32).view(np.float32)[0])


def expected_cast(mode):
    with np.errstate(over="ignore"):
        half = SPECIAL.astype(np.float16).astype(np.float32)  # IEEE round to nearest even
    bits = SPECIAL.view(np.uint32).astype(np.uint64)
    bf16 = (((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16).astype(np.uint32).view(np.float32)
    bf16 = np.where(np.isnan(SPECIAL), np.float32(np.nan), bf16)
    if mode == "saturation":
        half = np.where(np.isnan(half), 0, np.clip(half, -HALF_MAX, HALF_MAX)).astype(np.float32)
        bf16 = np.where(np.isnan(bf16), 0, np.clip(bf16, -BF16_MAX, BF16_MAX)).astype(np.float32)
    return np.concatenate([half, bf16])


@pytest.mark.parametrize("mode", ["inf_nan", "saturation"])
def test_narrowing_cast_in_each_overflow_mode(mode):
    out = probe("cast_special_values", out_len=32, init=SPECIAL, overflow=mode)
    want = expected_cast(mode)
    np.testing.assert_array_equal(out, want)  # NaN == NaN for assert_array_equal
    if mode == "inf_nan":
        assert np.isinf(out[[0, 1, 3, 4, 6, 7]]).all() and np.isnan(out[2]) and np.isnan(out[18])
    else:
        assert np.isfinite(out).all()
        assert out[0] == HALF_MAX and out[2] == 0 and out[16] == BF16_MAX and out[18] == 0


# ---------------------------------------------------------------- queue depth
def test_a_queue_never_filled_to_its_depth_is_flagged():
    with pytest.raises(TwinFault, match=r"TQue of depth 2 never held more than 1 tensor\(s\) at once: declare it "
                                        r"with depth 1"):
        probe("queue_deeper_than_filled", out_len=64)


def test_a_queue_filled_to_its_depth_passes():
    probe("queue_depth_used", out_len=64)


# ---------------------------------------------------------------- which buffer AllocTensor takes
def test_a_queue_hands_out_its_buffers_round_robin():
    # asc-devkit kernel_tquebind_impl.h AllocBuffer: from a cursor that advances at every probe,
    # the first free buffer; so a tensor freed and allocated again lands in the next buffer (its
    # store need not have landed), and a buffer still allocated is skipped. A twin that always
    # took the lowest free buffer made every store through a two-buffer queue wait for the one
    # before it.
    out = probe("queue_buffers_rotate", out_len=64)
    held, first, second, third, fourth = out[:5]
    assert len({held, first, second}) == 3
    assert (third, fourth) == (first, second)
    assert list(out[8:40:8]) == [1, 2, 3, 4]


# ---------------------------------------------------------------- repeat-stride forms
def test_rows_scale_by_one_broadcast_block_each():
    """Brcb puts a_r and b_r into one 32-byte block each; Mul/Add (mask 12, 5 repeats at a pitch
    of 16 floats, src1 block stride 0 and repeat stride 1 block) scale and shift the first 12
    elements of row r by them and leave the rest of the row as it was."""
    rng = np.random.default_rng(3)
    a, b = rng.standard_normal(8).astype(np.float32), rng.standard_normal(8).astype(np.float32)
    x = rng.standard_normal((5, 16)).astype(np.float32)
    out = probe("strided_row_scale", out_len=16 + 80, init=np.concatenate([a, b, x.ravel()]))
    want = x.copy()
    want[:, :12] = (x[:, :12] * a[:5, None]).astype(np.float32) + b[:5, None]
    np.testing.assert_array_equal(out[16:].reshape(5, 16), want)


@pytest.mark.parametrize("name, message", [
    ("strided_dst_blk_stride_zero", r"dstBlkStride 0 is undefined"),
    ("strided_mask_65", r"mask \(continuous mode\) is 1\.\.64"),
    ("strided_row_overrun", r"overrun the buffer"),
    ("brcb_misaligned_source", r"Brcb src: UB operand address .* is not 32-byte aligned"),
    ("brcb_dst_blk_stride_zero", r"Brcb: dstBlkStride 0 is undefined"),
    ("brcb_overlapping_source", r"Brcb: source and destination overlap"),
])
def test_repeat_stride_forms_keep_their_rules(name, message):
    init = np.zeros(16 + 80, np.float32)
    with pytest.raises(TwinFault, match=message):
        probe(name, out_len=16 + 80, init=init)


# ---------------------------------------------------------------- Gather and int32 Adds
def test_gather_reads_the_elements_its_offset_table_names():
    """The probe builds an offset table (8 entries by the scalar unit, the rest by int32 Adds
    doubling the run, reduced mod 64) and gathers 40 floats: out[i] = src[(3 i + 1) % 64]."""
    src = np.arange(64, dtype=np.float32) * 1.5 - 7.0
    out = probe("gather", out_len=128, init=np.concatenate([src, np.zeros(64, np.float32)]))
    np.testing.assert_array_equal(out[64:104], src[(3 * np.arange(40) + 1) % 64])
    probe("gather_count_zero", out_len=128, init=np.zeros(128, np.float32))  # a NOP, no fault


@pytest.mark.parametrize("name, message", [
    ("gather_offset_off_the_element", r"Gather: offset 30 \(element 5\) is not a multiple of the element size"),
    ("gather_offset_past_the_source", r"Gather: element 7 reads byte 256 of a source of 256 bytes"),
    ("gather_overlapping_source", r"Gather: source and destination overlap"),
    ("gather_base_off_the_element", r"Gather: srcBaseAddr 2 is not a multiple of the element size"),
    ("gather_misaligned_destination", r"Gather dst: UB operand address .* is not 32-byte aligned"),
    ("gather_count_past_255_repeats", r"Gather: count 16384 needs more than 255 repeats"),
    ("adds_int32_overflow", r"Adds \(int32\): the sum overflows int32"),  # its result is not documented
])
def test_gather_keeps_its_rules(name, message):
    with pytest.raises(TwinFault, match=message):
        probe(name, out_len=128, init=np.zeros(128, np.float32))
