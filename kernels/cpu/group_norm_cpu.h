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
// the reduction over N for dgamma/dbeta is a serial loop per channel. So the outputs are bit-identical for any thread count, and the group-wise
// and channel-wise schedules below give identical bits too. The portable, AVX2 and
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

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#include "call_scratch.h"
#include "group_norm_sizes.h"
#include "half_types.h"
#include "row_kernels.h"
#include "wide_range_rows.h"

namespace ms_groupnorm {

namespace detail {

// At most one thread per MinElementsPerThread() elements (row_kernels.h says why).
inline int ThreadsFor(int64_t elements) {
  const int64_t useful = std::max<int64_t>(1, elements / MinElementsPerThread());
  return static_cast<int>(std::min<int64_t>(KernelThreads(), useful));
}

// Groups are the natural unit of work (a group's second pass then hits the cache its
// first pass filled); when there are fewer groups than threads, split by channel.
inline bool SplitByChannel(int64_t groups, int threads) { return groups < threads; }

template <typename T>
inline bool StreamOutput(const GroupNormSizes &s) {
  return s.N * s.C * s.HxW * static_cast<int64_t>(sizeof(T)) >= StreamMinBytes();
}

template <typename U>
inline float GammaAt(const U *gamma, int64_t c) {
  return gamma == nullptr ? 1.0f : ToFloat(gamma[c]);
}

template <typename U>
inline float BetaAt(const U *beta, int64_t c) {
  return beta == nullptr ? 0.0f : ToFloat(beta[c]);
}

// ------------------------------------------------------------------ backward
template <typename T, typename U>
class BackwardKernel {
 public:
  BackwardKernel(const T *dy, const T *x, const U *mean, const U *rstd, const U *gamma, T *dx, U *dgamma, U *dbeta,
                 GroupNormSizes sizes, OutputMask mask)
      : dy_(dy), x_(x), mean_(mean), rstd_(rstd), gamma_(gamma), dx_(dx), dgamma_(dgamma), dbeta_(dbeta), s_(sizes),
        mask_(mask), need_ds_(mask.dx || mask.dgamma), stream_(StreamOutput<T>(sizes)),
        rows_(ActiveRowKernels().For<T>()), scratch_(ScratchBytes(sizes)) {
    const int64_t NC = sizes.N * sizes.C, NG = sizes.N * sizes.G;
    db_ = scratch_.Take<double>(NC);
    ds_ = scratch_.Take<double>(NC);
    b_ = scratch_.Take<double>(NG);
    c0_ = scratch_.Take<double>(NG);
    dgamma_sum_ = scratch_.Take<double>(sizes.C);
    dbeta_sum_ = scratch_.Take<double>(sizes.C);
    a_ = scratch_.Take<float>(NC);
  }

  // One parallel region per call (none on one thread): its work-sharing loops run in turn,
  // each ending at the barrier the next one needs.
  void Run() {
    const int threads = ThreadsFor(s_.N * s_.C * s_.HxW);
    const bool by_channel = SplitByChannel(s_.N * s_.G, threads);
    if (threads == 1) {
      Steps(by_channel);
    } else {
#pragma omp parallel num_threads(threads)
      Steps(by_channel);
    }
  }

 private:
  static size_t ScratchBytes(const GroupNormSizes &s) {
    return 2 * CallScratch::Bytes<double>(s.N * s.C) + 2 * CallScratch::Bytes<double>(s.N * s.G) +
           2 * CallScratch::Bytes<double>(s.C) + CallScratch::Bytes<float>(s.N * s.C);
  }

  // Called by every thread of the region (or alone): orphaned work-sharing loops.
  void Steps(bool by_channel) {
    const int64_t N = s_.N, C = s_.C, G = s_.G, D = s_.D();
    if (by_channel) {
#pragma omp for schedule(static)
      for (int64_t nc = 0; nc < N * C; ++nc) Reduce(nc / C, nc % C, 1);
#pragma omp for schedule(static)
      for (int64_t ng = 0; ng < N * G; ++ng) GroupCoefficients(ng);
      if (mask_.dx) {
#pragma omp for schedule(static)
        for (int64_t nc = 0; nc < N * C; ++nc) InputGrad(nc / C, nc % C, 1);
      }
    } else {
#pragma omp for schedule(static)
      for (int64_t ng = 0; ng < N * G; ++ng) {
        const int64_t n = ng / G, g = ng % G;
        Reduce(n, g * D, D);
        GroupCoefficients(ng);
        if (mask_.dx) InputGrad(n, g * D, D);
      }
    }
    if (mask_.dgamma || mask_.dbeta) {
#pragma omp for schedule(static)
      for (int64_t g = 0; g < G; ++g) ReduceOverBatch(g);
    }
  }

  // db[n, c] and (when needed) ds[n, c] for `rows` channels of one group from c_first; every
  // channel of a group whose rstd is outside the float32 path's range is summed in double
  // (wide_range_rows.h).
  void Reduce(int64_t n, int64_t c_first, int64_t rows) {
    const int64_t offset = (n * s_.C + c_first) * s_.HxW;
    const int64_t nc = n * s_.C + c_first;
    const int64_t ng = n * s_.G + c_first / s_.D();
    const float mu = ToFloat(mean_[ng]);
    if (wide::RstdOutsideFloatRange(ToFloat(rstd_[ng]))) {
      for (int64_t k = 0; k < rows; ++k) WideReduce(n, c_first + k, mu);
    } else if (need_ds_) {
      rows_.reduce_grad(dy_ + offset, x_ + offset, mu, s_.HxW, rows, &db_[nc], &ds_[nc]);
    } else {  // dbeta alone never needs x
      rows_.sum(dy_ + offset, s_.HxW, rows, &db_[nc]);
    }
  }

  void WideReduce(int64_t n, int64_t c, float mu) {
    const int64_t nc = n * s_.C + c;
    wide::ReduceGradRow(dy_ + nc * s_.HxW, x_ + nc * s_.HxW, s_.HxW, mu, &db_[nc], need_ds_ ? &ds_[nc] : nullptr);
  }

  // S1 = sum_c gamma_c db[n, c] and T2 = sum_c gamma_c ds[n, c] over group ng, in
  // kChainsOverChannels interleaved chains (channel c in chain c % 4, folded as
  // (0 + 1) + (2 + 3)): one serial chain of double adds was a tenth of the whole backward
  // for 40 channels of 8x8.
  static constexpr int kChainsOverChannels = 4;
  void GroupSums(int64_t ng, double *s1, double *t2) const {
    const int64_t D = s_.D(), n = ng / s_.G, g = ng % s_.G;
    double s1_chain[kChainsOverChannels] = {}, t2_chain[kChainsOverChannels] = {};
    const double *db = &db_[n * s_.C + g * D], *ds = &ds_[n * s_.C + g * D];
    auto add = [&](int64_t d, int k) {
      const double gamma = GammaAt(gamma_, g * D + d);
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
        if (!std::isfinite(db_[nc]) || (need_ds_ && !std::isfinite(ds_[nc]))) WideReduce(n, c, ToFloat(mean_[ng]));
      }
      GroupSums(ng, &s1, &t2);
    }
    const double r = ToFloat(rstd_[ng]);
    const double inv_m = 1.0 / static_cast<double>(s_.D() * s_.HxW);
    b_[ng] = -r * r * r * t2 * inv_m;
    c0_[ng] = -r * s1 * inv_m;
  }

  // dx = a_c * dy + b * (x - mu) + c0 with a_c = rstd * gamma_c and the group's b and c0.
  void InputGrad(int64_t n, int64_t c_first, int64_t rows) {
    const int64_t ng = n * s_.G + c_first / s_.D();
    const double r = ToFloat(rstd_[ng]), b = b_[ng], c0 = c0_[ng];
    const int64_t offset = (n * s_.C + c_first) * s_.HxW;
    const float mu = ToFloat(mean_[ng]);
    if (wide::RstdOutsideFloatRange(r) || wide::LostInFloat(b) || wide::LostInFloat(c0)) {
      // b or c0 would be a float32 subnormal or infinity (rstd or dy near the range's ends):
      // dx in double, from the unrounded coefficients.
      for (int64_t k = 0; k < rows; ++k) {
        const int64_t row = offset + k * s_.HxW;
        wide::AffineGradRow(dy_ + row, x_ + row, dx_ + row, s_.HxW, r * GammaAt(gamma_, c_first + k), b, mu, c0);
      }
      return;
    }
    float *a = &a_[n * s_.C + c_first];
    for (int64_t k = 0; k < rows; ++k) a[k] = static_cast<float>(r * GammaAt(gamma_, c_first + k));
    rows_.affine_grad(dy_ + offset, x_ + offset, dx_ + offset, s_.HxW, rows, a, static_cast<float>(b), mu,
                      static_cast<float>(c0), stream_);
  }

  // dgamma[c] = sum_n rstd[n, g] * ds[n, c], dbeta[c] = sum_n db[n, c], n ascending, for the
  // channels of group g; the task walks the (N, C) sums row by row (contiguous channels, one
  // rstd per group) rather than down a column with stride C. The first row initialises the
  // sums (as 0.0 + first, the bits of adding to a zeroed sum).
  void ReduceOverBatch(int64_t g) {
    const int64_t N = s_.N, C = s_.C, G = s_.G, D = s_.D();
    double *dgamma = dgamma_sum_ + g * D, *dbeta = dbeta_sum_ + g * D;
    for (int64_t n = 0; n < N; ++n) {
      const double *db = db_ + n * C + g * D, *ds = ds_ + n * C + g * D;
      if (mask_.dgamma) {
        const double r = ToFloat(rstd_[n * G + g]);
        for (int64_t d = 0; d < D; ++d) dgamma[d] = (n == 0 ? 0.0 : dgamma[d]) + r * ds[d];
      }
      for (int64_t d = 0; d < D; ++d) dbeta[d] = (n == 0 ? 0.0 : dbeta[d]) + db[d];
    }
    for (int64_t d = 0; d < D; ++d) {
      if (mask_.dgamma) dgamma_[g * D + d] = FromFloat<U>(static_cast<float>(dgamma[d]));
      if (mask_.dbeta) dbeta_[g * D + d] = FromFloat<U>(static_cast<float>(dbeta[d]));
    }
  }

  const T *dy_;
  const T *x_;
  const U *mean_;
  const U *rstd_;
  const U *gamma_;
  T *dx_;
  U *dgamma_;
  U *dbeta_;
  GroupNormSizes s_;
  OutputMask mask_;
  bool need_ds_;
  bool stream_;
  const RowKernels<T> &rows_;
  CallScratch scratch_;  // everything below lives in it: O(N*C), nothing full-size
  double *db_;           // (N, C) partial sums
  double *ds_;
  double *b_;  // (N, G) dx coefficients
  double *c0_;
  double *dgamma_sum_;  // (C,) sums over the batch
  double *dbeta_sum_;
  float *a_;  // (N, C) dx coefficients rstd * gamma
};

// ------------------------------------------------------------------ forward
// The forward's statistics, shared by every forward kernel (GroupNorm, GroupNorm + SiLU)
// so that they all store the same mean and rstd bits.
// They need only group totals, and a group's D channels are contiguous, so the two
// sums (x - x0, then (x - mean)^2) run over the group's D * HxW elements as one row:
// kBlock-element blocks folded into double and added in order. (Summing channel by
// channel cost a fold per channel, most of the time for 8x8 channels.) With fewer
// groups than threads (ByBlocks) the blocks are the unit of work, each block's sum is
// the same double, and they are added in the same order, so both schedules give the
// same bits. x0 is the mean of the group's first kShiftElements elements: a float
// lane (up to kBlock / kLanes elements) then sums deviations from a rough mean, not
// values near the mean, so with |mean| >> std the mean's rounding error scales with
// the spread of x rather than with |mean|; with a mean near 0 the deviations are no
// larger than the values.
template <typename T, typename U>
class GroupStatistics {
 public:
  GroupStatistics(const T *x, U *mean, U *rstd, GroupNormSizes sizes, float eps)
      : x_(x), mean_(mean), rstd_(rstd), s_(sizes), eps_(eps), rows_(ActiveRowKernels().For<T>()),
        group_size_(sizes.D() * sizes.HxW), shift_(sizes.N * sizes.G), group_mean_(sizes.N * sizes.G),
        group_rstd_(sizes.N * sizes.G), wide_rstd_(sizes.N * sizes.G), wide_(sizes.N * sizes.G) {}

  // The statistics of group ng = n * G + g (the group-wise schedule: one thread per group).
  void ForGroup(int64_t ng) {
    double sum;
    ComputeShift(ng);
    rows_.centered_sum(Group(ng), shift_[ng], group_size_, 1, &sum);
    if (!GroupMean(ng, sum)) return WideGroup(ng);
    rows_.centered_squares(Group(ng), group_mean_[ng], group_size_, 1, &sum);
    if (!GroupRstd(ng, sum)) WideGroup(ng);
  }

  // Every group's statistics with the blocks as the unit of work (fewer groups than threads).
  void ByBlocks(int threads) {
    const int64_t groups = s_.N * s_.G, blocks = (group_size_ + kBlock - 1) / kBlock, items = groups * blocks;
    std::vector<double> block_sums(items);
    for (int64_t ng = 0; ng < groups; ++ng) ComputeShift(ng);
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t k = 0; k < items; ++k) {
      const int64_t ng = k / blocks, start = (k % blocks) * kBlock;
      rows_.centered_sum(Group(ng) + start, shift_[ng], std::min(kBlock, group_size_ - start), 1, &block_sums[k]);
    }
    for (int64_t ng = 0; ng < groups; ++ng) wide_[ng] = !GroupMean(ng, InOrder(block_sums.data() + ng * blocks, blocks));
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t k = 0; k < items; ++k) {
      const int64_t ng = k / blocks, start = (k % blocks) * kBlock;
      if (wide_[ng]) continue;
      rows_.centered_squares(Group(ng) + start, group_mean_[ng], std::min(kBlock, group_size_ - start), 1,
                             &block_sums[k]);
    }
    for (int64_t ng = 0; ng < groups; ++ng) {
      if (!wide_[ng]) wide_[ng] = !GroupRstd(ng, InOrder(block_sums.data() + ng * blocks, blocks));
    }
    // The groups the float32 sums could not handle, one thread each, as ForGroup does them.
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t ng = 0; ng < groups; ++ng) {
      if (wide_[ng]) WideGroup(ng);
    }
  }

  // The forward's schedule, shared by every forward kernel: the statistics, then
  // output(n, c_first, rows) over every channel. Group-wise, a group's output is written
  // right after its statistics (the group is still in L2); with fewer groups than threads,
  // all statistics first (ByBlocks), then one channel per task.
  template <typename Output>
  void Run(Output &&output) {
    const int64_t N = s_.N, C = s_.C, G = s_.G, D = s_.D();
    const int threads = ThreadsFor(N * C * s_.HxW);
    if (SplitByChannel(N * G, threads)) {
      ByBlocks(threads);
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int64_t nc = 0; nc < N * C; ++nc) output(nc / C, nc % C, 1);
    } else {
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int64_t ng = 0; ng < N * G; ++ng) {
        ForGroup(ng);
        output(ng / G, (ng % G) * D, D);
      }
    }
  }

  // The float32 statistics y is computed with (before rounding to U; see GroupMean).
  float Mean(int64_t ng) const { return group_mean_[ng]; }
  float Rstd(int64_t ng) const { return group_rstd_[ng]; }
  // Whether group ng's statistics came from the double loops (WideGroup); its y is then
  // computed in double too, from Mean(ng) and WideRstd(ng) (rstd before rounding to float:
  // beyond a standard deviation of 8.5e37 the float32 rstd is subnormal).
  bool Wide(int64_t ng) const { return wide_[ng] != 0; }
  double WideRstd(int64_t ng) const { return wide_rstd_[ng]; }

 private:
  const T *Group(int64_t ng) const { return x_ + ng * group_size_; }

  // x0 of the group (see above), the same in both schedules; 0 when the group is empty
  // or x0 is not finite, so an inf or NaN element gives the mean it gave unshifted.
  static constexpr int64_t kShiftElements = 64;
  void ComputeShift(int64_t ng) {
    const int64_t count = std::min(kShiftElements, group_size_);
    double sum = 0.0;
    if (count > 0) rows_.sum(Group(ng), count, 1, &sum);
    const float x0 = count > 0 ? static_cast<float>(sum / static_cast<double>(count)) : 0.0f;
    shift_[ng] = std::isfinite(x0) ? x0 : 0.0f;
  }

  // What a sum over the whole group returns: its blocks' sums added in order.
  static double InOrder(const double *block_sums, int64_t blocks) {
    double total = 0.0;
    for (int64_t b = 0; b < blocks; ++b) total += block_sums[b];
    return total;
  }

  // The variance and y use the float32 mean, never the value rounded to a float16 or
  // bfloat16 `mean` output: with |mean| >> std that rounding (up to 2^-9 of |mean| in
  // bf16) would shift every y. Only the stored copy is rounded. A caller that wants its
  // backward to use exactly the statistics the forward used asks for float32 ones (the
  // layers and group_norm do; see ms_groupnorm/functional.py).
  // Both return false, storing nothing, when the float32 sum cannot be trusted: a
  // non-finite sum (a float32 lane overflowed, or x holds inf/NaN, whose statistics the double
  // loops give as well), or a variance so small (< 2^-100) that its float32 squares were
  // subnormal while eps is too small (|eps| < 2^-70) to hide that. Ordinary data never gets here.
  bool GroupMean(int64_t ng, double centered_sum) {
    if (!std::isfinite(centered_sum)) return false;
    const double m = static_cast<double>(group_size_);
    const float mu = m > 0 ? static_cast<float>(static_cast<double>(shift_[ng]) + centered_sum / m) : 0.0f;
    mean_[ng] = FromFloat<U>(mu);
    group_mean_[ng] = mu;
    return true;
  }

  static constexpr double kSmallestFloatVariance = 0x1p-100, kSmallestEpsHidingIt = 0x1p-70;
  bool GroupRstd(int64_t ng, double sum) {
    const double m = static_cast<double>(group_size_);
    if (!std::isfinite(sum) ||
        (m > 0 && sum / m < kSmallestFloatVariance && std::fabs(static_cast<double>(eps_)) < kSmallestEpsHidingIt)) {
      return false;
    }
    // An empty group has no variance: rstd is NaN, as aclnnGroupNorm documents.
    // A negative eps larger than the variance gives NaN, as in mindspore.ops.group_norm.
    const double r = m > 0 ? 1.0 / std::sqrt(sum / m + static_cast<double>(eps_)) : std::numeric_limits<double>::quiet_NaN();
    const float r32 = static_cast<float>(r);
    rstd_[ng] = FromFloat<U>(r32);
    group_rstd_[ng] = r32;  // float32, not the rounded output (see GroupMean)
    return true;
  }

  // Group ng's statistics from the double loops (wide_range_rows.h), for any finite x.
  void WideGroup(int64_t ng) {
    double mu, r;
    wide::Statistics(Group(ng), group_size_, static_cast<double>(eps_), &mu, &r);
    group_mean_[ng] = static_cast<float>(mu);
    group_rstd_[ng] = static_cast<float>(r);
    mean_[ng] = FromFloat<U>(group_mean_[ng]);
    rstd_[ng] = FromFloat<U>(group_rstd_[ng]);
    wide_rstd_[ng] = r;
    wide_[ng] = 1;
  }

  const T *x_;
  U *mean_;
  U *rstd_;
  GroupNormSizes s_;
  float eps_;
  const RowKernels<T> &rows_;
  int64_t group_size_;             // D * HxW elements, contiguous
  std::vector<float> shift_;       // (N, G) x0 of the first sum
  std::vector<float> group_mean_;  // (N, G): float32 mean/rstd (before rounding to U)
  std::vector<float> group_rstd_;
  std::vector<double> wide_rstd_;  // (N, G): rstd in double, for the groups WideGroup computed
  std::vector<uint8_t> wide_;      // (N, G): 1 where WideGroup computed the statistics
};

// Statistics (above), then y = (x - mean) * (rstd * gamma) + beta per channel; in the
// group-wise schedule y is written while the group is still in L2, so memory sees one
// read of x and one write of y.
template <typename T, typename U>
class ForwardKernel {
 public:
  ForwardKernel(const T *x, const U *gamma, const U *beta, T *y, U *mean, U *rstd, GroupNormSizes sizes, float eps)
      : x_(x), gamma_(gamma), y_(y), s_(sizes), stream_(StreamOutput<T>(sizes)),
        rows_(ActiveRowKernels().For<T>()), stats_(x, mean, rstd, sizes, eps), scale_(sizes.N * sizes.C),
        shift_(sizes.C) {
    for (int64_t c = 0; c < s_.C; ++c) shift_[c] = BetaAt(beta, c);
  }

  void Run() {
    stats_.Run([this](int64_t n, int64_t c_first, int64_t rows) { NormalizeChannels(n, c_first, rows); });
  }

 private:
  void NormalizeChannels(int64_t n, int64_t c_first, int64_t rows) {
    const int64_t ng = n * s_.G + c_first / s_.D();
    if (stats_.Wide(ng)) {
      for (int64_t k = 0; k < rows; ++k) {
        const int64_t offset = (n * s_.C + c_first + k) * s_.HxW;
        wide::NormalizeRow(x_ + offset, y_ + offset, s_.HxW, stats_.Mean(ng),
                           stats_.WideRstd(ng) * GammaAt(gamma_, c_first + k), shift_[c_first + k]);
      }
      return;
    }
    float *scale = &scale_[n * s_.C + c_first];
    for (int64_t k = 0; k < rows; ++k) scale[k] = stats_.Rstd(ng) * GammaAt(gamma_, c_first + k);
    rows_.normalize(x_ + (n * s_.C + c_first) * s_.HxW, y_ + (n * s_.C + c_first) * s_.HxW, s_.HxW, rows,
                    stats_.Mean(ng), scale, &shift_[c_first], stream_);
  }

  const T *x_;
  const U *gamma_;
  T *y_;
  GroupNormSizes s_;
  bool stream_;
  const RowKernels<T> &rows_;
  GroupStatistics<T, U> stats_;
  std::vector<float> scale_;  // (N, C) rstd * gamma
  std::vector<float> shift_;  // (C,) beta as float
};

// ------------------------------------------------------------------ float64
// float64 (CPU only, for gradient checks and users of nn.GroupNorm's float64 support):
// plain scalar loops in double, no SIMD row kernels. Each sum runs in index order and
// threads only pick which group or channel they handle, so results do not depend on
// the thread count either.
inline void ForwardFloat64(const double *x, const double *gamma, const double *beta, double *y, double *mean,
                           double *rstd, const GroupNormSizes &s, double eps) {
  const int64_t D = s.D(), M = D * s.HxW;
  const int threads = ThreadsFor(s.N * s.C * s.HxW);
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t ng = 0; ng < s.N * s.G; ++ng) {
    const int64_t n = ng / s.G, g = ng % s.G;
    const double *xg = x + (n * s.C + g * D) * s.HxW;
    wide::Statistics(xg, M, eps, &mean[ng], &rstd[ng]);
    for (int64_t d = 0; d < D; ++d) {
      const int64_t c = g * D + d;
      wide::NormalizeRow(xg + d * s.HxW, y + (n * s.C + c) * s.HxW, s.HxW, mean[ng],
                         rstd[ng] * (gamma == nullptr ? 1.0 : gamma[c]), beta == nullptr ? 0.0 : beta[c]);
    }
  }
}

inline void BackwardFloat64(const double *dy, const double *x, const double *mean, const double *rstd,
                            const double *gamma, double *dx, double *dgamma, double *dbeta, const GroupNormSizes &s,
                            OutputMask mask) {
  const int64_t N = s.N, C = s.C, G = s.G, D = s.D(), HxW = s.HxW;
  const int threads = ThreadsFor(N * C * HxW);
  std::vector<double> db(N * C), ds(N * C);
  auto gamma_at = [gamma](int64_t c) { return gamma == nullptr ? 1.0 : gamma[c]; };
#pragma omp parallel for num_threads(threads) schedule(static)
  for (int64_t nc = 0; nc < N * C; ++nc) {
    wide::ReduceGradRow(dy + nc * HxW, x + nc * HxW, HxW, mean[(nc / C) * G + (nc % C) / D], &db[nc], &ds[nc]);
  }
  if (mask.dx) {
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t ng = 0; ng < N * G; ++ng) {
      const int64_t n = ng / G, g = ng % G;
      double s1 = 0.0, t2 = 0.0;
      for (int64_t c = g * D; c < (g + 1) * D; ++c) {
        s1 += gamma_at(c) * db[n * C + c];
        t2 += gamma_at(c) * ds[n * C + c];
      }
      const double r = rstd[ng], mu = mean[ng], inv_m = 1.0 / static_cast<double>(D * HxW);
      const double b = -r * r * r * t2 * inv_m, c0 = -r * s1 * inv_m;
      for (int64_t c = g * D; c < (g + 1) * D; ++c) {
        const int64_t offset = (n * C + c) * HxW;
        wide::AffineGradRow(dy + offset, x + offset, dx + offset, HxW, r * gamma_at(c), b, mu, c0);
      }
    }
  }
  for (int64_t c = 0; c < C; ++c) {
    double sum_dgamma = 0.0, sum_dbeta = 0.0;
    for (int64_t n = 0; n < N; ++n) {
      sum_dgamma += rstd[n * G + c / D] * ds[n * C + c];
      sum_dbeta += db[n * C + c];
    }
    if (mask.dgamma) dgamma[c] = sum_dgamma;
    if (mask.dbeta) dbeta[c] = sum_dbeta;
  }
}

}  // namespace detail

// gamma == nullptr means ones; outputs whose mask bit is off may be nullptr and are not touched.
template <typename T, typename U>
void GroupNormBackward(const T *dy, const T *x, const U *mean, const U *rstd, const U *gamma, T *dx, U *dgamma,
                       U *dbeta, GroupNormSizes sizes, OutputMask mask) {
  // Empty input (N, C or HxW == 0): dgamma = dbeta = 0, no dx to write. C == 0 also means D == 0, which
  // the kernel below would divide by.
  if (sizes.N * sizes.C * sizes.HxW == 0) {
    for (int64_t c = 0; c < sizes.C; ++c) {
      if (mask.dgamma) dgamma[c] = U{};  // +0 in every storage type
      if (mask.dbeta) dbeta[c] = U{};
    }
    return;
  }
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
    detail::ForwardKernel<T, U>(x, gamma, beta, y, mean, rstd, sizes, eps).Run();
  }
}

}  // namespace ms_groupnorm
