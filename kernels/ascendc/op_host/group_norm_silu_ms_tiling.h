// Host tiling of GroupNormSiluMs as a plain C++ function: shapes, dtypes, attributes, UB size
// and core count in, a tiling struct out. No CANN header is needed, so the CPU twin and the
// tests call exactly the function the CANN registration wrapper (group_norm_silu_ms.cpp) calls.
#ifndef GROUP_NORM_SILU_MS_TILING_H
#define GROUP_NORM_SILU_MS_TILING_H

#include <cstdint>
#include <string>

#include "../op_kernel/group_norm_silu_ms_tiling_data.h"
#include "tiling_shapes.h"

namespace ms_groupnorm::forward_tiling {

// UB bytes the plan leaves unused, as CANN's own GroupNorm kernels' tilings do (see
// group_norm_grad_ms_tiling.h).
constexpr int64_t kUbReserveBytes = 1024;
// DataCopyPad's blockCount range on A2/A3 (asc-devkit docs, DataCopyPad（GMToUB非对齐数据搬运）.md,
// DataCopyExtParams: blockCount in [0, 4095]): a resident group is loaded as one copy of its rows.
constexpr int64_t kMaxCopyRows = 4095;
// At most this many slices of one group (the UB buffer that reads the slices' statistics back
// is reserved for it in every chunked plan, so that the chunk size never depends on the core
// count).
constexpr int64_t kMaxSlices = 64;
constexpr int64_t kSliceEntryFloats = 8;  // (count, mean, M2) padded to 32 bytes
// Slots of the part ring (op_kernel MAX_RING_SLOTS): each load in flight holds one MTE2 -> V
// event id of the 8 A2/A3 have (asc-devkit TQue简介.md, "TQue Buffer限制").
constexpr int64_t kMaxRingSlots = 8;

using ms_groupnorm::tiling::ScalarType;
using ms_groupnorm::tiling::ShapeView;

struct TilingInput {
  int64_t N = 0;
  int64_t C = 0;
  int64_t HxW = 0;
  int64_t G = 1;
  ScalarType dataType = ScalarType::kFloat32;   // x, y
  ScalarType paramType = ScalarType::kFloat32;  // gamma, beta (mean and rstd are float32)
  float eps = 1e-5f;
  bool activateSilu = true;
  float swishScale = 1.0f;
  int64_t ubBytes = 0;  // unified buffer per vector core
  int64_t coreNum = 0;  // vector cores available
};

enum TilingStatus : int {
  kTilingOk = 0,
  kTilingBadShape = 1,      // negative sizes, G <= 0 or C % G != 0
  kTilingBadDtype = 2,      // gamma/beta neither in x's dtype nor float32, or gamma != beta dtype
  kTilingBadPlatform = 3,   // no cores or an implausibly small UB
  kTilingNoFit = 4,         // not even one chunk fits (UB too small)
  kTilingMissingInput = 5,  // an input descriptor/shape or the num_groups attribute is absent
  kTilingBadAttribute = 6,  // eps not a finite number > 0, or swish_scale not finite
};

// Positions of the inputs in the operator definition.
enum InputIndex : int { kInputX = 0, kInputGamma = 1, kInputBeta = 2, kNumInputs = 3 };

// Validates the inputs (OpDef order) and num_groups (nullptr: attribute absent) before any
// size is derived from them: x has rank >= 2 and no negative dimension; num_groups > 0 and
// divides C; gamma and beta have C elements. Returns kTilingOk, or kTilingMissingInput /
// kTilingBadShape with *message naming the parameter and the rule. Without it a bad call
// would make the kernel read gamma/beta out of bounds (it indexes them by channel).
int CheckInputs(const ShapeView (&shapes)[kNumInputs], const int64_t *numGroups, std::string *message);

// The dtype rule: gamma and beta share one dtype, x's or float32. kTilingOk or kTilingBadDtype.
int CheckDtypes(ScalarType x, ScalarType gamma, ScalarType beta, std::string *message);

// The attribute rule: eps is a finite number > 0 (eps = 0 gives a constant group an infinite
// rstd, a negative eps a NaN one) and swish_scale is finite (an infinite one turns SiLU into a
// step whose products with 0 are NaN). kTilingOk or kTilingBadAttribute. ComputeTiling applies
// it too, so no caller launches with such attributes.
int CheckAttributes(float eps, float swishScale, std::string *message);

// Fills *out and returns kTilingOk, or returns an error status and leaves *out undefined.
int ComputeTiling(const TilingInput &in, GroupNormSiluMsTilingData *out);

// The tiling key (dtype pair) of a valid input, or -1.
int64_t TilingKeyFor(ScalarType data, ScalarType param);

// Bytes of the user workspace: one 32-byte (count, mean, M2) entry per task when groups are
// split into slices (exchanged across blocks after SyncAll), else 0.
int64_t UserWorkspaceBytes(const GroupNormSiluMsTilingData &t);

// Human-readable name of a tiling mode, for logs and test ids.
const char *ModeName(int64_t mode);

}  // namespace ms_groupnorm::forward_tiling

#endif  // GROUP_NORM_SILU_MS_TILING_H
