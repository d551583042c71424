// The library's plain C API: the four kernel entry points and the run-time controls, as ctypes
// (ms_groupnorm/backends/cpu_kernels.py) and the C drivers of the tests (tests/sanitize,
// tests/cross_build) call them. MindSpore's aot entry points are in aot_abi.h's form instead.
// The files that define these functions include this header, so the compiler holds each
// definition to its declaration here.
//
// Data arrays hold N * C * HxW elements of data_dtype ("float32", "float16", "bfloat16";
// "float64" for the unfused pair only), mean and rstd N * group of stat_dtype, gamma and beta C
// of stat_dtype (null: ones and zeros). Each call returns 0 or a status of aot_status.h.
#pragma once

#include <cstdint>

// The library is built with -fvisibility=hidden; only entry points marked so are exported.
#ifndef MS_GROUPNORM_EXPORT
#define MS_GROUPNORM_EXPORT __attribute__((visibility("default")))
#endif

extern "C" {

// GroupNorm: y, mean, rstd.
MS_GROUPNORM_EXPORT int MsGroupNormForward(const void *x, const void *gamma, const void *beta, void *y, void *mean,
                                           void *rstd, int64_t N, int64_t C, int64_t HxW, int64_t group, float eps,
                                           const char *data_dtype, const char *stat_dtype);
// GroupNorm's backward: dx, dgamma, dbeta, each written only where its *_is_require is non-zero.
MS_GROUPNORM_EXPORT int MsGroupNormBackward(const void *dy, const void *x, const void *mean, const void *rstd,
                                            const void *gamma, void *dx, void *dgamma, void *dbeta, int64_t N,
                                            int64_t C, int64_t HxW, int64_t group, const char *data_dtype,
                                            const char *stat_dtype, int dx_is_require, int dgamma_is_require,
                                            int dbeta_is_require);
// GroupNorm + swish: z = y * sigmoid(swish_scale * y), mean, rstd.
MS_GROUPNORM_EXPORT int MsGroupNormSiluForward(const void *x, const void *gamma, const void *beta, void *z,
                                               void *mean, void *rstd, int64_t N, int64_t C, int64_t HxW,
                                               int64_t group, float eps, float swish_scale, const char *data_dtype,
                                               const char *stat_dtype);
// Its backward from dz, recomputing y and sigmoid from x, the statistics, gamma and beta.
MS_GROUPNORM_EXPORT int MsGroupNormSiluBackward(const void *dz, const void *x, const void *mean, const void *rstd,
                                                const void *gamma, const void *beta, void *dx, void *dgamma,
                                                void *dbeta, int64_t N, int64_t C, int64_t HxW, int64_t group,
                                                float swish_scale, const char *data_dtype, const char *stat_dtype,
                                                int dx_is_require, int dgamma_is_require, int dbeta_is_require);

// Run-time controls (runtime_controls.cc): for benchmarks and tests; ordinary callers never need them.
MS_GROUPNORM_EXPORT void MsGroupNormSetNumThreads(int threads);
MS_GROUPNORM_EXPORT int MsGroupNormGetNumThreads();
MS_GROUPNORM_EXPORT void MsGroupNormSetMinElementsPerThread(int64_t elements);
MS_GROUPNORM_EXPORT void MsGroupNormSetStreamMinBytes(int64_t bytes);
MS_GROUPNORM_EXPORT const char *MsGroupNormActiveIsa();
MS_GROUPNORM_EXPORT int MsGroupNormSelectIsa(const char *isa);

}  // extern "C"
