// The backward library's host checks in the twins' C API (twin_c_api.h): GroupNormGradMs's input
// validation (ms_groupnorm::grad_tiling::CheckInputs, the plain function the CANN tiling and
// InferShape call), so that tests can make every rejection the host must give, missing
// descriptors included, and its dtype rule.
#include <string>

#include "../op_host/group_norm_grad_ms_tiling.h"
#include "twin_c_api.h"

namespace grad_tiling = ms_groupnorm::grad_tiling;  // the tiling this file calls, by its short name

// Inputs in GnmsTwinArrayNames(kGnmsTwinInputs)'s order. Returns a
// grad_tiling::TilingStatus and the message.
GNMS_TWIN_EXPORT int GnmsTwinCheckInputs(const int64_t *dims, const int64_t *ranks, const int64_t *numGroups,
                                         char *error, int errorLen) {
  grad_tiling::ShapeView shapes[grad_tiling::kNumInputs];
  const int64_t *next = dims;
  for (int i = 0; i < grad_tiling::kNumInputs; ++i) {
    if (ranks[i] < 0) continue;
    shapes[i].present = true;
    shapes[i].dims = next;
    shapes[i].rank = ranks[i];
    next += ranks[i];
  }
  std::string message;
  const int status = grad_tiling::CheckInputs(shapes, numGroups, &message);
  twin::api::CopyError(message.c_str(), error, errorLen);
  return status;
}

// The backward host has one dtype rule, the one its tiling applies (group_norm_grad_ms_tiling.cpp:
// a pair with a tiling key, i.e. statistics in the data dtype or float32); dtypes: data, statistics.
GNMS_TWIN_EXPORT int GnmsTwinCheckDtypes(const int *dtypes, char *error, int errorLen) {
  const bool known = dtypes[0] >= 0 && dtypes[0] <= 2 && dtypes[1] >= 0 && dtypes[1] <= 2;
  using grad_tiling::ScalarType;
  if (!known || grad_tiling::TilingKeyFor(static_cast<ScalarType>(dtypes[0]), static_cast<ScalarType>(dtypes[1])) < 0) {
    twin::api::CopyError("GroupNormGradMs: the statistics must be in the data dtype or float32", error, errorLen);
    return grad_tiling::kTilingBadDtype;
  }
  twin::api::CopyError("", error, errorLen);
  return grad_tiling::kTilingOk;
}
