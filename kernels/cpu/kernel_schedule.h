// How a CPU kernel call spreads its work over threads; one schedule per direction, shared by
// GroupNorm and the fused GroupNorm + SiLU, which only supply their per-row steps.
//
// Groups are the natural unit of work: a group's second pass then reads what its first pass
// just left in L2. With fewer groups than threads the work is split by channel instead (or,
// for the forward's statistics, by kBlock-element block: group_statistics.h). Threads only
// decide which group, channel or block a core handles, never how a sum is split, so every
// schedule and thread count gives the same bits.
//
// A call opens at most one OpenMP parallel region, and none when it runs on one thread: its
// steps are orphaned work-sharing loops, each ending at the barrier the next one needs.
// Waking the team once per step cost 3-4 fork/joins per call, a visible part of the small
// shapes' time.
#pragma once

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "group_norm_sizes.h"
#include "half_types.h"
#include "row_kernels.h"

namespace ms_groupnorm {
namespace detail {

// At most one thread per MinElementsPerThread() elements (row_kernels.h says why).
inline int ThreadsFor(int64_t elements) {
  const int64_t useful = std::max<int64_t>(1, elements / MinElementsPerThread());
  return static_cast<int>(std::min<int64_t>(KernelThreads(), useful));
}

// The forward's work in elements, for ThreadsFor: its elements plus what a group's statistics
// cost besides them (set-up, folds, divisions, a square root), as many elements as a pass
// over them takes: about 35 ns a group in the float-lane paths, 8 ns in SmallGroupBatch's
// double one (group_statistics.h; Zen 4, AVX-512), against 0.25 ns an element. Counting
// elements alone kept 2-D inputs of many tiny groups on one thread (32 x 64, G = 64: 17.7 us on
// one thread, 11.9 us on two).
inline int64_t ForwardWork(const GroupNormSizes &s) {
  const int64_t group_size = s.D() * s.HxW, per_group = group_size <= kSmallGroupMax ? 32 : 128;
  return s.N * s.C * s.HxW + per_group * s.N * s.G;
}

inline bool SplitByChannel(int64_t groups, int threads) { return groups < threads; }

// HxW = 1 (a 2-D input): the sample is the unit of work when there are enough of them, so
// that one call of a point loop (point_rows_impl.h) covers a sample's C points. A group or a
// channel per step cost a call, a block set-up and a fold per element.
inline bool SplitBySample(const GroupNormSizes &s, int threads) { return s.HxW == 1 && s.N >= threads; }

// The backward's sample step takes short channel rows too, in samples of up to
// kShortRowSampleMax elements, whose dx pass still finds dy and x in L2:
//  * rows of up to kShortRowMax elements (64 x 4 x 2, G = 4: a group's calls, block set-ups
//    and folds cost 5-10 times its elements);
//  * rows of up to kSampleRowMax elements in groups of up to kSampleGroupMax elements, whose
//    per-group steps cost as much as their data (32 x 96 x 7 x 7, G = 32: 0.80x torch's
//    speed group by group; 18 x 17 x 37 and 32 x 64 x 31 with a channel per group, 0.6-0.9x).
//    Larger groups stay group-wise, where a group's dx pass finds its data in L1 (16 x 512 x
//    64, G = 16, was 7 % slower by sample).
constexpr int64_t kShortRowSampleMax = 65536;
constexpr int64_t kSampleRowMax = 64, kSampleGroupMax = 1024;
static_assert(kSampleRowMax <= kBlock, "a sample's row is one block of the row sums");
inline bool BackwardSplitBySample(const GroupNormSizes &s, int threads) {
  if (SplitBySample(s, threads)) return true;
  if (s.N < threads || s.C * s.HxW > kShortRowSampleMax) return false;
  return s.HxW <= kShortRowMax || (s.HxW <= kSampleRowMax && s.D() * s.HxW <= kSampleGroupMax);
}

// Whether a backward operator has the per-sample step Sample(n, room) (GroupNorm's does).
template <typename Steps, typename = void>
struct HasSampleStep : std::false_type {};
template <typename Steps>
struct HasSampleStep<Steps, std::void_t<decltype(std::declval<Steps &>().Sample(int64_t{}, (float *)nullptr))>>
    : std::true_type {};

// Non-temporal stores for the output (row_kernels.h: StreamMinBytes); with the default
// threshold only for rows of at least kStreamRowMinBytes. A streamed row starts with scalar
// stores up to the stream alignment and ends with a scalar or partial tail, and short rows
// leave partial lines to the write-combining buffers: 290 x 332 x 242, G = 1 (80 MB of
// bf16 rows of 484 bytes) took 21.1 ms streamed against 7.9 ms cached (backward; forward
// 21.1 against 5.9), 393 x 1062 x 384 fp32 (rows of 1,536 bytes) 92 against 84 ms, while
// rows of 4 KiB and more were faster streamed (64 x 64 x 56 x 56 fp32: 5.4 against 6.1 ms;
// 20 x 1000 x 2048 bf16: 11.0 against 13.3 ms; Zen 4, 1 thread). A threshold set through
// SetStreamMinBytes streams every row length (the tests set 1 to stream every output).
constexpr int64_t kStreamRowMinBytes = 4096;
template <typename T>
inline bool StreamOutput(const GroupNormSizes &s) {
  const int64_t min_bytes = StreamMinBytes(), row_bytes = s.HxW * static_cast<int64_t>(sizeof(T));
  if (s.N * s.C * row_bytes < min_bytes) return false;
  return min_bytes != kDefaultStreamMinBytes || row_bytes >= kStreamRowMinBytes;
}

template <typename U>
inline float GammaAt(const U *gamma, int64_t c) {
  return gamma == nullptr ? 1.0f : ToFloat(gamma[c]);
}

template <typename U>
inline float BetaAt(const U *beta, int64_t c) {
  return beta == nullptr ? 0.0f : ToFloat(beta[c]);
}

// Runs steps() on every thread of one parallel region of `threads` threads, or directly on
// one thread. Called from inside a caller's own parallel region, an orphaned loop would bind
// to the caller's team and share out this call's iterations among calls that are not its
// own, so there a region of this call's own is opened even for one thread.
template <typename Steps>
inline void InOneRegion(int threads, Steps &&steps) {
  if (threads == 1 && !omp_in_parallel()) {
    steps();
  } else {
#pragma omp parallel num_threads(threads)
    steps();
  }
}

// The backward's schedule. A backward operator supplies, for `rows` channels of one group
// from c_first (a whole group, or one channel when split by channel):
//   Reduce(n, c_first, rows, kept)     the channel sums db, ds;
//   GroupCoefficients(ng)              the group's dx coefficients, from its channels' sums;
//   InputGrad(n, c_first, rows, kept)  dx;
//   ReduceOverBatch(c_begin, c_end)    dgamma, dbeta of those channels, summed over n.
// `kept` is the calling thread's KeptFloats() floats (nullptr in the channel split): room to
// keep a group's intermediate between its Reduce and its InputGrad, which run on the same
// thread one after the other.
// An operator with the step Sample(n, room) (all of the above for sample n, with `room` the
// thread's kept floats) is run sample by sample where BackwardSplitBySample says so; the steps
// compute what they compute in the other schedules, so the bits do not change.
class BackwardSchedule {
 public:
  explicit BackwardSchedule(const GroupNormSizes &s, bool has_sample_step = false)
      : s_(s), threads_(ThreadsFor(s.N * s.C * s.HxW)), by_channel_(SplitByChannel(s.N * s.G, threads_)),
        by_sample_(has_sample_step && BackwardSplitBySample(s, threads_)) {}

  int threads() const { return threads_; }
  bool by_channel() const { return by_channel_ && !by_sample_; }
  bool by_sample() const { return by_sample_; }

  // kept_floats: how many floats of `kept` each thread's storage holds (0: none).
  template <typename Steps>
  void Run(Steps &steps, OutputMask mask, float *kept, int64_t kept_floats) const {
    const int64_t N = s_.N, C = s_.C, G = s_.G, D = s_.D();
    InOneRegion(threads_, [&] {
      if (by_sample_) {
        if constexpr (HasSampleStep<Steps>::value) {
          float *mine = kept + omp_get_thread_num() * kept_floats;
#pragma omp for schedule(static)
          for (int64_t n = 0; n < N; ++n) steps.Sample(n, mine);
        }
      } else if (by_channel_) {
#pragma omp for schedule(static)
        for (int64_t nc = 0; nc < N * C; ++nc) steps.Reduce(nc / C, nc % C, 1, nullptr);
#pragma omp for schedule(static)
        for (int64_t ng = 0; ng < N * G; ++ng) steps.GroupCoefficients(ng);
        if (mask.dx) {
#pragma omp for schedule(static)
          for (int64_t nc = 0; nc < N * C; ++nc) steps.InputGrad(nc / C, nc % C, 1, nullptr);
        }
      } else if (kept_floats == 0 && D * s_.HxW <= kBatchedGroupElements) {
        // small groups, nothing kept between the steps: each step over a batch of groups, so
        // that the batch's sums are independent work side by side rather than one group's
        // chain of sums, coefficients and dx after another
        const int64_t batches = (N * G + kGroupBatch - 1) / kGroupBatch;
#pragma omp for schedule(static)
        for (int64_t batch = 0; batch < batches; ++batch) {
          const int64_t first = batch * kGroupBatch, last = std::min(N * G, first + kGroupBatch);
          for (int64_t ng = first; ng < last; ++ng) steps.Reduce(ng / G, (ng % G) * D, D, nullptr);
          for (int64_t ng = first; ng < last; ++ng) steps.GroupCoefficients(ng);
          if (mask.dx) {
            for (int64_t ng = first; ng < last; ++ng) steps.InputGrad(ng / G, (ng % G) * D, D, nullptr);
          }
        }
      } else {
        float *mine = kept_floats > 0 ? kept + omp_get_thread_num() * kept_floats : nullptr;
#pragma omp for schedule(static)
        for (int64_t ng = 0; ng < N * G; ++ng) {
          const int64_t n = ng / G, g = ng % G;
          steps.Reduce(n, g * D, D, mine);
          steps.GroupCoefficients(ng);
          if (mask.dx) steps.InputGrad(n, g * D, D, mine);
        }
      }
      if (mask.dgamma || mask.dbeta) {
        // one run of channels per thread: work for every thread even with one group, and
        // each task reads long contiguous pieces of the (N, C) rows (short pieces, one per
        // 4 KiB row, left the prefetchers behind: 23% of a 4096 x 512 backward)
        const int64_t run = (C + threads_ - 1) / threads_;
#pragma omp for schedule(static)
        for (int64_t t = 0; t < threads_; ++t) {
          if (t * run < C) steps.ReduceOverBatch(t * run, std::min(C, (t + 1) * run));
        }
      }
    });
  }

 private:
  static constexpr int64_t kGroupBatch = 16;
  static constexpr int64_t kBatchedGroupElements = 1024;
  GroupNormSizes s_;
  int threads_;
  bool by_channel_;
  bool by_sample_;
};

}  // namespace detail
}  // namespace ms_groupnorm
