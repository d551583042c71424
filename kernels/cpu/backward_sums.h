// The O(N*C) sums every GroupNorm-style backward keeps (GroupNorm's and the fused
// GroupNorm + SiLU's): the channel sums db[n, c] and ds[n, c] of the incoming gradient (dy, or
// the fused op's g = dz * dz/dy), the groups' dx coefficients b and c0, and the sums over the
// batch that give dgamma and dbeta. All of it lives in the call's scratch (call_scratch.h):
// nothing full-size, nothing zero-filled (each slot is written before it is read).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "call_scratch.h"
#include "group_norm_sizes.h"
#include "half_types.h"

namespace ms_groupnorm {
namespace detail {

// The tensors a backward reads and writes: dy (the fused op's dz), x, the saved statistics,
// gamma (nullptr: ones) and dx.
template <typename T, typename U>
struct BackwardData {
  const T *dy;
  const T *x;
  const U *mean;
  const U *rstd;
  const U *gamma;
  T *dx;
};

// The saved mean and rstd as float arrays of N * G, which every backward step reads: float
// inputs as they are; 16-bit ones converted once a call by `widen` (the build's vector row
// kernel, row_kernels.h; exact, so the same values), not by a scalar software conversion at
// each use, which cost about a fifth of the HxW = 1 backward of 8000 x 64, G = 32, in fp16.
template <typename U>
struct FloatStatistics {
  static size_t ScratchBytes(const GroupNormSizes &s) {
    return std::is_same_v<U, float> ? 0 : 2 * CallScratch::Bytes<float>(s.N * s.G);
  }
  FloatStatistics(const U *mean_in, const U *rstd_in, const GroupNormSizes &s,
                  void (*widen)(const U *, int64_t, float *), CallScratch &scratch) {
    if constexpr (std::is_same_v<U, float>) {
      mean = mean_in;
      rstd = rstd_in;
    } else {
      float *mean_out = scratch.Take<float>(s.N * s.G), *rstd_out = scratch.Take<float>(s.N * s.G);
      widen(mean_in, s.N * s.G, mean_out);
      widen(rstd_in, s.N * s.G, rstd_out);
      mean = mean_out;
      rstd = rstd_out;
    }
  }
  const float *mean = nullptr;  // (N, G)
  const float *rstd = nullptr;  // (N, G)
};

template <typename U>
class BackwardSums {
 public:
  static size_t ScratchBytes(const GroupNormSizes &s) {
    return 2 * CallScratch::Bytes<double>(s.N * s.C) + 2 * CallScratch::Bytes<double>(s.N * s.G) +
           2 * CallScratch::Bytes<double>(s.C);
  }

  BackwardSums(const GroupNormSizes &s, OutputMask mask, const float *rstd, U *dgamma, U *dbeta, CallScratch &scratch)
      : s_(s), mask_(mask), rstd_(rstd), dgamma_(dgamma), dbeta_(dbeta), db(scratch.Take<double>(s.N * s.C)),
        ds(scratch.Take<double>(s.N * s.C)), b(scratch.Take<double>(s.N * s.G)), c0(scratch.Take<double>(s.N * s.G)),
        dgamma_sum_(scratch.Take<double>(s.C)), dbeta_sum_(scratch.Take<double>(s.C)) {}

  // dgamma[c] = sum_n rstd[n, g] * ds[n, c], dbeta[c] = sum_n db[n, c], n ascending, in double,
  // for the channels [c_begin, c_end); the task walks the (N, C) sums row by row (contiguous
  // channels, one rstd per group in the row) rather than down a column with stride C. The
  // first row initialises the sums (as 0.0 + first, the bits of adding to a zeroed sum).
  // A channel's sum never depends on the range it is in, so any split gives the same bits.
  void ReduceOverBatch(int64_t c_begin, int64_t c_end) {
    const int64_t N = s_.N, C = s_.C, G = s_.G, D = s_.D();
    for (int64_t n = 0; n < N; ++n) {
      const double *db_row = db + n * C, *ds_row = ds + n * C;
      // row 0 apart, so that the loops over channels are plain vector loops
      if (n == 0) {
        for (int64_t k = c_begin; k < c_end; ++k) dbeta_sum_[k] = 0.0 + db_row[k];
      } else {
        for (int64_t k = c_begin; k < c_end; ++k) dbeta_sum_[k] += db_row[k];
      }
      if (!mask_.dgamma) continue;
      const float *rstd_row = rstd_ + n * G;
      if (D < kShortGroup) {
        // a few channels per group (2-D inputs with many groups): one loop over the run with
        // a counter to the next group, not a loop per group
        int64_t g = c_begin / D, left = (g + 1) * D - c_begin;
        double r = rstd_row[g];
        for (int64_t k = c_begin; k < c_end; ++k, --left) {
          if (left == 0) {
            r = rstd_row[++g];
            left = D;
          }
          dgamma_sum_[k] = (n == 0 ? 0.0 : dgamma_sum_[k]) + r * ds_row[k];
        }
        continue;
      }
      for (int64_t g = c_begin / D, c = c_begin; c < c_end; ++g) {
        const int64_t stop = std::min(c_end, (g + 1) * D);
        const double r = rstd_row[g];
        if (n == 0) {
          for (int64_t k = c; k < stop; ++k) dgamma_sum_[k] = 0.0 + r * ds_row[k];
        } else {
          for (int64_t k = c; k < stop; ++k) dgamma_sum_[k] += r * ds_row[k];
        }
        c = stop;
      }
    }
    for (int64_t c = c_begin; c < c_end; ++c) {
      if (mask_.dgamma) dgamma_[c] = FromFloat<U>(static_cast<float>(dgamma_sum_[c]));
      if (mask_.dbeta) dbeta_[c] = FromFloat<U>(static_cast<float>(dbeta_sum_[c]));
    }
  }

 private:
  static constexpr int64_t kShortGroup = 8;  // channels per group below which ReduceOverBatch counts
  GroupNormSizes s_;
  OutputMask mask_;
  const float *rstd_;  // (N, G): FloatStatistics
  U *dgamma_;
  U *dbeta_;

 public:
  double *const db;  // (N, C) sums of the incoming gradient
  double *const ds;  // (N, C) its sums times (x - mean)
  double *const b;   // (N, G) dx coefficients: dx = a_c * gradient + b * (x - mean) + c0
  double *const c0;

 private:
  double *dgamma_sum_;  // (C,) running sums over the batch
  double *dbeta_sum_;
};

// Empty input (N, C or HxW == 0): dgamma = dbeta = 0 (+0 in every storage type), no dx to
// write. C == 0 also means D == 0, which the kernels would divide by. True when it was empty.
template <typename U>
inline bool EmptyBackward(const GroupNormSizes &s, OutputMask mask, U *dgamma, U *dbeta) {
  if (s.N * s.C * s.HxW != 0) return false;
  for (int64_t c = 0; c < s.C; ++c) {
    if (mask.dgamma) dgamma[c] = U{};
    if (mask.dbeta) dbeta[c] = U{};
  }
  return true;
}

// Groups of one element (D * HxW == 1) whose x equals its mean (the forward's statistics): xhat = 0
// and dx = rstd * (g - mean of g) = 0 exactly, g the incoming gradient times gamma. The kernels'
// dx = a * dy + b * (x - mean) + c0 rounds a * dy and c0 apart and leaves up to an ulp of a * dy,
// rstd = 1 / sqrt(eps) times the gradient's scale (6.5e-5 for eps 1e-5 and unit data). dx - dx is
// that exact +0 for a finite dx and NaN for an infinite or NaN one, as the exact expression gives.
// Statistics given by the caller (the aclnn contract takes any) leave x != mean: dx is not 0 there.
template <typename T, typename U>
inline void ExactOneElementGroups(const GroupNormSizes &s, OutputMask mask, const T *x, const U *mean, T *dx) {
  if (!mask.dx || s.D() * s.HxW != 1) return;
  for (int64_t i = 0; i < s.N * s.C; ++i) {  // element i is group i: C == G and HxW == 1
    if constexpr (std::is_floating_point_v<T>) {
      if (static_cast<double>(x[i]) == static_cast<double>(mean[i])) dx[i] = dx[i] - dx[i];
    } else {
      // From the bits where they suffice: converting every element was a third of the fp16
      // backward of 32 x 64, G = 64 (x, mean and dx each through a scalar conversion).
      if constexpr (std::is_same_v<T, U>) {
        if (!EqualValues(x[i], mean[i])) continue;
      } else {
        if (ToFloat(x[i]) != ToFloat(mean[i])) continue;
      }
      if (IsFinite(dx[i])) {
        dx[i] = T{0};  // value - value, +0
      } else {
        const float value = ToFloat(dx[i]);
        dx[i] = FromFloat<T>(value - value);
      }
    }
  }
}

}  // namespace detail
}  // namespace ms_groupnorm
