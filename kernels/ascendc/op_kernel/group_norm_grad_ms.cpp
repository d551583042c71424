/*
 * Kernel entry of GroupNormGradMs. The tiling key selects the (data, statistics) dtype
 * pair; the tiling mode is a runtime field (see group_norm_grad_ms_tiling_data.h).
 *
 * CANN build rules (kernels/ascendc/README.md, "CANN build rules"; the twin enforces both):
 *  - TILING_KEY_IS takes numeric literals: CANN's build reads the keys from the
 *    preprocessed kernel and refuses a constexpr name. The static_asserts tie each
 *    literal to the host's GNG_KEY_* constant.
 *  - The kernel calls SyncAll (hardware barrier), so its type is KERNEL_TYPE_MIX_AIV_1_0:
 *    under KERNEL_TYPE_AIV_ONLY the cross-core scheduler is not started and the barrier
 *    cannot work. MIX_AIV_1_0 still starts only vector cores, blockDim of them.
 */
#include "kernel_operator.h"
#include "group_norm_grad_ms.h"

using namespace GroupNormGradMsKernel;

static_assert(GNG_KEY_FP32 == 1 && GNG_KEY_FP16 == 2 && GNG_KEY_BF16 == 3 && GNG_KEY_FP16_FP32 == 4 &&
                  GNG_KEY_BF16_FP32 == 5,
              "the TILING_KEY_IS literals below must match the host's tiling keys");

template <typename T, typename U>
__aicore__ inline void RunGroupNormGradMs(GM_ADDR dy, GM_ADDR mean, GM_ADDR rstd, GM_ADDR x, GM_ADDR gamma, GM_ADDR dx,
                                          GM_ADDR dgamma, GM_ADDR dbeta, GM_ADDR workspace,
                                          const GroupNormGradMsTilingData *tiling) {
  TPipe pipe;  // outside the kernel class (see KernelGroupNormGradMs::pipe_)
  KernelGroupNormGradMs<T, U> op;
  op.Init(dy, mean, rstd, x, gamma, nullptr, dx, dgamma, dbeta, workspace, tiling, &pipe);  // no beta
  op.Process();
}

extern "C" __global__ __aicore__ void group_norm_grad_ms(GM_ADDR dy, GM_ADDR mean, GM_ADDR rstd, GM_ADDR x,
                                                         GM_ADDR gamma, GM_ADDR dx, GM_ADDR dgamma, GM_ADDR dbeta,
                                                         GM_ADDR workspace, GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(GroupNormGradMsTilingData);
  GET_TILING_DATA_WITH_STRUCT(GroupNormGradMsTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);
  GM_ADDR userWorkspace = GetUserWorkspace(workspace);
  if (TILING_KEY_IS(1)) {  // GNG_KEY_FP32
    RunGroupNormGradMs<float, float>(dy, mean, rstd, x, gamma, dx, dgamma, dbeta, userWorkspace, &tilingData);
  } else if (TILING_KEY_IS(2)) {  // GNG_KEY_FP16
    RunGroupNormGradMs<half, half>(dy, mean, rstd, x, gamma, dx, dgamma, dbeta, userWorkspace, &tilingData);
  } else if (TILING_KEY_IS(3)) {  // GNG_KEY_BF16
    RunGroupNormGradMs<bfloat16_t, bfloat16_t>(dy, mean, rstd, x, gamma, dx, dgamma, dbeta, userWorkspace,
                                               &tilingData);
  } else if (TILING_KEY_IS(4)) {  // GNG_KEY_FP16_FP32
    RunGroupNormGradMs<half, float>(dy, mean, rstd, x, gamma, dx, dgamma, dbeta, userWorkspace, &tilingData);
  } else if (TILING_KEY_IS(5)) {  // GNG_KEY_BF16_FP32
    RunGroupNormGradMs<bfloat16_t, float>(dy, mean, rstd, x, gamma, dx, dgamma, dbeta, userWorkspace, &tilingData);
  }
}
