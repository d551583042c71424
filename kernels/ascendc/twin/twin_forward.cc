// C API of the CPU twin for the GroupNormSiluMs forward, for ctypes: the host tiling and
// input checks (the plain functions the CANN registration calls) and a launch of the
// unmodified kernel, with buffers, tiling and device configuration given explicitly so that
// tests can also make broken launches.
#include <cstring>
#include <string>
#include <vector>

#include "../op_host/group_norm_silu_ms_tiling.h"
#include "kernel_operator.h"

extern "C" void group_norm_silu_ms(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y, GM_ADDR mean, GM_ADDR rstd,
                                   GM_ADDR workspace, GM_ADDR tiling);

#define GNMS_TWIN_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// The int64 fields of GroupNormSiluMsTilingData, in declaration order; eps and swishScale
// (two floats) follow them and travel as separate arguments.
const char *const kForwardTilingFields =
    "N,C,HxW,G,D,mode,rows,rowLen,rowPitch,vectorCoef,activateSilu,sliceCount,sliceItems,numTasks,usedCores,"
    "tasksPerCore,tailCores,blockDim,chunkElems,chunksPerRow,coefElems,partialElems,reduceWorkElems,statBatch,ubBytes,"
    "xBuffers,xBufferElems,staged,coefPerBlock,yRows,rowsPerItem,yBuffers,ringParts,ringResident,partItems,bcastElems";
constexpr int kForwardIntFields = 36;
static_assert(sizeof(GroupNormSiluMsTilingData) == kForwardIntFields * sizeof(int64_t) + 2 * sizeof(float),
              "update kForwardTilingFields");

void CopyError(const std::string &message, char *error, int errorLen) {
  if (error == nullptr || errorLen <= 0) return;
  std::strncpy(error, message.c_str(), static_cast<size_t>(errorLen) - 1);
  error[errorLen - 1] = '\0';
}

}  // namespace

GNMS_TWIN_EXPORT const char *GnsmsTwinTilingFields() { return kForwardTilingFields; }

// dataType/paramType: 0 float32, 1 float16, 2 bfloat16. Returns a ms_groupnorm::forward_tiling::TilingStatus.
GNMS_TWIN_EXPORT int GnsmsTwinTiling(int64_t N, int64_t C, int64_t HxW, int64_t G, int dataType, int paramType,
                                     double eps, int activateSilu, double swishScale, int64_t ubBytes,
                                     int64_t coreNum, int64_t *tilingOut, int64_t *tilingKeyOut) {
  if (dataType < 0 || dataType > 2 || paramType < 0 || paramType > 2) return ms_groupnorm::forward_tiling::kTilingBadDtype;
  ms_groupnorm::forward_tiling::TilingInput in;
  in.N = N;
  in.C = C;
  in.HxW = HxW;
  in.G = G;
  in.dataType = static_cast<ms_groupnorm::forward_tiling::ScalarType>(dataType);
  in.paramType = static_cast<ms_groupnorm::forward_tiling::ScalarType>(paramType);
  in.eps = static_cast<float>(eps);
  in.activateSilu = activateSilu != 0;
  in.swishScale = static_cast<float>(swishScale);
  in.ubBytes = ubBytes;
  in.coreNum = coreNum;
  GroupNormSiluMsTilingData t;
  const int status = ms_groupnorm::forward_tiling::ComputeTiling(in, &t);
  if (status != ms_groupnorm::forward_tiling::kTilingOk) return status;
  std::memcpy(tilingOut, &t, kForwardIntFields * sizeof(int64_t));
  *tilingKeyOut = ms_groupnorm::forward_tiling::TilingKeyFor(in.dataType, in.paramType);
  return ms_groupnorm::forward_tiling::kTilingOk;
}

// Runs the kernel on the twin. buffers: x, gamma, beta, y, mean, rstd with their sizes in
// bytes (GM accesses outside them fault). Returns 0, or 1 with the fault message in `error`.
GNMS_TWIN_EXPORT int GnsmsTwinLaunch(void *const *buffers, const int64_t *bufferBytes, const int64_t *tilingFields,
                                     double eps, double swishScale, int64_t tilingKey, int64_t ubBytes,
                                     int64_t coreNum, int policy, uint64_t seed, char *error, int errorLen) {
  GroupNormSiluMsTilingData t;
  std::memcpy(&t, tilingFields, kForwardIntFields * sizeof(int64_t));
  t.eps = static_cast<float>(eps);
  t.swishScale = static_cast<float>(swishScale);
  std::vector<uint8_t> tilingGm(sizeof t);  // the framework hands the tiling data over in GM
  std::memcpy(tilingGm.data(), &t, sizeof t);
  static const char *const kNames[6] = {"x", "gamma", "beta", "y", "mean", "rstd"};
  std::vector<twin::GmRegion> regions;
  for (int i = 0; i < 6; ++i) {
    if (buffers[i] != nullptr && bufferBytes[i] > 0) {
      regions.push_back({buffers[i], static_cast<size_t>(bufferBytes[i]), kNames[i]});
    }
  }
  regions.push_back({tilingGm.data(), tilingGm.size(), "tiling"});
  // The user workspace (slice statistics of split groups), as the framework allocates it.
  const size_t workspaceBytes = static_cast<size_t>(ms_groupnorm::forward_tiling::UserWorkspaceBytes(t));
  std::vector<float> workspace(workspaceBytes / sizeof(float) + 1);
  if (workspaceBytes > 0) regions.push_back({workspace.data(), workspaceBytes, "workspace"});
  twin::Config config;
  config.ubBytes = ubBytes;
  config.coreNum = coreNum;
  config.policy = policy & 0xFF;  // bits 8+: the execution of the pipes (twin::Execution)
  config.execution = (policy >> 8) & 0xFF;
  config.autoSync = ((policy >> 17) & 1) == 0;    // bit 17: no --cce-auto-sync
  config.saturation = ((policy >> 18) & 1) != 0;  // bit 18: saturation overflow mode
  config.seed = seed;
  config.cost = twin::DefaultCost();
  auto gm = [&](int i) { return static_cast<GM_ADDR>(buffers[i]); };
  std::string message;
  const int status = twin::Launch(
      config, t.blockDim, tilingKey, regions,
      [&] { group_norm_silu_ms(gm(0), gm(1), gm(2), gm(3), gm(4), gm(5), reinterpret_cast<GM_ADDR>(workspace.data()),
                           tilingGm.data()); }, &message);
  CopyError(message, error, errorLen);
  return status;
}

// ranks[i] < 0: input i (x, gamma, beta) has no descriptor/shape; dims holds the present
// shapes back to back. numGroups == nullptr: the attribute is absent.
GNMS_TWIN_EXPORT int GnsmsTwinCheckInputs(const int64_t *dims, const int64_t *ranks, const int64_t *numGroups,
                                          char *error, int errorLen) {
  ms_groupnorm::forward_tiling::ShapeView shapes[ms_groupnorm::forward_tiling::kNumInputs];
  const int64_t *next = dims;
  for (int i = 0; i < ms_groupnorm::forward_tiling::kNumInputs; ++i) {
    if (ranks[i] < 0) continue;
    shapes[i].present = true;
    shapes[i].dims = next;
    shapes[i].rank = ranks[i];
    next += ranks[i];
  }
  std::string message;
  const int status = ms_groupnorm::forward_tiling::CheckInputs(shapes, numGroups, &message);
  CopyError(message, error, errorLen);
  return status;
}

GNMS_TWIN_EXPORT int GnsmsTwinCheckDtypes(int x, int gamma, int beta, char *error, int errorLen) {
  std::string message;
  const int status = ms_groupnorm::forward_tiling::CheckDtypes(static_cast<ms_groupnorm::forward_tiling::ScalarType>(x), static_cast<ms_groupnorm::forward_tiling::ScalarType>(gamma),
                                        static_cast<ms_groupnorm::forward_tiling::ScalarType>(beta), &message);
  CopyError(message, error, errorLen);
  return status;
}

// ---------------------------------------------------------------- probes of the forward's vector math
// Mini kernels for the rules of twin/kernel_operator_forward_math.h. gm holds 160 floats:
// inputs a = gm[0..32), b = gm[32..64); "math_values" writes exp(a), sqrt(a), a / b to
// gm[64..96), gm[96..128), gm[128..160). The other probes break one rule each.
namespace {

using namespace AscendC;

void MathProbe(const std::string &name, float *gm) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> in;
  TQue<QuePosition::VECOUT, 1> out;
  pipe.InitBuffer(in, 1, 64 * sizeof(float));
  pipe.InitBuffer(out, 1, 96 * sizeof(float));
  GlobalTensor<float> g;
  g.SetGlobalBuffer(gm, 160);
  LocalTensor<float> src = in.AllocTensor<float>();
  DataCopy(src, g, 64);
  in.EnQue(src);
  src = in.DeQue<float>();
  LocalTensor<float> dst = out.AllocTensor<float>();
  LocalTensor<float> a = src;
  LocalTensor<float> b = src[32];
  if (name == "math_values") {
    Exp(dst, a, 32);
    Sqrt(dst[32], a, 32);
    Div(dst[64], a, b, 32);
  } else if (name == "exp_misaligned") {
    Exp(dst[1], a, 8);  // dst 4 bytes past a 32-byte boundary
  } else if (name == "sqrt_overrun") {
    Sqrt(dst, src[32], 40);  // only 32 floats are left in the input buffer from b
  } else if (name == "div_negative_count") {
    Div(dst, a, b, -1);
  } else {
    twin::Fail("unknown probe " + name);
  }
  in.FreeTensor(src);
  out.EnQue(dst);
  dst = out.DeQue<float>();
  DataCopy(g[64], dst, 96);
  out.FreeTensor(dst);
}

}  // namespace

// Returns 0, 1 (twin fault, message in error) or 2 (unknown probe).
GNMS_TWIN_EXPORT int GnsmsTwinMathProbe(const char *name, float *gm, int execution, char *error, int errorLen) {
  const std::string probe(name);
  if (probe != "math_values" && probe != "exp_misaligned" && probe != "sqrt_overrun" && probe != "div_negative_count") {
    return 2;
  }
  twin::Config config;
  config.execution = execution;
  config.cost = twin::DefaultCost();
  std::vector<twin::GmRegion> regions{{gm, 160 * sizeof(float), "gm"}};
  std::string message;
  const int status = twin::Launch(config, 1, 0, regions, [&] { MathProbe(probe, gm); }, &message);
  CopyError(message, error, errorLen);
  return status;
}

