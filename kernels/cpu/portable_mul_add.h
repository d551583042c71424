// a * b + c for the portable builds of the row loops (row_kernels_portable.cc,
// silu_rows_portable.cc). Include it after fp_contract_off.h.
//
// Where the target has a hardware fused multiply-add (__FP_FAST_FMAF: every aarch64 CPU,
// such as the Kunpeng hosts of Ascend servers, or x86-64 compiled with -mfma) it rounds
// once, so the portable build gives the bits of the AVX2 and AVX-512 builds, which add
// the same numbers in the same order. Elsewhere it rounds twice: a software fma would
// cost more than it saves, and such a CPU (x86-64 before 2013) runs nothing newer.
#pragma once

namespace ms_groupnorm {

#if defined(__FP_FAST_FMAF)
inline float PortableMulAdd(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
#else
inline float PortableMulAdd(float a, float b, float c) { return a * b + c; }
#endif

}  // namespace ms_groupnorm
