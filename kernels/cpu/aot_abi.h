// What every aot entry point of libms_groupnorm_cpu.so needs to read MindSpore's aot ABI:
// dtype names and the (data, statistics) dtype pairs, sizes and their overflow checks, the
// parameter arrays, tensor shapes and attributes. Shared by group_norm_aot.cc (GroupNorm)
// and group_norm_silu_aot.cc (the fused GroupNorm + SiLU); the status codes are aot_status.h's.
// Everything is inline (several translation units include it); it needs no kernel header, so
// the AscendC twin's aot shims (kernels/ascendc/twin) use it too.
#pragma once

#include <cstdint>
#include <cstring>

#include "aot_extra.h"
#include "aot_status.h"
#include "group_norm_sizes.h"
#include "half_types.h"

// The library is built with -fvisibility=hidden; only entry points marked so are exported.
#define MS_GROUPNORM_EXPORT __attribute__((visibility("default")))

namespace ms_groupnorm {

enum class DType { kFloat32, kFloat16, kBFloat16, kFloat64, kInvalid };

inline DType ParseDType(const char *name) {
  if (name == nullptr) return DType::kInvalid;
  if (std::strcmp(name, "float32") == 0) return DType::kFloat32;
  if (std::strcmp(name, "float16") == 0) return DType::kFloat16;
  if (std::strcmp(name, "bfloat16") == 0) return DType::kBFloat16;
  if (std::strcmp(name, "float64") == 0) return DType::kFloat64;
  return DType::kInvalid;
}

// Statistics (mean, rstd, gamma, beta, dgamma, dbeta) are either in the data dtype or
// in float32 (mixed precision); float64 data (the layers' float64 support; the aclnn
// contract in ms_groupnorm/_checks.py rejects it) takes float64 statistics only.
inline bool ValidDTypePair(DType data, DType stat) {
  if (data == DType::kFloat64 || stat == DType::kFloat64) return data == stat;
  return data != DType::kInvalid && (stat == data || stat == DType::kFloat32);
}

inline bool ValidSizes(const GroupNormSizes &s) {
  if (s.N < 0 || s.C < 0 || s.HxW < 0 || s.G <= 0 || s.C % s.G != 0) return false;
  int64_t total;
  return !__builtin_mul_overflow(s.N, s.C, &total) && !__builtin_mul_overflow(total, s.HxW, &total);
}

// Calls fn(T{}, U{}) with the storage types of the (data, stat) dtype pair.
template <typename Fn>
inline void DispatchDTypes(DType data, DType stat, Fn fn) {
  const bool mixed = stat == DType::kFloat32 && data != DType::kFloat32;
  switch (data) {
    case DType::kFloat32:
      fn(float{}, float{});
      break;
    case DType::kFloat16:
      if (mixed) fn(Half{}, float{}); else fn(Half{}, Half{});
      break;
    case DType::kBFloat16:
      if (mixed) fn(BFloat16{}, float{}); else fn(BFloat16{}, BFloat16{});
      break;
    case DType::kFloat64:
      fn(double{}, double{});
      break;
    case DType::kInvalid:
      break;
  }
}

inline int64_t NumElements(int ndim, const int64_t *shape) {
  int64_t total = 1;
  for (int i = 0; i < ndim; ++i) {
    if (shape[i] < 0 || __builtin_mul_overflow(total, shape[i], &total)) return -1;
  }
  return total;
}

// Checks the pointers MindSpore hands over; every tensor must have a shape and a dtype.
inline bool ValidAotArguments(int nparam, int expected, void **params, int *ndims, int64_t **shapes,
                              const char **dtypes) {
  if (nparam != expected || params == nullptr || ndims == nullptr || shapes == nullptr || dtypes == nullptr) {
    return false;
  }
  for (int i = 0; i < expected; ++i) {
    if (ndims[i] < 0 || ndims[i] > 8 || (ndims[i] > 0 && shapes[i] == nullptr) || dtypes[i] == nullptr) return false;
  }
  return true;
}

// (N, C, HxW) of an (N, C, *) tensor of rank 2-8; false for anything else.
inline bool SizesFromInput(int ndim, const int64_t *shape, GroupNormSizes *s) {
  if (ndim < 2 || ndim > 8) return false;
  s->N = shape[0];
  s->C = shape[1];
  s->HxW = NumElements(ndim - 2, shape + 2);
  return s->N >= 0 && s->C >= 0 && s->HxW >= 0;
}

inline bool ReadIntAttr(mindspore::AotExtra *extra, const char *name, int64_t *value) {
  if (extra == nullptr || !extra->HasAttr(name)) return false;
  *value = extra->GetAttrInt(name);
  return true;
}

inline bool ReadBoolAttr(mindspore::AotExtra *extra, const char *name, bool fallback) {
  if (extra == nullptr || !extra->HasAttr(name)) return fallback;
  return extra->GetAttrBool(name);
}

inline OutputMask ReadMask(mindspore::AotExtra *extra) {
  return OutputMask{ReadBoolAttr(extra, "dx_is_require", true), ReadBoolAttr(extra, "dgamma_is_require", true),
                    ReadBoolAttr(extra, "dbeta_is_require", true)};
}

// Static channel count of an (N, C, *) shape, or -1 while it is unknown.
inline int64_t ChannelsOf(int ndim, const int64_t *shape) { return ndim >= 2 ? shape[1] : -1; }

inline bool ReadFloatAttr(mindspore::AotExtra *extra, const char *name, float *value) {
  if (extra == nullptr || !extra->HasAttr(name)) return false;
  *value = extra->GetAttrFloat(name);
  return true;
}

// The aot call of the fused forward GroupNormSilu (params x, gamma, beta | z, mean, rstd; attrs
// group, eps, swish_scale; an empty gamma/beta means ones/zeros), read and checked in one
// order, so that the CPU entry point and the AscendC twin's shim refuse a bad call with the
// same status. Returns kOk with *call filled, or the status.
struct SiluForwardCall {
  enum { kX, kGamma, kBeta, kZ, kMean, kRstd };
  GroupNormSizes s;
  float eps = 0.0f;
  float swish_k = 0.0f;
  DType data = DType::kInvalid;
  DType stat = DType::kInvalid;
  int64_t gamma_numel = 0;  // C, or 0 for ones
  int64_t beta_numel = 0;   // C, or 0 for zeros
};

inline int ReadSiluForwardCall(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes,
                               void *extra_ptr, SiluForwardCall *call) {
  using C = SiluForwardCall;
  if (!ValidAotArguments(nparam, 6, params, ndims, shapes, dtypes)) return kBadParamCount;
  auto *extra = static_cast<mindspore::AotExtra *>(extra_ptr);
  GroupNormSizes &s = call->s;
  if (!SizesFromInput(ndims[C::kX], shapes[C::kX], &s)) return kBadRank;
  if (!ReadIntAttr(extra, "group", &s.G)) return kBadAttr;
  if (!ValidSizes(s)) return kBadShape;
  if (!ReadFloatAttr(extra, "eps", &call->eps) || !ReadFloatAttr(extra, "swish_scale", &call->swish_k)) {
    return kBadAttr;
  }
  call->data = ParseDType(dtypes[C::kX]);
  call->stat = ParseDType(dtypes[C::kGamma]);
  if (ParseDType(dtypes[C::kZ]) != call->data) return kBadDtype;
  for (int i : {C::kBeta, C::kMean, C::kRstd}) {
    if (ParseDType(dtypes[i]) != call->stat) return kBadDtype;
  }
  const int64_t numel = s.N * s.C * s.HxW;
  call->gamma_numel = NumElements(ndims[C::kGamma], shapes[C::kGamma]);
  call->beta_numel = NumElements(ndims[C::kBeta], shapes[C::kBeta]);
  if ((call->gamma_numel != s.C && call->gamma_numel != 0) || (call->beta_numel != s.C && call->beta_numel != 0) ||
      NumElements(ndims[C::kZ], shapes[C::kZ]) != numel || NumElements(ndims[C::kMean], shapes[C::kMean]) != s.N * s.G ||
      NumElements(ndims[C::kRstd], shapes[C::kRstd]) != s.N * s.G) {
    return kBadShape;
  }
  return kOk;
}

}  // namespace ms_groupnorm

