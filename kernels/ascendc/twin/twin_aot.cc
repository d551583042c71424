// MindSpore aot shims: run the GroupNormGradMs kernel on the CPU twin behind the same
// aot ABI, parameter order and attribute names as kernels/cpu's GroupNormGrad, so it is
// a drop-in backward for ms_groupnorm on CPU; GroupNormSiluGrad does the same for the
// fused GroupNormSiluGradMs kernel and kernels/cpu's GroupNormSiluGrad.
//   params: dy, x, mean, rstd, gamma | dx, dgamma, dbeta (an empty gamma means ones)
//   attrs:  group, dx_is_require, dgamma_is_require, dbeta_is_require
// The twin device is configured by environment variables read at each launch:
//   MS_GROUPNORM_TWIN_UB (bytes, default 196608), MS_GROUPNORM_TWIN_CORES (default 48),
//   MS_GROUPNORM_TWIN_POLICY (twin::Policy, default 0 = concurrent threads).
// A kernel fault is printed to stderr and returned as status 7.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "../../cpu/aot_extra.h"
#include "../../cpu/aot_status.h"
#include "../op_host/group_norm_grad_ms_tiling.h"
#include "twin_c_api.h"  // GNMS_TWIN_EXPORT
#include "twin_launch.h"

namespace grad_tiling = ms_groupnorm::grad_tiling;  // the tiling this file calls, by its short name

namespace {

using namespace ms_groupnorm;  // NOLINT: the status codes of aot_status.h

bool ParseType(const char *name, grad_tiling::ScalarType *t) {
  if (name == nullptr) return false;
  if (std::strcmp(name, "float32") == 0) *t = grad_tiling::ScalarType::kFloat32;
  else if (std::strcmp(name, "float16") == 0) *t = grad_tiling::ScalarType::kFloat16;
  else if (std::strcmp(name, "bfloat16") == 0) *t = grad_tiling::ScalarType::kBFloat16;
  else return false;
  return true;
}

using ms_groupnorm::tiling::BytesOf;

int64_t NumElements(int ndim, const int64_t *shape) {
  int64_t total = 1;
  for (int i = 0; i < ndim; ++i) {
    if (shape[i] < 0 || __builtin_mul_overflow(total, shape[i], &total)) return -1;
  }
  return total;
}

int64_t EnvInt(const char *name, int64_t fallback) {
  const char *value = std::getenv(name);
  return value == nullptr || *value == '\0' ? fallback : std::strtoll(value, nullptr, 10);
}

bool ReadBool(mindspore::AotExtra *extra, const char *name) {
  return extra == nullptr || !extra->HasAttr(name) ? true : extra->GetAttrBool(name);
}

// The raw pattern of 1.0 in the statistics dtype.
std::vector<uint8_t> Ones(int64_t count, grad_tiling::ScalarType t) {
  std::vector<uint8_t> out(static_cast<size_t>(count * BytesOf(t)));
  const float one = 1.0f;
  const uint16_t half_one = 0x3C00;
  const uint16_t bf16_one = 0x3F80;
  for (int64_t i = 0; i < count; ++i) {
    if (t == grad_tiling::ScalarType::kFloat32) std::memcpy(&out[i * 4], &one, 4);
    else std::memcpy(&out[i * 2], t == grad_tiling::ScalarType::kFloat16 ? &half_one : &bf16_one, 2);
  }
  return out;
}

// The aot body of both backward shims. params: dy (dz), x, mean, rstd, gamma, [beta,] dx,
// dgamma, dbeta; `silu`: GroupNormSiluGrad (beta present, swish_scale given).
int LaunchFromAot(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes, void *extra_ptr,
                  bool silu) {
  const int kDy = 0, kX = 1, kMean = 2, kRstd = 3, kGamma = 4, kBeta = 5;
  const int kDx = silu ? 6 : 5, kDgamma = kDx + 1, kDbeta = kDx + 2;
  if (nparam != (silu ? 9 : 8) || params == nullptr || ndims == nullptr || shapes == nullptr || dtypes == nullptr) {
    return kBadParamCount;
  }
  auto *extra = static_cast<mindspore::AotExtra *>(extra_ptr);
  if (ndims[kX] < 2 || ndims[kX] > 8) return kBadRank;
  grad_tiling::TilingInput in;
  in.N = shapes[kX][0];
  in.C = shapes[kX][1];
  in.HxW = NumElements(ndims[kX] - 2, shapes[kX] + 2);
  if (extra == nullptr || !extra->HasAttr("group")) return kBadAttr;
  in.G = extra->GetAttrInt("group");
  if (silu) {  // required, as in kernels/cpu's GroupNormSiluGrad
    if (!extra->HasAttr("swish_scale")) return kBadAttr;
    in.silu = true;
    in.swishScale = extra->GetAttrFloat("swish_scale");
  }
  in.dxRequired = ReadBool(extra, "dx_is_require");
  in.dgammaRequired = ReadBool(extra, "dgamma_is_require");
  in.dbetaRequired = ReadBool(extra, "dbeta_is_require");
  if (!ParseType(dtypes[kX], &in.dataType) || !ParseType(dtypes[kMean], &in.statType)) return kBadDtype;
  grad_tiling::ScalarType other;
  if (!ParseType(dtypes[kDy], &other) || other != in.dataType) return kBadDtype;
  for (int i : {kRstd, kGamma}) {
    if (!ParseType(dtypes[i], &other) || other != in.statType) return kBadDtype;
  }
  if (silu) {
    if (!ParseType(dtypes[kDx], &other) || other != in.dataType) return kBadDtype;
    for (int i : {kBeta, kDgamma, kDbeta}) {
      if (!ParseType(dtypes[i], &other) || other != in.statType) return kBadDtype;
    }
  }
  if (in.N < 0 || in.C < 0 || in.HxW < 0 || in.G <= 0 || in.C % in.G != 0) return kBadShape;
  const int64_t numel = in.N * in.C * in.HxW;
  const int64_t gammaNumel = NumElements(ndims[kGamma], shapes[kGamma]);
  const int64_t betaNumel = silu ? NumElements(ndims[kBeta], shapes[kBeta]) : 0;
  if (NumElements(ndims[kDy], shapes[kDy]) != numel || NumElements(ndims[kMean], shapes[kMean]) != in.N * in.G ||
      NumElements(ndims[kRstd], shapes[kRstd]) != in.N * in.G || (gammaNumel != in.C && gammaNumel != 0) ||
      (betaNumel != in.C && betaNumel != 0) ||
      (in.dxRequired && NumElements(ndims[kDx], shapes[kDx]) != numel) ||
      (in.dgammaRequired && NumElements(ndims[kDgamma], shapes[kDgamma]) != in.C) ||
      (in.dbetaRequired && NumElements(ndims[kDbeta], shapes[kDbeta]) != in.C)) {
    return kBadShape;
  }
  in.ubBytes = EnvInt("MS_GROUPNORM_TWIN_UB", 196608);
  in.coreNum = EnvInt("MS_GROUPNORM_TWIN_CORES", 48);
  GroupNormGradMsTilingData tiling;
  const int tilingStatus = grad_tiling::ComputeTiling(in, &tiling);
  if (tilingStatus != grad_tiling::kTilingOk) {
    std::fprintf(stderr, "ms_groupnorm twin: tiling failed with status %d\n", tilingStatus);
    return kBadShape;
  }
  // What aclnnGroupNormBackward does for a null gamma: a tensor of ones (and zeros for beta).
  std::vector<uint8_t> ones;
  std::vector<uint8_t> zeros;
  void *gamma = params[kGamma];
  if (gammaNumel == 0) {
    ones = Ones(in.C, in.statType);
    gamma = ones.data();
  }
  void *beta = silu ? params[kBeta] : nullptr;
  if (silu && betaNumel == 0) {
    zeros.assign(static_cast<size_t>(in.C * BytesOf(in.statType)), 0);  // +0.0 in every dtype
    beta = zeros.data();
  }
  const int64_t dataBytes = BytesOf(in.dataType);
  const int64_t statBytes = BytesOf(in.statType);
  twin::launch::LaunchBuffers buffers;
  void *ptrs[twin::launch::kLaunchBuffers] = {params[kDy],  params[kMean],   params[kRstd],  params[kX], gamma,
                                           params[kDx], params[kDgamma], params[kDbeta], beta};
  const int64_t bytes[twin::launch::kLaunchBuffers] = {numel * dataBytes,
                                                    in.N * in.G * statBytes,
                                                    in.N * in.G * statBytes,
                                                    numel * dataBytes,
                                                    in.C * statBytes,
                                                    in.dxRequired ? numel * dataBytes : 0,
                                                    in.dgammaRequired ? in.C * statBytes : 0,
                                                    in.dbetaRequired ? in.C * statBytes : 0,
                                                    silu ? in.C * statBytes : 0};
  for (int i = 0; i < twin::launch::kLaunchBuffers; ++i) {
    buffers.ptr[i] = ptrs[i];
    buffers.bytes[i] = bytes[i];
  }
  twin::Config config;
  config.ubBytes = in.ubBytes;
  config.coreNum = in.coreNum;
  config.policy = static_cast<int>(EnvInt("MS_GROUPNORM_TWIN_POLICY", twin::kConcurrent));
  config.execution = static_cast<int>(EnvInt("MS_GROUPNORM_TWIN_EXECUTION", twin::kImmediate));
  config.saturation = EnvInt("MS_GROUPNORM_TWIN_SATURATION", 0) != 0;  // 1: saturation overflow mode
  config.seed = static_cast<uint64_t>(EnvInt("MS_GROUPNORM_TWIN_SEED", 0));
  std::string error;
  if (twin::launch::LaunchKernel(buffers, tiling, grad_tiling::TilingKeyFor(in.dataType, in.statType), config, &error) != 0) {
    std::fprintf(stderr, "ms_groupnorm twin: kernel fault: %s\n", error.c_str());
    return kKernelFault;
  }
  return kOk;
}

}  // namespace

GNMS_TWIN_EXPORT int GroupNormGrad(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes,
                                   void * /*stream*/, void *extra_ptr) {
  return LaunchFromAot(nparam, params, ndims, shapes, dtypes, extra_ptr, false);
}

// The fused backward (GroupNormSiluGradMs's kernel), kernels/cpu's GroupNormSiluGrad ABI:
//   params: dz, x, mean, rstd, gamma, beta | dx, dgamma, dbeta (empty gamma/beta: ones/zeros)
//   attrs:  group, swish_scale, dx_is_require, dgamma_is_require, dbeta_is_require
GNMS_TWIN_EXPORT int GroupNormSiluGrad(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes,
                                       void * /*stream*/, void *extra_ptr) {
  return LaunchFromAot(nparam, params, ndims, shapes, dtypes, extra_ptr, true);
}

// dx has x's shape, dgamma/dbeta are (C,); an output whose mask bit is off is (0,).
GNMS_TWIN_EXPORT std::vector<std::vector<int64_t>> GroupNormGradInferShape(int *ndims, int64_t **shapes,
                                                                           mindspore::AotExtra *extra) {
  const std::vector<int64_t> xShape(shapes[1], shapes[1] + ndims[1]);
  const std::vector<int64_t> channels{ndims[1] >= 2 ? shapes[1][1] : -1};
  const std::vector<int64_t> none{0};
  return {ReadBool(extra, "dx_is_require") ? xShape : none, ReadBool(extra, "dgamma_is_require") ? channels : none,
          ReadBool(extra, "dbeta_is_require") ? channels : none};
}

GNMS_TWIN_EXPORT std::vector<mindspore::TypeId> GroupNormGradInferType(std::vector<mindspore::TypeId> types,
                                                                       mindspore::AotExtra * /*extra*/) {
  return {types[1], types[2], types[2]};  // dx follows x; dgamma, dbeta follow mean
}

GNMS_TWIN_EXPORT std::vector<std::vector<int64_t>> GroupNormSiluGradInferShape(int *ndims, int64_t **shapes,
                                                                               mindspore::AotExtra *extra) {
  return GroupNormGradInferShape(ndims, shapes, extra);  // dx like x (input 1), dgamma/dbeta (C,)
}

GNMS_TWIN_EXPORT std::vector<mindspore::TypeId> GroupNormSiluGradInferType(std::vector<mindspore::TypeId> types,
                                                                           mindspore::AotExtra *extra) {
  return GroupNormGradInferType(types, extra);
}
