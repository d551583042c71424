/*
 * Kernel entry of GroupNormSiluMs. The tiling key selects the (x, gamma/beta) dtype pair;
 * the tiling mode is a runtime field (see group_norm_silu_ms_tiling_data.h).
 *
 * CANN build rules (kernels/ascendc/README.md, "CANN build rules"; the twin enforces both):
 *  - TILING_KEY_IS takes numeric literals; the static_assert ties them to the host's keys.
 *  - Split groups (N * G < cores, group larger than the UB) exchange slice statistics through
 *    the workspace after a hardware SyncAll, so the kernel is KERNEL_TYPE_MIX_AIV_1_0 (under
 *    AIV_ONLY the cross-core barrier is not started); it still starts only vector cores.
 *  - The TPipe lives here, outside the kernel class (a TPipe member stops the compiler from
 *    constant-folding the class's scalars: asc-devkit 避免TPipe在对象内创建和初始化.md).
 */
#include "kernel_operator.h"
#include "group_norm_silu_ms.h"

using namespace GroupNormSiluMsKernel;

static_assert(GNS_KEY_FP32 == 1 && GNS_KEY_FP16 == 2 && GNS_KEY_BF16 == 3 && GNS_KEY_FP16_FP32 == 4 &&
                  GNS_KEY_BF16_FP32 == 5,
              "the TILING_KEY_IS literals below must match the host's tiling keys");

template <typename T, typename U>
__aicore__ inline void RunGroupNormSiluMs(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y, GM_ADDR mean,
                                          GM_ADDR rstd, GM_ADDR workspace, const GroupNormSiluMsTilingData *tiling,
                                          TPipe *pipe) {
  KernelGroupNormSiluMs<T, U> op;
  op.Init(x, gamma, beta, y, mean, rstd, workspace, tiling, pipe);
  op.Process();
}

extern "C" __global__ __aicore__ void group_norm_silu_ms(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y,
                                                         GM_ADDR mean, GM_ADDR rstd, GM_ADDR workspace,
                                                         GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(GroupNormSiluMsTilingData);
  GET_TILING_DATA_WITH_STRUCT(GroupNormSiluMsTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);
  GM_ADDR userWorkspace = GetUserWorkspace(workspace);
  TPipe pipe;
  if (TILING_KEY_IS(1)) {  // GNS_KEY_FP32
    RunGroupNormSiluMs<float, float>(x, gamma, beta, y, mean, rstd, userWorkspace, &tilingData, &pipe);
  } else if (TILING_KEY_IS(2)) {  // GNS_KEY_FP16
    RunGroupNormSiluMs<half, half>(x, gamma, beta, y, mean, rstd, userWorkspace, &tilingData, &pipe);
  } else if (TILING_KEY_IS(3)) {  // GNS_KEY_BF16
    RunGroupNormSiluMs<bfloat16_t, bfloat16_t>(x, gamma, beta, y, mean, rstd, userWorkspace, &tilingData, &pipe);
  } else if (TILING_KEY_IS(4)) {  // GNS_KEY_FP16_FP32
    RunGroupNormSiluMs<half, float>(x, gamma, beta, y, mean, rstd, userWorkspace, &tilingData, &pipe);
  } else if (TILING_KEY_IS(5)) {  // GNS_KEY_BF16_FP32
    RunGroupNormSiluMs<bfloat16_t, float>(x, gamma, beta, y, mean, rstd, userWorkspace, &tilingData, &pipe);
  }
}
