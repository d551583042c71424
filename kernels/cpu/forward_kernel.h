// The forward kernel of every GroupNorm-style operator: the statistics and schedule of
// group_statistics.h, then the operator's output per channel row from
// y = (x - mean) * (rstd * gamma) + beta, written by the operator's RowOutput (below).
// In the group-wise schedule a group's output is written while the group is still in L2, so
// memory sees one read of x and one write of the output.
#pragma once

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
  // HxW = 1: `count` points with per-point mean, scale and shift, each point as `rows` would
  // write its one-element row; nullptr where the operator has none (then the group-wise
  // schedule runs).
  void (*points)(const T *x, T *out, int64_t count, const float *mu, const float *scale, const float *shift);
};

template <typename T, typename U, typename Arg>
class ForwardKernel {
 public:
  ForwardKernel(const T *x, const U *gamma, const U *beta, T *out, U *mean, U *rstd, GroupNormSizes sizes, float eps,
                RowOutput<T, Arg> op)
      : x_(x), gamma_(gamma), out_(out), s_(sizes), op_(op), scratch_(ScratchBytes(sizes)),
        stats_(x, mean, rstd, sizes, eps, scratch_), scale_(scratch_.Take<float>(sizes.N * sizes.C)),
        shift_(scratch_.Take<float>(sizes.C)), gamma_float_(scratch_.Take<float>(sizes.C)) {
    for (int64_t c = 0; c < s_.C; ++c) shift_[c] = BetaAt(beta, c);
    for (int64_t c = 0; c < s_.C; ++c) gamma_float_[c] = GammaAt(gamma, c);
  }

  void Run() {
    if (op_.points != nullptr && stats_.BySample()) {
      stats_.RunBySample([this](int64_t n) { SampleOutput(n); });
    } else {
      stats_.Run([this](int64_t n, int64_t c_first, int64_t rows) { Output(n, c_first, rows); });
    }
  }

 private:
  static size_t ScratchBytes(const GroupNormSizes &s) {
    return GroupStatistics<T, U>::ScratchBytes(s) + CallScratch::Bytes<float>(s.N * s.C) +
           2 * CallScratch::Bytes<float>(s.C);
  }

  // HxW = 1: sample n's C points in one call, with the mean and scale Output uses, spread per
  // point (the scale in scale_'s row n, the mean in mean_room, the thread's C floats); a
  // sample with a group from the double loops is written group by group by Output.
  void SampleOutput(int64_t n) {
    const int64_t C = s_.C, G = s_.G, D = s_.D();
    float *scale = &scale_[n * C];
    float mean_room[kPointChunk];
    for (int64_t g = 0; g < G; ++g) {
      if (stats_.Wide(n * G + g)) {
        for (int64_t h = 0; h < G; ++h) Output(n, h * D, D);
        return;
      }
      for (int64_t c = g * D; c < (g + 1) * D; ++c) scale[c] = stats_.Rstd(n * G + g) * gamma_float_[c];
    }
    // the points in chunks, so that the spread means fit on the stack
    int64_t start = 0, filled = 0;
    auto flush = [&] {
      op_.points(x_ + n * C + start, out_ + n * C + start, filled, mean_room, scale + start, shift_ + start);
      start += filled;
      filled = 0;
    };
    for (int64_t g = 0; g < G; ++g) {
      const float mu = stats_.Mean(n * G + g);
      for (int64_t d = 0; d < D; ++d) {
        mean_room[filled++] = mu;
        if (filled == kPointChunk) flush();
      }
    }
    if (filled > 0) flush();
  }
  static constexpr int64_t kPointChunk = 1024;

  // The output uses the float32 statistics; only the stored copies are rounded to U.
  void Output(int64_t n, int64_t c_first, int64_t rows) {
    const int64_t ng = n * s_.G + c_first / s_.D();
    const int64_t offset = (n * s_.C + c_first) * s_.HxW;
    if (stats_.Wide(ng)) {
      for (int64_t k = 0; k < rows; ++k) {
        op_.wide_row(x_ + offset + k * s_.HxW, out_ + offset + k * s_.HxW, s_.HxW, stats_.Mean(ng),
                     stats_.WideRstd(ng) * GammaAt(gamma_, c_first + k), shift_[c_first + k], op_.arg);
      }
      return;
    }
    float *scale = &scale_[n * s_.C + c_first];
    for (int64_t k = 0; k < rows; ++k) scale[k] = stats_.Rstd(ng) * GammaAt(gamma_, c_first + k);
    op_.rows(x_ + offset, out_ + offset, s_.HxW, rows, stats_.Mean(ng), scale, &shift_[c_first], op_.arg);
  }

  const T *x_;
  const U *gamma_;
  T *out_;
  GroupNormSizes s_;
  RowOutput<T, Arg> op_;
  CallScratch scratch_;  // the statistics' and the coefficients' room: O(N*C), nothing full-size
  GroupStatistics<T, U> stats_;
  float *scale_;  // (N, C) rstd * gamma
  float *shift_;  // (C,) beta as float
  float *gamma_float_;  // (C,) gamma as float
};

}  // namespace detail
}  // namespace ms_groupnorm
