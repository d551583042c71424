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

#include "c_api.h"  // MS_GROUPNORM_EXPORT, and the plain C API the aot files define too

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
// contract in ms_groupnorm/ops/checks.py rejects it) takes float64 statistics only.
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

// ---- checks shared by every entry point, each in one order, so that GroupNorm's and the
// fused op's entry points (and the AscendC twin's shim) refuse a bad call with the same status.

// A plain call's sizes, dtypes and data pointers (nullptr gamma/beta mean ones/zeros; an output
// whose mask bit is off may be nullptr). float64: whether the operator has a float64 kernel.
inline int CheckForwardCall(const GroupNormSizes &s, DType data, DType stat, bool float64, const void *x,
                            const void *out, const void *mean, const void *rstd) {
  if (!ValidSizes(s)) return kBadShape;
  if (!ValidDTypePair(data, stat) || (!float64 && data == DType::kFloat64)) return kBadDtype;
  if (s.N * s.C > 0 && (mean == nullptr || rstd == nullptr)) return kNullPointer;
  if (s.N * s.C * s.HxW > 0 && (x == nullptr || out == nullptr)) return kNullPointer;
  return kOk;
}

inline int CheckBackwardCall(const GroupNormSizes &s, DType data, DType stat, bool float64, OutputMask mask,
                             const void *dy, const void *x, const void *mean, const void *rstd, const void *dx,
                             const void *dgamma, const void *dbeta) {
  if (!ValidSizes(s)) return kBadShape;
  if (!ValidDTypePair(data, stat) || (!float64 && data == DType::kFloat64)) return kBadDtype;
  const bool empty = s.N * s.HxW == 0;
  if (!empty && (dy == nullptr || x == nullptr || mean == nullptr || rstd == nullptr)) return kNullPointer;
  if ((mask.dx && !empty && dx == nullptr) || (mask.dgamma && s.C > 0 && dgamma == nullptr) ||
      (mask.dbeta && s.C > 0 && dbeta == nullptr)) {
    return kNullPointer;
  }
  return kOk;
}

// An aot call with `expected` params: the pointers, (N, C, HxW) of params[input] and the
// "group" attribute. kOk with *s filled, or the status.
inline int ReadGroupedSizes(int nparam, int expected, void **params, int *ndims, int64_t **shapes,
                            const char **dtypes, void *extra_ptr, int input, GroupNormSizes *s) {
  if (!ValidAotArguments(nparam, expected, params, ndims, shapes, dtypes)) return kBadParamCount;
  if (!SizesFromInput(ndims[input], shapes[input], s)) return kBadRank;
  if (!ReadIntAttr(static_cast<mindspore::AotExtra *>(extra_ptr), "group", &s->G)) return kBadAttr;
  if (!ValidSizes(*s)) return kBadShape;
  return kOk;
}

// The tensors of a forward aot call, params x, gamma, beta | out, mean, rstd (an empty
// gamma/beta means ones/zeros), checked against the sizes, mean/rstd holding stat_numel
// elements. kOk with *t filled, or the status.
struct ForwardTensors {
  enum { kX, kGamma, kBeta, kOut, kMean, kRstd };
  DType data = DType::kInvalid;
  DType stat = DType::kInvalid;
  int64_t gamma_numel = 0;  // C, or 0 for ones
  int64_t beta_numel = 0;   // C, or 0 for zeros
};

inline int CheckForwardTensors(int *ndims, int64_t **shapes, const char **dtypes, const GroupNormSizes &s,
                               int64_t stat_numel, ForwardTensors *t) {
  using F = ForwardTensors;
  t->data = ParseDType(dtypes[F::kX]);
  t->stat = ParseDType(dtypes[F::kGamma]);
  if (ParseDType(dtypes[F::kOut]) != t->data) return kBadDtype;
  for (int i : {F::kBeta, F::kMean, F::kRstd}) {
    if (ParseDType(dtypes[i]) != t->stat) return kBadDtype;
  }
  const int64_t numel = s.N * s.C * s.HxW;
  t->gamma_numel = NumElements(ndims[F::kGamma], shapes[F::kGamma]);
  t->beta_numel = NumElements(ndims[F::kBeta], shapes[F::kBeta]);
  if ((t->gamma_numel != s.C && t->gamma_numel != 0) || (t->beta_numel != s.C && t->beta_numel != 0) ||
      NumElements(ndims[F::kOut], shapes[F::kOut]) != numel ||
      NumElements(ndims[F::kMean], shapes[F::kMean]) != stat_numel ||
      NumElements(ndims[F::kRstd], shapes[F::kRstd]) != stat_numel) {
    return kBadShape;
  }
  return kOk;
}

// The tensors of a backward aot call, params dy, x, mean, rstd, gamma[, beta] | dx, dgamma,
// dbeta (beta for the fused op only; an empty gamma/beta means ones/zeros), checked against the
// sizes and mask, mean/rstd holding stat_numel elements. kOk with *t filled, or the status.
struct BackwardTensors {
  enum { kDy, kX, kMean, kRstd, kGamma, kBeta };
  explicit BackwardTensors(bool with_beta) : beta(with_beta), dx(with_beta ? 6 : 5), dgamma(dx + 1), dbeta(dx + 2) {}
  bool beta;  // whether params[kBeta] is beta
  int dx, dgamma, dbeta;  // the outputs' indices
  DType data = DType::kInvalid;
  DType stat = DType::kInvalid;
  int64_t gamma_numel = 0;
  int64_t beta_numel = 0;
};

inline int CheckBackwardTensors(int *ndims, int64_t **shapes, const char **dtypes, const GroupNormSizes &s,
                                OutputMask mask, int64_t stat_numel, BackwardTensors *t) {
  using B = BackwardTensors;
  t->data = ParseDType(dtypes[B::kX]);
  t->stat = ParseDType(dtypes[B::kMean]);
  if (ParseDType(dtypes[B::kDy]) != t->data || ParseDType(dtypes[t->dx]) != t->data) return kBadDtype;
  for (int i : {static_cast<int>(B::kRstd), static_cast<int>(B::kGamma), t->dgamma, t->dbeta}) {
    if (ParseDType(dtypes[i]) != t->stat) return kBadDtype;
  }
  if (t->beta && ParseDType(dtypes[B::kBeta]) != t->stat) return kBadDtype;
  const int64_t numel = s.N * s.C * s.HxW;
  t->gamma_numel = NumElements(ndims[B::kGamma], shapes[B::kGamma]);
  t->beta_numel = t->beta ? NumElements(ndims[B::kBeta], shapes[B::kBeta]) : 0;
  if (NumElements(ndims[B::kDy], shapes[B::kDy]) != numel ||
      NumElements(ndims[B::kMean], shapes[B::kMean]) != stat_numel ||
      NumElements(ndims[B::kRstd], shapes[B::kRstd]) != stat_numel || (t->gamma_numel != s.C && t->gamma_numel != 0) ||
      (t->beta_numel != s.C && t->beta_numel != 0) || (mask.dx && NumElements(ndims[t->dx], shapes[t->dx]) != numel) ||
      (mask.dgamma && NumElements(ndims[t->dgamma], shapes[t->dgamma]) != s.C) ||
      (mask.dbeta && NumElements(ndims[t->dbeta], shapes[t->dbeta]) != s.C)) {
    return kBadShape;
  }
  return kOk;
}

// The aot call of the fused forward GroupNormSilu (params x, gamma, beta | z, mean, rstd; attrs
// group, eps, swish_scale), read and checked in one order, so that the CPU entry point and the
// AscendC twin's shim refuse a bad call with the same status. Returns kOk with *call filled,
// or the status.
struct SiluForwardCall : ForwardTensors {
  enum { kZ = kOut };
  GroupNormSizes s;
  float eps = 0.0f;
  float swish_k = 0.0f;
};

inline int ReadSiluForwardCall(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes,
                               void *extra_ptr, SiluForwardCall *call) {
  const int status =
      ReadGroupedSizes(nparam, 6, params, ndims, shapes, dtypes, extra_ptr, SiluForwardCall::kX, &call->s);
  if (status != kOk) return status;
  auto *extra = static_cast<mindspore::AotExtra *>(extra_ptr);
  if (!ReadFloatAttr(extra, "eps", &call->eps) || !ReadFloatAttr(extra, "swish_scale", &call->swish_k)) {
    return kBadAttr;
  }
  return CheckForwardTensors(ndims, shapes, dtypes, call->s, call->s.N * call->s.G, call);
}

}  // namespace ms_groupnorm

