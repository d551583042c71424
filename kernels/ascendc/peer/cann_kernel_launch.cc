// Launches CANN's unmodified 910B GroupNormGrad kernel (ops-nn norm/group_norm_grad/op_kernel/
// group_norm_grad.cpp, compiled against the twin in its own translation unit by tests/cann_peer.py)
// on the CPU twin, with the tiling bytes CANN's own tiling computed (cann_tiling_host.cc).
//
// What the launch hands the kernel, as the framework does on the device: the eight tensors, a GM
// copy of the tiling, and the workspace. On the device the workspace starts with the 16 MiB system
// workspace (PlatformAscendC::GetLibApiWorkSpaceSize on the 910B) and GetUserWorkspace() skips it;
// the twin's GetUserWorkspace returns its argument, so the launch passes the user part only (the
// tiling's workspace size less the system part, which the caller gives). It starts as quiet NaNs,
// as our own launches' workspace does (twin_launch.cc): the kernel must clear what it adds into.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "kernel_operator.h"
#include "twin_c_api.h"

extern "C" void group_norm_grad(GM_ADDR dy, GM_ADDR mean, GM_ADDR rstd, GM_ADDR x, GM_ADDR gamma, GM_ADDR dx,
                                GM_ADDR dgamma, GM_ADDR dbeta, GM_ADDR workspace, GM_ADDR tilingdata);

#define GNMS_PEER_EXPORT extern "C" __attribute__((visibility("default")))

// buffers/bytes: dy, mean, rstd, x, gamma, dx, dgamma, dbeta. policy: the twin's scheduling policy
// (low byte) and pipe execution (next byte), as GnmsTwinLaunch (twin_c_api.h) takes them; bit 16: no hazard checks;
// bit 19: Config::cannCompat.
// Returns 0, or 1 with the twin's fault in `error`.
GNMS_PEER_EXPORT int GnmsPeerGroupNormGradLaunch(void *const *buffers, const int64_t *bytes, const uint8_t *tiling,
                                                 int64_t tilingBytes, int64_t tilingKey, int64_t blockDim,
                                                 int64_t userWorkspaceBytes, int64_t ubBytes, int64_t coreNum,
                                                 int policy, uint64_t seed, char *error, int errorLen) {
  static const char *const kNames[8] = {"dy", "mean", "rstd", "x", "gamma", "dx", "dgamma", "dbeta"};
  std::vector<uint8_t> tilingGm(tiling, tiling + tilingBytes);
  std::vector<float> workspace(static_cast<size_t>(userWorkspaceBytes / 4) + 1, std::numeric_limits<float>::quiet_NaN());
  std::vector<twin::GmRegion> regions;
  for (int i = 0; i < 8; ++i) {
    if (buffers[i] != nullptr && bytes[i] > 0) regions.push_back({buffers[i], static_cast<size_t>(bytes[i]), kNames[i]});
  }
  regions.push_back({tilingGm.data(), tilingGm.size(), "tiling"});
  if (userWorkspaceBytes > 0) regions.push_back({workspace.data(), static_cast<size_t>(userWorkspaceBytes), "workspace"});
  const twin::Config config = twin::api::LaunchConfig(ubBytes, coreNum, policy, seed);
  auto gm = [&](int i) { return static_cast<GM_ADDR>(buffers[i]); };
  std::string message;
  const int status = twin::Launch(
      config, blockDim, tilingKey, regions,
      [&] {
        group_norm_grad(gm(0), gm(1), gm(2), gm(3), gm(4), gm(5), gm(6), gm(7),
                        reinterpret_cast<GM_ADDR>(workspace.data()), tilingGm.data());
      },
      &message);
  twin::api::CopyError(message.c_str(), error, errorLen);
  return status;
}
// Its cost constants and counters: twin_c_api.cc, linked into this library too.
