// The portable build of the fused GroupNorm + SiLU row loops (silu_rows_impl.h): four
// float lanes per vector (SSE2 on x86-64, NEON or scalar code elsewhere), fp16 through
// the scalar conversions of half_types.h. Also picks the build matching the row kernels'.
#include <cstdint>
#include <cstring>

#include "silu_rows.h"

#include "fp_contract_off.h"
#include "portable_mul_add.h"

namespace ms_groupnorm {
namespace isa_silu_portable {

constexpr int kW = 4;
typedef float VF __attribute__((vector_size(4 * kW)));
typedef int32_t VI __attribute__((vector_size(4 * kW)));
typedef uint32_t VU __attribute__((vector_size(4 * kW)));
typedef uint16_t VH __attribute__((vector_size(2 * kW)));

// a * b + c lane by lane, as the row kernels' V::MulAdd in this build (portable_mul_add.h:
// one rounding where the target has a hardware FMA); min/max lane-wise (a NaN in a yields b).
inline VF MulAdd(VF a, VF b, VF c) {
  for (int k = 0; k < kW; ++k) a[k] = PortableMulAdd(a[k], b[k], c[k]);
  return a;
}
inline VF Min(VF a, VF b) { return a < b ? a : b; }
inline VF Max(VF a, VF b) { return a > b ? a : b; }

struct HalfIO {
  static VF Load(const Half *p) {
    VF v;
    for (int k = 0; k < kW; ++k) v[k] = ToFloat(p[k]);
    return v;
  }
  static void Store(Half *p, VF v) {
    for (int k = 0; k < kW; ++k) p[k] = ToHalf(v[k]);
  }
};

struct BFloat16IO {  // exact: a bf16 is the top half of a float
  static VF Load(const BFloat16 *p) {
    VH h;
    __builtin_memcpy(&h, p, sizeof h);
    return reinterpret_cast<VF>(__builtin_convertvector(h, VU) << 16);
  }
  static void Store(BFloat16 *p, VF v) {
    const VU bits = BFloat16Rounded(reinterpret_cast<VU>(v), reinterpret_cast<VU>(v != v));
    const VH h = __builtin_convertvector(bits >> 16, VH);
    __builtin_memcpy(p, &h, sizeof h);
  }
};

// No masked moves: partial vectors go through a buffer (silu_rows_impl.h's LoadPartial).
struct PartialIO {
  template <typename T>
  static constexpr bool kMasked = false;
  template <typename T>
  static VF Load(const T *p, int64_t n);  // declared for the discarded branch; never used
  template <typename T>
  static void Store(T *p, VF v, int64_t n);
};

// Half a vector's lanes as doubles (exact), for the double sums of short rows.
typedef double VD __attribute__((vector_size(4 * kW)));
inline VD LowAsDoubles(VF v) { return __builtin_convertvector(__builtin_shufflevector(v, v, 0, 1), VD); }
inline VD HighAsDoubles(VF v) { return __builtin_convertvector(__builtin_shufflevector(v, v, 2, 3), VD); }

#include "silu_rows_impl.h"

}  // namespace isa_silu_portable

const SiluRowKernelSet &PortableSiluRowKernels() {
  static const SiluRowKernelSet set{"portable", isa_silu_portable::MakeSiluRowKernels<float>(),
                                    isa_silu_portable::MakeSiluRowKernels<Half>(),
                                    isa_silu_portable::MakeSiluRowKernels<BFloat16>()};
  return set;
}

const SiluRowKernelSet &ActiveSiluRowKernels() {
  const char *isa = ActiveRowKernels().isa;
  const SiluRowKernelSet *set = nullptr;
  if (std::strcmp(isa, "avx512") == 0) set = Avx512SiluRowKernels();
  if (std::strcmp(isa, "avx2") == 0) set = Avx2SiluRowKernels();
  return set != nullptr ? *set : PortableSiluRowKernels();
}

}  // namespace ms_groupnorm
