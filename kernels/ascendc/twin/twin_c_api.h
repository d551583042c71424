// The twin libraries' C API for ctypes (kernels/ascendc/twin/twin.py), one set of entry points
// with one signature each, whichever operator a library runs: the backward library
// (GroupNormGradMs, GroupNormSiluGradMs; twin_launch.cc) and the forward library
// (GroupNormSiluMs; twin_forward.cc) both define the operator part, and every library, the probes'
// included, links twin_c_api.cc's part (cost constants, counters, field names).
//
// What differs between the operators travels in arrays whose layout the library names:
// GnmsTwinArrayNames(which) gives the comma-separated names of one array's elements, so the
// caller packs them by name and a field added on one side cannot be read shifted on the other.
// Dtype codes: 0 float32, 1 float16, 2 bfloat16 (the tilings' ScalarType). Statuses: the
// operator's TilingStatus (0 ok), or for launches 0 / 1 with the fault message in `error`.
#ifndef GNMS_TWIN_C_API_H
#define GNMS_TWIN_C_API_H

#include <cstdint>

#include "twin_runtime.h"

// Every entry point the twin libraries export (these and the aot shims' MindSpore ABI); the
// libraries are built with -fvisibility=hidden, so nothing else leaves them.
#define GNMS_TWIN_EXPORT extern "C" __attribute__((visibility("default")))

// GnmsTwinArrayNames' `which`.
enum GnmsTwinArray : int {
  kGnmsTwinOptions = 0,  // int options of GnmsTwinTiling: dtypes and flags
  kGnmsTwinScalars = 1,  // doubles of GnmsTwinTiling/GnmsTwinLaunch (the tiling's float fields)
  kGnmsTwinBuffers = 2,  // GM buffers of GnmsTwinLaunch, in the kernel's order
  kGnmsTwinInputs = 3,   // shapes of GnmsTwinCheckInputs, in the operator's input order
  kGnmsTwinDtypes = 4,   // dtype codes of GnmsTwinCheckDtypes
};
// GnmsTwinTiling's shape is the same for every operator: N, C, HxW (product of the spatial
// dims), G.
constexpr int kGnmsTwinShapeLength = 4;

extern "C" {

// ---- the operator part (twin_launch.cc, twin_forward.cc)
// The names of one array's elements (GnmsTwinArray), comma-separated; nullptr for an unknown one.
const char *GnmsTwinArrayNames(int which);
// The int64 fields of the operator's tiling struct in declaration order, comma-separated (the
// float fields after them are the scalars).
const char *GnmsTwinTilingFields();
// The host tiling: writes the int64 fields to `tiling` and the tiling key to `tilingKey`.
int GnmsTwinTiling(const int64_t *shape, const int *options, const double *scalars, int64_t ubBytes,
                   int64_t coreNum, int64_t *tiling, int64_t *tilingKey);
// Runs the unmodified kernel's blocks on the twin: buffers with their sizes in bytes (what the
// launch hands the device; GM accesses outside them fault), the int64 tiling fields, the
// scalars, the device configuration and the policy bits (twin.py's _policy_code).
int GnmsTwinLaunch(void *const *buffers, const int64_t *bytes, const int64_t *tiling, const double *scalars,
                   int64_t tilingKey, int64_t ubBytes, int64_t coreNum, int policy, uint64_t seed, char *error,
                   int errorLen);
// The host's input validation (the plain CheckInputs the CANN tiling and InferShape call):
// ranks[i] < 0 means input i has no descriptor/shape; dims holds the present shapes back to back;
// numGroups == nullptr means the attribute is absent.
int GnmsTwinCheckInputs(const int64_t *dims, const int64_t *ranks, const int64_t *numGroups, char *error,
                        int errorLen);
// The host's dtype rule on the codes of kGnmsTwinDtypes.
int GnmsTwinCheckDtypes(const int *dtypes, char *error, int errorLen);

// ---- every library (twin_c_api.cc)
// values != nullptr sets the cost constants first; out receives kCostFieldCount doubles.
void GnmsTwinCostModel(const double *values, double *out);
// Copies kStatFieldCount doubles per block into out[maxBlocks][...]; returns the block count.
int GnmsTwinLastStats(double *out, int maxBlocks);
// which 0: the cost constants' names, 1: the counters', comma-separated.
const char *GnmsTwinFieldNames(int which);

// ---- the probe library (twin_probes.cc)
// Runs probe `name` on `blockDim` blocks; `out` (outLen floats) is the launch's only GM buffer.
// Returns 0, 1 with the fault in `error`, or 2 for an unknown probe.
int GnmsTwinProbe(const char *name, int64_t blockDim, int64_t coreNum, int64_t ubBytes, int policy, uint64_t seed,
                  float *out, int64_t outLen, char *error, int errorLen);

}  // extern "C"

namespace twin::api {

// Copies `message` into the caller's error buffer, truncated and terminated.
void CopyError(const char *message, char *error, int errorLen);

// The device configuration of a launch (an operator's, a probe's or CANN's kernel's): the UB size,
// the core count and the policy argument's bits 0-7 block order, 8-15 pipe execution, 16 no
// hazard checks, 17 no --cce-auto-sync, 18 saturation overflow mode, 19 the relaxations for CANN's
// kernels (twin::Config), with the default cost constants. The one decoder of that layout
// (kernels/ascendc/twin/twin.py's _policy_code writes it).
twin::Config LaunchConfig(int64_t ubBytes, int64_t coreNum, int policy, uint64_t seed);

}  // namespace twin::api

#endif  // GNMS_TWIN_C_API_H
