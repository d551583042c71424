// Host tiling of GroupNormGradMs as a plain C++ function: shapes, dtypes, UB size and
// core count in, a tiling struct out. No CANN header is needed, so the CPU twin and the
// tests call exactly the function that the CANN registration wrapper calls on device.
#ifndef GROUP_NORM_GRAD_MS_TILING_H
#define GROUP_NORM_GRAD_MS_TILING_H

#include <cstdint>
#include <string>

#include "../op_kernel/group_norm_grad_ms_tiling_data.h"
#include "tiling_shapes.h"

namespace ms_groupnorm::grad_tiling {

// UB bytes the plan leaves unused, as CANN's own GroupNormGrad tiling does (hicann/ops-nn
// norm/group_norm_grad/op_host/group_norm_grad_tiling.cpp: RESERVE_SAPCE = 1024).
constexpr int64_t kUbReserveBytes = 1024;

using ms_groupnorm::tiling::ScalarType;
using ms_groupnorm::tiling::ShapeView;

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
  // GroupNormSiluGradMs: dy is the gradient of z = y * sigmoid(swishScale * y), y = gamma *
  // xhat + beta; the kernel recomputes y and the sigmoid from x, mean, rstd, gamma and beta.
  bool silu = false;
  float swishScale = 1.0f;
};

enum TilingStatus : int {
  kTilingOk = 0,
  kTilingBadShape = 1,     // negative sizes, G <= 0 or C % G != 0
  kTilingBadDtype = 2,     // statistics neither in the data dtype nor in float32
  kTilingBadPlatform = 3,  // no cores or an implausibly small UB
  kTilingNoFit = 4,        // even the smallest mode does not fit (C/G too large for the UB)
  kTilingMissingInput = 5, // an input descriptor/shape or the num_groups attribute is absent
};

// Positions of the inputs in the operator definition (CANN's GroupNormGrad order).
enum InputIndex : int { kInputDy = 0, kInputMean = 1, kInputRstd = 2, kInputX = 3, kInputGamma = 4, kNumInputs = 5 };
// GroupNormSiluGradMs takes GroupNormGradMs's inputs, then beta.
enum SiluGradInputIndex : int { kInputBeta = 5, kNumSiluGradInputs = 6 };

// Validates the inputs (OpDef order) and num_groups (nullptr: attribute absent) before any
// size is derived from them: x has rank >= 2 and no negative dimension; dy has x's shape;
// num_groups > 0 and divides C; mean and rstd have N*G elements; gamma has C elements.
// Returns kTilingOk, or kTilingMissingInput / kTilingBadShape with *message naming the
// parameter and the rule. Without it a bad call would make the kernel read global memory
// out of bounds (it indexes mean/rstd by (n, g) and gamma by c).
int CheckInputs(const ShapeView (&shapes)[kNumInputs], const int64_t *numGroups, std::string *message);

// GroupNormSiluGradMs: CheckInputs' rules, beta present with C elements, and a finite
// swish_scale (nullptr: attribute absent, the default 1.0). Messages name GroupNormSiluGradMs.
int CheckSiluGradInputs(const ShapeView (&shapes)[kNumSiluGradInputs], const int64_t *numGroups,
                        const float *swishScale, std::string *message);

// Fills *out and returns kTilingOk, or returns an error status and leaves *out undefined.
int ComputeTiling(const TilingInput &in, GroupNormGradMsTilingData *out);

// The tiling key (dtype pair) of a valid input, or -1.
int64_t TilingKeyFor(ScalarType data, ScalarType stat);

// Bytes of the user workspace the kernel needs: per-(n, c) fp32 sums of dy and dy*xhat.
int64_t UserWorkspaceBytes(const GroupNormGradMsTilingData &t);

// Human-readable name of a tiling mode, for logs and test ids.
const char *ModeName(int64_t mode);

}  // namespace ms_groupnorm::grad_tiling

#endif  // GROUP_NORM_GRAD_MS_TILING_H
