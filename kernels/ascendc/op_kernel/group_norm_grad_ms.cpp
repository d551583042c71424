/*
 * Kernel entry of GroupNormGradMs. The tiling key selects the (data, statistics) dtype
 * pair; the tiling mode is a runtime field (see group_norm_grad_ms_tiling_data.h).
 */
#include "kernel_operator.h"
#include "group_norm_grad_ms.h"

using namespace GroupNormGradMsKernel;

template <typename T, typename U>
__aicore__ inline void RunGroupNormGradMs(GM_ADDR dy, GM_ADDR mean, GM_ADDR rstd, GM_ADDR x, GM_ADDR gamma, GM_ADDR dx,
                                          GM_ADDR dgamma, GM_ADDR dbeta, GM_ADDR workspace,
                                          const GroupNormGradMsTilingData *tiling) {
  KernelGroupNormGradMs<T, U> op;
  op.Init(dy, mean, rstd, x, gamma, dx, dgamma, dbeta, workspace, tiling);
  op.Process();
}

extern "C" __global__ __aicore__ void group_norm_grad_ms(GM_ADDR dy, GM_ADDR mean, GM_ADDR rstd, GM_ADDR x,
                                                         GM_ADDR gamma, GM_ADDR dx, GM_ADDR dgamma, GM_ADDR dbeta,
                                                         GM_ADDR workspace, GM_ADDR tiling) {
  REGISTER_TILING_DEFAULT(GroupNormGradMsTilingData);
  GET_TILING_DATA_WITH_STRUCT(GroupNormGradMsTilingData, tilingData, tiling);
  KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
  GM_ADDR userWorkspace = GetUserWorkspace(workspace);
  if (TILING_KEY_IS(GNG_KEY_FP32)) {
    RunGroupNormGradMs<float, float>(dy, mean, rstd, x, gamma, dx, dgamma, dbeta, userWorkspace, &tilingData);
  } else if (TILING_KEY_IS(GNG_KEY_FP16)) {
    RunGroupNormGradMs<half, half>(dy, mean, rstd, x, gamma, dx, dgamma, dbeta, userWorkspace, &tilingData);
  } else if (TILING_KEY_IS(GNG_KEY_BF16)) {
    RunGroupNormGradMs<bfloat16_t, bfloat16_t>(dy, mean, rstd, x, gamma, dx, dgamma, dbeta, userWorkspace,
                                               &tilingData);
  } else if (TILING_KEY_IS(GNG_KEY_FP16_FP32)) {
    RunGroupNormGradMs<half, float>(dy, mean, rstd, x, gamma, dx, dgamma, dbeta, userWorkspace, &tilingData);
  } else if (TILING_KEY_IS(GNG_KEY_BF16_FP32)) {
    RunGroupNormGradMs<bfloat16_t, float>(dy, mean, rstd, x, gamma, dx, dgamma, dbeta, userWorkspace, &tilingData);
  }
}
