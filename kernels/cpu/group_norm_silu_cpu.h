// Fused GroupNorm + swish (SiLU for swish_k = 1) forward and backward on the CPU, for
// contiguous (N, C, HxW) data; float64 oracle: ms_groupnorm/reference.py (silu_*).
//
// Forward: z = y * sigmoid(k * y), y = gamma * xhat + beta. The statistics are those of
// GroupNormForward bit for bit (the same row loops and the same double folds), so mean
// and rstd equal the plain GroupNorm's.
// Backward: nothing full-size is read but dz and x. Per element it recomputes
// y = (x - mu) * (rstd * gamma) + beta and s = sigmoid(k y), and runs GroupNorm's backward
// (group_norm_cpu.h) on g = dz * s * (1 + k y (1 - s)) instead of dy:
//   db[n, c] = sum_hw g, ds[n, c] = sum_hw g * (x - mu), dbeta = sum_n db,
//   dgamma = sum_n rstd * ds, dx = rstd gamma g + b (x - mu) + c0 (b, c0 as there).
// g is kept for the dx pass in a per-thread scratch of one group while that fits in 1 MiB
// (then it is still in L2), else computed again, in the same operations.
// Determinism: the schedules and sums of group_norm_cpu.h (threads choose only which
// group or channel they handle; the row sums follow row_kernels.h's lane/block order;
// dgamma/dbeta are a serial loop over n), so results are bit-identical for any thread
// count within an ISA build (the FMA builds differ from the portable one by rounding).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "group_norm_cpu.h"
#include "silu_rows.h"

namespace ms_groupnorm {
namespace detail {

// (N, C) rstd * gamma and (C,) beta in float, computed as the forward computes them.
template <typename U>
inline void FillSiluCoefficients(const GroupNormSizes &s, const float *rstd32, const U *gamma, const U *beta,
                                 float *scale, float *shift) {
  for (int64_t n = 0; n < s.N; ++n) {
    for (int64_t c = 0; c < s.C; ++c) scale[n * s.C + c] = rstd32[n * s.G + c / s.D()] * GammaAt(gamma, c);
  }
  for (int64_t c = 0; c < s.C; ++c) shift[c] = BetaAt(beta, c);
}

// ------------------------------------------------------------------ forward
template <typename T, typename U>
class SiluForwardKernel {
 public:
  SiluForwardKernel(const T *x, const U *gamma, const U *beta, T *z, U *mean, U *rstd, GroupNormSizes sizes,
                    float eps, float swish_k)
      : x_(x), gamma_(gamma), z_(z), s_(sizes), k_(swish_k), silu_(ActiveSiluRowKernels().For<T>()),
        stats_(x, mean, rstd, sizes, eps), scale_(sizes.N * sizes.C), shift_(sizes.C) {
    for (int64_t c = 0; c < s_.C; ++c) shift_[c] = BetaAt(beta, c);
  }

  // The statistics are GroupNorm's own (GroupStatistics in group_norm_cpu.h), so mean
  // and rstd are bitwise those of the GroupNorm forward in both schedules.
  void Run() {
    stats_.Run([this](int64_t n, int64_t c_first, int64_t rows) { Output(n, c_first, rows); });
  }

 private:
  const T *Channel(int64_t n, int64_t c) const { return x_ + (n * s_.C + c) * s_.HxW; }

  // z uses the float32 statistics; only the stored copies are rounded to U.
  void Output(int64_t n, int64_t c_first, int64_t rows) {
    const int64_t ng = n * s_.G + c_first / s_.D();
    if (stats_.Wide(ng)) {  // statistics from the double loops: z in double too
      for (int64_t k = 0; k < rows; ++k) {
        wide::NormalizeSiluRow(Channel(n, c_first + k), z_ + (n * s_.C + c_first + k) * s_.HxW, s_.HxW,
                               stats_.Mean(ng), stats_.WideRstd(ng) * GammaAt(gamma_, c_first + k),
                               shift_[c_first + k], k_);
      }
      return;
    }
    float *scale = &scale_[n * s_.C + c_first];
    for (int64_t k = 0; k < rows; ++k) scale[k] = stats_.Rstd(ng) * GammaAt(gamma_, c_first + k);
    silu_.normalize_silu(Channel(n, c_first), z_ + (n * s_.C + c_first) * s_.HxW, s_.HxW, rows, stats_.Mean(ng),
                         scale, &shift_[c_first], k_);
  }

  const T *x_;
  const U *gamma_;
  T *z_;
  GroupNormSizes s_;
  float k_;
  const SiluRowKernels<T> &silu_;
  GroupStatistics<T, U> stats_;
  std::vector<float> scale_;  // (N, C) rstd * gamma
  std::vector<float> shift_;  // (C,) beta
};

// ------------------------------------------------------------------ backward
template <typename T, typename U>
class SiluBackwardKernel {
 public:
  SiluBackwardKernel(const T *dz, const T *x, const U *mean, const U *rstd, const U *gamma, const U *beta, T *dx,
                     U *dgamma, U *dbeta, GroupNormSizes sizes, OutputMask mask, float swish_k)
      : dz_(dz), x_(x), mean_(mean), rstd_(rstd), gamma_(gamma), dx_(dx), dgamma_(dgamma), dbeta_(dbeta), s_(sizes),
        mask_(mask), k_(swish_k), silu_(ActiveSiluRowKernels().For<T>()), db_(sizes.N * sizes.C),
        ds_(sizes.N * sizes.C), rstd32_(sizes.N * sizes.G), scale_(sizes.N * sizes.C), shift_(sizes.C) {
    for (int64_t i = 0; i < s_.N * s_.G; ++i) rstd32_[i] = ToFloat(rstd_[i]);
    FillSiluCoefficients(s_, rstd32_.data(), gamma, beta, scale_.data(), shift_.data());
  }

  void Run() {
    const int64_t N = s_.N, C = s_.C, G = s_.G, D = s_.D();
    const int threads = ThreadsFor(N * C * s_.HxW);
    if (SplitByChannel(N * G, threads)) {
#pragma omp parallel for num_threads(threads) schedule(static)
      for (int64_t nc = 0; nc < N * C; ++nc) Reduce(nc / C, nc % C, 1);
      if (mask_.dx) {
#pragma omp parallel for num_threads(threads) schedule(static)
        for (int64_t nc = 0; nc < N * C; ++nc) InputGrad(nc / C, nc % C, 1);
      }
    } else {
      // A group's g (dz * dz/dy) is kept in a per-thread scratch while it fits in
      // kMaxGroupScratchBytes (it stays in L2), so the dx pass does not recompute sigmoid;
      // a larger group recomputes it. The same floats either way, so the same bits.
      const bool keep_g = mask_.dx && D * s_.HxW * static_cast<int64_t>(sizeof(float)) <= kMaxGroupScratchBytes;
#pragma omp parallel num_threads(threads)
      {
        std::vector<float> scratch(keep_g ? D * s_.HxW : 0);
#pragma omp for schedule(static)
        for (int64_t ng = 0; ng < N * G; ++ng) {
          const int64_t n = ng / G, g = ng % G;
          Reduce(n, g * D, D, keep_g ? scratch.data() : nullptr);
          if (mask_.dx) InputGrad(n, g * D, D, keep_g ? scratch.data() : nullptr);
        }
      }
    }
    if (mask_.dgamma || mask_.dbeta) ReduceOverBatch(threads);
  }

 private:
  static constexpr int64_t kMaxGroupScratchBytes = int64_t{1} << 20;

  float Mean(int64_t n, int64_t c) const { return ToFloat(mean_[n * s_.G + c / s_.D()]); }

  // Even dbeta alone needs x here: g depends on y. So ds is always computed (cheap).
  // g_out (rows * HxW floats) receives g when not nullptr. As in BackwardKernel::Reduce, a
  // channel whose float32 sums are not finite, or a group whose rstd is outside the float32
  // path's range, is summed in double (InputGrad then recomputes its g in double too).
  void Reduce(int64_t n, int64_t c_first, int64_t rows, float *g_out = nullptr) {
    const int64_t nc = n * s_.C + c_first;
    const int64_t offset = nc * s_.HxW;
    const int64_t g = c_first / s_.D();
    const bool wide = wide::RstdOutsideFloatRange(rstd32_[n * s_.G + g]);
    if (!wide) {
      silu_.reduce_grad(dz_ + offset, x_ + offset, s_.HxW, rows, Mean(n, c_first), &scale_[nc], &shift_[c_first],
                        k_, &db_[nc], &ds_[nc], g_out);
      if (wide::AllFinite(&db_[nc], rows) && wide::AllFinite(&ds_[nc], rows)) return;
    }
    for (int64_t k = 0; k < rows; ++k) {
      if (wide || !std::isfinite(db_[nc + k]) || !std::isfinite(ds_[nc + k])) {
        const int64_t row = offset + k * s_.HxW;
        wide::ReduceSiluGradRow(dz_ + row, x_ + row, s_.HxW, Mean(n, c_first),
                                WideScale(n, c_first + k), shift_[c_first + k], k_, &db_[nc + k], &ds_[nc + k]);
      }
    }
  }

  // rstd * gamma_c in double (scale_ holds it rounded to float).
  double WideScale(int64_t n, int64_t c) const {
    return static_cast<double>(rstd32_[n * s_.G + c / s_.D()]) * GammaAt(gamma_, c);
  }

  // BackwardKernel::InputGrad's coefficients, in the same order (the whole group each
  // call, so both schedules give the same bits); a_c = rstd * gamma_c is scale_.
  // g_stored: what Reduce stored for these rows, or nullptr to recompute g.
  void InputGrad(int64_t n, int64_t c_first, int64_t rows, const float *g_stored = nullptr) {
    const int64_t D = s_.D(), g = c_first / D;
    double s1 = 0.0, t2 = 0.0;
    for (int64_t c = g * D; c < (g + 1) * D; ++c) {
      const double gamma = GammaAt(gamma_, c);
      s1 += gamma * db_[n * s_.C + c];
      t2 += gamma * ds_[n * s_.C + c];
    }
    const double r = rstd32_[n * s_.G + g];
    const double inv_m = 1.0 / static_cast<double>(D * s_.HxW);
    const double b_wide = -r * r * r * t2 * inv_m, c0_wide = -r * s1 * inv_m;
    const float b = static_cast<float>(b_wide), c0 = static_cast<float>(c0_wide);
    const int64_t nc = n * s_.C + c_first;
    const int64_t offset = nc * s_.HxW;
    if (wide::RstdOutsideFloatRange(r) || wide::LostInFloat(b_wide) || wide::LostInFloat(c0_wide)) {
      for (int64_t k = 0; k < rows; ++k) {  // as BackwardKernel::InputGrad: dx in double
        const int64_t row = offset + k * s_.HxW;
        wide::SiluInputGradRow(dz_ + row, x_ + row, dx_ + row, s_.HxW, Mean(n, c_first), WideScale(n, c_first + k),
                               shift_[c_first + k], k_, b_wide, c0_wide);
      }
      return;
    }
    if (g_stored != nullptr) {
      silu_.input_grad_stored(g_stored, x_ + offset, dx_ + offset, s_.HxW, rows, Mean(n, c_first), &scale_[nc], b,
                              c0);
    } else {
      silu_.input_grad(dz_ + offset, x_ + offset, dx_ + offset, s_.HxW, rows, Mean(n, c_first), &scale_[nc],
                       &shift_[c_first], k_, b, c0);
    }
  }

  // As BackwardKernel::ReduceOverBatch: n ascending, in double.
  void ReduceOverBatch(int threads) {
    const int64_t N = s_.N, C = s_.C, G = s_.G, D = s_.D();
#pragma omp parallel for num_threads(threads) schedule(static)
    for (int64_t c = 0; c < C; ++c) {
      double dgamma = 0.0, dbeta = 0.0;
      for (int64_t n = 0; n < N; ++n) {
        if (mask_.dgamma) dgamma += static_cast<double>(rstd32_[n * G + c / D]) * ds_[n * C + c];
        dbeta += db_[n * C + c];
      }
      if (mask_.dgamma) dgamma_[c] = FromFloat<U>(static_cast<float>(dgamma));
      if (mask_.dbeta) dbeta_[c] = FromFloat<U>(static_cast<float>(dbeta));
    }
  }

  const T *dz_;
  const T *x_;
  const U *mean_;
  const U *rstd_;
  const U *gamma_;
  T *dx_;
  U *dgamma_;
  U *dbeta_;
  GroupNormSizes s_;
  OutputMask mask_;
  float k_;
  const SiluRowKernels<T> &silu_;
  std::vector<double> db_;  // (N, C) sums of g: O(N*C) scratch, nothing full-size
  std::vector<double> ds_;  // (N, C) sums of g * (x - mu)
  std::vector<float> rstd32_;  // (N, G)
  std::vector<float> scale_;   // (N, C) rstd * gamma
  std::vector<float> shift_;   // (C,) beta
};

}  // namespace detail

// gamma/beta == nullptr mean ones/zeros. float16/bfloat16/float32 data only.
template <typename T, typename U>
void GroupNormSiluForward(const T *x, const U *gamma, const U *beta, T *z, U *mean, U *rstd, GroupNormSizes sizes,
                          float eps, float swish_k) {
  if (sizes.N * sizes.C == 0) return;
  detail::SiluForwardKernel<T, U>(x, gamma, beta, z, mean, rstd, sizes, eps, swish_k).Run();
}

// gamma/beta == nullptr mean ones/zeros; outputs whose mask bit is off may be nullptr.
template <typename T, typename U>
void GroupNormSiluBackward(const T *dz, const T *x, const U *mean, const U *rstd, const U *gamma, const U *beta,
                           T *dx, U *dgamma, U *dbeta, GroupNormSizes sizes, OutputMask mask, float swish_k) {
  // Empty input: dgamma = dbeta = 0, no dx to write. C == 0 is empty too (and D = C/G = 0
  // must not reach the kernel's c / D).
  if (sizes.N * sizes.C * sizes.HxW == 0) {
    for (int64_t c = 0; c < sizes.C; ++c) {
      if (mask.dgamma) dgamma[c] = U{};
      if (mask.dbeta) dbeta[c] = U{};
    }
    return;
  }
  detail::SiluBackwardKernel<T, U>(dz, x, mean, rstd, gamma, beta, dx, dgamma, dbeta, sizes, mask, swish_k).Run();
}

}  // namespace ms_groupnorm
