// Exported entry points of the fused GroupNorm + SiLU in libms_groupnorm_cpu.so: the plain
// C API (MsGroupNormSiluForward / MsGroupNormSiluBackward, for ctypes) and MindSpore's aot
// ABI (GroupNormSilu / GroupNormSiluGrad with their InferShape and InferType hooks).
// Same validation and dtype rules as GroupNorm's entry points (group_norm_aot.cc); swish_scale
// is the k of z = y * sigmoid(k * y) (1 = SiLU). float64 is rejected (kBadDtype): the Python
// layer runs float64 as the unfused pair.
#include <type_traits>
#include <vector>

#include "aot_abi.h"
#include "group_norm_silu_cpu.h"

// GroupNorm's infer hooks (group_norm_aot.cc): the fused op's outputs have the same shapes and
// dtypes. Declared exported, as defined: a hidden declaration would hide the exported symbol.
extern "C" {
MS_GROUPNORM_EXPORT std::vector<std::vector<int64_t>> GroupNormInferShape(int *ndims, int64_t **shapes,
                                                                          mindspore::AotExtra *extra);
MS_GROUPNORM_EXPORT std::vector<mindspore::TypeId> GroupNormInferType(std::vector<mindspore::TypeId> types,
                                                                      mindspore::AotExtra *extra);
MS_GROUPNORM_EXPORT std::vector<std::vector<int64_t>> GroupNormGradInferShape(int *ndims, int64_t **shapes,
                                                                              mindspore::AotExtra *extra);
MS_GROUPNORM_EXPORT std::vector<mindspore::TypeId> GroupNormGradInferType(std::vector<mindspore::TypeId> types,
                                                                          mindspore::AotExtra *extra);
}

namespace {

using namespace ms_groupnorm;  // NOLINT: storage types, sizes, masks, the aot_abi.h helpers and status codes

int RunSiluForward(const void *x, const void *gamma, const void *beta, void *z, void *mean, void *rstd,
                   const GroupNormSizes &s, float eps, float swish_k, DType data, DType stat) {
  const int status = CheckForwardCall(s, data, stat, /*float64=*/false, x, z, mean, rstd);
  if (status != kOk) return status;
  DispatchDTypes(data, stat, [&](auto t, auto u) {
    using T = decltype(t);
    using U = decltype(u);
    if constexpr (!std::is_same_v<T, double>) {
      ms_groupnorm::GroupNormSiluForward<T, U>(static_cast<const T *>(x), static_cast<const U *>(gamma),
                                               static_cast<const U *>(beta), static_cast<T *>(z),
                                               static_cast<U *>(mean), static_cast<U *>(rstd), s, eps, swish_k);
    }
  });
  return kOk;
}

int RunSiluBackward(const void *dz, const void *x, const void *mean, const void *rstd, const void *gamma,
                    const void *beta, void *dx, void *dgamma, void *dbeta, const GroupNormSizes &s, float swish_k,
                    DType data, DType stat, OutputMask mask) {
  const int status = CheckBackwardCall(s, data, stat, /*float64=*/false, mask, dz, x, mean, rstd, dx, dgamma, dbeta);
  if (status != kOk) return status;
  DispatchDTypes(data, stat, [&](auto t, auto u) {
    using T = decltype(t);
    using U = decltype(u);
    if constexpr (!std::is_same_v<T, double>) {
      ms_groupnorm::GroupNormSiluBackward<T, U>(
          static_cast<const T *>(dz), static_cast<const T *>(x), static_cast<const U *>(mean),
          static_cast<const U *>(rstd), static_cast<const U *>(gamma), static_cast<const U *>(beta),
          static_cast<T *>(dx), static_cast<U *>(dgamma), static_cast<U *>(dbeta), s, mask, swish_k);
    }
  });
  return kOk;
}
}  // namespace

extern "C" {

MS_GROUPNORM_EXPORT int MsGroupNormSiluForward(const void *x, const void *gamma, const void *beta, void *z,
                                               void *mean, void *rstd, int64_t N, int64_t C, int64_t HxW,
                                               int64_t group, float eps, float swish_scale, const char *data_dtype,
                                               const char *stat_dtype) {
  const GroupNormSizes s{N, C, HxW, group};
  return RunSiluForward(x, gamma, beta, z, mean, rstd, s, eps, swish_scale, ParseDType(data_dtype),
                        ParseDType(stat_dtype));
}

MS_GROUPNORM_EXPORT int MsGroupNormSiluBackward(const void *dz, const void *x, const void *mean, const void *rstd,
                                                const void *gamma, const void *beta, void *dx, void *dgamma,
                                                void *dbeta, int64_t N, int64_t C, int64_t HxW, int64_t group,
                                                float swish_scale, const char *data_dtype, const char *stat_dtype,
                                                int dx_is_require, int dgamma_is_require, int dbeta_is_require) {
  const GroupNormSizes s{N, C, HxW, group};
  const OutputMask mask{dx_is_require != 0, dgamma_is_require != 0, dbeta_is_require != 0};
  return RunSiluBackward(dz, x, mean, rstd, gamma, beta, dx, dgamma, dbeta, s, swish_scale, ParseDType(data_dtype),
                         ParseDType(stat_dtype), mask);
}

// params: x, gamma, beta | z, mean, rstd (empty gamma/beta: ones/zeros); attrs: group, eps, swish_scale.
MS_GROUPNORM_EXPORT int GroupNormSilu(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes,
                                      void * /*stream*/, void *extra_ptr) {
  SiluForwardCall call;
  const int status = ReadSiluForwardCall(nparam, params, ndims, shapes, dtypes, extra_ptr, &call);
  if (status != kOk) return status;
  using C = SiluForwardCall;
  return RunSiluForward(params[C::kX], call.gamma_numel == 0 ? nullptr : params[C::kGamma],
                        call.beta_numel == 0 ? nullptr : params[C::kBeta], params[C::kZ], params[C::kMean],
                        params[C::kRstd], call.s, call.eps, call.swish_k, call.data, call.stat);
}

MS_GROUPNORM_EXPORT std::vector<std::vector<int64_t>> GroupNormSiluInferShape(int *ndims, int64_t **shapes,
                                                                              mindspore::AotExtra *extra) {
  return GroupNormInferShape(ndims, shapes, extra);  // z like x, mean/rstd (N, group)
}

MS_GROUPNORM_EXPORT std::vector<mindspore::TypeId> GroupNormSiluInferType(std::vector<mindspore::TypeId> types,
                                                                          mindspore::AotExtra *extra) {
  return GroupNormInferType(types, extra);
}

// params: dz, x, mean, rstd, gamma, beta | dx, dgamma, dbeta (empty gamma/beta: ones/zeros).
// attrs: group, swish_scale, dx_is_require, dgamma_is_require, dbeta_is_require.
MS_GROUPNORM_EXPORT int GroupNormSiluGrad(int nparam, void **params, int *ndims, int64_t **shapes,
                                          const char **dtypes, void * /*stream*/, void *extra_ptr) {
  GroupNormSizes s;
  int status = ReadGroupedSizes(nparam, 9, params, ndims, shapes, dtypes, extra_ptr, BackwardTensors::kX, &s);
  if (status != kOk) return status;
  auto *extra = static_cast<mindspore::AotExtra *>(extra_ptr);
  float swish_k = 0.0f;
  if (!ReadFloatAttr(extra, "swish_scale", &swish_k)) return kBadAttr;
  const OutputMask mask = ReadMask(extra);
  using B = BackwardTensors;
  B t(/*with_beta=*/true);
  status = CheckBackwardTensors(ndims, shapes, dtypes, s, mask, s.N * s.G, &t);
  if (status != kOk) return status;
  return RunSiluBackward(params[B::kDy], params[B::kX], params[B::kMean], params[B::kRstd],
                         t.gamma_numel == 0 ? nullptr : params[B::kGamma],
                         t.beta_numel == 0 ? nullptr : params[B::kBeta], params[t.dx], params[t.dgamma],
                         params[t.dbeta], s, swish_k, t.data, t.stat, mask);
}

MS_GROUPNORM_EXPORT std::vector<std::vector<int64_t>> GroupNormSiluGradInferShape(int *ndims, int64_t **shapes,
                                                                                  mindspore::AotExtra *extra) {
  return GroupNormGradInferShape(ndims, shapes, extra);  // dx like x (input 1), dgamma/dbeta (C,)
}

MS_GROUPNORM_EXPORT std::vector<mindspore::TypeId> GroupNormSiluGradInferType(std::vector<mindspore::TypeId> types,
                                                                              mindspore::AotExtra *extra) {
  return GroupNormGradInferType(types, extra);  // dx follows x; dgamma, dbeta follow mean
}

}  // extern "C"
