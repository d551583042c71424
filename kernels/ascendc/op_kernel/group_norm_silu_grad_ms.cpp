/*
 * Kernel entry of GroupNormSiluGradMs: the GroupNormGradMs kernel class with the swish
 * gradient switched on (KernelGroupNormGradMs<T, U, true>, group_norm_grad_ms.h). dy is dz,
 * the gradient of z = y * sigmoid(swish_scale * y), y = gamma * xhat + beta; the tiling
 * (GroupNormGradMsTilingData with silu = 1 and swishScale) comes from the same host function.
 *
 * CANN build rules as for group_norm_grad_ms.cpp: numeric TILING_KEY_IS literals tied to the
 * host's GNG_KEY_* by static_assert, and KERNEL_TYPE_MIX_AIV_1_0 because the kernel calls SyncAll.
 */
#include "kernel_operator.h"
#include "group_norm_grad_ms.h"

using namespace GroupNormGradMsKernel;

static_assert(GNG_KEY_FP32 == 1 && GNG_KEY_FP16 == 2 && GNG_KEY_BF16 == 3 && GNG_KEY_FP16_FP32 == 4 &&
                  GNG_KEY_BF16_FP32 == 5,
              "the TILING_KEY_IS literals below must match the host's tiling keys");

template <typename T, typename U>
__aicore__ inline void RunGroupNormSiluGradMs(GM_ADDR dy, GM_ADDR mean, GM_ADDR rstd, GM_ADDR x, GM_ADDR gamma,
                                              GM_ADDR beta, GM_ADDR dx, GM_ADDR dgamma, GM_ADDR dbeta,
                                              GM_ADDR workspace, const GroupNormGradMsTilingData *tiling) {
  TPipe pipe;  // outside the kernel class (see KernelGroupNormGradMs::pipe_)
  KernelGroupNormGradMs<T, U, true> op;
  op.Init(dy, mean, rstd, x, gamma, beta, dx, dgamma, dbeta, workspace, tiling, &pipe);
  op.Process();
}

extern "C" __global__ __aicore__ void group_norm_silu_grad_ms(GM_ADDR dy, GM_ADDR mean, GM_ADDR rstd, GM_ADDR x,
                                                              GM_ADDR gamma, GM_ADDR beta, GM_ADDR dx,
                                                              GM_ADDR dgamma, GM_ADDR dbeta, GM_ADDR workspace,
                                                              GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(GroupNormGradMsTilingData);
  GET_TILING_DATA_WITH_STRUCT(GroupNormGradMsTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_MIX_AIV_1_0);
  GM_ADDR userWorkspace = GetUserWorkspace(workspace);
  if (TILING_KEY_IS(1)) {  // GNG_KEY_FP32
    RunGroupNormSiluGradMs<float, float>(dy, mean, rstd, x, gamma, beta, dx, dgamma, dbeta, userWorkspace,
                                         &tilingData);
  } else if (TILING_KEY_IS(2)) {  // GNG_KEY_FP16
    RunGroupNormSiluGradMs<half, half>(dy, mean, rstd, x, gamma, beta, dx, dgamma, dbeta, userWorkspace,
                                       &tilingData);
  } else if (TILING_KEY_IS(3)) {  // GNG_KEY_BF16
    RunGroupNormSiluGradMs<bfloat16_t, bfloat16_t>(dy, mean, rstd, x, gamma, beta, dx, dgamma, dbeta,
                                                   userWorkspace, &tilingData);
  } else if (TILING_KEY_IS(4)) {  // GNG_KEY_FP16_FP32
    RunGroupNormSiluGradMs<half, float>(dy, mean, rstd, x, gamma, beta, dx, dgamma, dbeta, userWorkspace,
                                        &tilingData);
  } else if (TILING_KEY_IS(5)) {  // GNG_KEY_BF16_FP32
    RunGroupNormSiluGradMs<bfloat16_t, float>(dy, mean, rstd, x, gamma, beta, dx, dgamma, dbeta, userWorkspace,
                                              &tilingData);
  }
}
