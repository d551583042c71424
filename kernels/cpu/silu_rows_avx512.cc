// The AVX-512 build of the fused GroupNorm + SiLU row loops (silu_rows_impl.h): 16 float
// lanes per zmm register, AVX-512F fp16 conversions. Only the code between push_options and
// pop_options is compiled for AVX-512F; the CPU check stays baseline.

// -Wpsabi notes that a vector returned by a function compiled without this file's target (the
// lambdas and inline templates of the shared headers) would pass differently between files;
// none leaves this file. Set before the includes, as the notes point into the headers.
#pragma GCC diagnostic ignored "-Wpsabi"
#include <cstdint>

#include "silu_rows.h"

#if defined(__x86_64__) && defined(__GNUC__)
// GCC 12 reports _mm512_undefined_ps's deliberately undefined value as "may be used
// uninitialized" (or, as inlining decides, "is used uninitialized") in the intrinsics
// header, hundreds of times: a false positive, silenced for this file so that a real
// warning stays visible in the build output.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl")
#include "fp_contract_off.h"

namespace ms_groupnorm {
namespace isa_silu_avx512 {

constexpr int kW = 16;
typedef float VF __attribute__((vector_size(4 * kW)));
typedef int32_t VI __attribute__((vector_size(4 * kW)));
typedef uint32_t VU __attribute__((vector_size(4 * kW)));
typedef uint16_t VH __attribute__((vector_size(2 * kW)));

// a * b + c rounded once (FMA), as the row kernels' V::MulAdd in this build; min/max one
// instruction each (a NaN in a yields b, as the comparisons they replace).
inline VF MulAdd(VF a, VF b, VF c) { return _mm512_fmadd_ps(a, b, c); }
inline VF Min(VF a, VF b) { return _mm512_min_ps(a, b); }
inline VF Max(VF a, VF b) { return _mm512_max_ps(a, b); }

// 16 fp16 <-> float (F16C's rounding to nearest even). FromBits/Bits are the conversions of the
// whole and the masked moves (PartialIO) alike.
struct HalfIO {
  static VF FromBits(__m256i h) { return _mm512_cvtph_ps(h); }
  static __m256i Bits(VF v) { return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  static VF Load(const Half *p) { return FromBits(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p))); }
  static void Store(Half *p, VF v) { _mm256_storeu_si256(reinterpret_cast<__m256i *>(p), Bits(v)); }
};

// bf16 <-> float with AVX-512F's zero-extension and truncating 32 -> 16 bit move.
struct BFloat16IO {
  static VF FromBits(__m256i h) {  // exact: a bf16 is the top half of a float
    return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
  static __m256i Bits(VF v) {
    const VU bits = BFloat16Rounded(reinterpret_cast<VU>(v), reinterpret_cast<VU>(v != v));
    return _mm512_cvtepi32_epi16(_mm512_srli_epi32(reinterpret_cast<__m512i>(bits), 16));
  }
  static VF Load(const BFloat16 *p) { return FromBits(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p))); }
  static void Store(BFloat16 *p, VF v) { _mm256_storeu_si256(reinterpret_cast<__m256i *>(p), Bits(v)); }
};

// The first n < kW elements with AVX-512's masked moves (AVX512BW/VL for the 16-bit ones): the
// masked lanes read as zero and are never written, and a masked move does not fault past n.
struct PartialIO {
  template <typename T>
  static constexpr bool kMasked = true;
  static __mmask16 First(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }
  static __m256i LoadBits(const void *p, int64_t n) { return _mm256_maskz_loadu_epi16(First(n), p); }
  static VF Load(const float *p, int64_t n) { return _mm512_maskz_loadu_ps(First(n), p); }
  static VF Load(const Half *p, int64_t n) { return HalfIO::FromBits(LoadBits(p, n)); }
  static VF Load(const BFloat16 *p, int64_t n) { return BFloat16IO::FromBits(LoadBits(p, n)); }
  static void Store(float *p, VF v, int64_t n) { _mm512_mask_storeu_ps(p, First(n), v); }
  static void Store(Half *p, VF v, int64_t n) { _mm256_mask_storeu_epi16(p, First(n), HalfIO::Bits(v)); }
  static void Store(BFloat16 *p, VF v, int64_t n) { _mm256_mask_storeu_epi16(p, First(n), BFloat16IO::Bits(v)); }
};

// Half a vector's lanes as doubles (exact), for the double sums of short rows.
typedef double VD __attribute__((vector_size(4 * kW)));
inline VD LowAsDoubles(VF v) { return _mm512_cvtps_pd(_mm512_castps512_ps256(v)); }
inline VD HighAsDoubles(VF v) {
  return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

#include "silu_rows_impl.h"

}  // namespace isa_silu_avx512
}  // namespace ms_groupnorm

#pragma GCC pop_options

namespace ms_groupnorm {

namespace isa_silu_avx512 {
static const SiluRowKernelSet &Set() {
  static const SiluRowKernelSet set{"avx512", MakeSiluRowKernels<float>(), MakeSiluRowKernels<Half>(),
                                    MakeSiluRowKernels<BFloat16>()};
  return set;
}
}  // namespace isa_silu_avx512

const SiluRowKernelSet *Avx512SiluRowKernels() {
  __builtin_cpu_init();
  // the CPUs the row loops' AVX-512 build runs on (row_kernels_avx512.cc), which this one follows
  const bool supported = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512vl");
  return supported ? &isa_silu_avx512::Set() : nullptr;
}

}  // namespace ms_groupnorm

#else  // not x86-64 with GCC/Clang: no AVX-512 build

namespace ms_groupnorm {
const SiluRowKernelSet *Avx512SiluRowKernels() { return nullptr; }
}  // namespace ms_groupnorm

#endif
