// GM -> UB moves of the GroupNormSiluMs kernel class (group_norm_silu_ms.h), as free functions
// of the queue and the tensors: loads of rows padded to 32 bytes in UB, and their conversion
// to fp32. (The store of y stays a member: it owns the y queue and tensor.)
#ifndef GROUP_NORM_SILU_MS_COPIES_H
#define GROUP_NORM_SILU_MS_COPIES_H

#include "kernel_operator.h"

namespace GroupNormSiluMsKernel {
using namespace AscendC;

// ------------------------------------------------------------------ GM <-> UB
// `rows` rows of `len` contiguous elements of src at `offset` into the queue's next buffer,
// at a pitch of `len` rounded up to 32 bytes (DataCopyPad pads each row to 32 bytes).
template <typename V, typename Que>
__aicore__ inline void IssueRows(Que &que, const GlobalTensor<V> &src, int64_t offset, int64_t rows, int64_t len) {
  LocalTensor<V> staging = que.template AllocTensor<V>();
  DataCopyExtParams copy{static_cast<uint16_t>(rows), static_cast<uint32_t>(len * sizeof(V)), 0, 0, 0};
  DataCopyPadExtParams<V> pad{false, 0, 0, V{}};
  DataCopyPad(staging, src[offset], copy, pad);
  que.EnQue(staging);
}

// Writes `count` elements of a staging buffer as fp32 to dst, times `scale` (a power of two:
// exact; 1 on every path but the forward's rescaled one, which then costs one vector op more).
template <typename V>
__aicore__ inline void StagingToFloat(const LocalTensor<V> &staging, int64_t count, const LocalTensor<float> &dst,
                                      float scale) {
  if constexpr (IsSameType<V, float>::value) {
    Muls(dst, staging, scale, static_cast<int32_t>(count));  // a vector copy when scale == 1
  } else {
    Cast(dst, staging, RoundMode::CAST_NONE, static_cast<uint32_t>(count));
    if (scale != 1.0f) Muls(dst, dst, scale, static_cast<int32_t>(count));
  }
}

// Takes the oldest load of `que`, writes it as fp32 to dst (V), frees the staging buffer.
template <typename V, typename Que>
__aicore__ inline void TakeAsFloat(Que &que, int64_t count, const LocalTensor<float> &dst) {
  LocalTensor<V> staging = que.template DeQue<V>();
  StagingToFloat(staging, count, dst, 1.0f);
  que.FreeTensor(staging);
}

}  // namespace GroupNormSiluMsKernel

#endif  // GROUP_NORM_SILU_MS_COPIES_H
