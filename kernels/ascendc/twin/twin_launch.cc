// C API of the CPU twin for ctypes: the host tiling function and a launch of the
// unmodified GroupNormGradMs kernel on the twin, with the launch's buffers, tiling and
// device configuration given explicitly so that tests can also make broken launches.
#include <cstddef>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "../op_host/group_norm_grad_ms_tiling.h"
#include "kernel_operator.h"
#include "twin_launch.h"

extern "C" void group_norm_grad_ms(GM_ADDR dy, GM_ADDR mean, GM_ADDR rstd, GM_ADDR x, GM_ADDR gamma, GM_ADDR dx,
                                   GM_ADDR dgamma, GM_ADDR dbeta, GM_ADDR workspace, GM_ADDR tiling);
extern "C" void group_norm_silu_grad_ms(GM_ADDR dy, GM_ADDR mean, GM_ADDR rstd, GM_ADDR x, GM_ADDR gamma,
                                        GM_ADDR beta, GM_ADDR dx, GM_ADDR dgamma, GM_ADDR dbeta, GM_ADDR workspace,
                                        GM_ADDR tiling);

#define GNMS_TWIN_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// Names of the int64 fields of GroupNormGradMsTilingData, in declaration order; the float
// swishScale after them travels separately (a double argument).
const char *const kTilingFields =
    "N,C,HxW,G,D,mode,splitByChannel,groupAcrossN,dxRequired,dgammaRequired,dbetaRequired,needWorkspace,numTasks,phase1Cores,"
    "tasksPerCore,tailCores,blockDim,chunkElems,chunksPerChannel,residentStride,channelsPerItem,groupsPerTask,numFloatBufs,statElems,"
    "reduceWorkElems,copyAligned,statWindowElems,reduceRows,stage2SliceElems,stage2Cores,stage2PieceElems,stage2RowsPerLoad,stage2WholeRows,"
    "ubBytesPhase1,ubBytesStage2,hwSlices,sliceElems,heldItems,dxBuffers,affineAhead,loadBuffers,bcastElems,hwOneSamples,silu";
constexpr int kTilingFieldCount = 44;
static_assert(offsetof(GroupNormGradMsTilingData, swishScale) == kTilingFieldCount * sizeof(int64_t),
              "update kTilingFields");

void CopyError(const std::string &message, char *error, int errorLen) {
  if (error == nullptr || errorLen <= 0) return;
  std::strncpy(error, message.c_str(), static_cast<size_t>(errorLen) - 1);
  error[errorLen - 1] = '\0';
}

}  // namespace

namespace twin::launch {

int LaunchKernel(const LaunchBuffers &buffers, const GroupNormGradMsTilingData &tiling, int64_t tilingKey,
                 const twin::Config &config, std::string *error) {
  // What the framework provides: the tiling data and the workspace live in GM too.
  std::vector<uint8_t> tilingGm(sizeof tiling);
  std::memcpy(tilingGm.data(), &tiling, sizeof tiling);
  // The framework hands the kernel its workspace uncleared (asc-devkit docs: workspace that must
  // start at zero is cleared by the kernel, e.g. with Fill, 张量变换/Fill-97.md; atomic adds do not
  // clear GM, simd_atomic/asc_set_atomic_add.md): quiet NaNs here, so that a kernel reading a cell
  // no task wrote, or adding into one, gets NaN instead of the zeros a plain allocation would give.
  std::vector<float> workspace(static_cast<size_t>(ms_groupnorm::grad_tiling::UserWorkspaceBytes(tiling) / sizeof(float)) + 1,
                               std::numeric_limits<float>::quiet_NaN());
  const size_t workspaceBytes = static_cast<size_t>(ms_groupnorm::grad_tiling::UserWorkspaceBytes(tiling));
  static const char *const kNames[kLaunchBuffers] = {"dy", "mean", "rstd", "x", "gamma", "dx", "dgamma", "dbeta",
                                                     "beta"};
  std::vector<twin::GmRegion> regions;
  for (int i = 0; i < kLaunchBuffers; ++i) {
    if (buffers.ptr[i] != nullptr && buffers.bytes[i] > 0) {
      regions.push_back({buffers.ptr[i], static_cast<size_t>(buffers.bytes[i]), kNames[i]});
    }
  }
  regions.push_back({tilingGm.data(), tilingGm.size(), "tiling"});
  if (workspaceBytes > 0) regions.push_back({workspace.data(), workspaceBytes, "workspace"});
  auto gm = [&](int i) { return static_cast<GM_ADDR>(buffers.ptr[i]); };
  return twin::Launch(
      config, tiling.blockDim, tilingKey, regions,
      [&] {
        GM_ADDR ws = reinterpret_cast<GM_ADDR>(workspace.data());
        if (tiling.silu != 0) {
          group_norm_silu_grad_ms(gm(0), gm(1), gm(2), gm(3), gm(4), gm(8), gm(5), gm(6), gm(7), ws,
                                  tilingGm.data());
        } else {
          group_norm_grad_ms(gm(0), gm(1), gm(2), gm(3), gm(4), gm(5), gm(6), gm(7), ws, tilingGm.data());
        }
      },
      error);
}

}  // namespace twin::launch

GNMS_TWIN_EXPORT const char *GnmsTwinTilingFields() { return kTilingFields; }

// dataType/statType: 0 float32, 1 float16, 2 bfloat16; silu != 0: GroupNormSiluGradMs's tiling
// with swishScale. Writes the int64 fields (kTilingFields). Returns a ms_groupnorm::grad_tiling::TilingStatus.
GNMS_TWIN_EXPORT int GnmsTwinTiling(int64_t N, int64_t C, int64_t HxW, int64_t G, int dataType, int statType,
                                    int64_t ubBytes, int64_t coreNum, int dxRequired, int dgammaRequired,
                                    int dbetaRequired, int silu, double swishScale, int64_t *tilingOut,
                                    int64_t *tilingKeyOut) {
  ms_groupnorm::grad_tiling::TilingInput in;
  in.N = N;
  in.C = C;
  in.HxW = HxW;
  in.G = G;
  in.dataType = static_cast<ms_groupnorm::grad_tiling::ScalarType>(dataType);
  in.statType = static_cast<ms_groupnorm::grad_tiling::ScalarType>(statType);
  in.ubBytes = ubBytes;
  in.coreNum = coreNum;
  in.dxRequired = dxRequired != 0;
  in.dgammaRequired = dgammaRequired != 0;
  in.dbetaRequired = dbetaRequired != 0;
  in.silu = silu != 0;
  in.swishScale = static_cast<float>(swishScale);
  if (dataType < 0 || dataType > 2 || statType < 0 || statType > 2) return ms_groupnorm::grad_tiling::kTilingBadDtype;
  GroupNormGradMsTilingData t;
  const int status = ms_groupnorm::grad_tiling::ComputeTiling(in, &t);
  if (status != ms_groupnorm::grad_tiling::kTilingOk) return status;
  std::memcpy(tilingOut, &t, kTilingFieldCount * sizeof(int64_t));
  *tilingKeyOut = ms_groupnorm::grad_tiling::TilingKeyFor(in.dataType, in.statType);
  return ms_groupnorm::grad_tiling::kTilingOk;
}

// Runs the kernel on the twin. buffers: dy, mean, rstd, x, gamma, dx, dgamma, dbeta, beta
// with their sizes in bytes (what the launch hands the device: GM accesses outside them
// fault); tiling: the int64 fields, swishScale the float one. Returns 0, or 1 with the fault
// message in `error`.
GNMS_TWIN_EXPORT int GnmsTwinLaunch(void *const *buffers, const int64_t *bufferBytes, const int64_t *tiling,
                                    double swishScale, int64_t tilingKey, int64_t ubBytes, int64_t coreNum,
                                    int policy, uint64_t seed, char *error, int errorLen) {
  twin::launch::LaunchBuffers launch;
  for (int i = 0; i < twin::launch::kLaunchBuffers; ++i) {
    launch.ptr[i] = buffers[i];
    launch.bytes[i] = bufferBytes[i];
  }
  GroupNormGradMsTilingData t{};
  std::memcpy(&t, tiling, kTilingFieldCount * sizeof(int64_t));
  t.swishScale = static_cast<float>(swishScale);
  twin::Config config;
  config.ubBytes = ubBytes;
  config.coreNum = coreNum;
  config.policy = policy & 0xFF;  // bits 8-15: the execution of the pipes (twin::Execution)
  config.execution = (policy >> 8) & 0xFF;
  config.autoSync = ((policy >> 17) & 1) == 0;   // bit 17: no --cce-auto-sync
  config.saturation = ((policy >> 18) & 1) != 0;  // bit 18: saturation overflow mode
  config.seed = seed;
  config.cost = twin::DefaultCost();
  std::string message;
  const int status = twin::launch::LaunchKernel(launch, t, tilingKey, config, &message);
  CopyError(message, error, errorLen);
  return status;
}

