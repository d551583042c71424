// The part of the twins' C API every twin library has (each links its own copy of the twin
// runtime, so each keeps its own cost constants and counters): the cost constants of its later
// launches, the per-block counters of its last successful launch, and the names of both
// layouts (twin_runtime.h's GNMS_TWIN_COST_FIELDS / GNMS_TWIN_STAT_FIELDS), which
// kernels/ascendc/twin/twin.py reads instead of writing them again.
#include "twin_runtime.h"

#define GNMS_TWIN_EXPORT extern "C" __attribute__((visibility("default")))

// values != nullptr sets the constants first; out receives kCostFieldCount doubles.
GNMS_TWIN_EXPORT void GnmsTwinCostModel(const double *values, double *out) { twin::ExchangeCostModel(values, out); }

// Copies kStatFieldCount doubles per block into out[maxBlocks][...]; returns the block count.
GNMS_TWIN_EXPORT int GnmsTwinLastStats(double *out, int maxBlocks) { return twin::CopyLastStats(out, maxBlocks); }

// which 0: the cost constants' names, 1: the counters', comma-separated.
GNMS_TWIN_EXPORT const char *GnmsTwinFieldNames(int which) { return twin::FieldNames(which); }
