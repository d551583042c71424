// GroupNorm forward and backward in float64 (CPU only, for gradient checks and users of
// nn.GroupNorm's float64 support): plain scalar loops in double, no SIMD row kernels. Each sum
// runs in index order and threads only pick which group or channel they handle, so results do
// not depend on the thread count either. The maths are group_norm_cpu.h's.
#pragma once

#include <cstdint>
#include <vector>

#include "group_norm_sizes.h"
#include "kernel_schedule.h"
#include "wide_range_rows.h"

namespace ms_groupnorm {
namespace detail {

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
}  // namespace ms_groupnorm
