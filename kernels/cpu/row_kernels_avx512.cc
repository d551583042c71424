// The AVX-512 build of the row loops: 16 float lanes per zmm register, F16C-style
// fp16 conversions of AVX-512F, bf16 rounding in integer arithmetic.
// Only the code between push_options and pop_options is compiled for AVX-512; the
// function that checks the CPU stays baseline so it is safe to call anywhere.
#include <cstdint>

#include "row_kernels.h"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#pragma GCC push_options
#pragma GCC target("avx512f")
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

  static reg Load(const float *p) { return _mm512_loadu_ps(p); }
  static reg Load(const Half *p) { return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p))); }
  static reg Load(const BFloat16 *p) {
    const __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i *>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16));
  }

  // Round to nearest even; NaN is quieted and payload-truncated like the scalar ToHalf.
  static __m256i HalfBits(reg v) { return _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC); }
  // The scalar ToBFloat16 in integer lanes: add 0x7fff + lsb, keep the top half; NaN
  // keeps its top bits with the quiet bit set.
  static __m256i BFloat16Bits(reg v) {
    const __m512i u = _mm512_castps_si512(v);
    const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
    __m512i rounded = _mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff)));
    const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
    rounded = _mm512_mask_mov_epi32(rounded, nan, _mm512_or_si512(u, _mm512_set1_epi32(0x400000)));
    return _mm512_cvtepi32_epi16(_mm512_srli_epi32(rounded, 16));
  }

  static void Store(float *p, reg v) { _mm512_storeu_ps(p, v); }
  static void Store(Half *p, reg v) { _mm256_storeu_si256(reinterpret_cast<__m256i *>(p), HalfBits(v)); }
  static void Store(BFloat16 *p, reg v) { _mm256_storeu_si256(reinterpret_cast<__m256i *>(p), BFloat16Bits(v)); }
  static void Stream(float *p, reg v) { _mm512_stream_ps(p, v); }
  static void Stream(Half *p, reg v) { _mm256_stream_si256(reinterpret_cast<__m256i *>(p), HalfBits(v)); }
  static void Stream(BFloat16 *p, reg v) { _mm256_stream_si256(reinterpret_cast<__m256i *>(p), BFloat16Bits(v)); }
  template <typename T>
  static constexpr int StreamAlign() { return static_cast<int>(sizeof(T)) * kWidth; }
  static void StoreLanes(float *p, reg v) { _mm512_storeu_ps(p, v); }
  static void Fence() { _mm_sfence(); }
};

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
  return __builtin_cpu_supports("avx512f") ? &isa_avx512::Set() : nullptr;
}

}  // namespace ms_groupnorm

#else  // not x86-64 with GCC/Clang: no AVX-512 build

namespace ms_groupnorm {
const RowKernelSet *Avx512RowKernels() { return nullptr; }
}  // namespace ms_groupnorm

#endif
