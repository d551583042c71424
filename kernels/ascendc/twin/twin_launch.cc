// The backward library's operator part of the twins' C API (twin_c_api.h): the host tiling
// and a launch of the unmodified GroupNormGradMs / GroupNormSiluGradMs kernel on the twin, with
// the launch's buffers, tiling and device configuration given explicitly so that tests can also
// make broken launches. Its input and dtype checks are in twin_host_checks.cc.
#include <cstddef>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "../op_host/group_norm_grad_ms_tiling.h"
#include "kernel_operator.h"
#include "twin_c_api.h"
#include "twin_launch.h"

namespace grad_tiling = ms_groupnorm::grad_tiling;  // the tiling this file calls, by its short name

extern "C" void group_norm_grad_ms(GM_ADDR dy, GM_ADDR mean, GM_ADDR rstd, GM_ADDR x, GM_ADDR gamma, GM_ADDR dx,
                                   GM_ADDR dgamma, GM_ADDR dbeta, GM_ADDR workspace, GM_ADDR tiling);
extern "C" void group_norm_silu_grad_ms(GM_ADDR dy, GM_ADDR mean, GM_ADDR rstd, GM_ADDR x, GM_ADDR gamma,
                                        GM_ADDR beta, GM_ADDR dx, GM_ADDR dgamma, GM_ADDR dbeta, GM_ADDR workspace,
                                        GM_ADDR tiling);

namespace {

// Names of the int64 fields of GroupNormGradMsTilingData, in declaration order; the float
// swishScale after them travels in the scalars (twin_c_api.h).
const char *const kTilingFields =
    "N,C,HxW,G,D,mode,splitByChannel,groupAcrossN,dxRequired,dgammaRequired,dbetaRequired,needWorkspace,"
    "numTasks,phase1Cores,tasksPerCore,tailCores,blockDim,chunkElems,chunksPerChannel,residentStride,"
    "channelsPerItem,groupsPerTask,numFloatBufs,statElems,reduceWorkElems,copyAligned,statWindowElems,"
    "reduceRows,stage2SliceElems,stage2Cores,stage2PieceElems,stage2RowsPerLoad,stage2WholeRows,stage2Ahead,ownStats,"
    "ubBytesPhase1,ubBytesStage2,hwSlices,sliceElems,heldItems,dxBuffers,affineAhead,loadBuffers,"
    "bcastElems,hwOneSamples,hwOneGather,rowsGather,groupRows,silu";
constexpr int kTilingFieldCount = 49;
static_assert(offsetof(GroupNormGradMsTilingData, swishScale) == kTilingFieldCount * sizeof(int64_t),
              "update kTilingFields");

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
  std::vector<float> workspace(static_cast<size_t>(grad_tiling::UserWorkspaceBytes(tiling) / sizeof(float)) + 1,
                               std::numeric_limits<float>::quiet_NaN());
  const size_t workspaceBytes = static_cast<size_t>(grad_tiling::UserWorkspaceBytes(tiling));
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

// The layouts of this library's arrays (twin_c_api.h's GnmsTwinArray). Options: the data and
// statistics dtypes, which outputs are required, and silu != 0 for GroupNormSiluGradMs's tiling
// (with swishScale, the one scalar). Buffers: GroupNormGradMs's CANN order, then beta
// (GroupNormSiluGradMs's sixth input; twin_launch.h). Dtypes: the pair the tiling accepts.
GNMS_TWIN_EXPORT const char *GnmsTwinArrayNames(int which) {
  switch (which) {
    case kGnmsTwinOptions: return "dataType,statType,dxRequired,dgammaRequired,dbetaRequired,silu";
    case kGnmsTwinScalars: return "swishScale";
    case kGnmsTwinBuffers: return "dy,mean,rstd,x,gamma,dx,dgamma,dbeta,beta";
    case kGnmsTwinInputs: return "dy,mean,rstd,x,gamma";
    case kGnmsTwinDtypes: return "dataType,statType";
    default: return nullptr;
  }
}

// Writes the int64 fields (kTilingFields). Returns a grad_tiling::TilingStatus.
GNMS_TWIN_EXPORT int GnmsTwinTiling(const int64_t *shape, const int *options, const double *scalars,
                                    int64_t ubBytes, int64_t coreNum, int64_t *tilingOut, int64_t *tilingKeyOut) {
  const int dataType = options[0], statType = options[1];
  grad_tiling::TilingInput in;
  in.N = shape[0];
  in.C = shape[1];
  in.HxW = shape[2];
  in.G = shape[3];
  in.dataType = static_cast<grad_tiling::ScalarType>(dataType);
  in.statType = static_cast<grad_tiling::ScalarType>(statType);
  in.ubBytes = ubBytes;
  in.coreNum = coreNum;
  in.dxRequired = options[2] != 0;
  in.dgammaRequired = options[3] != 0;
  in.dbetaRequired = options[4] != 0;
  in.silu = options[5] != 0;
  in.swishScale = static_cast<float>(scalars[0]);
  if (dataType < 0 || dataType > 2 || statType < 0 || statType > 2) return grad_tiling::kTilingBadDtype;
  GroupNormGradMsTilingData t;
  const int status = grad_tiling::ComputeTiling(in, &t);
  if (status != grad_tiling::kTilingOk) return status;
  std::memcpy(tilingOut, &t, kTilingFieldCount * sizeof(int64_t));
  *tilingKeyOut = grad_tiling::TilingKeyFor(in.dataType, in.statType);
  return grad_tiling::kTilingOk;
}

// Runs the kernel on the twin: the GroupNormSiluGradMs entry when the tiling's silu is set.
GNMS_TWIN_EXPORT int GnmsTwinLaunch(void *const *buffers, const int64_t *bufferBytes, const int64_t *tiling,
                                    const double *scalars, int64_t tilingKey, int64_t ubBytes, int64_t coreNum,
                                    int policy, uint64_t seed, char *error, int errorLen) {
  twin::launch::LaunchBuffers launch;
  for (int i = 0; i < twin::launch::kLaunchBuffers; ++i) {
    launch.ptr[i] = buffers[i];
    launch.bytes[i] = bufferBytes[i];
  }
  GroupNormGradMsTilingData t{};
  std::memcpy(&t, tiling, kTilingFieldCount * sizeof(int64_t));
  t.swishScale = static_cast<float>(scalars[0]);
  std::string message;
  const twin::Config config = twin::api::LaunchConfig(ubBytes, coreNum, policy, seed);
  const int status = twin::launch::LaunchKernel(launch, t, tilingKey, config, &message);
  twin::api::CopyError(message.c_str(), error, errorLen);
  return status;
}
