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
// Determinism: every sum runs in an order fixed by the shapes alone (16 float lanes
// over blocks of 2048 elements, folded into double), per channel. Threads only decide
// *which* channel or group a core handles, never how a sum is split, and the reduction
// over N for dgamma/dbeta is a serial loop per channel. So the outputs are
// bit-identical for any thread count, and the group-wise and channel-wise schedules
// below give identical bits too.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "half_types.h"

namespace ms_groupnorm {

struct GroupNormSizes {
  int64_t N = 0;
  int64_t C = 0;
  int64_t HxW = 0;
  int64_t G = 1;
  int64_t D() const { return C / G; }
};

struct OutputMask {
  bool dx = true;
  bool dgamma = true;
  bool dbeta = true;
};

namespace detail {

constexpr int kLanes = 16;
constexpr int64_t kBlock = 2048;

inline double FoldLanes(const float *lanes) {
  double sum = 0.0;
  for (int l = 0; l < kLanes; ++l) sum += lanes[l];
  return sum;
}

// sum_i term(i) for i in [0, n): float lanes inside a block, double across blocks.
template <typename Term>
inline double LaneSum(int64_t n, Term term) {
  double total = 0.0;
  for (int64_t start = 0; start < n; start += kBlock) {
    const int64_t end = std::min(n, start + kBlock);
    float lanes[kLanes] = {};
    int64_t i = start;
    for (; i + kLanes <= end; i += kLanes) {
      for (int l = 0; l < kLanes; ++l) lanes[l] += term(i + l);
    }
    for (int l = 0; i < end; ++i, ++l) lanes[l] += term(i);
    total += FoldLanes(lanes);
  }
  return total;
}

// Two sums over the same elements in one pass: (sum_i first(i), sum_i second(i)).
template <typename First, typename Second>
inline void LaneSum2(int64_t n, First first, Second second, double *first_total, double *second_total) {
  double total1 = 0.0, total2 = 0.0;
  for (int64_t start = 0; start < n; start += kBlock) {
    const int64_t end = std::min(n, start + kBlock);
    float lanes1[kLanes] = {};
    float lanes2[kLanes] = {};
    int64_t i = start;
    for (; i + kLanes <= end; i += kLanes) {
      for (int l = 0; l < kLanes; ++l) {
        lanes1[l] += first(i + l);
        lanes2[l] += second(i + l);
      }
    }
    for (int l = 0; i < end; ++i, ++l) {
      lanes1[l] += first(i);
      lanes2[l] += second(i);
    }
    total1 += FoldLanes(lanes1);
    total2 += FoldLanes(lanes2);
  }
  *first_total = total1;
  *second_total = total2;
}

// Groups are the natural unit of work (a group's second pass then hits the cache its
// first pass filled); when there are fewer groups than threads, split by channel.
inline bool SplitByChannel(int64_t groups) { return groups < static_cast<int64_t>(omp_get_max_threads()); }

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
        mask_(mask), need_ds_(mask.dx || mask.dgamma), db_(sizes.N * sizes.C), ds_(need_ds_ ? sizes.N * sizes.C : 0) {}

  void Run() {
    const int64_t N = s_.N, C = s_.C, G = s_.G, D = s_.D();
    if (SplitByChannel(N * G)) {
#pragma omp parallel for schedule(static)
      for (int64_t nc = 0; nc < N * C; ++nc) ReduceChannel(nc / C, nc % C);
      if (mask_.dx) {
#pragma omp parallel for schedule(static)
        for (int64_t nc = 0; nc < N * C; ++nc) {
          const int64_t n = nc / C, c = nc % C;
          double b, c0;
          GroupCoefficients(n, c / D, &b, &c0);
          InputGradChannel(n, c, b, c0);
        }
      }
    } else {
#pragma omp parallel for schedule(static)
      for (int64_t ng = 0; ng < N * G; ++ng) {
        const int64_t n = ng / G, g = ng % G;
        for (int64_t c = g * D; c < (g + 1) * D; ++c) ReduceChannel(n, c);
        if (!mask_.dx) continue;
        double b, c0;
        GroupCoefficients(n, g, &b, &c0);
        for (int64_t c = g * D; c < (g + 1) * D; ++c) InputGradChannel(n, c, b, c0);
      }
    }
    if (mask_.dgamma || mask_.dbeta) ReduceOverBatch();
  }

 private:
  // db[n, c] and (when needed) ds[n, c] for one channel.
  void ReduceChannel(int64_t n, int64_t c) {
    const int64_t offset = (n * s_.C + c) * s_.HxW;
    const T *dy = dy_ + offset;
    const T *x = x_ + offset;
    if (need_ds_) {
      const float mu = ToFloat(mean_[n * s_.G + c / s_.D()]);
      LaneSum2(
          s_.HxW, [dy](int64_t i) { return ToFloat(dy[i]); },
          [dy, x, mu](int64_t i) { return ToFloat(dy[i]) * (ToFloat(x[i]) - mu); }, &db_[n * s_.C + c],
          &ds_[n * s_.C + c]);
    } else {  // dbeta alone never needs x
      db_[n * s_.C + c] = LaneSum(s_.HxW, [dy](int64_t i) { return ToFloat(dy[i]); });
    }
  }

  void GroupCoefficients(int64_t n, int64_t g, double *b, double *c0) const {
    const int64_t D = s_.D();
    double s1 = 0.0, t2 = 0.0;
    for (int64_t c = g * D; c < (g + 1) * D; ++c) {
      const double gamma = GammaAt(gamma_, c);
      s1 += gamma * db_[n * s_.C + c];
      t2 += gamma * ds_[n * s_.C + c];
    }
    const double r = ToFloat(rstd_[n * s_.G + g]);
    const double inv_m = 1.0 / static_cast<double>(D * s_.HxW);
    *b = -r * r * r * t2 * inv_m;
    *c0 = -r * s1 * inv_m;
  }

  void InputGradChannel(int64_t n, int64_t c, double b, double c0) {
    const int64_t g = c / s_.D();
    const int64_t offset = (n * s_.C + c) * s_.HxW;
    const T *dy = dy_ + offset;
    const T *x = x_ + offset;
    T *dx = dx_ + offset;
    const float a = static_cast<float>(static_cast<double>(ToFloat(rstd_[n * s_.G + g])) * GammaAt(gamma_, c));
    const float mu = ToFloat(mean_[n * s_.G + g]);
    const float bf = static_cast<float>(b), cf = static_cast<float>(c0);
    for (int64_t i = 0; i < s_.HxW; ++i) {
      dx[i] = FromFloat<T>(a * ToFloat(dy[i]) + bf * (ToFloat(x[i]) - mu) + cf);
    }
  }

  // dgamma[c] = sum_n rstd[n, g] * ds[n, c], dbeta[c] = sum_n db[n, c], n ascending.
  void ReduceOverBatch() {
    const int64_t N = s_.N, C = s_.C, G = s_.G, D = s_.D();
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < C; ++c) {
      double dgamma = 0.0, dbeta = 0.0;
      for (int64_t n = 0; n < N; ++n) {
        if (mask_.dgamma) dgamma += static_cast<double>(ToFloat(rstd_[n * G + c / D])) * ds_[n * C + c];
        dbeta += db_[n * C + c];
      }
      if (mask_.dgamma) dgamma_[c] = FromFloat<U>(static_cast<float>(dgamma));
      if (mask_.dbeta) dbeta_[c] = FromFloat<U>(static_cast<float>(dbeta));
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
  std::vector<double> db_;  // (N, C) partial sums: O(N*C) scratch, nothing full-size
  std::vector<double> ds_;
};

// ------------------------------------------------------------------ forward
template <typename T, typename U>
class ForwardKernel {
 public:
  ForwardKernel(const T *x, const U *gamma, const U *beta, T *y, U *mean, U *rstd, GroupNormSizes sizes, float eps)
      : x_(x), gamma_(gamma), beta_(beta), y_(y), mean_(mean), rstd_(rstd), s_(sizes), eps_(eps),
        channel_sum_(sizes.N * sizes.C), group_mean_(sizes.N * sizes.G), group_rstd_(sizes.N * sizes.G) {}

  void Run() {
    const int64_t N = s_.N, C = s_.C, G = s_.G, D = s_.D();
    if (SplitByChannel(N * G)) {
#pragma omp parallel for schedule(static)
      for (int64_t nc = 0; nc < N * C; ++nc) ChannelSum(nc / C, nc % C);
      for (int64_t ng = 0; ng < N * G; ++ng) GroupMean(ng / G, ng % G);
#pragma omp parallel for schedule(static)
      for (int64_t nc = 0; nc < N * C; ++nc) ChannelSquares(nc / C, nc % C);
      for (int64_t ng = 0; ng < N * G; ++ng) GroupRstd(ng / G, ng % G);
#pragma omp parallel for schedule(static)
      for (int64_t nc = 0; nc < N * C; ++nc) NormalizeChannel(nc / C, nc % C);
    } else {
#pragma omp parallel for schedule(static)
      for (int64_t ng = 0; ng < N * G; ++ng) {
        const int64_t n = ng / G, g = ng % G;
        for (int64_t c = g * D; c < (g + 1) * D; ++c) ChannelSum(n, c);
        GroupMean(n, g);
        for (int64_t c = g * D; c < (g + 1) * D; ++c) ChannelSquares(n, c);
        GroupRstd(n, g);
        for (int64_t c = g * D; c < (g + 1) * D; ++c) NormalizeChannel(n, c);
      }
    }
  }

 private:
  const T *Channel(int64_t n, int64_t c) const { return x_ + (n * s_.C + c) * s_.HxW; }

  void ChannelSum(int64_t n, int64_t c) {
    const T *x = Channel(n, c);
    channel_sum_[n * s_.C + c] = LaneSum(s_.HxW, [x](int64_t i) { return ToFloat(x[i]); });
  }

  // The mean is rounded to the stored dtype first, so that the variance, y and the
  // backward pass all centre on exactly the value the caller sees in `mean`.
  void GroupMean(int64_t n, int64_t g) {
    const int64_t D = s_.D();
    double sum = 0.0;
    for (int64_t c = g * D; c < (g + 1) * D; ++c) sum += channel_sum_[n * s_.C + c];
    const double m = static_cast<double>(D * s_.HxW);
    const U stored = FromFloat<U>(m > 0 ? static_cast<float>(sum / m) : 0.0f);
    mean_[n * s_.G + g] = stored;
    group_mean_[n * s_.G + g] = ToFloat(stored);
  }

  void ChannelSquares(int64_t n, int64_t c) {
    const T *x = Channel(n, c);
    const float mu = group_mean_[n * s_.G + c / s_.D()];
    channel_sum_[n * s_.C + c] = LaneSum(s_.HxW, [x, mu](int64_t i) {
      const float d = ToFloat(x[i]) - mu;
      return d * d;
    });
  }

  void GroupRstd(int64_t n, int64_t g) {
    const int64_t D = s_.D();
    double sum = 0.0;
    for (int64_t c = g * D; c < (g + 1) * D; ++c) sum += channel_sum_[n * s_.C + c];
    const double m = static_cast<double>(D * s_.HxW);
    // An empty group has no variance: rstd is NaN, as aclnnGroupNorm documents.
    const double r = m > 0 ? 1.0 / std::sqrt(sum / m + static_cast<double>(eps_)) : std::numeric_limits<double>::quiet_NaN();
    const U stored = FromFloat<U>(static_cast<float>(r));
    rstd_[n * s_.G + g] = stored;
    group_rstd_[n * s_.G + g] = ToFloat(stored);
  }

  void NormalizeChannel(int64_t n, int64_t c) {
    const T *x = Channel(n, c);
    T *y = y_ + (n * s_.C + c) * s_.HxW;
    const int64_t g = c / s_.D();
    const float mu = group_mean_[n * s_.G + g];
    const float scale = group_rstd_[n * s_.G + g] * GammaAt(gamma_, c);
    const float shift = BetaAt(beta_, c);
    for (int64_t i = 0; i < s_.HxW; ++i) y[i] = FromFloat<T>((ToFloat(x[i]) - mu) * scale + shift);
  }

  const T *x_;
  const U *gamma_;
  const U *beta_;
  T *y_;
  U *mean_;
  U *rstd_;
  GroupNormSizes s_;
  float eps_;
  std::vector<double> channel_sum_;  // (N, C) scratch
  std::vector<float> group_mean_;    // (N, G): the stored mean/rstd, read back as float
  std::vector<float> group_rstd_;
};

}  // namespace detail

// gamma == nullptr means ones; outputs whose mask bit is off may be nullptr and are not touched.
template <typename T, typename U>
void GroupNormBackward(const T *dy, const T *x, const U *mean, const U *rstd, const U *gamma, T *dx, U *dgamma,
                       U *dbeta, GroupNormSizes sizes, OutputMask mask) {
  if (sizes.N * sizes.HxW == 0) {  // empty input: dgamma = dbeta = 0, no dx to write
    for (int64_t c = 0; c < sizes.C; ++c) {
      if (mask.dgamma) dgamma[c] = FromFloat<U>(0.0f);
      if (mask.dbeta) dbeta[c] = FromFloat<U>(0.0f);
    }
    return;
  }
  detail::BackwardKernel<T, U>(dy, x, mean, rstd, gamma, dx, dgamma, dbeta, sizes, mask).Run();
}

// gamma == nullptr means ones, beta == nullptr zeros.
template <typename T, typename U>
void GroupNormForward(const T *x, const U *gamma, const U *beta, T *y, U *mean, U *rstd, GroupNormSizes sizes,
                      float eps) {
  if (sizes.N * sizes.C == 0) return;
  detail::ForwardKernel<T, U>(x, gamma, beta, y, mean, rstd, sizes, eps).Run();
}

}  // namespace ms_groupnorm
