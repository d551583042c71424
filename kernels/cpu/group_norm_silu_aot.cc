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
  if (!ValidSizes(s)) return kBadShape;
  if (!ValidDTypePair(data, stat) || data == DType::kFloat64) return kBadDtype;
  if (s.N * s.C > 0 && (mean == nullptr || rstd == nullptr)) return kNullPointer;
  if (s.N * s.C * s.HxW > 0 && (x == nullptr || z == nullptr)) return kNullPointer;
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
  if (!ValidSizes(s)) return kBadShape;
  if (!ValidDTypePair(data, stat) || data == DType::kFloat64) return kBadDtype;
  const bool empty = s.N * s.HxW == 0;
  if (!empty && (dz == nullptr || x == nullptr || mean == nullptr || rstd == nullptr)) return kNullPointer;
  if ((mask.dx && !empty && dx == nullptr) || (mask.dgamma && s.C > 0 && dgamma == nullptr) ||
      (mask.dbeta && s.C > 0 && dbeta == nullptr)) {
    return kNullPointer;
  }
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
  if (!ValidAotArguments(nparam, 9, params, ndims, shapes, dtypes)) return kBadParamCount;
  auto *extra = static_cast<mindspore::AotExtra *>(extra_ptr);
  enum { kDz, kX, kMean, kRstd, kGamma, kBeta, kDx, kDgamma, kDbeta };
  GroupNormSizes s;
  if (!SizesFromInput(ndims[kX], shapes[kX], &s)) return kBadRank;
  if (!ReadIntAttr(extra, "group", &s.G)) return kBadAttr;
  if (!ValidSizes(s)) return kBadShape;
  float swish_k = 0.0f;
  if (!ReadFloatAttr(extra, "swish_scale", &swish_k)) return kBadAttr;
  const OutputMask mask = ReadMask(extra);

  const DType data = ParseDType(dtypes[kX]);
  const DType stat = ParseDType(dtypes[kMean]);
  if (ParseDType(dtypes[kDz]) != data || ParseDType(dtypes[kDx]) != data) return kBadDtype;
  for (int i : {kRstd, kGamma, kBeta, kDgamma, kDbeta}) {
    if (ParseDType(dtypes[i]) != stat) return kBadDtype;
  }
  const int64_t numel = s.N * s.C * s.HxW;
  const int64_t gamma_numel = NumElements(ndims[kGamma], shapes[kGamma]);
  const int64_t beta_numel = NumElements(ndims[kBeta], shapes[kBeta]);
  if (NumElements(ndims[kDz], shapes[kDz]) != numel || NumElements(ndims[kMean], shapes[kMean]) != s.N * s.G ||
      NumElements(ndims[kRstd], shapes[kRstd]) != s.N * s.G || (gamma_numel != s.C && gamma_numel != 0) ||
      (beta_numel != s.C && beta_numel != 0) || (mask.dx && NumElements(ndims[kDx], shapes[kDx]) != numel) ||
      (mask.dgamma && NumElements(ndims[kDgamma], shapes[kDgamma]) != s.C) ||
      (mask.dbeta && NumElements(ndims[kDbeta], shapes[kDbeta]) != s.C)) {
    return kBadShape;
  }
  return RunSiluBackward(params[kDz], params[kX], params[kMean], params[kRstd],
                         gamma_numel == 0 ? nullptr : params[kGamma], beta_numel == 0 ? nullptr : params[kBeta],
                         params[kDx], params[kDgamma], params[kDbeta], s, swish_k, data, stat, mask);
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
