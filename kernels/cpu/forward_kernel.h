// The forward kernel of every GroupNorm-style operator: the statistics and schedule of
// group_statistics.h, then the operator's output per channel row from
// y = (x - mean) * (rstd * gamma) + beta, written by the operator's RowOutput (below) as
// (x - c) * scale + shift with one rounding (FMA) of its own:
//   scale = rstd * gamma rounded once from the double rstd;
//   c = 0 where |mean| * rstd <= 1, else the float32 mean: x - c is then exact for nearly every
//     x (c = 0 always; with |mean| >> std every x lies within a factor 2 of c), where
//     rounding x - mean would give every x of one binade the same signed error (fp16/bf16 data
//     have no low bits to make it random: y was 1.3-1.8x torch's error before its rounding);
//   shift = beta - (mean - c) * scale from the double mean, rounded once. With c the float32
//     mean it carries the rest of the mean, so a large mean with a small spread (|mean| up to
//     1e7 std, where the float32 mean alone is off by half a std) is right too.
// In the group-wise schedule a group's output is written while the group is still in L2, so
// memory sees one read of x and one write of the output.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>

#include "call_scratch.h"
#include "group_statistics.h"
#include "kernel_schedule.h"

namespace ms_groupnorm {
namespace detail {

// An operator's output step: `rows` channel rows from the float32 statistics (a row loop of
// the active build), or one row in double for a group whose statistics came from the double
// loops (wide_range_rows.h); both get the operator's own argument (GroupNorm: whether to
// stream the stores; the fused op: the swish scale).
template <typename T, typename Arg>
struct RowOutput {
  void (*rows)(const T *x, T *out, int64_t hxw, int64_t count, float mu, const float *scale, const float *shift,
               Arg arg);
  void (*wide_row)(const T *x, T *out, int64_t hxw, double mu, double scale, double shift, Arg arg);
  Arg arg;
  // HxW = 1: `count` points with per-point c (in rows' mu argument), scale and shift, each
  // point as `rows` would write its one-element row; nullptr where the operator has none
  // (then the group-wise schedule runs).
  void (*points)(const T *x, T *out, int64_t count, const float *c, const float *scale, const float *shift, Arg arg);
  // Groups of a few short rows (SmallGroupsBySample): a sample's `rows` rows with c, scale and
  // shift per row, each row as `rows` would write it; nullptr: group by group.
  void (*sample_rows)(const T *x, T *out, int64_t hxw, int64_t rows, const float *c, const float *scale,
                      const float *shift, Arg arg);
};

template <typename T, typename U, typename Arg>
class ForwardKernel {
 public:
  ForwardKernel(const T *x, const U *gamma, const U *beta, T *out, U *mean, U *rstd, GroupNormSizes sizes, float eps,
                RowOutput<T, Arg> op)
      : x_(x), gamma_(gamma), out_(out), s_(sizes), op_(op), scratch_(ScratchBytes(sizes)),
        stats_(x, mean, rstd, sizes, eps, scratch_), scale_(scratch_.Take<float>(sizes.N * sizes.C)),
        shift_(scratch_.Take<float>(sizes.N * sizes.C)), gamma_d_(scratch_.Take<double>(sizes.C)),
        beta_d_(scratch_.Take<double>(sizes.C)), coefficients_(ActiveRowKernels().For<T>().coefficients),
        coefficients_each_(ActiveRowKernels().For<T>().coefficients_each) {
    for (int64_t c = 0; c < s_.C; ++c) {  // the same values call after call: StoreIfChanged says why
      StoreIfChanged(&gamma_d_[c], static_cast<double>(GammaAt(gamma, c)));
      StoreIfChanged(&beta_d_[c], static_cast<double>(BetaAt(beta, c)));
    }
  }

  void Run() {
    if (op_.points != nullptr && stats_.BySample()) {
      stats_.RunBySample([this](int64_t n) { SampleOutput(n); });
    } else if (stats_.SmallGroupsBySample()) {  // each group's output as the group-wise schedule writes it
      stats_.RunBySample([this](int64_t n) {
        if (op_.sample_rows != nullptr && SampleRows(n)) return;
        for (int64_t g = 0; g < s_.G; ++g) Output(n, g * s_.D(), s_.D());
      });
    } else {
      stats_.Run([this](int64_t n, int64_t c_first, int64_t rows) { Output(n, c_first, rows); });
    }
  }

 private:
  static size_t ScratchBytes(const GroupNormSizes &s) {
    return GroupStatistics<T, U>::ScratchBytes(s) + 2 * CallScratch::Bytes<float>(s.N * s.C) +
           2 * CallScratch::Bytes<double>(s.C);
  }

  // HxW = 1: sample n's C points, each with the c, scale and shift Output gives its row (c
  // per group by CentredSums, scale and shift from the double statistics by the same
  // coefficients loop), spread per point in chunks of kPointChunk on the stack: one
  // point-loop call per chunk. (Rows of scale_/shift_ instead cost 16 MB of stores and loads
  // at 4096 x 512, and the forward took 1.8x as long.) A sample with a group from the double
  // loops is written group by group by Output.
  void SampleOutput(int64_t n) {
    const int64_t C = s_.C, G = s_.G, D = s_.D();
    if (AnyWide(n)) {
      for (int64_t g = 0; g < G; ++g) Output(n, g * D, D);
      return;
    }
    float c_room[kPointChunk], scale_room[kPointChunk], shift_room[kPointChunk];
    if (C <= kPointChunk) {  // the whole sample in one chunk
      SampleCoefficients(n, c_room, scale_room, shift_room);
      op_.points(x_ + n * C, out_ + n * C, C, c_room, scale_room, shift_room, op_.arg);
      return;
    }
    int64_t start = 0, filled = 0;
    for (int64_t g = 0; g < G; ++g) {
      const int64_t ng = n * G + g;
      const float c = Centre(ng);
      const double r = stats_.RstdDouble(ng), rest = stats_.MeanDouble(ng) - static_cast<double>(c);
      for (int64_t d = 0; d < D;) {  // the group's channels, as many as the chunk has room for
        const int64_t take = std::min(D - d, kPointChunk - filled), first = g * D + d;
        coefficients_(r, rest, gamma_d_ + first, beta_d_ + first, take, scale_room + filled, shift_room + filled);
        for (int64_t k = 0; k < take; ++k) c_room[filled + k] = c;
        filled += take;
        d += take;
        if (filled == kPointChunk || first + take == C) {
          op_.points(x_ + n * C + start, out_ + n * C + start, filled, c_room, scale_room, shift_room, op_.arg);
          start += filled;
          filled = 0;
        }
      }
    }
  }
  static constexpr int64_t kPointChunk = 1024;

  // Sample n's rows in one op_.sample_rows call, with the c, scale and shift Output gives each
  // group's rows (the fused op: a call per group of one or two short rows cost a partial vector's
  // sigmoid each, 64 x 4 x 2, G = 4, 0.7x torch's group_norm and silu). False, writing nothing,
  // for groups of more than kSampleRowsMaxD rows (there a call per group cost less than a centre
  // per row: 16 x 512 x 2, G = 16, 12 % slower by sample), a sample of more than kPointChunk
  // channels, or one with a group from the double loops.
  static constexpr int64_t kSampleRowsMaxD = 4;
  bool SampleRows(int64_t n) {
    const int64_t C = s_.C;
    if (s_.D() > kSampleRowsMaxD || C > kPointChunk || AnyWide(n)) return false;
    float c_rows[kPointChunk];
    float *scale = &scale_[n * C], *shift = &shift_[n * C];
    SampleCoefficients(n, c_rows, scale, shift);
    const int64_t offset = n * C * s_.HxW;
    op_.sample_rows(x_ + offset, out_ + offset, s_.HxW, C, c_rows, scale, shift, op_.arg);
    return true;
  }

  [[gnu::always_inline]] bool AnyWide(int64_t n) const {
    for (int64_t ng = n * s_.G; ng < (n + 1) * s_.G; ++ng) {
      if (stats_.Wide(ng)) return true;
    }
    return false;
  }

  // c, scale and shift of each of sample n's C <= kPointChunk channels, as Output gives its
  // group's rows: all its groups' coefficients in one call (a call per group of one or two
  // channels was a third of the forward of 8000 x 64, G = 32). Always inlined, as AnyWide: as
  // calls they added 1 % to that forward's instructions.
  [[gnu::always_inline]] void SampleCoefficients(int64_t n, float *c_rows, float *scale, float *shift) {
    const int64_t G = s_.G, D = s_.D();
    double rest[kPointChunk];
    for (int64_t g = 0; g < G; ++g) {
      const int64_t ng = n * G + g;
      const float c = Centre(ng);
      rest[g] = stats_.MeanDouble(ng) - static_cast<double>(c);
      for (int64_t d = 0; d < D; ++d) c_rows[g * D + d] = c;
    }
    coefficients_each_(stats_.RstdDoubles(n * G), rest, G, D, gamma_d_, beta_d_, scale, shift);
  }

  // c of group ng (see above): 0, or the float32 mean where |mean| * rstd > 1.
  float Centre(int64_t ng) const { return CentredSums(stats_.Mean(ng), stats_.Rstd(ng)) ? stats_.Mean(ng) : 0.0f; }

  // The output uses the statistics before rounding (see above); only the stored copies are
  // rounded to U.
  void Output(int64_t n, int64_t c_first, int64_t rows) {
    const int64_t ng = n * s_.G + c_first / s_.D();
    const int64_t offset = (n * s_.C + c_first) * s_.HxW;
    const double mu = stats_.MeanDouble(ng), r = stats_.RstdDouble(ng);
    if (stats_.Wide(ng)) {
      for (int64_t k = 0; k < rows; ++k) {
        op_.wide_row(x_ + offset + k * s_.HxW, out_ + offset + k * s_.HxW, s_.HxW, mu, r * gamma_d_[c_first + k],
                     beta_d_[c_first + k], op_.arg);
      }
      return;
    }
    const float c = Centre(ng);
    const double rest = mu - static_cast<double>(c);
    float *scale = &scale_[n * s_.C + c_first], *shift = &shift_[n * s_.C + c_first];
    coefficients_(r, rest, gamma_d_ + c_first, beta_d_ + c_first, rows, scale, shift);
    op_.rows(x_ + offset, out_ + offset, s_.HxW, rows, c, scale, shift, op_.arg);
  }

  const T *x_;
  const U *gamma_;
  T *out_;
  GroupNormSizes s_;
  RowOutput<T, Arg> op_;
  CallScratch scratch_;  // the statistics' and the coefficients' room: O(N*C), nothing full-size
  GroupStatistics<T, U> stats_;
  float *scale_;  // (N, C) rstd * gamma
  float *shift_;    // (N, C) beta - (mean - c) * scale
  double *gamma_d_;  // (C,) gamma and beta (float values) as double
  double *beta_d_;
  decltype(RowKernels<T>::coefficients) coefficients_;  // the active build's loop (row_kernels.h)
  decltype(RowKernels<T>::coefficients_each) coefficients_each_;
};

}  // namespace detail
}  // namespace ms_groupnorm
