// Probes of the repeat-stride forms (kernel_operator_strided.h): a per-row scale and shift of
// short rows by level-0 Mul/Add whose second source reuses one Brcb'd DataBlock per row, and
// the rules those forms keep (destination block stride, mask range, buffer bounds, alignment).
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
  });
}

}  // namespace twin::probes
