// The part of the twins' C API (twin_c_api.h) every twin library has (each links its own copy of
// the twin runtime, so each keeps its own cost constants and counters): the cost constants of its
// later launches, the per-block counters of its last successful launch, and the names of both
// layouts (twin_runtime.h's GNMS_TWIN_COST_FIELDS / GNMS_TWIN_STAT_FIELDS), which
// kernels/ascendc/twin/twin.py reads instead of writing them again.
#include "twin_c_api.h"

#include <cstring>

namespace twin::api {

void CopyError(const char *message, char *error, int errorLen) {
  if (error == nullptr || errorLen <= 0) return;
  std::strncpy(error, message, static_cast<size_t>(errorLen) - 1);
  error[errorLen - 1] = '\0';
}

twin::Config LaunchConfig(int64_t ubBytes, int64_t coreNum, int policy, uint64_t seed) {
  twin::Config config;
  config.ubBytes = ubBytes;
  config.coreNum = coreNum;
  config.policy = policy & 0xFF;
  config.execution = (policy >> 8) & 0xFF;
  config.checkHazards = ((policy >> 16) & 1) == 0;
  config.autoSync = ((policy >> 17) & 1) == 0;
  config.saturation = ((policy >> 18) & 1) != 0;
  config.cannCompat = ((policy >> 19) & 1) != 0;
  config.seed = seed;
  config.cost = twin::DefaultCost();
  return config;
}

}  // namespace twin::api

GNMS_TWIN_EXPORT void GnmsTwinCostModel(const double *values, double *out) { twin::ExchangeCostModel(values, out); }

GNMS_TWIN_EXPORT int GnmsTwinLastStats(double *out, int maxBlocks) { return twin::CopyLastStats(out, maxBlocks); }

GNMS_TWIN_EXPORT const char *GnmsTwinFieldNames(int which) { return twin::FieldNames(which); }
