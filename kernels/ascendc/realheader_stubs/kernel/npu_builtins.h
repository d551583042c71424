// Force-included (g++ -include) when our kernels are checked with the NPU branches of asc-devkit
// (ASCENDC_CPU_DEBUG undefined, __DAV_VEC__ defined, as bisheng --cce-aicore-arch=dav-c220-vec
// compiles them): what bisheng provides built in, so that g++ parses the device branches. See
// cce_builtins.h for what is declared and why. bisheng also knows block_idx etc. as built-in
// variables of the core.
#ifndef MS_GROUPNORM_REALHEADER_NPU_BUILTINS_H
#define MS_GROUPNORM_REALHEADER_NPU_BUILTINS_H
#include <cmath>    // ::sqrt, ::abs: built-in math functions for bisheng
#include <cstddef>  // size_t: a built-in type for bisheng
#include <cstdlib>

#include "cce_builtins.h"
#endif  // MS_GROUPNORM_REALHEADER_NPU_BUILTINS_H
