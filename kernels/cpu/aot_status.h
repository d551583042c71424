// Status codes returned by the aot entry points of the CPU kernels and of the AscendC
// twin (kernels/ascendc/twin/twin_aot.cc); ms_groupnorm/backends/cpu_kernels.py names them.
// Any non-zero code makes MindSpore raise "Return value from CPU AOT kernel ... is N".
#pragma once

namespace ms_groupnorm {

enum AotStatus : int {
  kOk = 0,
  kBadParamCount = 1,  // wrong nparam, or a null params/ndims/shapes/dtypes array
  kNullPointer = 2,    // a tensor the call needs has no data pointer
  kBadRank = 3,
  kBadDtype = 4,
  kBadShape = 5,       // inconsistent element counts, group, or sizes that overflow
  kBadAttr = 6,        // missing or invalid attribute
  kKernelFault = 7,    // the twin only: the AscendC kernel broke a hardware rule
  kBadRuntimeScalar = 8,  // num_groups/eps read from a tensor at run time: missing, not > 0, or not dividing C
};

}  // namespace ms_groupnorm
