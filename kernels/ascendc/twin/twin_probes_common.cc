// Probes of the API CANN's own kernels use beyond ours (kernel_operator_common.h, the mask
// register and Copy of kernel_operator_strided.h): each rule with a probe that keeps it and one
// that breaks it. See twin_probes.h.
#include <map>
#include <string>

#include "kernel_operator.h"
#include "twin_probes.h"

using namespace AscendC;
using twin::probes::ProbeArgs;

namespace {

// out[0..128): x. Copies x to UB, then, per `variant`, writes back 128 floats computed by the
// level-0 forms: Copy of 2 repeats of `copyMask` lanes into y (zeroed first), then
// Add<float, false>(y, y, x, mask 64, 2 repeats): under the mask register, not its argument.
//   0: Copy mask 8, then the Add without setting the mask: 8 lanes per repeat are added;
//   1: as 0, with a count-form Muls between them: the register is full again, 64 lanes;
//   2: Copy with dstStride 0 (refused);  3: Copy of 3 repeats, past y's buffer (refused).
void MaskProbe(const ProbeArgs &a, int variant) {
  TPipe pipe;
  TBuf<QuePosition::VECIN> in;
  TBuf<QuePosition::VECOUT> out;
  pipe.InitBuffer(in, 128 * sizeof(float));
  pipe.InitBuffer(out, 128 * sizeof(float));
  GlobalTensor<float> gm;
  gm.SetGlobalBuffer(a.out, a.outLen);
  LocalTensor<float> x = in.Get<float>();
  LocalTensor<float> y = out.Get<float>();
  DataCopy(x, gm, 128);
  SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
  WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
  Duplicate<float>(y, 0.0f, 128);
  const CopyRepeatParams copy(variant == 2 ? 0 : 1, 1, 8, 8);
  Copy(y, x, 8, variant == 3 ? 3 : 2, copy);
  if (variant == 1) Muls(y, y, 1.0f, 128);
  Add<float, false>(y, y, x, 64, 2, BinaryRepeatParams(1, 1, 1, 8, 8, 8));
  SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
  WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
  DataCopy(gm, y, 128);
}

// InitOutput: out[0..outLen) filled with 7 (fits), or
//   1: without a TPipe (GetTPipePtr faults);  2: past the GM buffer;
//   3: a TBuf laid over the popped UB and written by V before MTE3 has read it (hazard);
//   4: as 3 after a PipeBarrier<PIPE_ALL> (fine);
//   5: InitOutput twice with 7 (its second fill leaves the popped UB as it is);
//   6: InitOutput with 5, then with 7 (the second fill changes UB the first's MTE3 still reads).
void InitOutputProbe(const ProbeArgs &a, int variant) {
  GlobalTensor<float> gm;
  gm.SetGlobalBuffer(a.out, a.outLen);
  if (variant == 1) {
    InitOutput<float>(gm, static_cast<uint32_t>(a.outLen), 7.0f);
    return;
  }
  TPipe pipe;
  if (variant >= 5) InitOutput<float>(gm, static_cast<uint32_t>(a.outLen), variant == 5 ? 7.0f : 5.0f);
  InitOutput<float>(gm, static_cast<uint32_t>(a.outLen + (variant == 2 ? 8 : 0)), 7.0f);
  if (variant == 3 || variant == 4) {
    if (variant == 4) PipeBarrier<PIPE_ALL>();
    TBuf<QuePosition::VECCALC> buf;
    pipe.InitBuffer(buf, 256);
    Duplicate<float>(buf.Get<float>(), 1.0f, 64);
    PipeBarrier<PIPE_ALL>();
  }
}

// GetTPipePtr()->FetchEventID in a block with a TPipe (fine) or without one; ASSERT.
void PipePtrProbe(const ProbeArgs &, int variant) {
  if (variant == 0) {
    TPipe pipe;
    const event_t id = static_cast<event_t>(GetTPipePtr()->FetchEventID(HardEvent::V_MTE3));
    SetFlag<HardEvent::V_MTE3>(id);
    WaitFlag<HardEvent::V_MTE3>(id);
  } else if (variant == 1) {
    { TPipe gone; }
    GetTPipePtr()->FetchEventID(HardEvent::V_MTE3);  // the pipe it registered has been destroyed
  } else {
    ASSERT(GetBlockNum() == 0 && "block dim must be zero");
  }
}

// DataCopyPad UB -> GM with the uint16 DataCopyParams: 2 rows of 5 floats, UB rows 2 blocks apart
// (a 20-byte row takes one block, srcStride 1 more), GM rows 7 floats apart (dstStride 8 bytes):
// GM[0..5) = u[0..5), GM[7..12) = u[16..21).
void CopyParamsProbe(const ProbeArgs &a) {
  TPipe pipe;
  TBuf<QuePosition::VECOUT> out;
  pipe.InitBuffer(out, 24 * sizeof(float));
  LocalTensor<float> u = out.Get<float>();
  for (int i = 0; i < 24; ++i) u.SetValue(i, static_cast<float>(i));
  SetFlag<HardEvent::S_MTE3>(EVENT_ID0);
  WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);
  GlobalTensor<float> gm;
  gm.SetGlobalBuffer(a.out, a.outLen);
  DataCopyPad(gm, u, DataCopyParams(2, 5 * sizeof(float), 1, 2 * sizeof(float)));
}

// V writes a buffer, then MTE2 loads into it: ordered only if the scalar unit waited for V in
// between (variant 0: SetFlag/WaitFlag<V_S>, then the load is issued; 1: no wait, a hazard).
void ScalarWaitProbe(const ProbeArgs &a, int variant) {
  TPipe pipe;
  TBuf<QuePosition::VECIN> in;
  pipe.InitBuffer(in, 64 * sizeof(float));
  GlobalTensor<float> gm;
  gm.SetGlobalBuffer(a.out, a.outLen);
  LocalTensor<float> u = in.Get<float>();
  Duplicate<float>(u, 1.0f, 64);
  if (variant == 0) {
    SetFlag<HardEvent::V_S>(EVENT_ID0);
    WaitFlag<HardEvent::V_S>(EVENT_ID0);
  }
  DataCopy(u, gm, 64);
  PipeBarrier<PIPE_ALL>();
}

// The copies CANN's kernels make outside the documented positions, and an unaligned row into a
// view of its own length: out[0..7) is loaded (7 floats, one padded 32-byte row) and stored back
// at out[8..15) through a VECOUT buffer.
//   0: into a VECIN TBuf's Get(7) view (the padded row overruns the view, not the buffer);
//   1: into a VECCALC TBuf (GM -> VECCALC, documented for Ascend 950 only);
//   2: into a VECIN TBuf, then DataCopy UB -> UB VECIN -> VECOUT (not a documented path).
template <QuePosition kIn>
void PositionProbe(const ProbeArgs &a, int variant) {
  TPipe pipe;
  TBuf<kIn> in;
  TBuf<QuePosition::VECOUT> out;
  pipe.InitBuffer(in, 8 * sizeof(float));
  pipe.InitBuffer(out, 8 * sizeof(float));
  GlobalTensor<float> gm;
  gm.SetGlobalBuffer(a.out, a.outLen);
  LocalTensor<float> u = variant == 0 ? in.template Get<float>(7) : in.template Get<float>();
  LocalTensor<float> v = out.Get<float>();
  DataCopyPad(u, gm, DataCopyExtParams(1, 7 * sizeof(float), 0, 0, 0), DataCopyPadExtParams<float>(false, 0, 0, 0.0f));
  SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
  WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
  if (variant == 2) {
    DataCopy(v, in.template Get<float>(), 8);
  } else {
    Muls(v, in.template Get<float>(), 1.0f, 8);
  }
  SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
  WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
  DataCopyPad(gm[8], v, DataCopyExtParams(1, 7 * sizeof(float), 0, 0, 0));
}

// TBuf::Get with more elements than the buffer holds (CANN's GroupNormSwishGrad): an 8-float buffer
// asked for 16. Variant 0 then uses the 8 it has (out[0:8) -> out[8:16)); variant 1 loads 16 through
// the view, past the allocation.
void TBufGetProbe(const ProbeArgs &a, int variant) {
  TPipe pipe;
  TBuf<QuePosition::VECIN> in;
  TBuf<QuePosition::VECOUT> out;
  pipe.InitBuffer(in, 8 * sizeof(float));
  pipe.InitBuffer(out, 8 * sizeof(float));
  GlobalTensor<float> gm;
  gm.SetGlobalBuffer(a.out, a.outLen);
  LocalTensor<float> u = in.Get<float>(16);
  LocalTensor<float> v = out.Get<float>();
  DataCopy(u, gm, variant == 0 ? 8 : 16);
  SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
  WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
  Muls(v, u, 1.0f, 8);
  SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
  WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
  DataCopy(gm[8], v, 8);
}

// A depth-1 VECIN queue enqueued once and dequeued twice (CANN's GroupNormSwishGrad MODE_3 with gamma):
// out[0:8) -> out[8:16) through the second DeQue. Variant 1 frees the buffer before the second DeQue.
void DeQueTwiceProbe(const ProbeArgs &a, int variant) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> in;
  TBuf<QuePosition::VECOUT> out;
  pipe.InitBuffer(in, 1, 8 * sizeof(float));
  pipe.InitBuffer(out, 8 * sizeof(float));
  GlobalTensor<float> gm;
  gm.SetGlobalBuffer(a.out, a.outLen);
  LocalTensor<float> u = in.AllocTensor<float>();
  DataCopy(u, gm, 8);
  in.EnQue(u);
  LocalTensor<float> first = in.DeQue<float>();
  if (variant == 1) in.FreeTensor(first);
  LocalTensor<float> again = in.DeQue<float>();
  LocalTensor<float> v = out.Get<float>();
  Muls(v, again, 1.0f, 8);
  SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
  WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
  DataCopy(gm[8], v, 8);
  if (variant == 0) in.FreeTensor(again);
}

// A depth-2 VECIN queue that holds one tensor at a time, twice (CANN's GroupNormSilu declares its x
// queue so): out[0:8) -> out[8:16), out[8:16) -> out[16:24).
void DeepQueueHeldOnceProbe(const ProbeArgs &a) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 2> in;
  TBuf<QuePosition::VECOUT> out;
  pipe.InitBuffer(in, 2, 8 * sizeof(float));
  pipe.InitBuffer(out, 8 * sizeof(float));
  GlobalTensor<float> gm;
  gm.SetGlobalBuffer(a.out, a.outLen);
  for (int i = 0; i < 2; ++i) {
    LocalTensor<float> u = in.AllocTensor<float>();
    DataCopy(u, gm[8 * i], 8);
    in.EnQue(u);
    LocalTensor<float> x = in.DeQue<float>();
    LocalTensor<float> v = out.Get<float>();
    if (i > 0) {
      SetFlag<HardEvent::MTE3_V>(EVENT_ID0);
      WaitFlag<HardEvent::MTE3_V>(EVENT_ID0);
    }
    Muls(v, x, 1.0f, 8);
    in.FreeTensor(x);
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
    DataCopy(gm[8 * (i + 1)], v, 8);
  }
}

// out[0:16] fp32 -> fp32 with `mode` (Cast.md's A2 float -> float row: to an integral value).
void CastFloatProbe(const ProbeArgs &a, RoundMode mode) {
  TPipe pipe;
  TBuf<QuePosition::VECIN> in;
  TBuf<QuePosition::VECOUT> out;
  pipe.InitBuffer(in, 16 * sizeof(float));
  pipe.InitBuffer(out, 16 * sizeof(float));
  GlobalTensor<float> gm;
  gm.SetGlobalBuffer(a.out, a.outLen);
  LocalTensor<float> src = in.Get<float>();
  LocalTensor<float> dst = out.Get<float>();
  DataCopy(src, gm, 16);
  SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
  WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
  Cast(dst, src, mode, 16);
  SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
  WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
  DataCopy(gm, dst, 16);
}

// out[0:16] fp32 -> half -> fp32 and out[16:32] fp32 -> bf16 -> fp32 with `mode` (CANN's kernels
// store with CAST_ROUND).
void CastModeProbe(const ProbeArgs &a, RoundMode mode) {
  TPipe pipe;
  TBuf<QuePosition::VECIN> in;
  TBuf<QuePosition::VECOUT> out;
  TBuf<QuePosition::VECCALC> narrow;
  pipe.InitBuffer(in, 16 * sizeof(float));
  pipe.InitBuffer(out, 32 * sizeof(float));
  pipe.InitBuffer(narrow, 64);
  GlobalTensor<float> gm;
  gm.SetGlobalBuffer(a.out, a.outLen);
  LocalTensor<float> src = in.Get<float>();
  LocalTensor<float> dst = out.Get<float>();
  DataCopy(src, gm, 16);
  SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
  WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
  Cast(narrow.Get<half>(), src, mode, 16);
  Cast(dst, narrow.Get<half>(), RoundMode::CAST_NONE, 16);
  Cast(narrow.Get<bfloat16_t>(), src, mode, 16);
  Cast(dst[16], narrow.Get<bfloat16_t>(), RoundMode::CAST_NONE, 16);
  SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
  WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
  DataCopy(gm, dst, 32);
}

}  // namespace

namespace twin::probes {

void AddCommonProbes(ProbeMap *probes) {
  probes->insert({
      {"mask_register_after_copy", [](const ProbeArgs &a) { MaskProbe(a, 0); }},
      {"mask_register_after_count_form", [](const ProbeArgs &a) { MaskProbe(a, 1); }},
      {"copy_dst_stride_zero", [](const ProbeArgs &a) { MaskProbe(a, 2); }},
      {"copy_overrun", [](const ProbeArgs &a) { MaskProbe(a, 3); }},
      {"init_output", [](const ProbeArgs &a) { InitOutputProbe(a, 0); }},
      {"init_output_without_pipe", [](const ProbeArgs &a) { InitOutputProbe(a, 1); }},
      {"init_output_past_gm", [](const ProbeArgs &a) { InitOutputProbe(a, 2); }},
      {"init_output_then_overwrite", [](const ProbeArgs &a) { InitOutputProbe(a, 3); }},
      {"init_output_barrier_then_overwrite", [](const ProbeArgs &a) { InitOutputProbe(a, 4); }},
      {"init_output_twice_same_value", [](const ProbeArgs &a) { InitOutputProbe(a, 5); }},
      {"init_output_twice_new_value", [](const ProbeArgs &a) { InitOutputProbe(a, 6); }},
      {"pipe_ptr_fetch", [](const ProbeArgs &a) { PipePtrProbe(a, 0); }},
      {"pipe_ptr_after_pipe_gone", [](const ProbeArgs &a) { PipePtrProbe(a, 1); }},
      {"assert_false", [](const ProbeArgs &a) { PipePtrProbe(a, 2); }},
      {"copy_params_store", CopyParamsProbe},
      {"scalar_wait_orders_later_issue", [](const ProbeArgs &a) { ScalarWaitProbe(a, 0); }},
      {"no_scalar_wait_then_load", [](const ProbeArgs &a) { ScalarWaitProbe(a, 1); }},
      {"pad_row_into_short_view", [](const ProbeArgs &a) { PositionProbe<QuePosition::VECIN>(a, 0); }},
      {"pad_into_veccalc", [](const ProbeArgs &a) { PositionProbe<QuePosition::VECCALC>(a, 1); }},
      {"copy_vecin_to_vecout", [](const ProbeArgs &a) { PositionProbe<QuePosition::VECIN>(a, 2); }},
      {"tbuf_get_past_buffer", [](const ProbeArgs &a) { TBufGetProbe(a, 0); }},
      {"tbuf_get_past_buffer_then_overrun", [](const ProbeArgs &a) { TBufGetProbe(a, 1); }},
      {"deque_twice_held", [](const ProbeArgs &a) { DeQueTwiceProbe(a, 0); }},
      {"deque_twice_after_free", [](const ProbeArgs &a) { DeQueTwiceProbe(a, 1); }},
      {"cast_round", [](const ProbeArgs &a) { CastModeProbe(a, RoundMode::CAST_ROUND); }},
      {"cast_rint", [](const ProbeArgs &a) { CastModeProbe(a, RoundMode::CAST_RINT); }},
      {"cast_floor", [](const ProbeArgs &a) { CastModeProbe(a, RoundMode::CAST_FLOOR); }},
      {"deep_queue_held_once", DeepQueueHeldOnceProbe},
      {"cast_float_rint", [](const ProbeArgs &a) { CastFloatProbe(a, RoundMode::CAST_RINT); }},
      {"cast_float_floor", [](const ProbeArgs &a) { CastFloatProbe(a, RoundMode::CAST_FLOOR); }},
      {"cast_float_ceil", [](const ProbeArgs &a) { CastFloatProbe(a, RoundMode::CAST_CEIL); }},
      {"cast_float_round", [](const ProbeArgs &a) { CastFloatProbe(a, RoundMode::CAST_ROUND); }},
      {"cast_float_trunc", [](const ProbeArgs &a) { CastFloatProbe(a, RoundMode::CAST_TRUNC); }},
      {"cast_float_none", [](const ProbeArgs &a) { CastFloatProbe(a, RoundMode::CAST_NONE); }},
  });
}

}  // namespace twin::probes
