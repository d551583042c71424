// The inner loops of the GroupNorm kernels, one contiguous channel row at a time,
// behind a table of function pointers chosen once at run time by the CPU's ISA.
//
// Three builds of the same loops exist (row_kernels_impl.h): portable C++ (any CPU),
// AVX2+F16C+FMA and AVX-512. Each build gives the same bits for any thread count, and
// all three add the same numbers in the same order:
//  * every sum uses kLanes float lanes inside a block of kBlock elements (lane l
//    takes the elements l, l + kLanes, ... of the block; the block's tail goes to
//    lanes 0, 1, ... in order), the lanes are folded into a double by a fixed tree and
//    the blocks are added in order (the backward's per-channel sums first add the four
//    rows of 8 lanes in float, (row 0 + row 1) + (row 2 + row 3), and fold those 8 in
//    double: FoldLanesViaFloat). A vector build only maps the 32 lanes onto registers
//    (2 zmm, 4 ymm, or arrays; bf16 pairs are unpaired before the fold); the AVX-512
//    and AVX2 builds add a tail of less than a vector in one partial step (V::kPartial):
//    the same lane operations as the portable build's lane-by-lane tail, so they keep its
//    bits;
//  * a * b + c is written V::MulAdd: one rounding (FMA) in the AVX2 and AVX-512
//    builds, and in the portable one where the target has a hardware FMA (aarch64),
//    which then gives their bits; two in the portable one elsewhere (a CPU without FMA
//    would need a slow software fma: portable_mul_add.h). So an x86-64 portable build
//    differs in the last bits, by design; within a build the
//    scalar heads and tails use the scalar MulAdd of the same build, so they round
//    like the vector body (fp-contract stays off so that no other product is fused);
//  * the fp16/bf16 conversions round to nearest even and treat subnormals, inf and
//    NaN the same in scalar and vector form (see half_types.h).
// Element-wise loops (dx, y) have no order to keep, only the same operations.
#pragma once

#include <cstdint>
#include <type_traits>

#include "half_types.h"

namespace ms_groupnorm {

constexpr int kLanes = 32;       // float lanes per running sum
constexpr int64_t kBlock = 2048; // elements per float-lane block (folded into double)
// Rows the forward statistics' short-row sums add side by side (ShortRowSums,
// statistics_rows_impl.h); the schedule gives them whole batches (GroupStatistics::RunBySample).
constexpr int kShortRowBatch = 16;
// The longest channel rows the backward's by-sample step takes besides single points
// (short_grad_sums): at most one vector and a partial step in every build (3 x 3 maps: 9).
constexpr int64_t kShortRowMax = 15;
// The largest group (D * HxW elements) whose forward statistics are computed in double by
// small_group_moments rather than in the float lanes (group_statistics.h).
constexpr int64_t kSmallGroupMax = 32;

// Outputs of at least this many bytes are written with non-temporal stores: they
// cannot stay in cache together with their inputs anyway, and streaming them saves
// the read-for-ownership traffic (12 instead of 16 bytes per fp32 element in
// backward). Below it, cached stores win: measured on a Zen 3 (32 MiB L3) with
// scripts/bench_kernel_backward.py, a 20 MiB output (8x320x64x64 in fp16/bf16) and a
// 12 MiB one (16x128x56x56) were as fast or up to 2x faster with cached stores,
// while 24.5 and 40 MiB fp32 outputs were as fast or faster streamed. Only the store
// instruction depends on it, never the bits. SetStreamMinBytes(n > 0) changes it
// (tests use 1 to stream every output); 0 restores the default, under which rows must also be
// long enough to stream (kernel_schedule.h: StreamOutput).
constexpr int64_t kDefaultStreamMinBytes = int64_t{24} << 20;
void SetStreamMinBytes(int64_t bytes);
int64_t StreamMinBytes();

// Store-to-load aliasing. A load whose address matches a still pending store's in the low
// 12 bits waits for that store ("4K aliasing", Intel's optimization manual). An element-wise
// row loop stores out[i..] and then loads in[i + step..]; when the output lies just above an
// input (0 < (out - in) mod 4096 <= kAliasWindowBytes) every step's loads wait. Measured on
// an AVX-512 Xeon, 2x320x64x64, G = 32, with out - in = 5 MiB + 32 bytes (buffers allocated
// back to back): the backward took 2.2x as long in bf16 and 1.3x in fp32, the forward 2.1x
// and 1.3x; from 256 bytes on the cost faded. The element-wise loops (MapRow, MapVectors)
// then load kLookaheadLoadBytes of input (all inputs together) ahead of their stores, so
// no load follows a store it could alias: the output then runs kLookaheadLoadBytes /
// inputs ahead, at least the window. Only the order of loads and stores changes, never the
// bits. Looking ahead always cost the fp32 backward ~10 % at unaffected deltas; 1 KiB ahead
// left the fp32 backward 20 % slow at affected ones, 256 bytes the fp32 forward 30 %.
constexpr uintptr_t kAliasWindowBytes = 256;
constexpr int64_t kLookaheadLoadBytes = 512;
static_assert(kLookaheadLoadBytes / 2 >= static_cast<int64_t>(kAliasWindowBytes), "two inputs clear the window");
inline bool StoresAliasLoads(const void *out, const void *in) {
  const uintptr_t delta = (reinterpret_cast<uintptr_t>(out) - reinterpret_cast<uintptr_t>(in)) % 4096;
  return delta != 0 && delta <= kAliasWindowBytes;
}

// Whether the `count` elements from out share memory with those from in (a row loop whose
// tail spills a whole vector into the next rows must not overwrite inputs it has yet to read).
template <typename T>
inline bool Overlap(const T *out, const T *in, int64_t count) {
  const uintptr_t o = reinterpret_cast<uintptr_t>(out), i = reinterpret_cast<uintptr_t>(in);
  const uintptr_t bytes = static_cast<uintptr_t>(count) * sizeof(T);
  return o < i + bytes && i < o + bytes;
}

// Each function handles `rows` consecutive channel rows of `hxw` elements (one row
// when the schedule splits by channel, a group's D rows otherwise), writing one
// result per row. Doing a group per call keeps the per-channel overhead (a call, an
// index division) out of shapes with small HxW such as 8x8. A row's result never
// depends on `rows`.
template <typename T>
struct RowKernels {
  // sum_dy[r] = sum_i dy[r][i], sum_dyxc[r] = sum_i dy[r][i] * (x[r][i] - mu), in the form
  // CentredSums(mu, rstd) chooses (rstd: the group's)
  void (*reduce_grad)(const T *dy, const T *x, float mu, float rstd, int64_t hxw, int64_t rows, double *sum_dy,
                      double *sum_dyxc);
  // sums[r] = sum_i x[r][i]
  void (*sum)(const T *x, int64_t hxw, int64_t rows, double *sums);
  // sums[r] = sum_i (x[r][i] - mu)^2
  void (*centered_squares)(const T *x, float mu, int64_t hxw, int64_t rows, double *sums);
  // dx[r][i] = (a[r] * dy[r][i] + b * (x[r][i] - mu)) + c
  void (*affine_grad)(const T *dy, const T *x, T *dx, int64_t hxw, int64_t rows, const float *a, float b, float mu,
                      float c, bool stream);
  // y[r][i] = (x[r][i] - mu) * scale[r] + shift[r]
  void (*normalize)(const T *x, T *y, int64_t hxw, int64_t rows, float mu, const float *scale, const float *shift,
                    bool stream);
  // sums[r] = sum_i (x[r][i] - mu)
  void (*centered_sum)(const T *x, float mu, int64_t hxw, int64_t rows, double *sums);
  // The forward's coefficients of `rows` channels of one group, in double and each rounded once
  // to float: scale[r] = rstd * gamma[r], shift[r] = beta[r] - rest * scale[r] (forward_kernel.h;
  // gamma and beta float values held as doubles, converted once per call, not once per row).
  // Here, not in the caller, so that the loop runs in the build's vector width: with 64-element
  // rows the scalar-width loop cost 3-4 % of the forward. Every operation is an IEEE double one
  // (fp-contract off), so every build gives the same bits.
  void (*coefficients)(double rstd, double rest, const double *gamma, const double *beta, int64_t rows, float *scale,
                       float *shift);
  // HxW = 1 (point_rows_impl.h): `count` points with per-point mean and coefficients,
  // giving each point the bits of the one-element row above.
  // db[i] = sum of the row dy[i]; ds[i] (unless nullptr) = sum of dy[i] * (x[i] - mu[i]) in the
  // form reduce_grad takes for the point's group (CentredSums below): centre[i] is mu[i] where
  // that is the centred form, else 0; centre == nullptr: no point is in a centred group.
  void (*point_grad_sums)(const T *dy, const T *x, const float *mu, const float *centre, int64_t count,
                          double *db, double *ds);
  // dx[i] = (a[i] * dy[i] + b[i] * (x[i] - mu[i])) + c[i]
  void (*point_affine_grad)(const T *dy, const T *x, T *dx, int64_t count, const float *a, const float *b,
                            const float *mu, const float *c);
  // y[i] = (x[i] - mu[i]) * scale[i] + shift[i] (the forward passes its c for mu: see
  // forward_kernel.h)
  void (*point_normalize)(const T *x, T *y, int64_t count, const float *mu, const float *scale,
                          const float *shift);
  // centered_sum and centered_squares of `rows` rows with a mean per row, mu[r]
  void (*centered_sum_each)(const T *x, const float *mu, int64_t hxw, int64_t rows, double *sums);
  void (*centered_squares_each)(const T *x, const float *mu, int64_t hxw, int64_t rows, double *sums);
  // coefficients for `groups` consecutive groups of `rows` channels each, group k with rstd[k] and
  // rest[k]: the forward of HxW = 1 (its points), one call for a sample instead of one per group
  void (*coefficients_each)(const double *rstd, const double *rest, int64_t groups, int64_t rows,
                            const double *gamma, const double *beta, float *scale, float *shift);
  // centered_sum about mu and centered_squares about c of the same rows in one pass (each
  // with its own bits)
  void (*centered_moments)(const T *x, float mu, float c, int64_t hxw, int64_t rows, double *sums, double *squares);
  // out[i] = src[i] as a float, exactly, and out[i] = FromFloat<T>(src[i]): 16-bit data converted
  // in bulk (the saved statistics, short-row sums, samples of short rows in the backward)
  void (*widen)(const T *src, int64_t count, float *out);
  void (*narrow)(const float *src, int64_t count, T *out);
  // point_grad_sums and point_affine_grad for `rows` rows of n elements, 1 < n <= kBlock (the
  // backward's sample step passes rows of up to kSampleRowMax, kernel_schedule.h),
  // with mu, centre (mu where the row's group is centred, else 0; nullptr: none is) and the dx
  // coefficients per row: each row gets what reduce_grad and affine_grad give it.
  void (*short_grad_sums)(const T *dy, const T *x, const float *mu, const float *centre, int64_t n, int64_t rows,
                          double *db, double *ds);
  void (*short_affine_grad)(const T *dy, const T *x, T *dx, int64_t n, int64_t rows, const float *a, const float *b,
                            const float *mu, const float *c);
  // The statistics of `groups` groups of m contiguous elements each, 0 < m <= kSmallGroupMax,
  // in double as wide::Statistics computes them (wide_range_rows.h: sums in index order,
  // mean = sum / m, rstd = 1 / sqrt(squares / m + eps)); squares[k] = sum (x - mean[k])^2.
  // Every operation is an IEEE double one, so every build gives the same bits.
  void (*small_group_moments)(const T *x, int64_t m, int64_t groups, double eps, double *mean, double *rstd,
                              double *squares);
};

// The widen kernel for saved statistics of type U (FloatStatistics, backward_sums.h): T's, since
// 16-bit statistics come with data of their type; none for float statistics, used as they are.
template <typename U, typename T>
auto StatisticsWiden(const RowKernels<T> &rows) -> void (*)(const U *, int64_t, float *) {
  if constexpr (std::is_same_v<U, float>) {
    return nullptr;
  } else {
    static_assert(std::is_same_v<U, T>, "16-bit statistics come with data of their type");
    return rows.widen;
  }
}

// The form of the backward's sum of dy * (x - mu) over a row (both operators' reduce_grad),
// chosen per group from its mean and rstd, so every schedule and build chooses alike.
//  * |mu| * rstd <= kCentreRatio: sum dy * x in the float32 lanes, minus mu * sum dy in double
//    (the form PyTorch uses). Rounding x - mu would give every x of one binade the same
//    signed error (mu's offset from that binade's grid): with a dy of large mean those errors
//    add up into a bias of dgamma instead of cancelling. The products dy * x round
//    independently, and with |mu| at most the spread the subtraction cancels at most a
//    factor sqrt(2) of the products' error.
//  * beyond: sum dy * fl(x - mu) plus, in lanes of its own, sum dy * e with e the exact
//    rounding error of x - mu (TwoSum), so the centring that keeps |mean| >> std free of
//    cancellation carries no bias either (there x lies within a factor 2 of mu for most
//    elements, x - mu is exact and e is 0). Three more operations per element, on such data only.
constexpr float kCentreRatio = 1.0f;
inline bool CentredSums(float mu, float rstd) { return (mu < 0.0f ? -mu : mu) * rstd > kCentreRatio; }

// One build's loops for each storage type, chosen by For<T>(); shared by the row loops
// here and the fused op's (silu_rows.h).
template <template <typename> class Kernels>
struct KernelSet {
  const char *isa;
  Kernels<float> f32;
  Kernels<Half> f16;
  Kernels<BFloat16> bf16;

  template <typename T>
  const Kernels<T> &For() const {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>,
                  "the row loops exist for float, Half and BFloat16");
    if constexpr (std::is_same_v<T, float>) {
      return f32;
    } else if constexpr (std::is_same_v<T, Half>) {
      return f16;
    } else {
      return bf16;
    }
  }
};

using RowKernelSet = KernelSet<RowKernels>;

// The builds; the vector ones return nullptr when they were not compiled in (non-x86).
const RowKernelSet &PortableRowKernels();
const RowKernelSet *Avx2RowKernels();
const RowKernelSet *Avx512RowKernels();

// The set in use: the widest the CPU supports, unless $MS_GROUPNORM_CPU_ISA
// ("portable", "avx2", "avx512") or SelectRowKernels asked for a narrower one.
const RowKernelSet &ActiveRowKernels();
// Selects a build by name; false (nothing changed) if unknown or unsupported here.
bool SelectRowKernels(const char *isa);

// Threads the kernels use: SetKernelThreads(n > 0) fixes it for every caller thread
// (MindSpore launches kernels from its own threads, whose OpenMP settings a caller
// cannot reach); 0 restores OpenMP's default.
void SetKernelThreads(int threads);
int KernelThreads();

// A kernel call uses one thread per this many elements at most (so tiny calls stay on
// one thread). Kernel-only, back to back, on a 2-core Zen 3 (scripts/bench_kernel_backward.py
// and interleaved 1- vs 2-thread runs of the same build), a second thread already paid
// off at 131072 elements (2x64x32x32: 0.061 vs 0.082 ms fp32, 0.038 vs 0.061 ms bf16)
// and torch uses it there; at 58140 (3x60x17x19) one thread was as fast as torch's two.
// (The earlier 2^19 came from timings through MindSpore, where calls are far apart and
// the sleeping OpenMP thread must be woken on every call; scripts/bench_group_norm.py's
// PyNative columns show what that costs now.)
// Only the schedule depends on it, never the bits. SetMinElementsPerThread(n > 0)
// changes it (tests use 1 to run every schedule on small shapes); 0 restores the default.
constexpr int64_t kDefaultMinElementsPerThread = int64_t{1} << 16;
void SetMinElementsPerThread(int64_t elements);
int64_t MinElementsPerThread();

}  // namespace ms_groupnorm
