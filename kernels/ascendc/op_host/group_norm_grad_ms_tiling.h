// Host tiling of GroupNormGradMs as a plain C++ function: shapes, dtypes, UB size and
// core count in, a tiling struct out. No CANN header is needed, so the CPU twin and the
// tests call exactly the function that the CANN registration wrapper calls on device.
#ifndef GROUP_NORM_GRAD_MS_TILING_H
#define GROUP_NORM_GRAD_MS_TILING_H

#include <cstdint>

#include "../op_kernel/group_norm_grad_ms_tiling_data.h"

namespace gnms {

enum class ScalarType : int { kFloat32 = 0, kFloat16 = 1, kBFloat16 = 2 };

struct TilingInput {
  int64_t N = 0;
  int64_t C = 0;
  int64_t HxW = 0;
  int64_t G = 1;
  ScalarType dataType = ScalarType::kFloat32;  // dy, x, dx
  ScalarType statType = ScalarType::kFloat32;  // mean, rstd, gamma, dgamma, dbeta
  int64_t ubBytes = 0;                         // unified buffer per vector core
  int64_t coreNum = 0;                         // vector cores available
  bool dxRequired = true;
  bool dgammaRequired = true;
  bool dbetaRequired = true;
};

enum TilingStatus : int {
  kTilingOk = 0,
  kTilingBadShape = 1,     // negative sizes, G <= 0 or C % G != 0
  kTilingBadDtype = 2,     // statistics neither in the data dtype nor in float32
  kTilingBadPlatform = 3,  // no cores or an implausibly small UB
  kTilingNoFit = 4,        // even the smallest mode does not fit (C/G too large for the UB)
};

// Fills *out and returns kTilingOk, or returns an error status and leaves *out undefined.
int ComputeTiling(const TilingInput &in, GroupNormGradMsTilingData *out);

// The tiling key (dtype pair) of a valid input, or -1.
int64_t TilingKeyFor(ScalarType data, ScalarType stat);

// Bytes of the user workspace the kernel needs: per-(n, c) fp32 sums of dy and dy*xhat.
int64_t UserWorkspaceBytes(const GroupNormGradMsTilingData &t);

// Human-readable name of a tiling mode, for logs and test ids.
const char *ModeName(int64_t mode);

}  // namespace gnms

#endif  // GROUP_NORM_GRAD_MS_TILING_H
