// Probes of the repeat-stride forms (kernel_operator_strided.h): a per-row scale and shift of
// short rows by level-0 Mul/Add whose second source reuses one Brcb'd DataBlock per row, and
// the rules those forms keep (destination block stride, mask range, buffer bounds, alignment);
// and of Gather with an offset table built by int32 Adds (kernel_operator_gather.h) and its rules.
// See twin_probes.h.
#include <map>
#include <string>

#include "kernel_operator.h"
#include "twin_probes.h"

using namespace AscendC;
using twin::probes::ProbeArgs;

namespace {

constexpr int32_t kRows = 5;
constexpr int32_t kPitch = 16;  // floats between rows
constexpr int32_t kMask = 12;   // elements of each row computed

// out[0..8): a_r, out[8..16): b_r, out[16..16 + kRows * kPitch): x. Writes back x with the first
// kMask elements of row r as x * a_r + b_r (the others untouched). `broken` selects a bad call.
void RowScaleProbe(const ProbeArgs &a, int broken) {
  TPipe pipe;
  TBuf<QuePosition::VECIN> in;
  TBuf<QuePosition::VECCALC> blocks;
  pipe.InitBuffer(in, (16 + kRows * kPitch) * sizeof(float));
  pipe.InitBuffer(blocks, 2 * 64 * sizeof(float));
  GlobalTensor<float> gm;
  gm.SetGlobalBuffer(a.out, a.outLen);
  LocalTensor<float> u = in.Get<float>();
  DataCopy(u, gm, 16 + kRows * kPitch);
  SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
  WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
  LocalTensor<float> scale = blocks.Get<float>();
  LocalTensor<float> shift = blocks.Get<float>()[64];
  Brcb(scale, broken == 4 ? u[4] : (broken == 6 ? scale[56] : u), 1, BrcbRepeatParams(1, 8));  // 4: a source off
  // its 32-byte alignment; 6: a source inside the destination's span
  Brcb(shift, u[8], 1, BrcbRepeatParams(broken == 5 ? 0 : 1, 8));  // 5: dstBlkStride 0
  TBuf<QuePosition::VECOUT> out;
  pipe.InitBuffer(out, kRows * kPitch * sizeof(float));
  LocalTensor<float> x = out.Get<float>();
  Muls(x, u[16], 1.0f, kRows * kPitch);  // the rows, where MTE3 can store them from
  const uint8_t rows = broken == 3 ? kRows + 1 : kRows;  // 3: a row beyond the buffer
  const BinaryRepeatParams p(broken == 1 ? 0 : 1, 1, 0, kPitch / 8, kPitch / 8, 1);  // 1: dstBlkStride 0
  Mul(x, x, scale, broken == 2 ? 65 : kMask, rows, p);  // 2: a mask beyond a float repeat
  Add(x, x, shift, kMask, rows, p);
  SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
  WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
  DataCopy(gm[16], x, kRows * kPitch);
}

// Gather of kGatherCount floats from a source of kGatherSource: out[0..kGatherSource) is the
// source, and the result replaces out[kGatherSource..). The offset table is element i ->
// byte 4 * ((3 * i + 1) % kGatherSource): its first 8 entries set by the scalar unit, the rest by
// int32 Adds of 4 * 24 per 8 (doubling), then reduced mod the source by the scalar unit.
constexpr int32_t kGatherSource = 64;
constexpr int32_t kGatherCount = 40;
void GatherProbe(const ProbeArgs &a, int broken) {
  TPipe pipe;
  TBuf<QuePosition::VECIN> in;
  TBuf<QuePosition::VECCALC> table;
  TBuf<QuePosition::VECOUT> out;
  pipe.InitBuffer(in, kGatherSource * sizeof(float));
  pipe.InitBuffer(table, 64 * sizeof(int32_t));
  pipe.InitBuffer(out, 64 * sizeof(float));
  GlobalTensor<float> gm;
  gm.SetGlobalBuffer(a.out, a.outLen);
  LocalTensor<float> src = in.Get<float>();
  DataCopy(src, gm, kGatherSource);
  LocalTensor<int32_t> offsets = table.Get<int32_t>();
  for (int32_t i = 0; i < 8; ++i) offsets.SetValue(i, 4 * (3 * i + 1));
  SetFlag<HardEvent::S_V>(EVENT_ID0);
  WaitFlag<HardEvent::S_V>(EVENT_ID0);
  for (int32_t have = 8; have < kGatherCount; have *= 2) {
    const int32_t n = (kGatherCount - have < have) ? kGatherCount - have : have;
    Adds(offsets[have], offsets, 4 * 3 * have, n);
  }
  if (broken == 8) Adds(offsets, offsets, INT32_MAX, 8);  // past int32
  SetFlag<HardEvent::V_S>(EVENT_ID0);
  WaitFlag<HardEvent::V_S>(EVENT_ID0);
  for (int32_t i = 0; i < kGatherCount; ++i) offsets.SetValue(i, offsets.GetValue(i) % (4 * kGatherSource));
  if (broken == 1) offsets.SetValue(5, 4 * 7 + 2);  // an offset off the element size
  if (broken == 2) offsets.SetValue(7, 4 * kGatherSource);  // one past the source
  SetFlag<HardEvent::S_V>(EVENT_ID0);
  WaitFlag<HardEvent::S_V>(EVENT_ID0);
  SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
  WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
  LocalTensor<float> dst = out.Get<float>();
  const LocalTensor<uint32_t> table32 = offsets.ReinterpretCast<uint32_t>();
  if (broken == 3) {  // the source inside the destination
    Gather(dst, dst[8], table32, 0, kGatherCount);
  } else if (broken == 4) {  // a base address off the element size
    Gather(dst, src, table32, 2, kGatherCount);
  } else if (broken == 5) {  // a misaligned destination
    Gather(dst[1], src, table32, 0, kGatherCount);
  } else if (broken == 6) {  // 256 repeats of 64: beyond the count form's uint8_t repeatTime
    Gather(dst, src, table32, 0, 256 * 64);
  } else {
    Gather(dst, src, table32, 0, broken == 7 ? 0 : kGatherCount);
  }
  SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
  WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
  DataCopy(gm[kGatherSource], dst, 64);
}

}  // namespace

namespace twin::probes {

void AddStridedProbes(ProbeMap *probes) {
  probes->insert({
      {"strided_row_scale", [](const ProbeArgs &a) { RowScaleProbe(a, 0); }},
      {"strided_dst_blk_stride_zero", [](const ProbeArgs &a) { RowScaleProbe(a, 1); }},
      {"strided_mask_65", [](const ProbeArgs &a) { RowScaleProbe(a, 2); }},
      {"strided_row_overrun", [](const ProbeArgs &a) { RowScaleProbe(a, 3); }},
      {"brcb_dst_blk_stride_zero", [](const ProbeArgs &a) { RowScaleProbe(a, 5); }},
      {"brcb_misaligned_source", [](const ProbeArgs &a) { RowScaleProbe(a, 4); }},
      {"brcb_overlapping_source", [](const ProbeArgs &a) { RowScaleProbe(a, 6); }},
      {"gather", [](const ProbeArgs &a) { GatherProbe(a, 0); }},
      {"gather_offset_off_the_element", [](const ProbeArgs &a) { GatherProbe(a, 1); }},
      {"gather_offset_past_the_source", [](const ProbeArgs &a) { GatherProbe(a, 2); }},
      {"gather_overlapping_source", [](const ProbeArgs &a) { GatherProbe(a, 3); }},
      {"gather_base_off_the_element", [](const ProbeArgs &a) { GatherProbe(a, 4); }},
      {"gather_misaligned_destination", [](const ProbeArgs &a) { GatherProbe(a, 5); }},
      {"gather_count_past_255_repeats", [](const ProbeArgs &a) { GatherProbe(a, 6); }},
      {"gather_count_zero", [](const ProbeArgs &a) { GatherProbe(a, 7); }},
      {"adds_int32_overflow", [](const ProbeArgs &a) { GatherProbe(a, 8); }},
  });
}

}  // namespace twin::probes
