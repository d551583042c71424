// Stand-in for asc-devkit's tiling/tiling_api.h (installed from include/adv_api/tiling_api.h): the
// tiling headers of every advanced API (matmul, softmax, ...), which need kernel_tiling/kernel_tiling.h,
// a header CANN's build generates. group_norm_silu's op_host includes it and uses none of those APIs,
// so only the platform header it also brings in is kept.
#pragma once
#include "tiling/platform/platform_ascendc.h"
