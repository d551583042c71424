// Launching the GroupNormGradMs kernel on the CPU twin (shared by the ctypes C API and
// the MindSpore aot shim).
#ifndef GNMS_TWIN_LAUNCH_H
#define GNMS_TWIN_LAUNCH_H

#include <cstdint>
#include <string>

#include "../op_kernel/group_norm_grad_ms_tiling_data.h"
#include "twin_runtime.h"

namespace twin::launch {

// The kernel's GM arguments: dy, mean, rstd, x, gamma, dx, dgamma, dbeta (GroupNormGradMs's
// CANN order), then beta (GroupNormSiluGradMs's sixth input; unused by GroupNormGradMs).
constexpr int kLaunchBuffers = 9;
struct LaunchBuffers {
  void *ptr[kLaunchBuffers] = {};
  int64_t bytes[kLaunchBuffers] = {};
};

// Allocates the tiling GM copy and the workspace, then runs the kernel's blocks: the
// GroupNormSiluGradMs entry when tiling.silu is set, else GroupNormGradMs's.
int LaunchKernel(const LaunchBuffers &buffers, const GroupNormGradMsTilingData &tiling, int64_t tilingKey,
                 const twin::Config &config, std::string *error);

}  // namespace twin::launch

#endif  // GNMS_TWIN_LAUNCH_H
