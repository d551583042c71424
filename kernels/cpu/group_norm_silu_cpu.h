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
// Determinism: the schedule of kernel_schedule.h, shared with GroupNorm, and the sums of
// group_norm_cpu.h (threads choose only which
// group or channel they handle; the row sums follow row_kernels.h's lane/block order, or
// for rows of 2..kShortSiluRowMax the order of short_reduce_grad in every schedule;
// dgamma/dbeta are a serial loop over n), so results are bit-identical for any thread
// count within an ISA build (the FMA builds differ from an x86-64 portable one by rounding).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "backward_sums.h"
#include "call_scratch.h"
#include "forward_kernel.h"
#include "kernel_schedule.h"
#include "silu_rows.h"
#include "wide_range_rows.h"

namespace ms_groupnorm {
namespace detail {

// ------------------------------------------------------------------ forward
// The fused output (forward_kernel.h) in double: z = y * sigmoid(k * y). The statistics are
// GroupNorm's own (group_statistics.h), so mean and rstd are bitwise those of the GroupNorm
// forward in both schedules.
template <typename T>
void WideNormalizeSiluRow(const T *x, T *z, int64_t hxw, double mu, double scale, double shift, float swish_k) {
  wide::NormalizeSiluRow(x, z, hxw, mu, scale, shift, swish_k);
}

// ------------------------------------------------------------------ backward
// The fused op's steps of the backward schedule (kernel_schedule.h).
template <typename T, typename U>
class SiluBackwardKernel {
 public:
  SiluBackwardKernel(const T *dz, const T *x, const U *mean, const U *rstd, const U *gamma, const U *beta, T *dx,
                     U *dgamma, U *dbeta, GroupNormSizes sizes, OutputMask mask, float swish_k)
      : in_{dz, x, mean, rstd, gamma, dx}, s_(sizes), mask_(mask), k_(swish_k),
        silu_(ActiveSiluRowKernels().For<T>()), schedule_(sizes, /*has_sample_step=*/sizes.HxW <= kShortSiluRowMax),
        kept_floats_(KeptFloats(sizes, mask, schedule_)),
        scratch_(ScratchBytes(sizes, schedule_.threads(), kept_floats_)),
        stats_(mean, rstd, sizes, StatisticsWiden<U>(ActiveRowKernels().For<T>()), scratch_),
        sums_(sizes, mask, stats_.rstd, dgamma, dbeta, scratch_),
        scale_(scratch_.Take<float>(sizes.N * sizes.C)), shift_(scratch_.Take<float>(sizes.C)),
        kept_(scratch_.Take<float>(schedule_.threads() * kept_floats_)) {
    // (N, C) rstd * gamma and (C,) beta in float, computed as the forward computes them. A group
    // at a time: a division c / D per element cost 23 % of a 2-D input's fused backward
    // (1024 x 768, G = 1: N * C products, before the threads start).
    const int64_t D = s_.D();
    for (int64_t ng = 0; ng < s_.N * s_.G; ++ng) {
      const float r = stats_.rstd[ng];
      float *row = &scale_[ng * D];
      const int64_t c0 = (ng % s_.G) * D;
      for (int64_t d = 0; d < D; ++d) row[d] = r * GammaAt(gamma, c0 + d);
    }
    for (int64_t c = 0; c < s_.C; ++c) StoreIfChanged(&shift_[c], BetaAt(beta, c));  // call_scratch.h says why
  }

  void Run() { schedule_.Run(*this, mask_, kept_, kept_floats_); }

  // Sample n of a 2-D input (HxW = 1, the by-sample schedule): its C points' sums in one call,
  // then the groups' coefficients, then dx in one call from the g the sums kept, each point
  // with the bits Reduce, GroupCoefficients and InputGrad give it. A sample where a group
  // needs a double path (rstd or coefficients outside float32's range, sums that are not
  // finite) takes those three steps group by group instead. room: kPointArrays * C floats.
  // Short rows (SampleRows) are taken likewise.
  void Sample(int64_t n, float *room) {
    if (s_.HxW > 1) return SampleRows(n, room);
    const int64_t C = s_.C, G = s_.G, D = s_.D(), nc = n * C;
    float *mu = room, *centre = room + C, *g = room + 2 * C, *b = room + 3 * C, *c0 = room + 4 * C;
    bool plain = true, any_centred = false;
    for (int64_t grp = 0; grp < G; ++grp) {
      const float m = stats_.mean[n * G + grp], r = stats_.rstd[n * G + grp];
      const bool centred = CentredSums(m, r);
      plain &= !wide::RstdOutsideFloatRange(r);
      any_centred |= centred;
      for (int64_t d = grp * D; d < (grp + 1) * D; ++d) {
        mu[d] = m;
        centre[d] = centred ? m : 0.0f;
      }
    }
    double *db = &sums_.db[nc], *ds = &sums_.ds[nc];
    if (plain) {
      silu_.point_reduce_grad(in_.dy + nc, in_.x + nc, C, mu, any_centred ? centre : nullptr, &scale_[nc], shift_, k_,
                              db, ds, mask_.dx ? g : nullptr);
      plain = wide::AllFinite(db, C) && wide::AllFinite(ds, C);
    }
    if (!SampleAfterSums(n, plain)) return;
    for (int64_t grp = 0; grp < G; ++grp) {
      const float b_group = static_cast<float>(sums_.b[n * G + grp]);
      const float c0_group = static_cast<float>(sums_.c0[n * G + grp]);
      for (int64_t d = grp * D; d < (grp + 1) * D; ++d) {
        b[d] = b_group;
        c0[d] = c0_group;
      }
    }
    silu_.point_input_grad_stored(g, in_.x + nc, in_.dx + nc, C, mu, &scale_[nc], b, c0);
  }

  // Sample n of short rows (2..kShortSiluRowMax elements, the by-sample schedule): the sample's
  // rows through short_reduce_grad in one call, the groups' coefficients, then dx from the kept g
  // in one call, each row with the bits Reduce, GroupCoefficients and InputGrad give it (those
  // steps take short_reduce_grad and the same dx formula for these rows in every schedule).
  // As Sample, a sample where a group needs a double path goes group by group. A step a group
  // had cost more than the group's data in small groups (32 x 96 x 7 x 7, G = 32: 147 elements).
  // room: SampleRowFloats.
  void SampleRows(int64_t n, float *room) {
    const int64_t C = s_.C, G = s_.G, D = s_.D(), HxW = s_.HxW, nc = n * C, offset = nc * HxW;
    float *g = room, *b = room + C * HxW, *c0 = b + G;
    bool plain = true;
    for (int64_t ng = n * G; ng < (n + 1) * G; ++ng) plain &= !wide::RstdOutsideFloatRange(stats_.rstd[ng]);
    double *db = &sums_.db[nc], *ds = &sums_.ds[nc];
    if (plain) {
      silu_.short_reduce_grad(in_.dy + offset, in_.x + offset, HxW, C, D, &stats_.mean[n * G], &scale_[nc], shift_, k_,
                              db, ds, mask_.dx ? g : nullptr);
      plain = wide::AllFinite(db, C) && wide::AllFinite(ds, C);
    }
    if (!SampleAfterSums(n, plain)) return;
    for (int64_t grp = 0; grp < G; ++grp) {
      b[grp] = static_cast<float>(sums_.b[n * G + grp]);
      c0[grp] = static_cast<float>(sums_.c0[n * G + grp]);
    }
    silu_.sample_input_grad_stored(g, in_.x + offset, in_.dx + offset, HxW, C, D, &stats_.mean[n * G], &scale_[nc], b,
                                   c0);
  }

  // Sample's and SampleRows' steps after their one-call sums: `plain` says whether those ran and
  // came out finite; if not, the groups' sums are taken group by group here. Then the groups'
  // coefficients, and dx group by group where a group needs a double path. Returns whether the
  // caller's one-call dx is left to run.
  bool SampleAfterSums(int64_t n, bool plain) {
    const int64_t G = s_.G, D = s_.D();
    if (!plain) {
      for (int64_t grp = 0; grp < G; ++grp) Reduce(n, grp * D, D, nullptr);
    }
    for (int64_t ng = n * G; ng < (n + 1) * G; ++ng) {
      GroupCoefficients(ng);
      plain &= !wide::LostInFloat(sums_.b[ng]) && !wide::LostInFloat(sums_.c0[ng]);
    }
    if (!mask_.dx) return false;
    if (!plain) {
      for (int64_t grp = 0; grp < G; ++grp) InputGrad(n, grp * D, D, nullptr);
      return false;
    }
    return true;
  }

  // Even dbeta alone needs x here: g depends on y. So ds is always computed (cheap).
  // kept (rows * HxW floats) receives g when not nullptr. As in BackwardKernel::Reduce, a
  // channel whose float32 sums are not finite, or a group whose rstd is outside the float32
  // path's range, is summed in double (InputGrad then recomputes its g in double too).
  void Reduce(int64_t n, int64_t c_first, int64_t rows, float *kept) {
    const int64_t nc = n * s_.C + c_first;
    const int64_t offset = nc * s_.HxW;
    const int64_t g = c_first / s_.D();
    const bool wide = wide::RstdOutsideFloatRange(stats_.rstd[n * s_.G + g]);
    double *db = sums_.db, *ds = sums_.ds;
    if (!wide) {
      if (ShortRows()) {
        silu_.short_reduce_grad(in_.dy + offset, in_.x + offset, s_.HxW, rows, s_.D(), &stats_.mean[n * s_.G + g],
                                &scale_[nc], &shift_[c_first], k_, &db[nc], &ds[nc], kept);
      } else {
        silu_.reduce_grad(in_.dy + offset, in_.x + offset, s_.HxW, rows, Mean(n, c_first),
                          stats_.rstd[n * s_.G + g], &scale_[nc], &shift_[c_first], k_, &db[nc], &ds[nc], kept);
      }
      if (wide::AllFinite(&db[nc], rows) && wide::AllFinite(&ds[nc], rows)) return;
    }
    for (int64_t k = 0; k < rows; ++k) {
      if (wide || !std::isfinite(db[nc + k]) || !std::isfinite(ds[nc + k])) {
        const int64_t row = offset + k * s_.HxW;
        wide::ReduceSiluGradRow(in_.dy + row, in_.x + row, s_.HxW, Mean(n, c_first), WideScale(n, c_first + k),
                                shift_[c_first + k], k_, &db[nc + k], &ds[nc + k]);
      }
    }
  }

  // BackwardKernel's coefficients b = -rstd^3 * T2 / M and c0 = -rstd * S1 / M, with S1 and
  // T2 summed over the group's channels in one chain, in order.
  void GroupCoefficients(int64_t ng) {
    const int64_t D = s_.D(), n = ng / s_.G, g = ng % s_.G;
    double s1 = 0.0, t2 = 0.0;
    for (int64_t c = g * D; c < (g + 1) * D; ++c) {
      const double gamma = GammaAt(in_.gamma, c);
      s1 += gamma * sums_.db[n * s_.C + c];
      t2 += gamma * sums_.ds[n * s_.C + c];
    }
    const double r = stats_.rstd[ng];
    const double inv_m = 1.0 / static_cast<double>(D * s_.HxW);
    sums_.b[ng] = -r * r * r * t2 * inv_m;
    sums_.c0[ng] = -r * s1 * inv_m;
  }

  // dx from the group's coefficients; a_c = rstd * gamma_c is scale_. kept: what Reduce
  // stored for these rows, or nullptr to recompute g.
  void InputGrad(int64_t n, int64_t c_first, int64_t rows, const float *kept) {
    const int64_t ng = n * s_.G + c_first / s_.D();
    const double r = stats_.rstd[ng], b_wide = sums_.b[ng], c0_wide = sums_.c0[ng];
    const float b = static_cast<float>(b_wide), c0 = static_cast<float>(c0_wide);
    const int64_t nc = n * s_.C + c_first;
    const int64_t offset = nc * s_.HxW;
    if (wide::RstdOutsideFloatRange(r) || wide::LostInFloat(b_wide) || wide::LostInFloat(c0_wide)) {
      for (int64_t k = 0; k < rows; ++k) {  // as BackwardKernel::InputGrad: dx in double
        const int64_t row = offset + k * s_.HxW;
        wide::SiluInputGradRow(in_.dy + row, in_.x + row, in_.dx + row, s_.HxW, Mean(n, c_first),
                               WideScale(n, c_first + k),
                               shift_[c_first + k], k_, b_wide, c0_wide);
      }
      return;
    }
    if (kept != nullptr) {
      silu_.input_grad_stored(kept, in_.x + offset, in_.dx + offset, s_.HxW, rows, Mean(n, c_first), &scale_[nc], b,
                              c0);
    } else {
      silu_.input_grad(in_.dy + offset, in_.x + offset, in_.dx + offset, s_.HxW, rows, Mean(n, c_first), &scale_[nc],
                       &shift_[c_first], k_, b, c0);
    }
  }

  void ReduceOverBatch(int64_t c_begin, int64_t c_end) { sums_.ReduceOverBatch(c_begin, c_end); }

 private:
  // A group's g (dz * dz/dy) is kept per thread while it fits in kMaxGroupScratchBytes (it
  // stays in L2), so the dx pass does not recompute sigmoid; a larger group recomputes it.
  // The same floats either way, so the same bits.
  static constexpr int64_t kMaxGroupScratchBytes = int64_t{1} << 20;
  static constexpr int64_t kPointArrays = 5;  // Sample's mu, centre, g, b, c0
  // SampleRows' g (the sample's elements), b and c0 (a float per group each)
  static int64_t SampleRowFloats(const GroupNormSizes &s) { return s.C * s.HxW + 2 * s.G; }
  static int64_t KeptFloats(const GroupNormSizes &s, OutputMask mask, const BackwardSchedule &schedule) {
    if (schedule.by_sample()) return s.HxW == 1 ? kPointArrays * s.C : SampleRowFloats(s);
    const int64_t group = s.D() * s.HxW;
    const bool fits = group * static_cast<int64_t>(sizeof(float)) <= kMaxGroupScratchBytes;
    const bool keep = mask.dx && !schedule.by_channel() && fits;
    return keep ? group : 0;
  }
  static size_t ScratchBytes(const GroupNormSizes &s, int threads, int64_t kept_floats) {
    return FloatStatistics<U>::ScratchBytes(s) + BackwardSums<U>::ScratchBytes(s) +
           CallScratch::Bytes<float>(s.N * s.C) + CallScratch::Bytes<float>(s.C) +
           CallScratch::Bytes<float>(threads * kept_floats);
  }

  float Mean(int64_t n, int64_t c) const { return stats_.mean[n * s_.G + c / s_.D()]; }
  // Rows that short_reduce_grad sums (silu_rows.h), in every schedule, so the bits do not
  // depend on the schedule; HxW = 1 has the point loops of its own.
  bool ShortRows() const { return s_.HxW >= 2 && s_.HxW <= kShortSiluRowMax; }

  // rstd * gamma_c in double (scale_ holds it rounded to float).
  double WideScale(int64_t n, int64_t c) const {
    return static_cast<double>(stats_.rstd[n * s_.G + c / s_.D()]) * GammaAt(in_.gamma, c);
  }

  BackwardData<T, U> in_;  // in_.dy is dz
  GroupNormSizes s_;
  OutputMask mask_;
  float k_;
  const SiluRowKernels<T> &silu_;
  BackwardSchedule schedule_;
  int64_t kept_floats_;  // floats of g each thread keeps (0: g is recomputed)
  CallScratch scratch_;  // everything below lives in it: O(N*C) plus a group per thread
  FloatStatistics<U> stats_;  // the saved mean and rstd as floats
  BackwardSums<U> sums_;
  float *scale_;   // (N, C) rstd * gamma
  float *shift_;   // (C,) beta
  float *kept_;    // (threads, kept_floats_)
};

}  // namespace detail

// gamma/beta == nullptr mean ones/zeros. float16/bfloat16/float32 data only.
template <typename T, typename U>
void GroupNormSiluForward(const T *x, const U *gamma, const U *beta, T *z, U *mean, U *rstd, GroupNormSizes sizes,
                          float eps, float swish_k) {
  if (sizes.N * sizes.C == 0) return;
  const SiluRowKernels<T> &rows = ActiveSiluRowKernels().For<T>();
  const detail::RowOutput<T, float> output{rows.normalize_silu, &detail::WideNormalizeSiluRow<T>, swish_k,
                                           rows.normalize_silu_points, rows.normalize_silu_sample};
  detail::ForwardKernel<T, U, float>(x, gamma, beta, z, mean, rstd, sizes, eps, output).Run();
}

// gamma/beta == nullptr mean ones/zeros; outputs whose mask bit is off may be nullptr.
template <typename T, typename U>
void GroupNormSiluBackward(const T *dz, const T *x, const U *mean, const U *rstd, const U *gamma, const U *beta,
                           T *dx, U *dgamma, U *dbeta, GroupNormSizes sizes, OutputMask mask, float swish_k) {
  if (detail::EmptyBackward(sizes, mask, dgamma, dbeta)) return;
  detail::SiluBackwardKernel<T, U>(dz, x, mean, rstd, gamma, beta, dx, dgamma, dbeta, sizes, mask, swish_k).Run();
  detail::ExactOneElementGroups(sizes, mask, x, mean, dx);
}

}  // namespace ms_groupnorm
