// MindSpore aot shims: run the GroupNormSiluMs forward kernel on the CPU twin behind exactly the
// aot ABI of kernels/cpu's entry points, so that MS_GROUPNORM_BACKEND=ascendc_twin runs what
// Ascend runs:
//   GroupNormSilu (group_norm_silu_aot.cc's ABI): activate_silu on, the fused op's forward;
//     params: x, gamma, beta | z, mean, rstd; attrs: group, eps, swish_scale.
//   GroupNorm (group_norm_aot.cc's ABI): activate_silu off, GroupNorm's forward, as the Ascend
//     route runs GroupNormSiluMs for it; params: x, gamma, beta | y, mean, rstd; attrs: group, eps.
// Empty gamma/beta mean ones/zeros. The ABI is read with the CPU entry points' own helpers
// (kernels/cpu/aot_abi.h), so the two accept and refuse the same calls with the same status codes,
// except float64, which only the CPU kernels run (kBadDtype here).
//
// Statistics: the kernel writes float32 mean/rstd whatever the dtypes; the aot contract (and
// ms_groupnorm.group_norm_silu_forward) gives them gamma's dtype. For float32 gamma the kernel
// writes straight into the outputs; for float16/bfloat16 gamma (equal to x's dtype, the only
// other pair either side accepts) it writes float32 scratch buffers that are then rounded to
// nearest even into the outputs, as the CPU kernel rounds its float32 statistics.
//
// The twin device is configured by the environment variables twin_aot.cc's GroupNormGrad
// reads at each launch: MS_GROUPNORM_TWIN_UB (bytes, default 196608), MS_GROUPNORM_TWIN_CORES
// (default 48), MS_GROUPNORM_TWIN_POLICY (twin::Policy, default 0 = concurrent threads),
// MS_GROUPNORM_TWIN_EXECUTION, MS_GROUPNORM_TWIN_SATURATION, MS_GROUPNORM_TWIN_SEED.
// A kernel fault is printed to stderr and returned as status 7 (kKernelFault).
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "../../cpu/aot_abi.h"
#include "../op_host/group_norm_silu_ms_tiling.h"

#include "twin_c_api.h"  // twin_forward.cc's part of it, in this library: the host tiling, the launch

namespace forward_tiling = ms_groupnorm::forward_tiling;  // the tiling this file calls, by its short name

namespace {

using namespace ms_groupnorm;  // NOLINT: the aot_abi.h helpers and the status codes of aot_status.h

// At least the int64 fields of GroupNormSiluMsTilingData (twin_forward.cc checks their count).
constexpr int kTilingFieldsCapacity = sizeof(GroupNormSiluMsTilingData) / sizeof(int64_t) + 1;

int64_t EnvInt(const char *name, int64_t fallback) {
  const char *value = std::getenv(name);
  return value == nullptr || *value == '\0' ? fallback : std::strtoll(value, nullptr, 10);
}

// The twin's dtype code (forward_tiling::ScalarType) of a float32/float16/bfloat16 DType.
int TwinType(DType t) { return t == DType::kFloat32 ? 0 : t == DType::kFloat16 ? 1 : 2; }

int64_t BytesOf(DType t) { return t == DType::kFloat32 ? 4 : 2; }

// `count` copies of 1.0 (ones) or 0.0 in the parameter dtype: what a missing gamma/beta
// stands for (the AscendC operator requires both tensors).
std::vector<uint8_t> Filled(int64_t count, DType t, bool ones) {
  std::vector<uint8_t> out(static_cast<size_t>(count * BytesOf(t)), 0);
  if (!ones) return out;
  const float one = 1.0f;
  const uint16_t half_one = 0x3C00, bf16_one = 0x3F80;
  for (int64_t i = 0; i < count; ++i) {
    if (t == DType::kFloat32) std::memcpy(&out[i * 4], &one, 4);
    else std::memcpy(&out[i * 2], t == DType::kFloat16 ? &half_one : &bf16_one, 2);
  }
  return out;
}

// float32 statistics rounded into a float16/bfloat16 output.
void RoundStats(const std::vector<float> &from, void *to, DType t) {
  for (size_t i = 0; i < from.size(); ++i) {
    const uint16_t bits = t == DType::kFloat16 ? ToHalf(from[i]).bits : ToBFloat16(from[i]).bits;
    std::memcpy(static_cast<uint16_t *>(to) + i, &bits, 2);
  }
}

// The launch behind both shims, once the call is read and checked (aot_abi.h): GroupNormSiluMs
// with activate_silu on or off (swish_k unused when off).
int RunOnTwin(void **params, const ForwardTensors &call, const GroupNormSizes &s, float eps, bool activate_silu,
              float swish_k) {
  using C = ForwardTensors;
  const DType data = call.data, stat = call.stat;
  const int64_t numel = s.N * s.C * s.HxW;
  const int64_t groups = s.N * s.G;
  // The CPU entry point's order of checks (RunSiluForward), so both return the same status.
  if (!ValidDTypePair(data, stat) || data == DType::kFloat64) return kBadDtype;
  // Stricter than the CPU entry point only where C == 0 < N * group, which no MindSpore call
  // makes: that kernel then writes no statistics, this one writes mean 0 / rstd NaN.
  if (groups > 0 && (params[C::kMean] == nullptr || params[C::kRstd] == nullptr)) return kNullPointer;
  if (numel > 0 && (params[C::kX] == nullptr || params[C::kOut] == nullptr)) return kNullPointer;
  if (groups == 0) return kOk;  // no group: nothing to compute or write (z is empty too)

  const int64_t ub = EnvInt("MS_GROUPNORM_TWIN_UB", 196608);
  const int64_t cores = EnvInt("MS_GROUPNORM_TWIN_CORES", 48);
  int64_t tiling[kTilingFieldsCapacity] = {};
  int64_t key = 0;
  // In the layouts twin_forward.cc's GnmsTwinArrayNames gives.
  const int64_t shape[kGnmsTwinShapeLength] = {s.N, s.C, s.HxW, s.G};
  const int options[3] = {TwinType(data), TwinType(stat), activate_silu ? 1 : 0};
  const double scalars[2] = {eps, swish_k};
  const int tiling_status = GnmsTwinTiling(shape, options, scalars, ub, cores, tiling, &key);
  if (tiling_status != forward_tiling::kTilingOk) {
    std::fprintf(stderr, "ms_groupnorm twin: forward tiling failed with status %d\n", tiling_status);
    return kBadShape;
  }
  std::vector<uint8_t> ones, zeros;
  void *gamma = params[C::kGamma];
  void *beta = params[C::kBeta];
  if (call.gamma_numel == 0) {
    ones = Filled(s.C, stat, true);
    gamma = ones.data();
  }
  if (call.beta_numel == 0) {
    zeros = Filled(s.C, stat, false);
    beta = zeros.data();
  }
  // float32 statistics straight into the outputs, or into scratch buffers to round from.
  const bool round_stats = stat != DType::kFloat32;
  std::vector<float> mean32(round_stats ? groups : 0), rstd32(round_stats ? groups : 0);
  void *mean = round_stats ? static_cast<void *>(mean32.data()) : params[C::kMean];
  void *rstd = round_stats ? static_cast<void *>(rstd32.data()) : params[C::kRstd];

  void *buffers[6] = {params[C::kX], gamma, beta, params[C::kOut], mean, rstd};
  const int64_t data_bytes = numel * BytesOf(data), param_bytes = s.C * BytesOf(stat), stat_bytes = groups * 4;
  const int64_t bytes[6] = {data_bytes, param_bytes, param_bytes, data_bytes, stat_bytes, stat_bytes};
  // The policy argument's layout (ascendc_twin._policy_code): bits 0-7 block order, 8-15 pipe
  // execution, 18 saturation overflow mode.
  const int policy = static_cast<int>((EnvInt("MS_GROUPNORM_TWIN_POLICY", 0) & 0xFF) |
                                      ((EnvInt("MS_GROUPNORM_TWIN_EXECUTION", 0) & 0xFF) << 8) |
                                      (EnvInt("MS_GROUPNORM_TWIN_SATURATION", 0) != 0 ? 1 << 18 : 0));
  const auto seed = static_cast<uint64_t>(EnvInt("MS_GROUPNORM_TWIN_SEED", 0));
  char error[2048] = {};
  if (GnmsTwinLaunch(buffers, bytes, tiling, scalars, key, ub, cores, policy, seed, error, sizeof error) != 0) {
    std::fprintf(stderr, "ms_groupnorm twin: kernel fault: %s\n", error);
    return kKernelFault;
  }
  if (round_stats) {
    RoundStats(mean32, params[C::kMean], stat);
    RoundStats(rstd32, params[C::kRstd], stat);
  }
  return kOk;
}

}  // namespace

GNMS_TWIN_EXPORT int GroupNormSilu(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes,
                                   void * /*stream*/, void *extra_ptr) {
  SiluForwardCall call;  // read and checked as the CPU entry point does (aot_abi.h)
  const int status = ReadSiluForwardCall(nparam, params, ndims, shapes, dtypes, extra_ptr, &call);
  if (status != kOk) return status;
  return RunOnTwin(params, call, call.s, call.eps, true, call.swish_k);
}

// As kernels/cpu's GroupNorm reads and checks its call (group_norm_aot.cc).
GNMS_TWIN_EXPORT int GroupNorm(int nparam, void **params, int *ndims, int64_t **shapes, const char **dtypes,
                               void * /*stream*/, void *extra_ptr) {
  GroupNormSizes s;
  int status = ReadGroupedSizes(nparam, 6, params, ndims, shapes, dtypes, extra_ptr, ForwardTensors::kX, &s);
  if (status != kOk) return status;
  float eps = 0.0f;
  if (!ReadFloatAttr(static_cast<mindspore::AotExtra *>(extra_ptr), "eps", &eps)) return kBadAttr;
  ForwardTensors call;
  status = CheckForwardTensors(ndims, shapes, dtypes, s, s.N * s.G, &call);
  if (status != kOk) return status;
  return RunOnTwin(params, call, s, eps, false, 1.0f);
}

// y/z has x's shape; mean and rstd are (N, group).
static std::vector<std::vector<int64_t>> ForwardInferShape(int *ndims, int64_t **shapes, mindspore::AotExtra *extra) {
  int64_t group = -1;
  ReadIntAttr(extra, "group", &group);
  const int64_t batch = ndims[0] >= 2 ? shapes[0][0] : -1;  // [-2] is an unknown rank
  const std::vector<int64_t> stats{batch, group};
  return {std::vector<int64_t>(shapes[0], shapes[0] + ndims[0]), stats, stats};
}

GNMS_TWIN_EXPORT std::vector<std::vector<int64_t>> GroupNormSiluInferShape(int *ndims, int64_t **shapes,
                                                                           mindspore::AotExtra *extra) {
  return ForwardInferShape(ndims, shapes, extra);
}

GNMS_TWIN_EXPORT std::vector<std::vector<int64_t>> GroupNormInferShape(int *ndims, int64_t **shapes,
                                                                       mindspore::AotExtra *extra) {
  return ForwardInferShape(ndims, shapes, extra);
}

GNMS_TWIN_EXPORT std::vector<mindspore::TypeId> GroupNormSiluInferType(std::vector<mindspore::TypeId> types,
                                                                       mindspore::AotExtra * /*extra*/) {
  return {types[0], types[1], types[1]};  // z follows x; mean, rstd follow gamma
}

GNMS_TWIN_EXPORT std::vector<mindspore::TypeId> GroupNormInferType(std::vector<mindspore::TypeId> types,
                                                                   mindspore::AotExtra * /*extra*/) {
  return {types[0], types[1], types[1]};  // y follows x; mean, rstd follow gamma
}
