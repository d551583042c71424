// C API for ctypes: the host-side input validation of GroupNormGradMs (ms_groupnorm::grad_tiling::CheckInputs,
// the plain function the CANN tiling and InferShape call), so that tests can make every
// rejection the host must give, missing descriptors included.
#include <cstring>
#include <string>

#include "../op_host/group_norm_grad_ms_tiling.h"

#define GNMS_TWIN_EXPORT extern "C" __attribute__((visibility("default")))

// ranks[i] < 0: input i has no descriptor/shape; dims holds the present shapes back to back.
// numGroups == nullptr: the attribute is absent. Returns a ms_groupnorm::grad_tiling::TilingStatus and the message.
GNMS_TWIN_EXPORT int GnmsTwinCheckInputs(const int64_t *dims, const int64_t *ranks, const int64_t *numGroups,
                                         char *error, int errorLen) {
  ms_groupnorm::grad_tiling::ShapeView shapes[ms_groupnorm::grad_tiling::kNumInputs];
  const int64_t *next = dims;
  for (int i = 0; i < ms_groupnorm::grad_tiling::kNumInputs; ++i) {
    if (ranks[i] < 0) continue;
    shapes[i].present = true;
    shapes[i].dims = next;
    shapes[i].rank = ranks[i];
    next += ranks[i];
  }
  std::string message;
  const int status = ms_groupnorm::grad_tiling::CheckInputs(shapes, numGroups, &message);
  if (error != nullptr && errorLen > 0) {
    std::strncpy(error, message.c_str(), static_cast<size_t>(errorLen) - 1);
    error[errorLen - 1] = '\0';
  }
  return status;
}
