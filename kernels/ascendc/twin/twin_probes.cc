// Runs the probe kernels of twin_probes.h by name (the ctypes entry GnmsTwinProbe, twin_c_api.h).
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
  const twin::Config config = twin::api::LaunchConfig(ubBytes, coreNum, policy, seed);
  std::vector<twin::GmRegion> regions;
  if (outLen > 0) regions.push_back({out, static_cast<size_t>(outLen) * sizeof(float), "out"});
  const ProbeArgs args{out, outLen};
  std::string message;
  const int status = twin::Launch(config, blockDim, 0, regions, [&] { it->second(args); }, &message);
  twin::api::CopyError(message.c_str(), error, errorLen);
  return status;
}
