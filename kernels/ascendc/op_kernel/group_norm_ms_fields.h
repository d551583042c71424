// The 8-bit fields of the vector instructions' repeat forms, from the kernels' 64-bit counts: a
// repeat count (repeatTime: [0, 255], e.g. asc-devkit docs/zh/api/SIMD-API/基础API/Memory矢量计算/
// 数据填充/Brcb.md) or a block stride (the uint8_t fields of BinaryRepeatParams and
// BrcbRepeatParams). A bare static_cast wrapped 256 repeats to 0: Brcb then wrote nothing, and
// GroupNormGradMs's dx for a group of 2048 channels of <= 64 elements read uninitialised blocks (all
// NaN on the twin). These say what they take; ASSERT (impl/basic_api/kernel_macros.h: an assert in
// CPU debug builds, nothing on the device) stops a twin launch that passes more. Shared by both
// kernel classes.
#ifndef GROUP_NORM_MS_FIELDS_H
#define GROUP_NORM_MS_FIELDS_H

#include "kernel_operator.h"

namespace GroupNormMsFields {
using namespace AscendC;

constexpr int64_t MAX_REPEAT = 255;

// A repeat count for a repeat-form instruction: 0 <= n <= MAX_REPEAT.
__aicore__ inline uint8_t RepeatTimes(int64_t n) {
  ASSERT(n >= 0 && n <= MAX_REPEAT);
  return static_cast<uint8_t>(n);
}

// A block or repeat stride in 32-byte blocks: 0 <= n <= 255.
__aicore__ inline uint8_t BlockStride(int64_t n) {
  ASSERT(n >= 0 && n <= MAX_REPEAT);
  return static_cast<uint8_t>(n);
}

}  // namespace GroupNormMsFields

#endif  // GROUP_NORM_MS_FIELDS_H
