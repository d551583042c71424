// GM -> UB moves of the GroupNormSiluMs kernel class (group_norm_silu_ms.h), as free functions
// of the queue and the tensors: loads of rows padded to 32 bytes in UB, and their conversion
// to fp32. (The store of y stays a member: it owns the y queue and tensor.)
#ifndef GROUP_NORM_SILU_MS_COPIES_H
#define GROUP_NORM_SILU_MS_COPIES_H

#include "kernel_operator.h"

namespace GroupNormSiluMsKernel {
using namespace AscendC;

// ------------------------------------------------------------------ GM <-> UB
// The DataCopyPad parameters of `rows` consecutive rows of `len` elements, contiguous in GM, at a
// pitch of `len` rounded up to 32 bytes in UB (DataCopyPad pads each row to 32 bytes). Rows of a
// whole number of 32-byte blocks are contiguous in UB too: then one block of all of them (one burst
// instead of one per row; blockLen is a uint32_t of up to 2097151 bytes, asc-devkit
// DataCopyPad（GMToUB非对齐数据搬运）.md, far above any UB buffer), else one block per row.
template <typename V>
__aicore__ inline DataCopyExtParams RowsCopy(int64_t rows, int64_t len) {
  const int64_t bytes = len * static_cast<int64_t>(sizeof(V));
  if (bytes % 32 == 0) return DataCopyExtParams{1, static_cast<uint32_t>(rows * bytes), 0, 0, 0};
  return DataCopyExtParams{static_cast<uint16_t>(rows), static_cast<uint32_t>(bytes), 0, 0, 0};
}

// `rows` rows of `len` contiguous elements of src at `offset` into the queue's next buffer,
// at a pitch of `len` rounded up to 32 bytes.
template <typename V, typename Que>
__aicore__ inline void IssueRows(Que &que, const GlobalTensor<V> &src, int64_t offset, int64_t rows, int64_t len) {
  LocalTensor<V> staging = que.template AllocTensor<V>();
  const DataCopyExtParams copy = RowsCopy<V>(rows, len);
  DataCopyPadExtParams<V> pad{false, 0, 0, V{}};
  DataCopyPad(staging, src[offset], copy, pad);
  que.EnQue(staging);
}

// `rows` rows of `len` contiguous elements of src at `offset` into the queue's next buffer, at a
// pitch of `pitch` elements (len rounded up to 32 bytes, or more: a multiple of 32 bytes).
template <typename V, typename Que>
__aicore__ inline void IssuePitchedRows(Que &que, const GlobalTensor<V> &src, int64_t offset, int64_t rows,
                                        int64_t len, int64_t pitch) {
  LocalTensor<V> staging = que.template AllocTensor<V>();
  const int64_t rowBytes = (len * static_cast<int64_t>(sizeof(V)) + 31) / 32 * 32;
  const int64_t gapBlocks = (pitch * static_cast<int64_t>(sizeof(V)) - rowBytes) / 32;
  const DataCopyExtParams copy{static_cast<uint16_t>(rows), static_cast<uint32_t>(len * sizeof(V)), 0,
                               static_cast<uint32_t>(gapBlocks), 0};
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
