// Stand-in for tikicpulib's stub_def.h (CANN's closed CPU-debug library, which makes AscendC
// device code compile as host C++ when ASCENDC_CPU_DEBUG=1). Declarations only, for the
// g++ -fsyntax-only check against the real asc-devkit headers (docs/ascend-real-headers.md).
//
// It provides what asc-devkit's CPU-debug branches name and do not define themselves:
//  * everything bisheng provides built in (cce_builtins.h: qualifiers, hardware enums, intrinsics,
//    half/bfloat16_t), since in CPU-debug mode tikicpulib stands in for the compiler;
//  * the per-core variables the CPU-debug runtime keeps (block_idx, g_coreType, ...), the core-type
//    constants AscendC::AIC_TYPE/AIV_TYPE, and the C++ library headers asc-devkit's CPU-debug
//    headers use without including (std::vector, std::cout).
//  * ASCENDC_HOST_AICORE and friends as nothing: asc-devkit defines them only outside CPU-debug mode.
#ifndef MS_GROUPNORM_REALHEADER_STUB_DEF_H
#define MS_GROUPNORM_REALHEADER_STUB_DEF_H

#include <cassert>
#include <cstdint>
#include <iostream>
#include <vector>

#include "cce_builtins.h"

// 8- and 4-bit float types of tikicpulib (storage only: Ascend 950 data types, unused on dav-c220;
// outside CPU-debug mode asc-devkit's impl/utils/common_types.h defines them itself).
struct fp4x2_e1m2_t { uint8_t bits; };
struct fp4x2_e2m1_t { uint8_t bits; };
struct fp8_e4m3fn_t { uint8_t bits; };
struct fp8_e5m2_t { uint8_t bits; };
struct fp8_e8m0_t { uint8_t bits; };
struct hifloat8_t { uint8_t bits; };

#ifndef ASCENDC_HOST_AICORE
#define ASCENDC_HOST_AICORE
#endif
#ifndef ASCENDC_AICORE
#define ASCENDC_AICORE
#endif
#ifndef ASCENDC_HOST
#define ASCENDC_HOST
#endif

extern int64_t block_idx;
extern int64_t block_num;
extern int64_t sub_block_idx;
extern int32_t g_coreType;
extern int32_t g_taskRation;
extern uint64_t g_fixpipeNdNzParam;
namespace AscendC {
constexpr int32_t AIC_TYPE = 1;  // asc-devkit compares g_coreType with these in its CPU-debug log
constexpr int32_t AIV_TYPE = 2;
extern bool g_isVdeq;
}  // namespace AscendC

#endif  // MS_GROUPNORM_REALHEADER_STUB_DEF_H
