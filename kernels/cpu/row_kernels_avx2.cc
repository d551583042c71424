// The AVX2 build of the row loops: 8 float lanes per ymm register, FMA, F16C fp16
// conversions, bf16 rounding in integer arithmetic. For CPUs without AVX-512.
// Only the code between push_options and pop_options is compiled for AVX2 + F16C + FMA;
// the function that checks the CPU stays baseline so it is safe to call anywhere.

// -Wpsabi notes that a vector returned by a function compiled without this file's target (the
// lambdas and inline templates of the shared headers) would pass differently between files;
// none leaves this file. Set before the includes, as the notes point into the headers.
#pragma GCC diagnostic ignored "-Wpsabi"
#include <cstdint>
#include <cstring>

#include "row_kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,f16c,fma")
#include "fp_contract_off.h"

namespace ms_groupnorm {
namespace isa_avx2 {

struct V {
  static constexpr int kWidth = 8;
  using reg = __m256;
  static reg Zero() { return _mm256_setzero_ps(); }
  static reg Set1(float s) { return _mm256_set1_ps(s); }
  static reg Add(reg a, reg b) { return _mm256_add_ps(a, b); }
  static reg Sub(reg a, reg b) { return _mm256_sub_ps(a, b); }
  static reg Mul(reg a, reg b) { return _mm256_mul_ps(a, b); }
  // a * b + c rounded once (FMA), in vector and scalar form, so the scalar head and
  // tail of a row round like its vector body.
  static reg MulAdd(reg a, reg b, reg c) { return _mm256_fmadd_ps(a, b, c); }
  static float MulAdd(float a, float b, float c) { return __builtin_fmaf(a, b, c); }

  static reg Load(const float *p) { return _mm256_loadu_ps(p); }
  static reg Load(const Half *p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p))); }
  static reg Load(const BFloat16 *p) {
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16));
  }

  // Round to nearest even; NaN is quieted and payload-truncated like the scalar ToHalf.
  static __m128i HalfBits(reg v) { return _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // The scalar ToBFloat16 in integer lanes: the bf16 bits end up in the upper half of
  // each 32-bit lane (the lower half is left over). Add 0x7fff + lsb; a NaN keeps its
  // top bits with the quiet bit set.
  static __m256i BFloat16InUpperHalf(reg v) {
    const __m256i u = _mm256_castps_si256(v);
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(1));
    const __m256i rounded = _mm256_add_epi32(u, _mm256_add_epi32(lsb, _mm256_set1_epi32(0x7fff)));
    const __m256i quiet = _mm256_or_si256(u, _mm256_set1_epi32(0x400000));
    const __m256i nan = _mm256_castps_si256(_mm256_cmp_ps(v, v, _CMP_UNORD_Q));
    return _mm256_blendv_epi8(rounded, quiet, nan);
  }
  static __m128i BFloat16Bits(reg v) {
    const __m256i top = _mm256_srli_epi32(BFloat16InUpperHalf(v), 16);
    // Every lane is <= 0xffff, so the unsigned saturating pack is exact.
    return _mm_packus_epi32(_mm256_castsi256_si128(top), _mm256_extracti128_si256(top, 1));
  }
  // 16 bf16 of a pair: even elements in the low halves, odd ones in the high halves.
  static __m256i BFloat16PairBits(reg even, reg odd) {
    return _mm256_blend_epi16(_mm256_srli_epi32(BFloat16InUpperHalf(even), 16), BFloat16InUpperHalf(odd), 0xaa);
  }

  static void Store(float *p, reg v) { _mm256_storeu_ps(p, v); }
  static void Store(Half *p, reg v) { _mm_storeu_si128(reinterpret_cast<__m128i *>(p), HalfBits(v)); }
  static void Store(BFloat16 *p, reg v) { _mm_storeu_si128(reinterpret_cast<__m128i *>(p), BFloat16Bits(v)); }
  static void Stream(float *p, reg v) { _mm256_stream_ps(p, v); }
  static void Stream(Half *p, reg v) { _mm_stream_si128(reinterpret_cast<__m128i *>(p), HalfBits(v)); }
  static void Stream(BFloat16 *p, reg v) { _mm_stream_si128(reinterpret_cast<__m128i *>(p), BFloat16Bits(v)); }
  // Pairs (row_kernels_impl.h): memory order for float and fp16; for bf16 the even
  // elements in a and the odd ones in b, so that a load is one 32-byte load, a shift
  // and a mask, and a store a blend.
  template <typename T>
  static void LoadPair(const T *p, reg &a, reg &b) {
    a = Load(p);
    b = Load(p + kWidth);
  }
  static void LoadPair(const BFloat16 *p, reg &a, reg &b) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(p));
    a = _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
    b = _mm256_castsi256_ps(_mm256_and_si256(w, _mm256_set1_epi32(static_cast<int>(0xffff0000u))));
  }
  template <typename T>
  static void StorePair(T *p, reg a, reg b) {
    Store(p, a);
    Store(p + kWidth, b);
  }
  static void StorePair(BFloat16 *p, reg a, reg b) {
    _mm256_storeu_si256(reinterpret_cast<__m256i *>(p), BFloat16PairBits(a, b));
  }
  template <typename T>
  static void StreamPair(T *p, reg a, reg b) {
    Stream(p, a);
    Stream(p + kWidth, b);
  }
  static void StreamPair(BFloat16 *p, reg a, reg b) {
    _mm256_stream_si256(reinterpret_cast<__m256i *>(p), BFloat16PairBits(a, b));
  }
  // One 32-byte non-temporal store rather than two 16-byte ones (half-filled
  // write-combining buffers were slow on Zen 3).
  static void StreamPair(Half *p, reg a, reg b) {
    _mm256_stream_si256(reinterpret_cast<__m256i *>(p), _mm256_set_m128i(HalfBits(b), HalfBits(a)));
  }
  template <typename T>
  static void Unpair(const T *, reg &, reg &) {}
  static void Unpair(const BFloat16 *, reg &a, reg &b) {
    const reg lo = _mm256_unpacklo_ps(a, b);  // elements 0-3 | 8-11
    const reg hi = _mm256_unpackhi_ps(a, b);  // elements 4-7 | 12-15
    a = _mm256_permute2f128_ps(lo, hi, 0x20);
    b = _mm256_permute2f128_ps(lo, hi, 0x31);
  }
  // Stream needs kWidth elements' alignment, StreamPair of bf16 32 bytes.
  template <typename T>
  static constexpr int StreamAlign() { return static_cast<int>(sizeof(T)) * kWidth < 32 ? 32 : static_cast<int>(sizeof(T)) * kWidth; }
  static void StoreLanes(float *p, reg v) { _mm256_storeu_ps(p, v); }
  // FoldLanes on acc[0..3]: register r holds lanes 8r..8r+7, one row of the fold.
  static double FoldRegs(const reg *acc) {
    __m256d lo = _mm256_cvtps_pd(_mm256_castps256_ps128(acc[0]));  // part[0..3]
    __m256d hi = _mm256_cvtps_pd(_mm256_extractf128_ps(acc[0], 1));  // part[4..7]
    for (int r = 1; r < 4; ++r) {
      lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(acc[r])));
      hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(acc[r], 1)));
    }
    const __m256d w4 = _mm256_add_pd(lo, hi);                                                 // part[k] += part[k + 4]
    const __m128d w2 = _mm_add_pd(_mm256_castpd256_pd128(w4), _mm256_extractf128_pd(w4, 1));  // part[k] += part[k + 2]
    return _mm_cvtsd_f64(_mm_add_sd(w2, _mm_unpackhi_pd(w2, w2)));                           // part[0] += part[1]
  }
  // FoldLanesViaFloat on acc[0..3]: the four rows added in float, then the same tree.
  static double FoldRegsViaFloat(const reg *acc) {
    const reg quad = _mm256_add_ps(_mm256_add_ps(acc[0], acc[1]), _mm256_add_ps(acc[2], acc[3]));
    const __m256d w4 = _mm256_add_pd(_mm256_cvtps_pd(_mm256_castps256_ps128(quad)),
                                     _mm256_cvtps_pd(_mm256_extractf128_ps(quad, 1)));                // k += k + 4
    const __m128d w2 = _mm_add_pd(_mm256_castpd256_pd128(w4), _mm256_extractf128_pd(w4, 1));  // k += k + 2
    return _mm_cvtsd_f64(_mm_add_sd(w2, _mm_unpackhi_pd(w2, w2)));                           // k += k + 1
  }
  static void Fence() { _mm_sfence(); }
  // v[i] = sqrt(v[i]) (correctly rounded, as std::sqrt) for n a multiple of 4
  static void SqrtDoubles(double *v, int n) {
    for (int i = 0; i < n; i += 4) _mm256_storeu_pd(v + i, _mm256_sqrt_pd(_mm256_loadu_pd(v + i)));
  }

  // Partial vectors: the first n < kWidth elements of a row in one step, where the
  // lane-by-lane tail stored the sums' registers to memory, added the tail there and folded
  // from memory: on a Zen 3 EPYC that made the fp32 backward of 32x96x7x7 (rows of 49) 1.8x
  // as slow as that of rows of 48. Lanes n and up load as 0 without touching memory past the
  // row (vmaskmovps for floats; for 16-bit data, which AVX2 cannot mask, scalar loads of 8, 4
  // and 2 bytes), are not stored, and Select keeps them; each lane computes what the scalar
  // step computes, so the bits are those of the lane-by-lane tail (as in the AVX-512 build).
  template <typename T>
  static constexpr bool kPartial = true;
  static __m256i FirstLanes(int n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static __m128i LoadFirstBits(const void *p, int n) {  // n 16-bit elements, 0 < n < 8
    const char *bytes = static_cast<const char *>(p);
    uint64_t first4 = 0, rest = 0;
    const int whole = n & 4, pair = n & 2;
    if (whole) std::memcpy(&first4, bytes, 8);
    if (pair) {
      uint32_t two;
      std::memcpy(&two, bytes + 2 * whole, 4);
      rest = two;
    }
    if (n & 1) {
      uint16_t one;
      std::memcpy(&one, bytes + 2 * (whole + pair), 2);
      rest |= static_cast<uint64_t>(one) << (16 * pair);
    }
    return whole ? _mm_set_epi64x(static_cast<long long>(rest), static_cast<long long>(first4))
                 : _mm_set_epi64x(0, static_cast<long long>(rest));
  }
  static reg LoadFirst(const float *p, int n) { return _mm256_maskload_ps(p, FirstLanes(n)); }
  static reg LoadFirst(const Half *p, int n) { return _mm256_cvtph_ps(LoadFirstBits(p, n)); }
  static reg LoadFirst(const BFloat16 *p, int n) {
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(LoadFirstBits(p, n)), 16));
  }
  // Stores go lane by lane from the register's copy (the point rows' tails,
  // point_rows_impl.h). MapRow's float tails go lane by lane from the start
  // (kPartialStoreMin): with vmaskmovps stores it was no faster on Zen 3. Its fp16 tails of
  // two or more take this partial step: one F16C conversion each way for the tail instead of
  // a software conversion per element and input (64x4x2 G4 fp16 backward, rows of 2: 36.8M ->
  // 33.7M instructions for 200 calls). bf16's scalar conversions are shifts, and the partial
  // step cost it more (35.4M -> 37.2M), so its tails stay scalar.
  template <typename T>
  static void StoreFirst(T *p, reg v, int n) {
    alignas(32) T lanes[kWidth];
    Store(lanes, v);
    for (int k = 0; k < n; ++k) p[k] = lanes[k];
  }
  template <typename T>
  static constexpr int64_t kPartialStoreMin = std::is_same_v<T, Half> ? 2 : kWidth;
  // Lanes below n from `updated`, the others from `kept`.
  static reg Select(int n, reg updated, reg kept) {
    return _mm256_blendv_ps(kept, updated, _mm256_castsi256_ps(FirstLanes(n)));
  }
};
static_assert(kLanes == 4 * V::kWidth, "FoldRegs folds four registers");

#include "row_kernels_impl.h"

}  // namespace isa_avx2
}  // namespace ms_groupnorm

#pragma GCC pop_options

namespace ms_groupnorm {

namespace isa_avx2 {
static const RowKernelSet &Set() {
  static const RowKernelSet set{"avx2", MakeRowKernels<float>(), MakeRowKernels<Half>(),
                                MakeRowKernels<BFloat16>()};
  return set;
}
}  // namespace isa_avx2

const RowKernelSet *Avx2RowKernels() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") && __builtin_cpu_supports("fma")
             ? &isa_avx2::Set()
             : nullptr;
}

}  // namespace ms_groupnorm

#else  // not x86-64 with GCC/Clang: no AVX2 build

namespace ms_groupnorm {
const RowKernelSet *Avx2RowKernels() { return nullptr; }
}  // namespace ms_groupnorm

#endif
