// The forward's statistics and schedule, shared by every forward kernel (GroupNorm,
// GroupNorm + SiLU) so that they all store the same mean and rstd bits.
//
// They need only group totals, and a group's D channels are contiguous, so the sums run over
// the group's D * HxW elements as one row: kBlock-element blocks folded into double and added
// in order. The first pass sums x - x0; a second one sums (x - mean)^2. Groups of more than
// kBatchedGroupElements sum the squares in the first pass already, about a point close to
// x0, and skip the second where x0 lies close to the mean (one_pass_, GroupRstdShifted): on
// an AVX-512 Xeon the fp32 forward of 2x320x64x64, G = 32, took 10 % less time, bf16 15 %.
// Smaller groups stay in L1 between the passes, and there two sums in one pass cost more in
// folds than the second pass (4096 x 512, G = 32: 9 % slower; 49 x 11, G = 11, whose
// one-element groups never skip it: 46 %). (Summing channel by channel cost a fold per
// channel, most of the time for 8x8 channels.) With fewer groups than threads (ByBlocks) the
// blocks are the unit of work, each block's sum is the same double, and they are added in the
// same order, so both schedules give the same bits. x0 is the mean of the group's first
// kShiftElements elements: a float lane (up to kBlock / kLanes elements) then sums deviations
// from a rough mean, not values near the mean, so with |mean| >> std the mean's rounding error
// scales with the spread of x rather than with |mean|; with a mean near 0 the deviations are
// no larger than the values.
// Why float lanes and not double ones, which would make mean and rstd the float32 roundings of
// the exact values (as nn.GroupNorm's double Welford pass does): each element's exact widening
// to double costs more than the sum itself. On an AVX-512 Xeon, interleaved against this build
// at one thread, a double sum of x - x0 made the forward 2-40 % slower (anchor shapes, fp32 and
// bf16) and double squares as well 10-150 %; the AVX2 build lost as much.
// Groups of at most kSmallGroupMax (32) elements are the exception, in every schedule
// (SmallGroupBatch): there the per-group work (shift, folds, divisions, square root) outweighs
// the elements, and their statistics in double, many groups side by side, took the forward of
// 2-D inputs with a few channels per group 1.3-1.9x less time than the float lanes did (Zen 4,
// AVX-512: 8000 x 64, G = 32, 7.3 -> 4.2 ms). Their mean and rstd are then the float32
// roundings of the double formula of wide_range_rows.h.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "call_scratch.h"
#include "kernel_schedule.h"
#include "row_kernels.h"
#include "wide_range_rows.h"

namespace ms_groupnorm {
namespace detail {

template <typename T, typename U>
class GroupStatistics {
 public:
  static size_t ScratchBytes(const GroupNormSizes &s) {
    const int64_t groups = s.N * s.G, one_pass = OnePass(s) ? groups : 0;
    return 3 * CallScratch::Bytes<float>(groups) + 2 * CallScratch::Bytes<double>(groups) +
           CallScratch::Bytes<uint8_t>(groups) + CallScratch::Bytes<double>(groups * BlocksPerGroup(s)) +
           CallScratch::Bytes<float>(one_pass) + CallScratch::Bytes<uint8_t>(one_pass) +
           CallScratch::Bytes<double>(one_pass * BlocksPerGroup(s));
  }

  GroupStatistics(const T *x, U *mean, U *rstd, GroupNormSizes sizes, float eps, CallScratch &scratch)
      : x_(x), mean_(mean), rstd_(rstd), s_(sizes), eps_(eps), rows_(ActiveRowKernels().For<T>()),
        group_size_(sizes.D() * sizes.HxW), blocks_(BlocksPerGroup(sizes)),
        one_pass_(OnePass(sizes)),
        shift_(scratch.Take<float>(sizes.N * sizes.G)),
        square_shift_(scratch.Take<float>(one_pass_ ? sizes.N * sizes.G : 0)),
        group_mean_(scratch.Take<float>(sizes.N * sizes.G)), group_rstd_(scratch.Take<float>(sizes.N * sizes.G)),
        mean_d_(scratch.Take<double>(sizes.N * sizes.G)), rstd_d_(scratch.Take<double>(sizes.N * sizes.G)),
        wide_(scratch.Take<uint8_t>(sizes.N * sizes.G)),
        settled_(scratch.Take<uint8_t>(one_pass_ ? sizes.N * sizes.G : 0)),
        block_sums_(scratch.Take<double>(sizes.N * sizes.G * blocks_)),
        block_squares_(scratch.Take<double>(one_pass_ ? sizes.N * sizes.G * blocks_ : 0)) {}

  // The forward's schedule: the statistics, then output(n, c_first, rows) over every
  // channel. Group-wise, a group's output is written right after its statistics (the group
  // is still in L2); with fewer groups than threads, all statistics first (ByBlocks), then
  // one channel per task. One parallel region (none on one thread), as kernel_schedule.h.
  template <typename Output>
  void Run(Output &&output) {
    const int64_t N = s_.N, C = s_.C, G = s_.G, D = s_.D();
    const int threads = ThreadsFor(ForwardWork(s_));
    const bool by_blocks = SplitByChannel(N * G, threads);
    InOneRegion(threads, [&] {
      if (by_blocks) {
        ByBlocks();
#pragma omp for schedule(static)
        for (int64_t nc = 0; nc < N * C; ++nc) output(nc / C, nc % C, 1);
      } else if (group_size_ > 0 && group_size_ <= kBatchedGroupElements) {
        // small groups: a batch of them at a time, each step over the batch (ForGroups), so
        // that their sums overlap instead of waiting on one group's chain of dependent sums
        const int64_t batches = (N * G + kGroupBatch - 1) / kGroupBatch;
#pragma omp for schedule(static)
        for (int64_t batch = 0; batch < batches; ++batch) {
          const int64_t first = batch * kGroupBatch, last = std::min(N * G, first + kGroupBatch);
          ForGroups(first, last);
          for (int64_t ng = first; ng < last; ++ng) output(ng / G, (ng % G) * D, D);
        }
      } else {
#pragma omp for schedule(static)
        for (int64_t ng = 0; ng < N * G; ++ng) {
          ForGroup(ng);
          output(ng / G, (ng % G) * D, D);
        }
      }
    });
  }

  // HxW = 1 with enough samples (SplitBySample): sample by sample, the statistics of its G
  // groups (as the group-wise schedule computes them), then output(n) for its C points.
  bool BySample() const { return SplitBySample(s_, ThreadsFor(ForwardWork(s_))); }
  // Groups of at most kShiftElements elements, any HxW, with enough samples: whole samples at
  // a time too, so that SmallGroups sums all of their groups in one call per sum (short rows
  // such as 64 x 4 x 2, G = 4, spent most of their time in per-group calls and folds).
  bool SmallGroupsBySample() const {
    return group_size_ <= kShiftElements && s_.N >= ThreadsFor(ForwardWork(s_));
  }
  // Small groups go at least kSmallGroupChunk at a time (whole samples) to a SmallGroups call
  // where the samples suffice for every thread: with a few groups per sample the calls and
  // batches were per sample (64 x 4 x 2, G = 4: a 16-group batch for 4 groups; 18 x 17 x 37,
  // G = 17: a second batch for one group). A group's statistics do not depend on its batch, so
  // the bits are those of any chunking. Each thread's share is cut into equal chunks (18 x 17
  // x 37 on two threads: chunks of 8 samples gave one thread 16 of the 18).
  static constexpr int64_t kSmallGroupChunk = 8 * kShortRowBatch;
  template <typename Output>
  void RunBySample(Output &&output) {
    const int64_t G = s_.G;
    const int threads = ThreadsFor(ForwardWork(s_));
    const int64_t per_thread = (s_.N + threads - 1) / threads;
    int64_t chunk = 1;
    if (group_size_ <= kShiftElements && G > 0) {
      const int64_t wanted = (kSmallGroupChunk + G - 1) / G, pieces = (per_thread + wanted - 1) / wanted;
      chunk = (per_thread + pieces - 1) / pieces;
    }
    const int64_t chunks = (s_.N + chunk - 1) / chunk;
    InOneRegion(threads, [&] {
#pragma omp for schedule(static)
      for (int64_t k = 0; k < chunks; ++k) {
        const int64_t first = k * chunk, last = std::min(s_.N, first + chunk);
        if (group_size_ <= kShiftElements) {
          SmallGroups(first, last);
        } else {
          for (int64_t ng = first * G; ng < last * G; ++ng) ForGroup(ng);
        }
        for (int64_t n = first; n < last; ++n) output(n);
      }
    });
  }

  // The float32 statistics y is computed with (before rounding to U; see GroupMean).
  float Mean(int64_t ng) const { return group_mean_[ng]; }
  float Rstd(int64_t ng) const { return group_rstd_[ng]; }
  // The same before rounding to float: the mean as the double sums give it (with |mean| >>
  // std its float32 rounding can be a large part of the spread; see forward_kernel.h) and
  // rstd (beyond a standard deviation of 8.5e37 the float32 rstd is subnormal).
  double MeanDouble(int64_t ng) const { return mean_d_[ng]; }
  double RstdDouble(int64_t ng) const { return rstd_d_[ng]; }
  const double *RstdDoubles(int64_t ng) const { return rstd_d_ + ng; }  // from group ng on
  // Whether group ng's statistics came from the double loops (WideGroup); its y is then
  // computed in double too, from MeanDouble(ng) and RstdDouble(ng).
  bool Wide(int64_t ng) const { return wide_[ng] != 0; }

 private:
  static int64_t BlocksPerGroup(const GroupNormSizes &s) { return (s.D() * s.HxW + kBlock - 1) / kBlock; }
  static bool OnePass(const GroupNormSizes &s) { return s.D() * s.HxW > kBatchedGroupElements; }
  const T *Group(int64_t ng) const { return x_ + ng * group_size_; }

  // The statistics of group ng = n * G + g (the group-wise schedule: one thread per group).
  void ForGroup(int64_t ng) {
    double sum, squares;
    wide_[ng] = 0;
    ComputeShift(ng);
    FirstPass(ng, 0, group_size_, &sum, &squares);
    if (!GroupMean(ng, sum)) return WideGroup(ng);
    if (GroupRstdShifted(ng, sum, squares)) return;
    rows_.centered_squares(Group(ng), group_mean_[ng], group_size_, 1, &squares);
    if (!GroupRstd(ng, squares)) WideGroup(ng);
  }

  // ForGroup for the groups [first, last) (at most kGroupBatch of at most kBatchedGroupElements
  // elements), step by step over all of them: the same calls and tests per group as ForGroup,
  // so the same numbers. Their slots of block_sums_ (one block per group) hold the sums.
  static constexpr int64_t kGroupBatch = 16;
  static constexpr int64_t kBatchedGroupElements = 1024;
  static_assert(kBatchedGroupElements <= kBlock, "a batched group is one block");
  // Its groups take the two passes (not one_pass_).
  void ForGroups(int64_t first, int64_t last) {
    if (group_size_ <= kSmallGroupMax) return SmallGroupBatch(first, last);
    double *sums = block_sums_;
    for (int64_t ng = first; ng < last; ++ng) {
      wide_[ng] = 0;
      ComputeShift(ng);
    }
    for (int64_t ng = first; ng < last; ++ng) rows_.centered_sum(Group(ng), shift_[ng], group_size_, 1, &sums[ng]);
    for (int64_t ng = first; ng < last; ++ng) {
      if (!GroupMean(ng, sums[ng])) WideGroup(ng);
    }
    for (int64_t ng = first; ng < last; ++ng) {
      if (!wide_[ng]) rows_.centered_squares(Group(ng), group_mean_[ng], group_size_, 1, &sums[ng]);
    }
    for (int64_t ng = first; ng < last; ++ng) {
      if (!wide_[ng] && !GroupRstd(ng, sums[ng])) WideGroup(ng);
    }
  }

  // ForGroup for the groups of samples [first_n, last_n) when a group holds at most
  // kShiftElements elements. Up to kSmallGroupMax: SmallGroupBatch. Beyond (then x0 is the
  // mean of the whole group), each of the three float-lane sums in one call for all the groups
  // (a call, a block set-up and a fold per group and sum cost 3-4x torch's time for 2-D inputs
  // with a few channels per group), each group with ForGroup's numbers; the samples' slots of
  // block_sums_ (one block per group here) hold the sums.
  void SmallGroups(int64_t first_n, int64_t last_n) {
    const int64_t first = first_n * s_.G, groups = (last_n - first_n) * s_.G, last = first + groups;
    if (group_size_ <= kSmallGroupMax) return SmallGroupBatch(first, last);
    double *sums = block_sums_ + first;
    rows_.sum(Group(first), group_size_, groups, sums);
    for (int64_t ng = first; ng < last; ++ng) SetShifts(ng, sums[ng - first] / static_cast<double>(group_size_));
    rows_.centered_sum_each(Group(first), shift_ + first, group_size_, groups, sums);  // two passes (not one_pass_)
    for (int64_t ng = first; ng < last; ++ng) {
      wide_[ng] = !GroupMean(ng, sums[ng - first], !kNarrowAtOnce);
      if (wide_[ng]) group_mean_[ng] = 0.0f;  // summed below but not used
    }
    rows_.centered_squares_each(Group(first), group_mean_ + first, group_size_, groups, sums);
    for (int64_t ng = first; ng < last; ++ng) {
      if (!wide_[ng]) wide_[ng] = !GroupRstd(ng, sums[ng - first], !kNarrowAtOnce);
      if (wide_[ng]) WideGroup(ng);
    }
    if constexpr (kNarrowAtOnce) {  // every group's U values are its float32 ones rounded (GroupMean)
      rows_.narrow(group_mean_ + first, groups, mean_ + first);
      rows_.narrow(group_rstd_ + first, groups, rstd_ + first);
    }
  }

  // Groups [first, last) of at most kSmallGroupMax elements, in every schedule: their statistics
  // in double (rows_.small_group_moments, wide::Statistics' formula), each group on its own, so
  // the batch does not change its bits. Where the float32 path of its output could not carry
  // them (Trusted), the group is wide: WideGroup recomputes them by the same formula in its
  // loops and the output runs in double. The groups' slots of block_sums_ (one block per group here)
  // hold their squares.
  void SmallGroupBatch(int64_t first, int64_t last) {
    const int64_t groups = last - first;
    if (group_size_ == 0) {  // empty groups: mean 0, rstd NaN (wide::Statistics)
      for (int64_t ng = first; ng < last; ++ng) WideGroup(ng);
      return;
    }
    double *squares = block_sums_ + first;
    rows_.small_group_moments(Group(first), group_size_, groups, static_cast<double>(eps_), mean_d_ + first,
                              rstd_d_ + first, squares);
    for (int64_t ng = first; ng < last; ++ng) {
      if (!Trusted(squares[ng - first])) {
        WideGroup(ng);
        continue;
      }
      wide_[ng] = 0;
      group_mean_[ng] = static_cast<float>(mean_d_[ng]);
      group_rstd_[ng] = static_cast<float>(rstd_d_[ng]);
      if constexpr (!kNarrowAtOnce) {
        mean_[ng] = FromFloat<U>(group_mean_[ng]);
        rstd_[ng] = FromFloat<U>(group_rstd_[ng]);
      }
    }
    if constexpr (kNarrowAtOnce) {  // every group's U values are its float32 ones rounded (as WideGroup's)
      rows_.narrow(group_mean_ + first, groups, mean_ + first);
      rows_.narrow(group_rstd_ + first, groups, rstd_ + first);
    }
  }
  // Whether the float32 output path may use a small group's double statistics: its squares
  // (sum (x - mean)^2, double) are finite (no inf or NaN in x) and within what the float32
  // sums of the larger groups take (the same bounds as GroupMean and GroupRstd).
  bool Trusted(double squares) const {
    const double m = static_cast<double>(group_size_);
    return squares < kLargestFloatSquares &&
           !(squares / m < kSmallestFloatVariance && std::fabs(static_cast<double>(eps_)) < kSmallestEpsHidingIt);
  }
  static constexpr double kLargestFloatSquares = 0x1p127;

  // 16-bit statistics (of data of their type, whose row kernels round to it): SmallGroupBatch
  // rounds its groups' mean and rstd at once (rows_.narrow); a scalar fp16 rounding per group
  // and output, with its branches, was a tenth of the fp16 forward of 8000 x 64, G = 32.
  static constexpr bool kNarrowAtOnce = !std::is_same_v<U, float> && std::is_same_v<U, T>;

  // Every group's statistics with the blocks as the unit of work (fewer groups than threads);
  // work-sharing loops of the caller's region. Each group gets the numbers ForGroup gives it.
  void ByBlocks() {
    const int64_t groups = s_.N * s_.G, blocks = blocks_, items = groups * blocks;
    if (group_size_ <= kSmallGroupMax) {  // one block per group: the groups are the unit of work
#pragma omp for schedule(static)
      for (int64_t ng = 0; ng < groups; ++ng) SmallGroupBatch(ng, ng + 1);
      return;
    }
    // the second pass's sums: over the first pass's where the squares are not in it
    double *squares = one_pass_ ? block_squares_ : block_sums_;
    auto settled = [this](int64_t ng) { return one_pass_ ? settled_[ng] != 0 : wide_[ng] != 0; };
#pragma omp for schedule(static)
    for (int64_t ng = 0; ng < groups; ++ng) ComputeShift(ng);
#pragma omp for schedule(static)
    for (int64_t k = 0; k < items; ++k) {
      const int64_t ng = k / blocks, start = (k % blocks) * kBlock;
      FirstPass(ng, start, std::min(kBlock, group_size_ - start), &block_sums_[k], &squares[k]);
    }
#pragma omp for schedule(static)
    for (int64_t ng = 0; ng < groups; ++ng) {
      const double sum = InOrder(block_sums_ + ng * blocks, blocks);
      wide_[ng] = !GroupMean(ng, sum);
      if (one_pass_) settled_[ng] = wide_[ng] || GroupRstdShifted(ng, sum, InOrder(squares + ng * blocks, blocks));
    }
#pragma omp for schedule(static)
    for (int64_t k = 0; k < items; ++k) {
      const int64_t ng = k / blocks, start = (k % blocks) * kBlock;
      if (settled(ng)) continue;
      rows_.centered_squares(Group(ng) + start, group_mean_[ng], std::min(kBlock, group_size_ - start), 1, &squares[k]);
    }
    // The groups the float32 sums could not handle, one thread each, as ForGroup does them.
#pragma omp for schedule(static)
    for (int64_t ng = 0; ng < groups; ++ng) {
      if (!settled(ng)) wide_[ng] = !GroupRstd(ng, InOrder(squares + ng * blocks, blocks));
      if (wide_[ng]) WideGroup(ng);
    }
  }

  // x0 of the group (see above), the same in both schedules; 0 when the group is empty
  // or x0 is not finite, so an inf or NaN element gives the mean it gave unshifted.
  // x0 is rounded to the grid of the group's first element (a multiple of its lowest set
  // bit): data with fewer bits than a float (fp16/bf16, or such values in float32) then give
  // x - x0 with no bits below their own, and the float lanes' additions round as randomly as
  // the data. With x0's extra low bits every addition dropped the same bits of it: the mean of
  // fp16 data was off by 1e-5 of max|mean| (8x32x64x64, 8 groups; 100x the sum's own error),
  // which alone doubled the rate of y values that round differently from float64's. The grid
  // point nearest x0 is no further from x0 than the element is, so x0 stays a rough mean.
  static constexpr int64_t kShiftElements = 64;
  void ComputeShift(int64_t ng) {
    const int64_t count = std::min(kShiftElements, group_size_);
    double sum = 0.0;
    if (count > 0) rows_.sum(Group(ng), count, 1, &sum);
    SetShifts(ng, count > 0 ? sum / static_cast<double>(count) : 0.0);
  }
  // x0 = shift_[ng] from the first elements' mean (see above), and square_shift_[ng], what
  // the first pass sums squares about: x0 plus the fraction kOffGrid of the grid. About x0
  // itself, the squares of data on that grid have skewed low bits (an odd multiple k of the
  // grid squares to k^2 = 1 mod 8), so each addition that rounds them away rounds down: the
  // variance of 8x32x64x64 G8 bf16 data came out up to 5.6e-7 low (RMS 1.3e-7), 4x the
  // second pass's error. An offset with bits of its own below the grid makes them round as
  // randomly as about the mean (emulated: RMS 1.2e-8, max 3.5e-8 against the second pass's
  // 0.9e-8 and 2.1e-8). It is below the grid, so it stays close to the mean wherever the
  // data's spread exceeds its grid; elsewhere GroupRstdShifted refuses it.
  static constexpr double kOffGrid = 0.31830988618379067;  // 1 / pi: bits all the way down
  void SetShifts(int64_t ng, double first_mean) {
    double grid = 0.0;
    const float x0 = group_size_ > 0 ? OnGridOf(ToFloat(Group(ng)[0]), first_mean, &grid) : 0.0f;
    shift_[ng] = std::isfinite(x0) ? x0 : 0.0f;
    if (!one_pass_) return;
    const float c = static_cast<float>(static_cast<double>(shift_[ng]) + kOffGrid * grid);
    square_shift_[ng] = std::isfinite(c) ? c : shift_[ng];
  }
  // v rounded to a multiple of the lowest set bit of `first`, that bit in *grid (v itself and
  // grid 0 when first is 0 or not finite, or v is not finite). Bit operations, not
  // frexp/ldexp/nearbyint: those library calls cost 5-10 % of the forward of 4x1280x8x8
  // (128 groups).
  static float OnGridOf(float first, double v, double *grid) {
    uint32_t u;
    std::memcpy(&u, &first, sizeof u);
    const uint32_t biased = (u >> 23) & 0xffu;
    const uint32_t mantissa = (u & 0x7fffffu) | (biased != 0 ? 0x800000u : 0u);
    *grid = 0.0;
    if (mantissa == 0 || biased == 0xffu || !std::isfinite(v)) return static_cast<float>(v);
    // first = mantissa * 2^(e - 23), e = biased - 127 (subnormals: -126); k: its lowest set bit
    const int k = (biased != 0 ? static_cast<int>(biased) : 1) - 127 - 23 + __builtin_ctz(mantissa);  // in [-149, 127]
    *grid = PowerOfTwo(k);
    const double scaled = v * PowerOfTwo(-k);  // exact: a power of two, v a double
    if (!(std::fabs(scaled) < 0x1p51)) return static_cast<float>(v);  // already a whole multiple
    const double whole = (scaled + 0x1.8p52) - 0x1.8p52;  // round to nearest (even), fp-contract off
    return static_cast<float>(whole * *grid);
  }
  static double PowerOfTwo(int k) {  // 2^k for k in [-1022, 1023]
    const uint64_t bits = static_cast<uint64_t>(k + 1023) << 52;
    double d;
    std::memcpy(&d, &bits, sizeof d);
    return d;
  }

  // The first pass over group ng's n elements from `start`: sum (x - x0), and where one_pass_,
  // squares = sum (x - c)^2 about c = square_shift_[ng] (left as it is otherwise).
  void FirstPass(int64_t ng, int64_t start, int64_t n, double *sum, double *squares) {
    if (one_pass_) return rows_.centered_moments(Group(ng) + start, shift_[ng], square_shift_[ng], n, 1, sum, squares);
    rows_.centered_sum(Group(ng) + start, shift_[ng], n, 1, sum);
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
  // store: whether to store the U output too (SmallGroups may round its batch at once).
  bool GroupMean(int64_t ng, double centered_sum, bool store = true) {
    if (!std::isfinite(centered_sum)) return false;
    const double m = static_cast<double>(group_size_);
    const double mu_d = m > 0 ? static_cast<double>(shift_[ng]) + centered_sum / m : 0.0;
    const float mu = static_cast<float>(mu_d);
    if (store) mean_[ng] = FromFloat<U>(mu);
    group_mean_[ng] = mu;
    mean_d_[ng] = mu_d;
    return true;
  }

  static constexpr double kSmallestFloatVariance = 0x1p-100, kSmallestEpsHidingIt = 0x1p-70;
  // rstd from squares = sum (x - mu32)^2, the second pass's sum about the float32 mean.
  // The squares exceed the variance by (mean - mu32)^2, which with |mean| >> std (1e7 std:
  // the float32 rounding is half a std) is no longer small; mean_d_ is the mean to well
  // within the spread.
  bool GroupRstd(int64_t ng, double squares, bool store = true) {
    const double offset = group_size_ > 0 ? mean_d_[ng] - static_cast<double>(group_mean_[ng]) : 0.0;
    return RstdFrom(ng, squares, offset, store);
  }

  // rstd from the first pass's sum = sum (x - x0) and squares = sum (x - c)^2, c =
  // square_shift_[ng] close to the mean: var = squares / m - d^2 with d = mean - c =
  // sum / m - (c - x0). The subtraction magnifies the squares' rounding error by
  // (var + d^2) / var, at most 1 + 1 / kShiftedSpread here; false (nothing stored) where c
  // lies further from the mean, so that the second pass sums about the mean instead. c is a
  // mean of the group's first elements: for data without a trend it lies a fraction of a std
  // from the mean.
  static constexpr double kShiftedSpread = 16.0;
  bool GroupRstdShifted(int64_t ng, double sum, double squares) {
    if (!one_pass_) return false;
    const double m = static_cast<double>(group_size_);
    const double d = sum / m - (static_cast<double>(square_shift_[ng]) - static_cast<double>(shift_[ng]));
    if (!(kShiftedSpread * d * d <= squares / m - d * d)) return false;  // also for NaN and inf
    return RstdFrom(ng, squares, d);
  }

  // rstd from sum (x - c)^2 over the group and offset = mean - c. False, storing nothing,
  // as GroupMean explains.
  bool RstdFrom(int64_t ng, double squares, double offset, bool store = true) {
    const double m = static_cast<double>(group_size_);
    if (!std::isfinite(squares) || (m > 0 && squares / m < kSmallestFloatVariance &&
                                    std::fabs(static_cast<double>(eps_)) < kSmallestEpsHidingIt)) {
      return false;
    }
    // An empty group has no variance: rstd is NaN, as aclnnGroupNorm documents.
    // A negative eps larger than the variance gives NaN, as in mindspore.ops.group_norm.
    const double var = std::max(0.0, squares / m - offset * offset);
    const double r = m > 0 ? 1.0 / std::sqrt(var + static_cast<double>(eps_)) : std::numeric_limits<double>::quiet_NaN();
    const float r32 = static_cast<float>(r);
    rstd_d_[ng] = r;
    if (store) rstd_[ng] = FromFloat<U>(r32);
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
    mean_d_[ng] = mu;
    rstd_d_[ng] = r;
    wide_[ng] = 1;
  }

  const T *x_;
  U *mean_;
  U *rstd_;
  GroupNormSizes s_;
  float eps_;
  const RowKernels<T> &rows_;
  int64_t group_size_;  // D * HxW elements, contiguous
  int64_t blocks_;      // kBlock-element blocks per group
  bool one_pass_;       // the first pass sums the squares as well (see the top)
  // (N, G) each, in the call's scratch (call_scratch.h): written before they are read.
  float *shift_;        // x0 of the first sum
  float *square_shift_;  // what the first pass's squares are summed about (SetShifts); one_pass_ only
  float *group_mean_;   // float32 mean/rstd (before rounding to U)
  float *group_rstd_;
  double *mean_d_;      // mean and rstd in double (before rounding to float)
  double *rstd_d_;
  uint8_t *wide_;       // 1 where WideGroup computed the statistics
  uint8_t *settled_;    // 1 where rstd needs no second pass (GroupRstdShifted, or wide); one_pass_ only
  double *block_sums_;  // (N, G, blocks): the block-wise schedule's partial sums
  double *block_squares_;  // (N, G, blocks): and its sums of squares; one_pass_ only
};

}  // namespace detail
}  // namespace ms_groupnorm
