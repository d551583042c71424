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
// AVX-512 builds of the row loops add in the same order; they differ only where the portable
// build cannot fuse multiply-adds (x86-64 without FMA, row_kernels.h), by rounding.
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

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "backward_sums.h"
#include "call_scratch.h"
#include "channel_chains.h"
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
        float_rows_(ActiveRowKernels().For<float>()), schedule_(sizes, /*has_sample_step=*/true),
        room_floats_(RoomFloats(sizes, schedule_)),
        scratch_(ScratchBytes(sizes, schedule_, room_floats_)),
        stats_(mean, rstd, sizes, StatisticsWiden<U>(rows_), scratch_),
        sums_(sizes, mask, stats_.rstd, dgamma, dbeta, scratch_), a_(scratch_.Take<float>(ACount(sizes, schedule_))),
        room_(scratch_.Take<float>(schedule_.threads() * room_floats_)), gamma_(scratch_.Take<double>(sizes.C)),
        inv_m_(1.0 / static_cast<double>(sizes.D() * sizes.HxW)) {
    // the same values call after call (call_scratch.h, StoreIfChanged)
    for (int64_t c = 0; c < s_.C; ++c) StoreIfChanged(&gamma_[c], static_cast<double>(GammaAt(gamma, c)));
  }

  void Run() { schedule_.Run(*this, mask_, room_, room_floats_); }

  // Sample n (the by-sample schedule: HxW = 1, or short rows, BackwardSplitBySample):
  // Reduce, GroupCoefficients and InputGrad of its G groups, with one call for the C channels'
  // sums (point_grad_sums, short_grad_sums) and one for the dx values. Each element gets the
  // bits its row gets in Reduce and InputGrad (point_rows_impl.h); a sample with a group for
  // the double loops takes those steps group by group instead.
  // room: the thread's kPointArrays * C floats (the per-channel mean and dx coefficients).
  // The sums take each group's form as Reduce does (CentredSums), so a large-mean dy gives
  // dgamma no bias here either.
  void Sample(int64_t n, float *room) {
    // The per-group work is unrolled for the few-channel groups of 2-D inputs: with D a
    // compile-time constant the loops over a group's channels vanish, and the tests that
    // send a group to the double loops become flags checked once per sample. (At 8000 x 64,
    // G = 32, the per-group loops and branches were 3/4 of the backward.)
    switch (s_.D()) {
      case 1:
        return SampleOf<1>(n, room);
      case 2:
        return SampleOf<2>(n, room);
      case 3:
        return SampleOf<3>(n, room);
      case 4:
        return SampleOf<4>(n, room);
      default:
        return SampleOf<0>(n, room);
    }
  }

  // Sample with kD channels per group (0: s_.D(), known at run time only).
  template <int kD>
  void SampleOf(int64_t n, float *room) {
    const int64_t C = s_.C, G = s_.G, D = kD > 0 ? kD : s_.D(), ng0 = n * G;
    float *mu = room, *a = room + C, *b = room + 2 * C, *c0 = room + 3 * C;
    float *wide = WidensSamples(s_, schedule_) ? room + kPointArrays * C : nullptr;
    const float *means = stats_.mean + ng0, *rstds = stats_.rstd + ng0;
    // The sums' form per group as Reduce chooses it (CentredSums): centre (a's room until the
    // dx coefficients go there) holds mu for the points of centred groups and 0 elsewhere,
    // filled only once a sample has such a group. Each group's centre (mu or +0) is formed
    // without a branch on the form, in b's room (free until the coefficients): with a few
    // channels per group the forms mix at random (two channels: about half the groups are
    // centred), and a branch per group was mispredicted about every other group.
    bool any_wide = false, any_centred = false;
    float *centre = a, *group_centre = b;
    for (int64_t g = 0; g < G; ++g) {
      const float m = means[g], r = rstds[g];
      any_wide |= wide::RstdOutsideFloatRange(r);
      for (int64_t d = 0; d < D; ++d) mu[g * D + d] = m;
      const bool centred = need_ds_ && CentredSums(m, r);
      any_centred |= centred;
      // m or +0 by a mask of its bits (a conditional move the compiler turned into a branch)
      group_centre[g] = BitsToFloat(FloatBits(m) & (0u - static_cast<uint32_t>(centred)));
    }
    if (any_centred) {
      for (int64_t g = 0; g < G; ++g) {
        for (int64_t d = 0; d < D; ++d) centre[g * D + d] = group_centre[g];
      }
    }
    if (any_wide) {
      for (int64_t g = 0; g < G; ++g) Reduce(n, g * D, D, nullptr);
    } else {
      SampleSums(n, mu, any_centred ? centre : nullptr, wide);
    }
    // Every group's coefficients as GroupCoefficients and InputGrad form them, with their
    // checks gathered in `plain`: a group whose sums overflowed, or whose rstd or
    // coefficients leave the float32 range, sends the sample to the general loop below,
    // which forms the same numbers with those groups' double paths.
    if (!any_wide && mask_.dx && SampleCoefficients<kD>(n, a, b, c0)) {
      SampleInputGrad(n, a, b, mu, c0, wide);
      return;
    }
    for (int64_t g = 0, c = 0; g < G; ++g) {
      const int64_t ng = ng0 + g;
      GroupCoefficients(ng);
      if (!mask_.dx) continue;
      const double r = stats_.rstd[ng], b_wide = sums_.b[ng], c0_wide = sums_.c0[ng];
      any_wide |= wide::RstdOutsideFloatRange(r) || wide::LostInFloat(b_wide) || wide::LostInFloat(c0_wide);
      const float b_group = static_cast<float>(b_wide), c0_group = static_cast<float>(c0_wide);
      for (const int64_t end = c + D; c < end; ++c) {
        a[c] = static_cast<float>(r * gamma_[c]);  // as InputGrad
        b[c] = b_group;
        c0[c] = c0_group;
      }
    }
    if (!mask_.dx) return;
    if (any_wide) {  // a's room for the groups on the float32 path (a_ is empty by sample)
      for (int64_t g = 0; g < G; ++g) GroupInputGrad(n, g * D, D, a + g * D);
    } else {
      SampleInputGrad(n, a, b, mu, c0, wide);
    }
  }

  // Sample n's channel sums, each channel with its mu[c] and centre[c] (mu where its group's
  // sums are centred, else 0; nullptr where none is), as Reduce sums them. wide (16-bit data
  // in short rows, WidensSamples): room for the sample's dy, x and dx as floats; dy and x are
  // widened into it here, for these sums and for SampleInputGrad.
  void SampleSums(int64_t n, const float *mu, const float *centre, float *wide) {
    const int64_t C = s_.C, hxw = s_.HxW, nc = n * C, offset = nc * hxw;
    if (hxw == 1) {
      rows_.point_grad_sums(in_.dy + nc, in_.x + nc, mu, centre, C, &sums_.db[nc], need_ds_ ? &sums_.ds[nc] : nullptr);
    } else if (!need_ds_) {  // dbeta alone, as Reduce
      rows_.sum(in_.dy + offset, hxw, C, &sums_.db[nc]);
    } else if (wide != nullptr) {
      const int64_t count = C * hxw;
      rows_.widen(in_.dy + offset, count, wide);
      rows_.widen(in_.x + offset, count, wide + count);
      float_rows_.short_grad_sums(wide, wide + count, mu, centre, hxw, C, &sums_.db[nc], &sums_.ds[nc]);
    } else {
      rows_.short_grad_sums(in_.dy + offset, in_.x + offset, mu, centre, hxw, C, &sums_.db[nc], &sums_.ds[nc]);
    }
  }

  // dx of sample n from its channels' coefficients, as InputGrad forms it (with `wide`, from
  // the floats SampleSums left there, rounded to T at once: Narrow rounds as the stores do).
  void SampleInputGrad(int64_t n, const float *a, const float *b, const float *mu, const float *c0, float *wide) {
    const int64_t C = s_.C, hxw = s_.HxW, offset = n * C * hxw, count = C * hxw;
    if (hxw == 1) return rows_.point_affine_grad(in_.dy + offset, in_.x + offset, in_.dx + offset, C, a, b, mu, c0);
    if (wide == nullptr) {
      return rows_.short_affine_grad(in_.dy + offset, in_.x + offset, in_.dx + offset, hxw, C, a, b, mu, c0);
    }
    float *dx = wide + 2 * count;
    float_rows_.short_affine_grad(wide, wide + count, dx, hxw, C, a, b, mu, c0);
    rows_.narrow(dx, count, in_.dx + offset);
  }

  // Sample n's per-point dx coefficients a, b, c0 (and the groups' b and c0 in sums_), as
  // GroupCoefficients and GroupInputGrad compute them on the float32 path: the same
  // expressions in the same order, so the same bits. False when some group needs a double
  // path (non-finite channel sums, a coefficient outside float32's range); the caller then
  // takes the general loop, which redoes every group. Only for a sample whose every rstd is
  // inside the float32 path's range (the caller's any_wide).
  template <int kD>
  [[gnu::always_inline]] inline bool SampleCoefficients(int64_t n, float *a, float *b, float *c0) {
    const int64_t C = s_.C, G = s_.G, D = kD > 0 ? kD : s_.D(), ng0 = n * G;
    const double *db = &sums_.db[n * C], *ds = &sums_.ds[n * C];
    bool plain = true;
    for (int64_t g = 0; g < G; ++g) {
      double s1, t2;
      ChannelChainSums(need_ds_, gamma_ + g * D, db + g * D, ds + g * D, D, &s1, &t2);  // as GroupSums
      const double r = stats_.rstd[ng0 + g];
      const double b_group = -r * r * r * t2 * inv_m_, c0_group = -r * s1 * inv_m_;
      sums_.b[ng0 + g] = b_group;
      sums_.c0[ng0 + g] = c0_group;
      // bitwise, not short-circuit: no branch per group
      plain &= std::isfinite(s1) & std::isfinite(t2) & !wide::LostInFloat(b_group) & !wide::LostInFloat(c0_group);
      const float b_float = static_cast<float>(b_group), c0_float = static_cast<float>(c0_group);
      ScaledGammas(r, gamma_ + g * D, D, a + g * D);
      for (int64_t d = 0; d < D; ++d) {
        b[g * D + d] = b_float;
        c0[g * D + d] = c0_float;
      }
    }
    return plain;
  }

  // db[n, c] and (when needed) ds[n, c] for `rows` channels of one group from c_first; every
  // channel of a group whose rstd is outside the float32 path's range is summed in double
  // (wide_range_rows.h).
  void Reduce(int64_t n, int64_t c_first, int64_t rows, float * /*kept*/) {
    const int64_t offset = (n * s_.C + c_first) * s_.HxW;
    const int64_t nc = n * s_.C + c_first;
    const int64_t ng = n * s_.G + c_first / s_.D();
    const float mu = stats_.mean[ng], r = stats_.rstd[ng];
    if (wide::RstdOutsideFloatRange(r)) {
      for (int64_t k = 0; k < rows; ++k) WideReduce(n, c_first + k, mu);
    } else if (need_ds_) {
      rows_.reduce_grad(in_.dy + offset, in_.x + offset, mu, r, s_.HxW, rows, &sums_.db[nc], &sums_.ds[nc]);
    } else {  // dbeta alone never needs x
      rows_.sum(in_.dy + offset, s_.HxW, rows, &sums_.db[nc]);
    }
  }

  // The group's dx coefficients b = -rstd^3 * T2 / M and c0 = -rstd * S1 / M, once per group
  // (both schedules read the same doubles). S1 and T2 also test the group's channel sums:
  // they are finite exactly when every db (and ds) of the group is (gamma times inf is inf or
  // NaN), so a channel whose float32 lanes overflowed is found here at no cost and summed
  // again in double before b and c0 are formed.
  // Inlined into Sample: with HxW = 1 and a few channels per group, a call per group was a
  // third of the backward (8000 x 64, G = 32).
  [[gnu::always_inline]] inline void GroupCoefficients(int64_t ng) {
    double s1, t2;
    GroupSums(ng, &s1, &t2);
    if (!std::isfinite(s1) || !std::isfinite(t2)) {
      const int64_t D = s_.D(), n = ng / s_.G, c_first = (ng % s_.G) * D;
      for (int64_t c = c_first; c < c_first + D; ++c) {
        const int64_t nc = n * s_.C + c;
        if (!std::isfinite(sums_.db[nc]) || (need_ds_ && !std::isfinite(sums_.ds[nc]))) {
          WideReduce(n, c, stats_.mean[ng]);
        }
      }
      GroupSums(ng, &s1, &t2);
    }
    const double r = stats_.rstd[ng];
    sums_.b[ng] = -r * r * r * t2 * inv_m_;
    sums_.c0[ng] = -r * s1 * inv_m_;
  }

  // dx = a_c * dy + b * (x - mu) + c0 with a_c = rstd * gamma_c and the group's b and c0.
  void InputGrad(int64_t n, int64_t c_first, int64_t rows, float * /*kept*/) {
    GroupInputGrad(n, c_first, rows, &a_[n * s_.C + c_first]);
  }

  // InputGrad with the room for the rows' a_c given: a_'s slots, or (by sample, where a_ is
  // empty) the thread's own room.
  void GroupInputGrad(int64_t n, int64_t c_first, int64_t rows, float *a) {
    const int64_t ng = n * s_.G + c_first / s_.D();
    const double r = stats_.rstd[ng], b = sums_.b[ng], c0 = sums_.c0[ng];
    const int64_t offset = (n * s_.C + c_first) * s_.HxW;
    const float mu = stats_.mean[ng];
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
    ScaledGammas(r, gamma_ + c_first, rows, a);
    rows_.affine_grad(in_.dy + offset, in_.x + offset, in_.dx + offset, s_.HxW, rows, a, static_cast<float>(b), mu,
                      static_cast<float>(c0), stream_);
  }

  void ReduceOverBatch(int64_t c_begin, int64_t c_end) { sums_.ReduceOverBatch(c_begin, c_end); }

 private:
  static constexpr int64_t kPointArrays = 4;  // Sample's mu, a, b, c0
  static int64_t RoomFloats(const GroupNormSizes &s, const BackwardSchedule &schedule) {
    if (!schedule.by_sample()) return 0;
    return kPointArrays * s.C + (WidensSamples(s, schedule) ? 3 * s.C * s.HxW : 0);
  }
  // 16-bit data in rows of up to kShortRowMax elements run the float row kernels on the
  // sample widened to floats (dy, x and dx in the thread's room): a 16-bit partial step a row
  // (scalar loads and stores of the row's few elements) was 2-3x the float one (16 x 512 x 2,
  // G = 16). Longer rows are mostly whole vectors, and widening cost them more than it saved
  // (16 x 128 x 49, G = 8, fp16: 15 % slower). Widening and
  // rounding are exact and as the 16-bit loops do them, so the bits stay. From
  // kWideSampleMin elements a sample (below, the three extra calls cost more than they save:
  // 64 x 4 x 2, 8 a sample, was 10 % slower) up to kWideSampleMax (the room stays in L2).
  static constexpr int64_t kWideSampleMin = 32, kWideSampleMax = 16384;
  static bool WidensSamples(const GroupNormSizes &s, const BackwardSchedule &schedule) {
    const int64_t elements = s.C * s.HxW;
    return !std::is_same_v<T, float> && schedule.by_sample() && s.HxW > 1 && s.HxW <= kShortRowMax &&
           elements >= kWideSampleMin && elements <= kWideSampleMax;
  }
  static int64_t ACount(const GroupNormSizes &s, const BackwardSchedule &schedule) {
    return schedule.by_sample() ? 0 : s.N * s.C;  // Sample keeps a sample's a in its room
  }
  static size_t ScratchBytes(const GroupNormSizes &s, const BackwardSchedule &schedule, int64_t room_floats) {
    return FloatStatistics<U>::ScratchBytes(s) + BackwardSums<U>::ScratchBytes(s) +
           CallScratch::Bytes<float>(ACount(s, schedule)) +
           CallScratch::Bytes<float>(schedule.threads() * room_floats) + CallScratch::Bytes<double>(s.C);
  }

  void WideReduce(int64_t n, int64_t c, float mu) {
    const int64_t nc = n * s_.C + c;
    wide::ReduceGradRow(in_.dy + nc * s_.HxW, in_.x + nc * s_.HxW, s_.HxW, mu, &sums_.db[nc],
                        need_ds_ ? &sums_.ds[nc] : nullptr);
  }

  // S1 = sum_c gamma_c db[n, c] and T2 = sum_c gamma_c ds[n, c] over group ng, in
  // kChainsOverChannels interleaved chains (channel_chains.h).
  [[gnu::always_inline]] inline void GroupSums(int64_t ng, double *s1, double *t2) const {
    const int64_t D = s_.D(), n = ng / s_.G, g = ng % s_.G;
    const int64_t first = n * s_.C + g * D;
    ChannelChainSums(need_ds_, gamma_ + g * D, &sums_.db[first], &sums_.ds[first], D, s1, t2);
  }

  BackwardData<T, U> in_;
  GroupNormSizes s_;
  OutputMask mask_;
  bool need_ds_;
  bool stream_;
  const RowKernels<T> &rows_;
  const RowKernels<float> &float_rows_;  // for samples widened to floats (WidensSamples)
  BackwardSchedule schedule_;
  int64_t room_floats_;  // per thread, for Sample (0 in the other schedules)
  CallScratch scratch_;  // everything below lives in it: O(N*C), nothing full-size
  FloatStatistics<U> stats_;  // the saved mean and rstd as floats
  BackwardSums<U> sums_;
  float *a_;     // (N, C) dx coefficients rstd * gamma (none by sample)
  float *room_;  // (threads, room_floats_)
  double *gamma_;  // (C,) gamma as double, converted once (a half-precision gamma per point was slow)
  double inv_m_;  // 1 / (D * HxW), the reciprocal of a group's element count
};

// ------------------------------------------------------------------ forward
// GroupNorm's output (forward_kernel.h) in double: y = (x - mean) * scale + shift.
template <typename T>
void WideNormalizeRow(const T *x, T *y, int64_t hxw, double mu, double scale, double shift, bool /*stream*/) {
  wide::NormalizeRow(x, y, hxw, mu, scale, shift);
}

// The active build's point loop as RowOutput calls it (a sample's points are never streamed).
template <typename T>
void NormalizePoints(const T *x, T *y, int64_t count, const float *c, const float *scale, const float *shift,
                     bool /*stream*/) {
  ActiveRowKernels().For<T>().point_normalize(x, y, count, c, scale, shift);
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
  detail::ExactOneElementGroups(sizes, mask, x, mean, dx);
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
                                            detail::StreamOutput<T>(sizes), &detail::NormalizePoints<T>, nullptr};
    detail::ForwardKernel<T, U, bool>(x, gamma, beta, y, mean, rstd, sizes, eps, output).Run();
  }
}

}  // namespace ms_groupnorm
