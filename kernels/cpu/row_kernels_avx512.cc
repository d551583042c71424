// The AVX-512 build of the row loops: 16 float lanes per zmm register, FMA, F16C-style
// fp16 conversions of AVX-512F, bf16 rounding in integer arithmetic, AVX-512BW's masked
// 16-bit moves (with VL's 256-bit forms) for the rows' last partial vector. It runs where the
// CPU has AVX-512F, BW and VL: every AVX-512 CPU since Skylake-SP, and Zen 4; the Xeon Phi
// lacks BW and VL and takes the AVX2 build.
// Only the code between push_options and pop_options is compiled for AVX-512; the
// function that checks the CPU stays baseline so it is safe to call anywhere.

// -Wpsabi notes that a vector returned by a function compiled without this file's target (the
// lambdas and inline templates of the shared headers) would pass differently between files;
// none leaves this file. Set before the includes, as the notes point into the headers.
#pragma GCC diagnostic ignored "-Wpsabi"
#include <cstdint>

#include "row_kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12 reports _mm512_undefined_ps's deliberately undefined value as "may be used
// uninitialized" (or, as inlining decides, "is used uninitialized") in the intrinsics
// header, hundreds of times: a false positive, silenced for this file so that a real
// warning stays visible in the build output.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,fma")
#include "fp_contract_off.h"

namespace ms_groupnorm {
namespace isa_avx512 {

struct V {
  static constexpr int kWidth = 16;
  using reg = __m512;
  static reg Zero() { return _mm512_setzero_ps(); }
  static reg Set1(float s) { return _mm512_set1_ps(s); }
  static reg Add(reg a, reg b) { return _mm512_add_ps(a, b); }
  static reg Sub(reg a, reg b) { return _mm512_sub_ps(a, b); }
  static reg Mul(reg a, reg b) { return _mm512_mul_ps(a, b); }
  // a * b + c rounded once (FMA), in vector and scalar form, so the scalar head and
  // tail of a row round like its vector body.
  static reg MulAdd(reg a, reg b, reg c) { return _mm512_fmadd_ps(a, b, c); }
  static float MulAdd(float a, float b, float c) { return __builtin_fmaf(a, b, c); }

  static reg Load(const float *p) { return _mm512_loadu_ps(p); }
  static reg Load(const Half *p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p))); }
  static reg Load(const BFloat16 *p) {
    const __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
  }

  // Round to nearest even; NaN is quieted and payload-truncated like the scalar ToHalf.
  static __m256i HalfBits(reg v) { return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // The scalar ToBFloat16 in integer lanes: add 0x7fff + lsb; NaN keeps its top bits
  // with the quiet bit set. The bf16 bits end up in the upper half of each 32-bit lane.
  static __m512i BFloat16InUpperHalf(reg v) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    const __m512i rounded = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    return _mm512_mask_mov_epi32(rounded, nan, _mm512_or_si512(u, _mm512_set1_epi32(0x400000)));
  }
  static __m256i BFloat16Bits(reg v) { return _mm512_cvtepi32_epi16(_mm512_srli_epi32(BFloat16InUpperHalf(v), 16)); }
  // 32 bf16 of a pair: even elements in the low halves, odd ones in the high halves.
  static __m512i BFloat16PairBits(reg even, reg odd) {
    const __m512i low = _mm512_srli_epi32(BFloat16InUpperHalf(even), 16);
    const __m512i high = _mm512_and_si512(BFloat16InUpperHalf(odd), _mm512_set1_epi32(static_cast<int>(0xffff0000u)));
    return _mm512_or_si512(low, high);
  }

  static void Store(float *p, reg v) { _mm512_storeu_ps(p, v); }
  static void Store(Half *p, reg v) { _mm256_storeu_si256(reinterpret_cast<__m256i *>(p), HalfBits(v)); }
  static void Store(BFloat16 *p, reg v) { _mm256_storeu_si256(reinterpret_cast<__m256i *>(p), BFloat16Bits(v)); }
  static void Stream(float *p, reg v) { _mm512_stream_ps(p, v); }
  static void Stream(Half *p, reg v) { _mm256_stream_si256(reinterpret_cast<__m256i *>(p), HalfBits(v)); }
  static void Stream(BFloat16 *p, reg v) { _mm256_stream_si256(reinterpret_cast<__m256i *>(p), BFloat16Bits(v)); }
  // Pairs (row_kernels_impl.h): memory order for float and fp16; for bf16 the even
  // elements in a and the odd ones in b (one 64-byte load, a shift and a mask).
  template <typename T>
  static void LoadPair(const T *p, reg &a, reg &b) {
    a = Load(p);
    b = Load(p + kWidth);
  }
  static void LoadPair(const BFloat16 *p, reg &a, reg &b) {
    const __m512i w = _mm512_loadu_si512(p);
    a = _mm512_castsi512_ps(_mm512_slli_epi32(w, 16));
    b = _mm512_castsi512_ps(_mm512_and_si512(w, _mm512_set1_epi32(static_cast<int>(0xffff0000u))));
  }
  template <typename T>
  static void StorePair(T *p, reg a, reg b) {
    Store(p, a);
    Store(p + kWidth, b);
  }
  static void StorePair(BFloat16 *p, reg a, reg b) { _mm512_storeu_si512(p, BFloat16PairBits(a, b)); }
  template <typename T>
  static void StreamPair(T *p, reg a, reg b) {
    Stream(p, a);
    Stream(p + kWidth, b);
  }
  static void StreamPair(BFloat16 *p, reg a, reg b) {
    _mm512_stream_si512(reinterpret_cast<__m512i *>(p), BFloat16PairBits(a, b));
  }
  template <typename T>
  static void Unpair(const T *, reg &, reg &) {}
  // 128-bit chunk c of lo holds elements 8c..8c+3, of hi 8c+4..8c+7.
  static void Unpair(const BFloat16 *, reg &a, reg &b) {
    const reg lo = _mm512_unpacklo_ps(a, b);
    const reg hi = _mm512_unpackhi_ps(a, b);
    const reg first = _mm512_shuffle_f32x4(lo, hi, _MM_SHUFFLE(1, 0, 1, 0));   // lo0 lo1 hi0 hi1
    const reg second = _mm512_shuffle_f32x4(lo, hi, _MM_SHUFFLE(3, 2, 3, 2));  // lo2 lo3 hi2 hi3
    a = _mm512_shuffle_f32x4(first, first, _MM_SHUFFLE(3, 1, 2, 0));            // lo0 hi0 lo1 hi1
    b = _mm512_shuffle_f32x4(second, second, _MM_SHUFFLE(3, 1, 2, 0));          // lo2 hi2 lo3 hi3
  }
  // Stream needs kWidth elements' alignment, StreamPair of bf16 64 bytes.
  template <typename T>
  static constexpr int StreamAlign() { return static_cast<int>(sizeof(T)) * kWidth < 64 ? 64 : static_cast<int>(sizeof(T)) * kWidth; }
  static void StoreLanes(float *p, reg v) { _mm512_storeu_ps(p, v); }
  // FoldLanes on acc[0..1]: each register holds two rows of the fold (lanes 16r..16r+7
  // and 16r+8..16r+15), converted to 8 doubles each and added row by row.
  static __m512d LowerRow(reg v) { return _mm512_cvtps_pd(_mm512_castps512_ps256(v)); }
  static __m512d UpperRow(reg v) {
    return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
  }
  static double FoldRegs(const reg *acc) {
    __m512d part = _mm512_add_pd(LowerRow(acc[0]), UpperRow(acc[0]));
    part = _mm512_add_pd(part, LowerRow(acc[1]));
    part = _mm512_add_pd(part, UpperRow(acc[1]));
    const __m256d w4 = _mm256_add_pd(_mm512_castpd512_pd256(part), _mm512_extractf64x4_pd(part, 1));  // k += k + 4
    const __m128d w2 = _mm_add_pd(_mm256_castpd256_pd128(w4), _mm256_extractf128_pd(w4, 1));           // k += k + 2
    return _mm_cvtsd_f64(_mm_add_sd(w2, _mm_unpackhi_pd(w2, w2)));                                    // k += k + 1
  }
  // FoldLanesViaFloat on acc[0..1]: register r holds rows 2r and 2r + 1 of 8 lanes, so
  // (row 0 + row 1) + (row 2 + row 3) in float, then the same tree as FoldRegs.
  static __m256 LowerHalf(reg v) { return _mm512_castps512_ps256(v); }
  static __m256 UpperHalf(reg v) { return _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)); }
  static double FoldRegsViaFloat(const reg *acc) {
    const __m256 quad = _mm256_add_ps(_mm256_add_ps(LowerHalf(acc[0]), UpperHalf(acc[0])),
                                      _mm256_add_ps(LowerHalf(acc[1]), UpperHalf(acc[1])));
    const __m256d w4 = _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(quad)),
                                     _mm256_cvtps_pd(_mm256_extractf128_ps(quad, 1)));                // k += k + 4
    const __m128d w2 = _mm_add_pd(_mm256_castpd256_pd128(w4), _mm256_extractf128_pd(w4, 1));  // k += k + 2
    return _mm_cvtsd_f64(_mm_add_sd(w2, _mm_unpackhi_pd(w2, w2)));                           // k += k + 1
  }
  static void Fence() { _mm_sfence(); }
  // v[i] = sqrt(v[i]) (correctly rounded, as std::sqrt) for n a multiple of 8
  static void SqrtDoubles(double *v, int n) {
    for (int i = 0; i < n; i += 8) _mm512_storeu_pd(v + i, _mm512_sqrt_pd(_mm512_loadu_pd(v + i)));
  }

  // Partial vectors: the first n < kWidth elements of a row in one masked step, where the
  // other builds go lane by lane (row_kernels_impl.h). Lanes n and up load as 0 (masked
  // loads do not touch the memory past the row) and are neither stored nor changed by
  // Select, and every lane computes what the scalar step computes (same FMA, same
  // conversions), so the bits are those of the lane-by-lane tail. The 16-bit forms use
  // AVX-512BW's masked 16-bit moves: without them the tail went lane by lane and then
  // folded its sums through memory, which made rows of 49 or 37 bf16 elements 1.3-2.4x
  // as slow per element as float rows (a stack buffer instead was slower still).
  template <typename T>
  static constexpr bool kPartial = true;
  // The shortest tail MapRow (row_kernels_impl.h) stores in one masked step; shorter ones go
  // lane by lane. A masked 16-bit store cost more than a few scalar ones (7x7 rows of bf16,
  // forward: 0.42 ms masked vs 0.35 ms lane by lane up to 4 elements; 4 beat 2 and 8).
  template <typename T>
  static constexpr int64_t kPartialStoreMin = sizeof(T) == sizeof(float) ? 1 : 5;
  static __mmask16 FirstLanes(int n) { return static_cast<__mmask16>((1u << n) - 1u); }
  static __m256i LoadFirstBits(const void *p, int n) { return _mm256_maskz_loadu_epi16(FirstLanes(n), p); }
  static void StoreFirstBits(void *p, __m256i bits, int n) { _mm256_mask_storeu_epi16(p, FirstLanes(n), bits); }
  static reg LoadFirst(const float *p, int n) { return _mm512_maskz_loadu_ps(FirstLanes(n), p); }
  static reg LoadFirst(const Half *p, int n) { return _mm512_cvtph_ps(LoadFirstBits(p, n)); }
  static reg LoadFirst(const BFloat16 *p, int n) {
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(LoadFirstBits(p, n)), 16));
  }
  static void StoreFirst(float *p, reg v, int n) { _mm512_mask_storeu_ps(p, FirstLanes(n), v); }
  static void StoreFirst(Half *p, reg v, int n) { StoreFirstBits(p, HalfBits(v), n); }
  static void StoreFirst(BFloat16 *p, reg v, int n) { StoreFirstBits(p, BFloat16Bits(v), n); }
  // Lanes below n from `updated`, the others from `kept`.
  static reg Select(int n, reg updated, reg kept) { return _mm512_mask_mov_ps(kept, FirstLanes(n), updated); }
};
static_assert(kLanes == 2 * V::kWidth, "FoldRegs folds two registers");

#include "row_kernels_impl.h"

}  // namespace isa_avx512
}  // namespace ms_groupnorm

#pragma GCC pop_options

namespace ms_groupnorm {

namespace isa_avx512 {
static const RowKernelSet &Set() {
  static const RowKernelSet set{"avx512", MakeRowKernels<float>(), MakeRowKernels<Half>(),
                                MakeRowKernels<BFloat16>()};
  return set;
}
}  // namespace isa_avx512

const RowKernelSet *Avx512RowKernels() {
  __builtin_cpu_init();
  const bool supported = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512vl");
  return supported ? &isa_avx512::Set() : nullptr;
}

}  // namespace ms_groupnorm

#else  // not x86-64 with GCC/Clang: no AVX-512 build

namespace ms_groupnorm {
const RowKernelSet *Avx512RowKernels() { return nullptr; }
}  // namespace ms_groupnorm

#endif
