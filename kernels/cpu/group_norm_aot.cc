// Exported GroupNorm entry points of libms_groupnorm_cpu.so (the fused GroupNorm + SiLU
// ones are in group_norm_silu_aot.cc).
//
// 1. A plain C API (MsGroupNormForward / MsGroupNormBackward) with explicit sizes,
//    used by ctypes for kernel-only benchmarks and tests.
// 2. MindSpore's aot ABI (GroupNorm / GroupNormGrad plus their InferShape and
//    InferType hooks), used by mindspore.ops.Custom(func_type="aot").
// Every entry point validates what it is handed and returns a non-zero status instead
// of touching memory whose size it cannot vouch for.
#include <cstdio>
#include <cstring>
#include <utility>

#include "aot_abi.h"
#include "group_norm_cpu.h"

namespace {

using namespace ms_groupnorm;  // NOLINT: storage types, sizes, masks, the aot_abi.h helpers and status codes

int RunBackward(const void *dy, const void *x, const void *mean, const void *rstd, const void *gamma, void *dx,
                void *dgamma, void *dbeta, const GroupNormSizes &s, DType data, DType stat, OutputMask mask) {
  const int status = CheckBackwardCall(s, data, stat, /*float64=*/true, mask, dy, x, mean, rstd, dx, dgamma, dbeta);
  if (status != kOk) return status;
  DispatchDTypes(data, stat, [&](auto t, auto u) {
    using T = decltype(t);
    using U = decltype(u);
    ms_groupnorm::GroupNormBackward<T, U>(
        static_cast<const T *>(dy), static_cast<const T *>(x), static_cast<const U *>(mean),
        static_cast<const U *>(rstd), static_cast<const U *>(gamma), static_cast<T *>(dx), static_cast<U *>(dgamma),
        static_cast<U *>(dbeta), s, mask);
  });
  return kOk;
}

int RunForward(const void *x, const void *gamma, const void *beta, void *y, void *mean, void *rstd,
               const GroupNormSizes &s, float eps, DType data, DType stat) {
  const int status = CheckForwardCall(s, data, stat, /*float64=*/true, x, y, mean, rstd);
  if (status != kOk) return status;
  DispatchDTypes(data, stat, [&](auto t, auto u) {
    using T = decltype(t);
    using U = decltype(u);
    ms_groupnorm::GroupNormForward<T, U>(static_cast<const T *>(x), static_cast<const U *>(gamma),
                                         static_cast<const U *>(beta), static_cast<T *>(y), static_cast<U *>(mean),
                                         static_cast<U *>(rstd), s, eps);
  });
  return kOk;
}

// ---- the aot bodies (aot_abi.h reads and checks the ABI) ----
// The forward aot body once group and eps are known. params: x, gamma, beta | y, mean,
// rstd (empty gamma/beta mean ones/zeros); mean and rstd must hold `stat_numel` elements.
int ForwardFromAot(void **params, int *ndims, int64_t **shapes, const char **dtypes, const GroupNormSizes &s, float eps,
                   int64_t stat_numel) {
  using F = ForwardTensors;
  F t;
  const int status = CheckForwardTensors(ndims, shapes, dtypes, s, stat_numel, &t);
  if (status != kOk) return status;
  return RunForward(params[F::kX], t.gamma_numel == 0 ? nullptr : params[F::kGamma],
                    t.beta_numel == 0 ? nullptr : params[F::kBeta], params[F::kOut], params[F::kMean],
                    params[F::kRstd], s, eps, t.data, t.stat);
}

// The backward aot body once group and the mask are known. params: dy, x, mean, rstd,
// gamma | dx, dgamma, dbeta (an empty gamma means ones); mean and rstd must hold
// `stat_numel` elements, of which the kernel reads the first N*group.
int BackwardFromAot(void **params, int *ndims, int64_t **shapes, const char **dtypes, const GroupNormSizes &s,
                    OutputMask mask, int64_t stat_numel) {
  using B = BackwardTensors;
  B t(/*with_beta=*/false);
  const int status = CheckBackwardTensors(ndims, shapes, dtypes, s, mask, stat_numel, &t);
  if (status != kOk) return status;
  const void *gamma = t.gamma_numel == 0 ? nullptr : params[B::kGamma];
  return RunBackward(params[B::kDy], params[B::kX], params[B::kMean], params[B::kRstd], gamma, params[t.dx],
                     params[t.dgamma], params[t.dbeta], s, t.data, t.stat, mask);
}

// ---- run-time num_groups / eps (graph variables, e.g. ms.mutable) ----
// A graph variable has no value while the graph compiles, so it cannot be an attribute;
// these ops take it as a one-element tensor input and read it when they run. The
// statistics' shape cannot depend on a value unknown at infer time, so mean/rstd are
// (N, C) buffers: the N*group statistics in (N, group) row-major order first, zeros after
// (group divides C, so N*group <= N*C whenever C > 0).

// The one-element int64 tensor params[index] as group, checked against C; false (after
// one line on stderr naming the parameter: this runs inside a graph, where no Python
// exception can be raised) when it is not a valid group count.
bool ReadRuntimeGroup(void **params, int *ndims, int64_t **shapes, const char **dtypes, int index,
                      GroupNormSizes *s) {
  if (std::strcmp(dtypes[index], "int64") != 0 || NumElements(ndims[index], shapes[index]) != 1 ||
      params[index] == nullptr) {
    std::fprintf(stderr, "ms_groupnorm: num_groups must reach the kernel as one int64 element\n");
    return false;
  }
  s->G = *static_cast<const int64_t *>(params[index]);
  if (s->G <= 0 || s->C % s->G != 0) {
    std::fprintf(stderr, "ms_groupnorm: num_groups=%lld must be > 0 and divide C=%lld (the input's dimension 1)\n",
                 static_cast<long long>(s->G), static_cast<long long>(s->C));
    return false;
  }
  return true;
}

bool ReadRuntimeEps(void **params, int *ndims, int64_t **shapes, const char **dtypes, int index, float *eps) {
  if (std::strcmp(dtypes[index], "float32") != 0 || NumElements(ndims[index], shapes[index]) != 1 ||
      params[index] == nullptr) {
    std::fprintf(stderr, "ms_groupnorm: eps must reach the kernel as one float32 element\n");
    return false;
  }
  *eps = *static_cast<const float *>(params[index]);
  return true;
}

// Zeroes elements [used, total) of a stats buffer of element size `bytes`: the unused
// tail of the (N, C) run-time-group statistics is defined, not stale memory.
void ZeroTail(void *buffer, int64_t used, int64_t total, size_t bytes) {
  if (total > used) std::memset(static_cast<char *>(buffer) + used * bytes, 0, (total - used) * bytes);
}

size_t StatBytes(const char *dtype) {
  switch (ParseDType(dtype)) {
    case DType::kFloat64:
      return 8;
    case DType::kFloat32:
      return 4;
    default:
      return 2;
  }
}

}  // namespace

extern "C" {

// ---------------------------------------------------------------- plain C API
MS_GROUPNORM_EXPORT int MsGroupNormBackward(const void *dy, const void *x, const void *mean, const void *rstd, const void *gamma,
                        void *dx, void *dgamma, void *dbeta, int64_t N, int64_t C, int64_t HxW, int64_t group,
                        const char *data_dtype, const char *stat_dtype, int dx_is_require, int dgamma_is_require,
                        int dbeta_is_require) {
  const GroupNormSizes s{N, C, HxW, group};
  const OutputMask mask{dx_is_require != 0, dgamma_is_require != 0, dbeta_is_require != 0};
  return RunBackward(dy, x, mean, rstd, gamma, dx, dgamma, dbeta, s, ParseDType(data_dtype), ParseDType(stat_dtype),
                     mask);
}

MS_GROUPNORM_EXPORT int MsGroupNormForward(const void *x, const void *gamma, const void *beta, void *y, void *mean, void *rstd, int64_t N,
                       int64_t C, int64_t HxW, int64_t group, float eps, const char *data_dtype,
                       const char *stat_dtype) {
  const GroupNormSizes s{N, C, HxW, group};
  return RunForward(x, gamma, beta, y, mean, rstd, s, eps, ParseDType(data_dtype), ParseDType(stat_dtype));
}

// ---------------------------------------------------------------- aot: backward
// params: dy, x, mean, rstd, gamma | dx, dgamma, dbeta. An empty gamma means ones.
// attrs: group, dx_is_require, dgamma_is_require, dbeta_is_require.
MS_GROUPNORM_EXPORT int GroupNormGrad(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void * /*stream*/,
                  void *extra_ptr) {
  GroupNormSizes s;
  const int status = ReadGroupedSizes(nparam, 8, params, ndims, shapes, dtypes, extra_ptr, 1, &s);
  if (status != kOk) return status;
  return BackwardFromAot(params, ndims, shapes, dtypes, s, ReadMask(static_cast<mindspore::AotExtra *>(extra_ptr)),
                         s.N * s.G);
}

// dx has x's shape, dgamma/dbeta are (C,); an output whose mask bit is off is (0,).
MS_GROUPNORM_EXPORT std::vector<std::vector<int64_t>> GroupNormGradInferShape(int *ndims, int64_t **shapes, mindspore::AotExtra *extra) {
  const OutputMask mask = ReadMask(extra);
  const std::vector<int64_t> x_shape(shapes[1], shapes[1] + ndims[1]);
  const std::vector<int64_t> channels{ChannelsOf(ndims[1], shapes[1])};
  const std::vector<int64_t> none{0};
  return {mask.dx ? x_shape : none, mask.dgamma ? channels : none, mask.dbeta ? channels : none};
}

MS_GROUPNORM_EXPORT std::vector<mindspore::TypeId> GroupNormGradInferType(std::vector<mindspore::TypeId> types,
                                                      mindspore::AotExtra * /*extra*/) {
  return {types[1], types[2], types[2]};  // dx follows x; dgamma, dbeta follow mean
}

// ---------------------------------------------------------------- aot: forward
// params: x, gamma, beta | y, mean, rstd. Empty gamma/beta mean ones/zeros.
// attrs: group, eps. mean/rstd have shape (N, group) and gamma's dtype.
MS_GROUPNORM_EXPORT int GroupNorm(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void * /*stream*/,
              void *extra_ptr) {
  GroupNormSizes s;
  const int status = ReadGroupedSizes(nparam, 6, params, ndims, shapes, dtypes, extra_ptr, 0, &s);
  if (status != kOk) return status;
  float eps = 0.0f;
  if (!ReadFloatAttr(static_cast<mindspore::AotExtra *>(extra_ptr), "eps", &eps)) return kBadAttr;
  return ForwardFromAot(params, ndims, shapes, dtypes, s, eps, s.N * s.G);
}

MS_GROUPNORM_EXPORT std::vector<std::vector<int64_t>> GroupNormInferShape(int *ndims, int64_t **shapes, mindspore::AotExtra *extra) {
  int64_t group = -1;
  ReadIntAttr(extra, "group", &group);
  const int64_t batch = ndims[0] >= 2 ? shapes[0][0] : -1;  // [-2] is an unknown rank
  const std::vector<int64_t> stats{batch, group};
  return {std::vector<int64_t>(shapes[0], shapes[0] + ndims[0]), stats, stats};
}

MS_GROUPNORM_EXPORT std::vector<mindspore::TypeId> GroupNormInferType(std::vector<mindspore::TypeId> types,
                                                  mindspore::AotExtra * /*extra*/) {
  return {types[0], types[1], types[1]};  // y follows x; mean, rstd follow gamma
}

// ------------------------------------------------ aot: forward, run-time num_groups / eps
// params: x, gamma, beta, group (int64, 1 element), eps (float32, 1 element) | y, mean, rstd.
// mean/rstd are (N, C): see "run-time num_groups / eps" above.
MS_GROUPNORM_EXPORT int GroupNormRuntimeGroup(int nparam, void **params, int *ndims, int64_t **shapes,
                                              const char **dtypes, void * /*stream*/, void * /*extra*/) {
  if (!ValidAotArguments(nparam, 8, params, ndims, shapes, dtypes)) return kBadParamCount;
  GroupNormSizes s;
  if (!SizesFromInput(ndims[0], shapes[0], &s)) return kBadRank;
  float eps = 0.0f;
  if (!ReadRuntimeGroup(params, ndims, shapes, dtypes, 3, &s) || !ReadRuntimeEps(params, ndims, shapes, dtypes, 4, &eps)) {
    return kBadRuntimeScalar;
  }
  if (!ValidSizes(s)) return kBadShape;
  // The tensors without the two scalar inputs, in GroupNorm's order.
  void *tensors[6] = {params[0], params[1], params[2], params[5], params[6], params[7]};
  int tensor_ndims[6] = {ndims[0], ndims[1], ndims[2], ndims[5], ndims[6], ndims[7]};
  int64_t *tensor_shapes[6] = {shapes[0], shapes[1], shapes[2], shapes[5], shapes[6], shapes[7]};
  const char *tensor_dtypes[6] = {dtypes[0], dtypes[1], dtypes[2], dtypes[5], dtypes[6], dtypes[7]};
  if (s.N * s.C == 0) {  // no statistics to compute, and no room for N*group of them when C == 0
    const bool empty_outputs = NumElements(ndims[5], shapes[5]) == 0 && NumElements(ndims[6], shapes[6]) == 0;
    return empty_outputs ? kOk : kBadShape;
  }
  const int status = ForwardFromAot(tensors, tensor_ndims, tensor_shapes, tensor_dtypes, s, eps, s.N * s.C);
  if (status == kOk) {
    const size_t bytes = StatBytes(dtypes[6]);
    ZeroTail(params[6], s.N * s.G, s.N * s.C, bytes);
    ZeroTail(params[7], s.N * s.G, s.N * s.C, bytes);
  }
  return status;
}

// y has x's shape; mean and rstd are (N, C).
MS_GROUPNORM_EXPORT std::vector<std::vector<int64_t>> GroupNormRuntimeGroupInferShape(int *ndims, int64_t **shapes,
                                                                                      mindspore::AotExtra * /*extra*/) {
  const int64_t batch = ndims[0] >= 2 ? shapes[0][0] : -1;  // [-2] is an unknown rank
  const std::vector<int64_t> stats{batch, ChannelsOf(ndims[0], shapes[0])};
  return {std::vector<int64_t>(shapes[0], shapes[0] + ndims[0]), stats, stats};
}

MS_GROUPNORM_EXPORT std::vector<mindspore::TypeId> GroupNormRuntimeGroupInferType(std::vector<mindspore::TypeId> types,
                                                                                  mindspore::AotExtra * /*extra*/) {
  return {types[0], types[1], types[1]};  // y follows x; mean, rstd follow gamma
}

// ------------------------------------------------ aot: backward, run-time num_groups
// params: dy, x, mean, rstd (N, C as GroupNormRuntimeGroup returns them), gamma,
// group (int64, 1 element) | dx, dgamma, dbeta. attrs: the three mask bits.
MS_GROUPNORM_EXPORT int GroupNormGradRuntimeGroup(int nparam, void **params, int *ndims, int64_t **shapes,
                                                  const char **dtypes, void * /*stream*/, void *extra_ptr) {
  if (!ValidAotArguments(nparam, 9, params, ndims, shapes, dtypes)) return kBadParamCount;
  auto *extra = static_cast<mindspore::AotExtra *>(extra_ptr);
  GroupNormSizes s;
  if (!SizesFromInput(ndims[1], shapes[1], &s)) return kBadRank;
  if (!ReadRuntimeGroup(params, ndims, shapes, dtypes, 5, &s)) return kBadRuntimeScalar;
  if (!ValidSizes(s)) return kBadShape;
  const OutputMask mask = ReadMask(extra);
  void *tensors[8] = {params[0], params[1], params[2], params[3], params[4], params[6], params[7], params[8]};
  int tensor_ndims[8] = {ndims[0], ndims[1], ndims[2], ndims[3], ndims[4], ndims[6], ndims[7], ndims[8]};
  int64_t *tensor_shapes[8] = {shapes[0], shapes[1], shapes[2], shapes[3], shapes[4], shapes[6], shapes[7], shapes[8]};
  const char *tensor_dtypes[8] = {dtypes[0], dtypes[1], dtypes[2], dtypes[3], dtypes[4], dtypes[6], dtypes[7], dtypes[8]};
  if (s.C == 0) {  // no channels: dx is empty and dgamma/dbeta have no elements
    return kOk;
  }
  return BackwardFromAot(tensors, tensor_ndims, tensor_shapes, tensor_dtypes, s, mask, s.N * s.C);
}

MS_GROUPNORM_EXPORT std::vector<std::vector<int64_t>> GroupNormGradRuntimeGroupInferShape(int *ndims, int64_t **shapes,
                                                                                          mindspore::AotExtra *extra) {
  return GroupNormGradInferShape(ndims, shapes, extra);  // same outputs; x is input 1 in both
}

MS_GROUPNORM_EXPORT std::vector<mindspore::TypeId> GroupNormGradRuntimeGroupInferType(
    std::vector<mindspore::TypeId> types, mindspore::AotExtra *extra) {
  return GroupNormGradInferType(std::move(types), extra);
}

}  // extern "C"
