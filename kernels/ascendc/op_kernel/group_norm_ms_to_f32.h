// The scalar fp32 view of one element of any of the kernels' dtypes, shared by the GroupNormGradMs
// class (group_norm_grad_ms_common.h) and the GroupNormSiluMs class (group_norm_silu_ms_stats.h):
// bfloat16_t converts through AscendC's ToFloat, float and half by a cast.
#ifndef GROUP_NORM_MS_TO_F32_H
#define GROUP_NORM_MS_TO_F32_H

#include "kernel_operator.h"

namespace GroupNormMsScalar {
using namespace AscendC;

template <typename V>
__aicore__ inline float ToF32(V v) {
  if constexpr (IsSameType<V, bfloat16_t>::value) {
    return ToFloat(v);
  } else {
    return static_cast<float>(v);
  }
}

}  // namespace GroupNormMsScalar

#endif  // GROUP_NORM_MS_TO_F32_H
