// The AVX2 build of the fused GroupNorm + SiLU row loops (silu_rows_impl.h): 8 float
// lanes per ymm register, FMA, F16C fp16 conversions. Only the code between push_options
// and pop_options is compiled for AVX2 + F16C + FMA; the CPU check stays baseline.

// -Wpsabi notes that a vector returned by a function compiled without this file's target (the
// lambdas and inline templates of the shared headers) would pass differently between files;
// none leaves this file. Set before the includes, as the notes point into the headers.
#pragma GCC diagnostic ignored "-Wpsabi"
#include <cstdint>

#include "silu_rows.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx2,f16c,fma")
#include "fp_contract_off.h"

namespace ms_groupnorm {
namespace isa_silu_avx2 {

constexpr int kW = 8;
typedef float VF __attribute__((vector_size(4 * kW)));
typedef int32_t VI __attribute__((vector_size(4 * kW)));
typedef uint32_t VU __attribute__((vector_size(4 * kW)));
typedef uint16_t VH __attribute__((vector_size(2 * kW)));

// a * b + c rounded once (FMA), as the row kernels' V::MulAdd in this build; min/max one
// instruction each (a NaN in a yields b, as the comparisons they replace).
inline VF MulAdd(VF a, VF b, VF c) { return _mm256_fmadd_ps(a, b, c); }
inline VF Min(VF a, VF b) { return _mm256_min_ps(a, b); }
inline VF Max(VF a, VF b) { return _mm256_max_ps(a, b); }

struct HalfIO {
  static VF Load(const Half *p) { return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i *>(p))); }
  static void Store(Half *p, VF v) {
    _mm_storeu_si128(reinterpret_cast<__m128i *>(p), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
};

// bf16 <-> float with intrinsics: a load in two instructions, a store's narrowing in two
// after the rounding (the generic vector code compiled to about twice as many, a
// noticeable share of the bf16 row loops).
struct BFloat16IO {
  static VF Load(const BFloat16 *p) {  // exact: a bf16 is the top half of a float
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i *>(p));
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
  static void Store(BFloat16 *p, VF v) {
    const VU bits = BFloat16Rounded(reinterpret_cast<VU>(v), reinterpret_cast<VU>(v != v));
    const __m256i top = _mm256_srli_epi32(reinterpret_cast<__m256i>(bits), 16);  // < 2^16: packus is exact
    const __m128i h = _mm_packus_epi32(_mm256_castsi256_si128(top), _mm256_extracti128_si256(top, 1));
    _mm_storeu_si128(reinterpret_cast<__m128i *>(p), h);
  }
};

// The first n < kW floats with vmaskmovps (the masked lanes read as zero and are never written;
// no fault past n); 16-bit data, which AVX2 cannot mask, goes through a buffer.
struct PartialIO {
  template <typename T>
  static constexpr bool kMasked = sizeof(T) == sizeof(float);
  static __m256i First(int64_t n) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
  }
  static VF Load(const float *p, int64_t n) { return _mm256_maskload_ps(p, First(n)); }
  static void Store(float *p, VF v, int64_t n) { _mm256_maskstore_ps(p, First(n), v); }
};

// Half a vector's lanes as doubles (exact), for the double sums of short rows.
typedef double VD __attribute__((vector_size(4 * kW)));
inline VD LowAsDoubles(VF v) { return _mm256_cvtps_pd(_mm256_castps256_ps128(v)); }
inline VD HighAsDoubles(VF v) { return _mm256_cvtps_pd(_mm256_extractf128_ps(v, 1)); }

#include "silu_rows_impl.h"

}  // namespace isa_silu_avx2
}  // namespace ms_groupnorm

#pragma GCC pop_options

namespace ms_groupnorm {

namespace isa_silu_avx2 {
static const SiluRowKernelSet &Set() {
  static const SiluRowKernelSet set{"avx2", MakeSiluRowKernels<float>(), MakeSiluRowKernels<Half>(),
                                    MakeSiluRowKernels<BFloat16>()};
  return set;
}
}  // namespace isa_silu_avx2

const SiluRowKernelSet *Avx2SiluRowKernels() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") && __builtin_cpu_supports("fma") ? &isa_silu_avx2::Set() : nullptr;
}

}  // namespace ms_groupnorm

#else  // not x86-64 with GCC/Clang: no AVX2 build

namespace ms_groupnorm {
const SiluRowKernelSet *Avx2SiluRowKernels() { return nullptr; }
}  // namespace ms_groupnorm

#endif
