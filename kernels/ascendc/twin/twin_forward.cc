// The forward library's operator part of the twins' C API (twin_c_api.h), for GroupNormSiluMs:
// the host tiling and input checks (the plain functions the CANN registration calls) and a launch
// of the unmodified kernel, with buffers, tiling and device configuration given explicitly so
// that tests can also make broken launches.
#include <cstring>
#include <string>
#include <vector>

#include "../op_host/group_norm_silu_ms_tiling.h"
#include "kernel_operator.h"
#include "twin_c_api.h"

namespace forward_tiling = ms_groupnorm::forward_tiling;  // the tiling this file calls, by its short name

extern "C" void group_norm_silu_ms(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y, GM_ADDR mean, GM_ADDR rstd,
                                   GM_ADDR workspace, GM_ADDR tiling);

namespace {

// The int64 fields of GroupNormSiluMsTilingData, in declaration order; eps and swishScale
// (two floats) follow them and travel in the scalars.
const char *const kForwardTilingFields =
    "N,C,HxW,G,D,mode,rows,rowLen,rowPitch,vectorCoef,activateSilu,sliceCount,sliceItems,numTasks,usedCores,"
    "tasksPerCore,tailCores,blockDim,chunkElems,chunksPerRow,coefElems,partialElems,reduceWorkElems,statBatch,ubBytes,"
    "xBuffers,xBufferElems,staged,coefPerBlock,yRows,rowsPerItem,yBuffers,ringParts,ringResident,partItems,bcastElems,groupRows,"
    "groupRowsGather";
constexpr int kForwardIntFields = 38;
static_assert(sizeof(GroupNormSiluMsTilingData) == kForwardIntFields * sizeof(int64_t) + 2 * sizeof(float),
              "update kForwardTilingFields");

}  // namespace

GNMS_TWIN_EXPORT const char *GnmsTwinTilingFields() { return kForwardTilingFields; }

// The layouts of this library's arrays (twin_c_api.h's GnmsTwinArray). Options: the data and
// parameter dtypes and activateSilu; scalars: the tiling's two floats; buffers: the kernel's GM
// arguments in CANN's order; dtypes: those of the inputs (CheckDtypes).
GNMS_TWIN_EXPORT const char *GnmsTwinArrayNames(int which) {
  switch (which) {
    case kGnmsTwinOptions: return "dataType,paramType,activateSilu";
    case kGnmsTwinScalars: return "eps,swishScale";
    case kGnmsTwinBuffers: return "x,gamma,beta,y,mean,rstd";
    case kGnmsTwinInputs: return "x,gamma,beta";
    case kGnmsTwinDtypes: return "x,gamma,beta";
    default: return nullptr;
  }
}

// Returns a forward_tiling::TilingStatus.
GNMS_TWIN_EXPORT int GnmsTwinTiling(const int64_t *shape, const int *options, const double *scalars,
                                    int64_t ubBytes, int64_t coreNum, int64_t *tilingOut, int64_t *tilingKeyOut) {
  const int dataType = options[0], paramType = options[1];
  if (dataType < 0 || dataType > 2 || paramType < 0 || paramType > 2) return forward_tiling::kTilingBadDtype;
  forward_tiling::TilingInput in;
  in.N = shape[0];
  in.C = shape[1];
  in.HxW = shape[2];
  in.G = shape[3];
  in.dataType = static_cast<forward_tiling::ScalarType>(dataType);
  in.paramType = static_cast<forward_tiling::ScalarType>(paramType);
  in.eps = static_cast<float>(scalars[0]);
  in.activateSilu = options[2] != 0;
  in.swishScale = static_cast<float>(scalars[1]);
  in.ubBytes = ubBytes;
  in.coreNum = coreNum;
  GroupNormSiluMsTilingData t;
  const int status = forward_tiling::ComputeTiling(in, &t);
  if (status != forward_tiling::kTilingOk) return status;
  std::memcpy(tilingOut, &t, kForwardIntFields * sizeof(int64_t));
  *tilingKeyOut = forward_tiling::TilingKeyFor(in.dataType, in.paramType);
  return forward_tiling::kTilingOk;
}

// Runs the kernel on the twin. Returns 0, or 1 with the fault message in `error`.
GNMS_TWIN_EXPORT int GnmsTwinLaunch(void *const *buffers, const int64_t *bufferBytes, const int64_t *tilingFields,
                                    const double *scalars, int64_t tilingKey, int64_t ubBytes, int64_t coreNum,
                                    int policy, uint64_t seed, char *error, int errorLen) {
  GroupNormSiluMsTilingData t;
  std::memcpy(&t, tilingFields, kForwardIntFields * sizeof(int64_t));
  t.eps = static_cast<float>(scalars[0]);
  t.swishScale = static_cast<float>(scalars[1]);
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
  const size_t workspaceBytes = static_cast<size_t>(forward_tiling::UserWorkspaceBytes(t));
  std::vector<float> workspace(workspaceBytes / sizeof(float) + 1);
  if (workspaceBytes > 0) regions.push_back({workspace.data(), workspaceBytes, "workspace"});
  auto gm = [&](int i) { return static_cast<GM_ADDR>(buffers[i]); };
  std::string message;
  const int status = twin::Launch(
      twin::api::LaunchConfig(ubBytes, coreNum, policy, seed), t.blockDim, tilingKey, regions,
      [&] { group_norm_silu_ms(gm(0), gm(1), gm(2), gm(3), gm(4), gm(5), reinterpret_cast<GM_ADDR>(workspace.data()),
                           tilingGm.data()); }, &message);
  twin::api::CopyError(message.c_str(), error, errorLen);
  return status;
}

// Inputs in GnmsTwinArrayNames(kGnmsTwinInputs)'s order (x, gamma, beta).
GNMS_TWIN_EXPORT int GnmsTwinCheckInputs(const int64_t *dims, const int64_t *ranks, const int64_t *numGroups,
                                         char *error, int errorLen) {
  forward_tiling::ShapeView shapes[forward_tiling::kNumInputs];
  const int64_t *next = dims;
  for (int i = 0; i < forward_tiling::kNumInputs; ++i) {
    if (ranks[i] < 0) continue;
    shapes[i].present = true;
    shapes[i].dims = next;
    shapes[i].rank = ranks[i];
    next += ranks[i];
  }
  std::string message;
  const int status = forward_tiling::CheckInputs(shapes, numGroups, &message);
  twin::api::CopyError(message.c_str(), error, errorLen);
  return status;
}

// dtypes: x, gamma, beta (forward_tiling::CheckDtypes).
GNMS_TWIN_EXPORT int GnmsTwinCheckDtypes(const int *dtypes, char *error, int errorLen) {
  using forward_tiling::ScalarType;
  std::string message;
  const int status = forward_tiling::CheckDtypes(
      static_cast<ScalarType>(dtypes[0]), static_cast<ScalarType>(dtypes[1]), static_cast<ScalarType>(dtypes[2]),
      &message);
  twin::api::CopyError(message.c_str(), error, errorLen);
  return status;
}
