// Constants and scalar helpers of the GroupNormGradMs kernel class (group_norm_grad_ms.h):
// the queue depth, block size, rounding, the scalar fp32 view of a statistics value and the
// fixed-order pairwise sum of chunk sums.
#ifndef GROUP_NORM_GRAD_MS_COMMON_H
#define GROUP_NORM_GRAD_MS_COMMON_H

#include "kernel_operator.h"
#include "group_norm_ms_fields.h"
#include "group_norm_ms_to_f32.h"

namespace GroupNormGradMsKernel {
using namespace AscendC;

constexpr int32_t BUFFER_NUM = 2;  // double buffering of every GM <-> UB queue
constexpr int32_t MAX_LOAD_BUFFERS = 3;  // the (dy, x) queues with tiling loadBuffers 3
// Mode 0's buffers of a task's db and dg on their way to the workspace: a task is about one
// item, shorter than a DMA latency, so the store of the task two back may not have landed yet
// (with up to 4 dx buffers, 7 of the 8 MTE3 -> V event ids once freed)
constexpr int32_t RESIDENT_SUMS_BUFFERS = 3;
constexpr int64_t AFFINE_TABLE = 2;  // tiling affineAhead: every group's gamma (+ beta) in UB at once
constexpr int64_t RUNS_BOTH_PASSES = 2;  // tiling rowsGather: the dx pass's loads are runs too (1: the sums pass's)
constexpr int64_t FLOATS_PER_BLOCK = 8;
constexpr int64_t MAX_GROUP_ROWS = 64;  // tiling groupRows (host kMaxGroupRows): a batch's scalars live on the stack
// groupRows with D > 1: at most this many channels a group and rows a batch (host kMaxGroupRowChannels,
// kMaxGroupRowLines), for the same reason
constexpr int64_t MAX_GROUP_ROW_CHANNELS = 8;
constexpr int64_t MAX_GROUP_ROW_LINES = 128;

__aicore__ inline int64_t AlignUp(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

using GroupNormMsScalar::ToF32;  // group_norm_ms_to_f32.h
using GroupNormMsFields::BlockStride;  // group_norm_ms_fields.h
using GroupNormMsFields::MAX_REPEAT;
using GroupNormMsFields::RepeatTimes;

// x - mean can overflow fp32 only when |mean| >= 2^102 (|x| <= FLT_MAX, and half an ulp of
// FLT_MAX is 2^103): for such a group (a rare one: its data spans most of fp32's range) x - mean
// is formed as x * 2^-88 - mean * 2^-88, and the factor that makes xhat of it is rstd * 2^88.
// Powers of two scale exactly; every other group keeps x - mean and rstd as they are.
constexpr float CENTRING_LIMIT = 0x1p102f;
constexpr float CENTRING_SCALE_DOWN = 0x1p-88f;

// mean * MEAN_SCALE_TEST is below 1 in magnitude exactly when CentringScale(mean) is 1.
constexpr float MEAN_SCALE_TEST = 0x1p-102f;

__aicore__ inline float CentringScale(float mean) {
  return (mean < CENTRING_LIMIT && mean > -CENTRING_LIMIT) ? 1.0f : CENTRING_SCALE_DOWN;
}
// Mode 3's vector coefficients (HwOneBatch) in FloatBuf(3) for a batch of `rows` groups: the two sums
// of each group, three arrays of per-group scalars, and the blocks of one of them for up to
// HW_ONE_PIECE groups (a repeat a group: at most 255 repeats an instruction).
constexpr int64_t HW_ONE_PIECE = 248;
__aicore__ inline int64_t HwOneRows8(int64_t rows) { return (rows + FLOATS_PER_BLOCK - 1) / FLOATS_PER_BLOCK * FLOATS_PER_BLOCK; }
__aicore__ inline int64_t HwOneCoefElems(int64_t rows) {
  const int64_t r8 = HwOneRows8(rows);
  return 2 * r8 + 3 * r8 + FLOATS_PER_BLOCK * (r8 < HW_ONE_PIECE ? r8 : HW_ONE_PIECE);
}
// The factor that turns the centred x of TakeCentredX into xhat.
__aicore__ inline float XhatFactor(float mean, float rstd) { return rstd / CentringScale(mean); }

// The point a group's x is centred on before the sums dg = sum dy * xhat (modes 0-2), chosen
// per group from its mean and rstd alone, so every tiling, core count and pass chooses alike.
//  * |mean| * rstd <= 1: x itself (centre 0), and the sums are taken of dy * (x * rstd), minus
//    shift * sum dy with shift = mean * rstd. Rounding x - mean would give every x of one binade
//    the same signed error (mean's offset from that binade's grid): under a dy of large mean
//    (CANN's ATK data: dy ~ N(mu, sigma), |mu| up to 100) those errors add up into a bias of
//    dgamma instead of cancelling. The products x * rstd and dy * (x * rstd) round
//    independently, and with |mean| at most the spread the subtraction cancels little.
//  * beyond: x - mean as before (shift 0), which keeps a mean far above the spread out of the
//    products; there most x lie within a factor 2 of the mean and x - mean is exact.
// xhat is then (x - centre) * XhatFactor - shift: the sums subtract shift * db per channel, dx
// takes b * shift into its constant, and the swish gradient's t its argument minus shift.
struct Centring {
  float centre;
  float shift;
};
__aicore__ inline Centring CentringOf(float mean, float rstd) {
  const float ratio = (mean < 0.0f ? -mean : mean) * rstd;
  if (ratio <= 1.0f) return Centring{0.0f, mean * rstd};  // false for NaN: those keep x - mean
  return Centring{mean, 0.0f};
}

// A channel-split phase-1 task: HxW slice `slice` of channel c of sample n, in group g
// (group = n * G + g, the index of its mean/rstd).
struct ChannelTask {
  int64_t n;
  int64_t c;
  int64_t g;
  int64_t slice;
  int64_t group;
};

// Sum of a stream of chunk sums, added as a binary counter: level i holds the sum of
// 2^i consecutive chunks. This is pairwise summation (error O(log chunks)) in a fixed
// order, without storing the chunks.
struct CascadeSum {
  float level[40];
  uint32_t count;
  __aicore__ inline void Reset() { count = 0; }
  __aicore__ inline void Add(float v) {
    uint32_t i = 0;
    for (uint32_t c = count; (c & 1U) != 0; c >>= 1) {
      v = level[i] + v;
      ++i;
    }
    level[i] = v;
    ++count;
  }
  __aicore__ inline float Total() const {
    float total = 0.0f;
    bool first = true;
    uint32_t i = 0;
    for (uint32_t c = count; c != 0; c >>= 1, ++i) {
      if ((c & 1U) != 0) {
        total = first ? level[i] : total + level[i];
        first = false;
      }
    }
    return total;
  }
};

}  // namespace GroupNormGradMsKernel

#endif  // GROUP_NORM_GRAD_MS_COMMON_H
