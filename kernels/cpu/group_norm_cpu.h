// GroupNorm forward and backward on the CPU, for contiguous (N, C, HxW) data.
//
// NB: the maths (see ../../ms_groupnorm/reference.py for the float64 oracle).
//   For the group (n, g) with D = C/G channels of HxW elements, M = D*HxW,
//   mu = mean[n, g], r = rstd[n, g]:
//     db[n, c] = sum_hw dy                ds[n, c] = sum_hw dy * (x - mu)
//     dbeta[c] = sum_n db[n, c]           dgamma[c] = sum_n r * ds[n, c]
//     S1 = sum_{c in g} gamma_c db[n, c]  T2 = sum_{c in g} gamma_c ds[n, c]
//     dx = (r * gamma_c) * dy  +  b * (x - mu)  +  c0,
//       with b = -r^3 * T2 / M and c0 = -r * S1 / M.
//   This is rstd * (gamma*dy - mean_g(gamma*dy) - xhat * mean_g(gamma*dy*xhat)), the
//   formula of PyTorch's native_group_norm_backward and of CANN's kernels. Centring x
//   on the saved mean before multiplying keeps ds free of cancellation when |mean| is
//   large compared with the spread of x.
//
// Determinism: every sum runs in an order fixed by the shapes alone (kLanes float
// lanes over blocks of kBlock elements, folded into double; see row_kernels.h), per
// channel (the backward's sums) or per group (the forward's statistics). Threads only
// decide *which* channel, group or block a core handles, never how a sum is split, and
// the reduction over N for dgamma/dbeta is a serial loop per channel. So the outputs are
// bit-identical for any thread count, and the group-wise and channel-wise schedules
// (kernel_schedule.h, shared with the fused GroupNorm + SiLU) give identical bits too. The portable, AVX2 and
// AVX-512 builds of the row loops add in the same order but differ in fused
// multiply-adds (row_kernels.h), so they agree to within rounding, not bit for bit.
//
// Extreme magnitudes: the float32 row loops are right while their squares and products stay
// in the float32 range. A group whose sums overflow or underflow there (|x - mean| beyond
// about 1.8e19 or, with eps ~ 0, below 1e-19; dy or x near the float32 maximum; rstd outside
// [2^-32, 2^32] in the backward) is computed again by the double loops of wide_range_rows.h,
// which hold every such value. The test runs on each group's (or channel's) own results, so
// ordinary data keeps the float32 path and its bits, and both schedules choose alike.
//
// Memory traffic: the group-wise schedule reads a group's dy and x once from memory;
// the dx pass re-reads them from L2, where the reduction just left them (a group of
// the anchor shapes is at most a few hundred KiB), so the backward moves about 12
// bytes per fp32 element instead of 20 for two streaming passes.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "backward_sums.h"
#include "call_scratch.h"
#include "forward_kernel.h"
#include "group_norm_float64.h"
#include "group_norm_sizes.h"
#include "half_types.h"
#include "kernel_schedule.h"
#include "row_kernels.h"
#include "wide_range_rows.h"

namespace ms_groupnorm {

namespace detail {

// ------------------------------------------------------------------ backward
// GroupNorm's steps of the backward schedule (kernel_schedule.h).
template <typename T, typename U>
class BackwardKernel {
 public:
  BackwardKernel(const T *dy, const T *x, const U *mean, const U *rstd, const U *gamma, T *dx, U *dgamma, U *dbeta,
                 GroupNormSizes sizes, OutputMask mask)
      : in_{dy, x, mean, rstd, gamma, dx}, s_(sizes), mask_(mask),
        need_ds_(mask.dx || mask.dgamma), stream_(StreamOutput<T>(sizes)), rows_(ActiveRowKernels().For<T>()),
        schedule_(sizes), scratch_(ScratchBytes(sizes)), sums_(sizes, mask, rstd, dgamma, dbeta, scratch_),
        a_(scratch_.Take<float>(sizes.N * sizes.C)) {}

  void Run() { schedule_.Run(*this, mask_, nullptr, 0); }

  // db[n, c] and (when needed) ds[n, c] for `rows` channels of one group from c_first; every
  // channel of a group whose rstd is outside the float32 path's range is summed in double
  // (wide_range_rows.h).
  void Reduce(int64_t n, int64_t c_first, int64_t rows, float * /*kept*/) {
    const int64_t offset = (n * s_.C + c_first) * s_.HxW;
    const int64_t nc = n * s_.C + c_first;
    const int64_t ng = n * s_.G + c_first / s_.D();
    const float mu = ToFloat(in_.mean[ng]);
    if (wide::RstdOutsideFloatRange(ToFloat(in_.rstd[ng]))) {
      for (int64_t k = 0; k < rows; ++k) WideReduce(n, c_first + k, mu);
    } else if (need_ds_) {
      rows_.reduce_grad(in_.dy + offset, in_.x + offset, mu, ToFloat(in_.rstd[ng]), s_.HxW, rows, &sums_.db[nc],
                        &sums_.ds[nc]);
    } else {  // dbeta alone never needs x
      rows_.sum(in_.dy + offset, s_.HxW, rows, &sums_.db[nc]);
    }
  }

  // The group's dx coefficients b = -rstd^3 * T2 / M and c0 = -rstd * S1 / M, once per group
  // (both schedules read the same doubles). S1 and T2 also test the group's channel sums:
  // they are finite exactly when every db (and ds) of the group is (gamma times inf is inf or
  // NaN), so a channel whose float32 lanes overflowed is found here at no cost and summed
  // again in double before b and c0 are formed.
  void GroupCoefficients(int64_t ng) {
    double s1, t2;
    GroupSums(ng, &s1, &t2);
    if (!std::isfinite(s1) || !std::isfinite(t2)) {
      const int64_t D = s_.D(), n = ng / s_.G, c_first = (ng % s_.G) * D;
      for (int64_t c = c_first; c < c_first + D; ++c) {
        const int64_t nc = n * s_.C + c;
        if (!std::isfinite(sums_.db[nc]) || (need_ds_ && !std::isfinite(sums_.ds[nc]))) {
          WideReduce(n, c, ToFloat(in_.mean[ng]));
        }
      }
      GroupSums(ng, &s1, &t2);
    }
    const double r = ToFloat(in_.rstd[ng]);
    const double inv_m = 1.0 / static_cast<double>(s_.D() * s_.HxW);
    sums_.b[ng] = -r * r * r * t2 * inv_m;
    sums_.c0[ng] = -r * s1 * inv_m;
  }

  // dx = a_c * dy + b * (x - mu) + c0 with a_c = rstd * gamma_c and the group's b and c0.
  void InputGrad(int64_t n, int64_t c_first, int64_t rows, float * /*kept*/) {
    const int64_t ng = n * s_.G + c_first / s_.D();
    const double r = ToFloat(in_.rstd[ng]), b = sums_.b[ng], c0 = sums_.c0[ng];
    const int64_t offset = (n * s_.C + c_first) * s_.HxW;
    const float mu = ToFloat(in_.mean[ng]);
    if (wide::RstdOutsideFloatRange(r) || wide::LostInFloat(b) || wide::LostInFloat(c0)) {
      // b or c0 would be a float32 subnormal or infinity (rstd or dy near the range's ends):
      // dx in double, from the unrounded coefficients.
      for (int64_t k = 0; k < rows; ++k) {
        const int64_t row = offset + k * s_.HxW;
        wide::AffineGradRow(in_.dy + row, in_.x + row, in_.dx + row, s_.HxW, r * GammaAt(in_.gamma, c_first + k), b,
                            mu, c0);
      }
      return;
    }
    float *a = &a_[n * s_.C + c_first];
    for (int64_t k = 0; k < rows; ++k) a[k] = static_cast<float>(r * GammaAt(in_.gamma, c_first + k));
    rows_.affine_grad(in_.dy + offset, in_.x + offset, in_.dx + offset, s_.HxW, rows, a, static_cast<float>(b), mu,
                      static_cast<float>(c0), stream_);
  }

  void ReduceOverBatch(int64_t g) { sums_.ReduceOverBatch(g); }

 private:
  static size_t ScratchBytes(const GroupNormSizes &s) {
    return BackwardSums<U>::ScratchBytes(s) + CallScratch::Bytes<float>(s.N * s.C);
  }

  void WideReduce(int64_t n, int64_t c, float mu) {
    const int64_t nc = n * s_.C + c;
    wide::ReduceGradRow(in_.dy + nc * s_.HxW, in_.x + nc * s_.HxW, s_.HxW, mu, &sums_.db[nc],
                        need_ds_ ? &sums_.ds[nc] : nullptr);
  }

  // S1 = sum_c gamma_c db[n, c] and T2 = sum_c gamma_c ds[n, c] over group ng, in
  // kChainsOverChannels interleaved chains (channel c in chain c % 4, folded as
  // (0 + 1) + (2 + 3)): one serial chain of double adds was a tenth of the whole backward
  // for 40 channels of 8x8.
  static constexpr int kChainsOverChannels = 4;
  void GroupSums(int64_t ng, double *s1, double *t2) const {
    const int64_t D = s_.D(), n = ng / s_.G, g = ng % s_.G;
    double s1_chain[kChainsOverChannels] = {}, t2_chain[kChainsOverChannels] = {};
    const double *db = &sums_.db[n * s_.C + g * D], *ds = &sums_.ds[n * s_.C + g * D];
    auto add = [&](int64_t d, int k) {
      const double gamma = GammaAt(in_.gamma, g * D + d);
      s1_chain[k] += gamma * db[d];
      if (need_ds_) t2_chain[k] += gamma * ds[d];
    };
    int64_t d = 0;
    for (; d + kChainsOverChannels <= D; d += kChainsOverChannels) {
      for (int k = 0; k < kChainsOverChannels; ++k) add(d + k, k);
    }
    for (int k = 0; d < D; ++d, ++k) add(d, k);
    *s1 = (s1_chain[0] + s1_chain[1]) + (s1_chain[2] + s1_chain[3]);
    *t2 = (t2_chain[0] + t2_chain[1]) + (t2_chain[2] + t2_chain[3]);
  }

  BackwardData<T, U> in_;
  GroupNormSizes s_;
  OutputMask mask_;
  bool need_ds_;
  bool stream_;
  const RowKernels<T> &rows_;
  BackwardSchedule schedule_;
  CallScratch scratch_;  // everything below lives in it: O(N*C), nothing full-size
  BackwardSums<U> sums_;
  float *a_;  // (N, C) dx coefficients rstd * gamma
};

// ------------------------------------------------------------------ forward
// GroupNorm's output (forward_kernel.h) in double: y = (x - mean) * scale + shift.
template <typename T>
void WideNormalizeRow(const T *x, T *y, int64_t hxw, double mu, double scale, double shift, bool /*stream*/) {
  wide::NormalizeRow(x, y, hxw, mu, scale, shift);
}

}  // namespace detail

// gamma == nullptr means ones; outputs whose mask bit is off may be nullptr and are not touched.
template <typename T, typename U>
void GroupNormBackward(const T *dy, const T *x, const U *mean, const U *rstd, const U *gamma, T *dx, U *dgamma,
                       U *dbeta, GroupNormSizes sizes, OutputMask mask) {
  if (detail::EmptyBackward(sizes, mask, dgamma, dbeta)) return;
  if constexpr (std::is_same_v<T, double>) {
    static_assert(std::is_same_v<U, double>, "float64 data takes float64 statistics");
    detail::BackwardFloat64(dy, x, mean, rstd, gamma, dx, dgamma, dbeta, sizes, mask);
  } else {
    detail::BackwardKernel<T, U>(dy, x, mean, rstd, gamma, dx, dgamma, dbeta, sizes, mask).Run();
  }
}

// gamma == nullptr means ones, beta == nullptr zeros.
template <typename T, typename U>
void GroupNormForward(const T *x, const U *gamma, const U *beta, T *y, U *mean, U *rstd, GroupNormSizes sizes,
                      float eps) {
  if (sizes.N * sizes.C == 0) return;
  if constexpr (std::is_same_v<T, double>) {
    static_assert(std::is_same_v<U, double>, "float64 data takes float64 statistics");
    detail::ForwardFloat64(x, gamma, beta, y, mean, rstd, sizes, static_cast<double>(eps));
  } else {
    const detail::RowOutput<T, bool> output{ActiveRowKernels().For<T>().normalize, &detail::WideNormalizeRow<T>,
                                            detail::StreamOutput<T>(sizes)};
    detail::ForwardKernel<T, U, bool>(x, gamma, beta, y, mean, rstd, sizes, eps, output).Run();
  }
}

}  // namespace ms_groupnorm
