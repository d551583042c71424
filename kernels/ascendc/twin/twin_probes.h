// Small kernels written against the twin's AscendC API, most of them deliberately
// broken: the tests run each one and check that the twin stops it with the right
// message (or, for the ordering probes, that the outcome depends on the block order).
// They exist because the GroupNormGradMs kernel itself is correct: its own broken
// launches (wrong UB size, core count, buffer sizes, tiling) are made from Python.
//
// The probes are grouped by the rules they check: twin_probes_buffers.cc (queues, UB, GM,
// data paths), twin_probes_sync.cc (SyncAll, pipes, flags, event ids, V -> V) and
// twin_probes_vector.cc (reductions, casts), twin_probes_strided.cc (repeat-stride forms),
// twin_probes_common.cc (the API CANN's kernels add), twin_probes_math.cc (Exp, Sqrt, Div);
// twin_probes.cc runs them by name.
#ifndef GNMS_TWIN_PROBES_H
#define GNMS_TWIN_PROBES_H

#include <cstdint>
#include <functional>
#include <map>
#include <string>

namespace twin::probes {

struct ProbeArgs {
  float *out;       // GM buffer of outLen floats, the only one the launch is given
  int64_t outLen;
};

using Probe = std::function<void(const ProbeArgs &)>;

using ProbeMap = std::map<std::string, Probe>;

// Each adds its group's probes, by name.
void AddBufferProbes(ProbeMap *probes);
void AddSyncProbes(ProbeMap *probes);
void AddVectorProbes(ProbeMap *probes);
void AddStridedProbes(ProbeMap *probes);
void AddCommonProbes(ProbeMap *probes);  // twin_probes_common.cc: the API CANN's kernels add
void AddMathProbes(ProbeMap *probes);    // twin_probes_math.cc: the forward's Exp, Sqrt, Div

}  // namespace twin::probes

#endif  // GNMS_TWIN_PROBES_H
