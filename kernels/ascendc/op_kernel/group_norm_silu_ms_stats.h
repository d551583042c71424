// Chunk statistics of the GroupNormSiluMs kernel (group_norm_silu_ms.h): the (count, mean, M2)
// of a run of chunks, their pairwise combination in a fixed order (ChanCascade), and the safe
// range beyond which a group or chunk is taken again from x * SCALE_DOWN. Scalar code only.
#ifndef GROUP_NORM_SILU_MS_STATS_H
#define GROUP_NORM_SILU_MS_STATS_H

#include "kernel_operator.h"
#include "group_norm_ms_fields.h"
#include "group_norm_ms_to_f32.h"

namespace GroupNormSiluMsKernel {
using namespace AscendC;

// Extreme magnitudes. A sum of x - shift or of (x - mean)^2 at or beyond SAFE_SUM (2^126) may have
// overflowed (inf, or FLT_MAX in the saturation mode) or be about to in a combination; the group
// is then taken again from x * SCALE_DOWN. 2^-88 brings |x| <= FLT_MAX (< 2^128) to < 2^40, so the
// squares of differences stay below 2^82 and their sum below 2^126 for any group of under 2^44
// elements, while a group that triggers the path has a spread of at least 2^126 / M or
// sqrt(2^126 / M), far above what the scaling loses to underflow (|x| < 2^-38). Powers of two
// scale exactly; mean and rstd are scaled back on the scalar unit.
constexpr float SAFE_SUM = 0x1p126f;
constexpr float SCALE_DOWN = 0x1p-88f;
constexpr float SCALE_UP = 0x1p88f;

__aicore__ inline bool InSafeRange(float v) { return v < SAFE_SUM && v > -SAFE_SUM; }  // false for NaN

using GroupNormMsScalar::ToF32;  // group_norm_ms_to_f32.h
using GroupNormMsFields::BlockStride;  // group_norm_ms_fields.h
using GroupNormMsFields::RepeatTimes;

// The statistics (count, mean, M2 = sum of squared deviations) of a run of chunks, in the
// units of x (scaled == false) or of x * SCALE_DOWN (scaled == true).
struct ChunkStats {
  float count;
  float mean;
  float m2;
  bool scaled;
  __aicore__ inline void ScaleDown() {
    if (scaled) return;
    mean *= SCALE_DOWN;
    m2 = (m2 * SCALE_DOWN) * SCALE_DOWN;  // SCALE_DOWN^2 is below fp32's range
    scaled = true;
  }
};

// A chunk's (count, mean, M2) from its sums of x and of x^2 over nb elements, in *out; false (take
// the two passes instead) where mean^2 > var (more than a factor 2 cancelled: x - mean would round
// every x of one binade with the same signed error), a sum left the safe range, M2 is below 2^-100,
// or NaN.
__aicore__ inline bool MomentsFromSums(float sum, float squares, float nb, bool scaled, ChunkStats *out) {
  const float mb = sum / nb;
  const float m2b = squares - sum * mb;
  *out = ChunkStats{nb, mb, m2b, scaled};
  return InSafeRange(sum) && InSafeRange(squares) && mb * mb * nb <= m2b && m2b >= 0x1p-100f;  // false for NaN
}

// Statistics of consecutive chunks, combined as a binary counter: level i holds the
// combination of 2^i consecutive chunks, so every chunk passes through O(log chunks)
// combinations (pairwise, not a running sum whose error grows with the chunk count), in a
// fixed order. Chan, Golub and LeVeque's update:
//   delta = m_b - m_a;  m = m_a + delta * n_b / n;  M2 = M2_a + M2_b + delta^2 * n_a * n_b / n.
// A combination is made in x's units unless an operand is scaled or the result leaves the safe
// range; then both operands are scaled first. Each node of the tree is a function of its two
// children only, so a group split into aligned slices gets the same bits as one block's cascade.
struct ChanCascade {
  ChunkStats level[40];
  uint32_t chunks;
  __aicore__ inline void Reset() { chunks = 0; }
  __aicore__ static inline void Merge(const ChunkStats &a, ChunkStats *b) {
    const float n = a.count + b->count;
    const float delta = b->mean - a.mean;
    const float m = a.mean + delta * (b->count / n);
    b->m2 = a.m2 + b->m2 + delta * delta * (a.count * b->count / n);
    b->mean = m;
    b->count = n;
  }
  // b = a (the older chunks, on the left) combined with b.
  __aicore__ static inline void Combine(ChunkStats a, ChunkStats *b) {
    if (a.scaled == b->scaled) {
      ChunkStats r = *b;
      Merge(a, &r);
      if (a.scaled || (InSafeRange(r.mean) && InSafeRange(r.m2))) {
        *b = r;
        return;
      }
    }
    a.ScaleDown();
    b->ScaleDown();
    Merge(a, b);
  }
  __aicore__ inline void Add(ChunkStats s) {
    uint32_t i = 0;
    for (uint32_t c = chunks; (c & 1U) != 0; c >>= 1) {
      Combine(level[i], &s);
      ++i;
    }
    level[i] = s;
    ++chunks;
  }
  // The combination of every chunk added (lower levels are the later chunks).
  __aicore__ inline ChunkStats Total() const {
    ChunkStats total{0.0f, 0.0f, 0.0f, false};
    bool first = true;
    uint32_t i = 0;
    for (uint32_t c = chunks; c != 0; c >>= 1, ++i) {
      if ((c & 1U) == 0) continue;
      if (first) {
        total = level[i];
        first = false;
      } else {
        Combine(level[i], &total);  // level i holds older chunks than the total so far
      }
    }
    return total;
  }
};

}  // namespace GroupNormSiluMsKernel

#endif  // GROUP_NORM_SILU_MS_STATS_H
