// Runs the probe kernels of twin_probes.h by name (the ctypes entry GnmsTwinProbe, twin_c_api.h).
#include <cstring>
#include <map>
#include <string>

#include "kernel_operator.h"
#include "twin_c_api.h"
#include "twin_probes.h"

namespace {

using twin::probes::ProbeArgs;
using twin::probes::ProbeMap;

const ProbeMap &Probes() {
  static const ProbeMap probes = [] {
    ProbeMap all;
    twin::probes::AddBufferProbes(&all);
    twin::probes::AddSyncProbes(&all);
    twin::probes::AddVectorProbes(&all);
    twin::probes::AddStridedProbes(&all);
    twin::probes::AddCommonProbes(&all);
    twin::probes::AddMathProbes(&all);
    return all;
  }();
  return probes;
}

}  // namespace

// Runs probe `name` on `blockDim` blocks; `out` (outLen floats) is the launch's only GM
// buffer. Returns 0, 1 with the fault in `error`, or 2 for an unknown probe.
GNMS_TWIN_EXPORT int GnmsTwinProbe(const char *name, int64_t blockDim, int64_t coreNum, int64_t ubBytes, int policy,
                                   uint64_t seed, float *out, int64_t outLen, char *error, int errorLen) {
  const auto &probes = Probes();
  const auto it = probes.find(name);
  if (it == probes.end()) return 2;
  twin::Config config;
  config.ubBytes = ubBytes;
  config.coreNum = coreNum;
  config.policy = policy & 0xFF;  // bits 8-15: the execution of the pipes; bit 16: no hazard checks
  config.execution = (policy >> 8) & 0xFF;
  config.checkHazards = ((policy >> 16) & 1) == 0;
  config.cost = twin::DefaultCost();
  config.autoSync = ((policy >> 17) & 1) == 0;    // bit 17: no --cce-auto-sync
  config.saturation = ((policy >> 18) & 1) != 0;  // bit 18: saturation overflow mode
  config.cannCompat = ((policy >> 19) & 1) != 0;  // bit 19: the relaxations for CANN's kernels
  config.seed = seed;
  std::vector<twin::GmRegion> regions;
  if (outLen > 0) regions.push_back({out, static_cast<size_t>(outLen) * sizeof(float), "out"});
  const ProbeArgs args{out, outLen};
  std::string message;
  const int status = twin::Launch(config, blockDim, 0, regions, [&] { it->second(args); }, &message);
  twin::api::CopyError(message.c_str(), error, errorLen);
  return status;
}
