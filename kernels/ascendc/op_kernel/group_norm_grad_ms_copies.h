// GM <-> UB moves and row sums of the GroupNormGradMs kernel class (group_norm_grad_ms.h) and
// its stage 2 (group_norm_grad_ms_stage2.h), as free functions of the queue, the tensors and
// the UB row layout: `rows` rows of `len` elements, contiguous in GM, `stride` elements apart
// in UB (mode 0's resident rows), or one row.
#ifndef GROUP_NORM_GRAD_MS_COPIES_H
#define GROUP_NORM_GRAD_MS_COPIES_H

#include "kernel_operator.h"
#include "group_norm_grad_ms_common.h"

namespace GroupNormGradMsKernel {
using namespace AscendC;

// DataCopyPad's parameters for `rows` rows of `len` elements of V that are gmPitch elements apart
// in GM and ubPitch bytes apart in UB (each row padded to 32 bytes there): the GM gap in bytes and
// the UB gap in 32-byte blocks, as the source and destination strides of a load, or (toGm) of a store.
template <typename V>
__aicore__ inline DataCopyExtParams PitchedRows(int64_t rows, int64_t len, int64_t gmPitch, int64_t ubPitch,
                                                bool toGm) {
  const int64_t rowUb = AlignUp(len * static_cast<int64_t>(sizeof(V)), 32);
  const uint32_t gmGap = static_cast<uint32_t>((gmPitch - len) * static_cast<int64_t>(sizeof(V)));
  const uint32_t ubGap = static_cast<uint32_t>((ubPitch - rowUb) / 32);
  return DataCopyExtParams{static_cast<uint16_t>(rows), static_cast<uint32_t>(len * sizeof(V)), toGm ? ubGap : gmGap,
                           toGm ? gmGap : ubGap, 0};
}

// Issues the load of `rows` rows of `len` elements of `src` from `offset`, gmPitch elements apart in
// GM (0: contiguous, len), into a buffer of `que` with the rows `stride` elements apart (MTE2): one
// DMA. `aligned`: every row is a 32-byte multiple; when the rows are also unpadded in UB and
// contiguous in GM the DMA is a single burst (DataCopy), otherwise a burst per row (DataCopyPad).
template <typename V, typename Que>
__aicore__ inline void IssueStridedLoad(Que &que, const GlobalTensor<V> &src, int64_t offset, int64_t len,
                                        bool aligned, int64_t rows, int64_t stride, int64_t gmPitch = 0) {
  const int64_t pitchGm = rows == 1 || gmPitch == 0 ? len : gmPitch;
  LocalTensor<V> staging = que.template AllocTensor<V>();
  if (aligned && (rows == 1 || (len == stride && pitchGm == len))) {
    DataCopy(staging, src[offset], static_cast<uint32_t>(rows * len));
  } else {
    const int64_t pitch = rows == 1 ? AlignUp(len * static_cast<int64_t>(sizeof(V)), 32)
                                    : stride * static_cast<int64_t>(sizeof(V));
    DataCopyPadExtParams<V> pad{false, 0, 0, V{}};
    DataCopyPad(staging, src[offset], PitchedRows<V>(rows, len, pitchGm, pitch, false), pad);
  }
  que.EnQue(staging);
}

// dst = src as fp32 (V).
template <typename V>
__aicore__ inline void RowAsFloat(const LocalTensor<float> &dst, const LocalTensor<V> &src, int64_t len) {
  if constexpr (IsSameType<V, float>::value) {
    Muls(dst, src, 1.0f, static_cast<int32_t>(len));  // a vector copy (any UB position)
  } else {
    Cast(dst, src, RoundMode::CAST_NONE, static_cast<uint32_t>(len));
  }
}

// Takes the oldest load of `que` and writes it as fp32 to `dst` (V), then frees it.
template <typename V, typename Que>
__aicore__ inline void TakeAsFloat(Que &que, int64_t len, const LocalTensor<float> &dst) {
  LocalTensor<V> staging = que.template DeQue<V>();
  RowAsFloat<V>(dst, staging, len);
  que.FreeTensor(staging);
}

// One DMA of `len` elements of `src` from `offset` to the start of `dst` (a row, padded in UB).
template <typename V>
__aicore__ inline void LoadRow(const LocalTensor<V> &dst, const GlobalTensor<V> &src, int64_t offset, int64_t len) {
  DataCopyExtParams copy{1, static_cast<uint32_t>(len * sizeof(V)), 0, 0, 0};
  DataCopyPadExtParams<V> pad{false, 0, 0, V{}};
  DataCopyPad(dst, src[offset], copy, pad);
}

// x as fp32 in `dst` -> (x - mean) * CentringScale(mean), in place.
__aicore__ inline void CentreInPlace(int64_t len, float mean, const LocalTensor<float> &dst) {
  const float scale = CentringScale(mean);
  const int32_t n = static_cast<int32_t>(len);
  if (scale != 1.0f) Muls(dst, dst, scale, n);  // the rare path (bf16 data)
  if (mean != 0.0f) Adds(dst, dst, -mean * scale, n);  // (x + -0 is x: nothing to do for centre 0)
}

// (x - mean) * CentringScale(mean) of x in `src` (a staging buffer or a held copy) to `dst`.
template <typename V>
__aicore__ inline void CentredX(const LocalTensor<V> &src, int64_t len, float mean, const LocalTensor<float> &dst) {
  const float scale = CentringScale(mean);
  const int32_t n = static_cast<int32_t>(len);
  if constexpr (IsSameType<V, float>::value) {
    if (scale == 1.0f) {
      Adds(dst, src, -mean, n);
    } else {  // the rare path
      Muls(dst, src, scale, n);
      Adds(dst, dst, -mean * scale, n);
    }
  } else {
    RowAsFloat<V>(dst, src, len);
    CentreInPlace(len, mean, dst);
  }
}

// Takes the oldest load of x and writes (x - mean) * CentringScale(mean) to `dst` (fp32 data:
// straight from the staging buffer); XhatFactor(mean, rstd) turns it into xhat.
template <typename V, typename Que>
__aicore__ inline void TakeCentredX(Que &que, int64_t len, float mean, const LocalTensor<float> &dst) {
  if constexpr (IsSameType<V, float>::value) {  // straight from the staging buffer
    LocalTensor<V> staging = que.template DeQue<V>();
    CentredX<V>(staging, len, mean, dst);
    que.FreeTensor(staging);
  } else {  // the staging buffer is free once cast
    TakeAsFloat<V>(que, len, dst);
    CentreInPlace(len, mean, dst);
  }
}

// Stores the staging buffer of `que` (`rows` rows of `len` values of V, `stride` apart) to `dst` from
// `offset`, the rows gmPitch elements apart in GM (0: contiguous, len): one DMA, a single burst where
// the rows are 32-byte multiples, unpadded and contiguous in GM, else a burst a row; then frees it.
template <typename V, typename Que>
__aicore__ inline void StoreStaged(Que &que, LocalTensor<V> &staging, const GlobalTensor<V> &dst, int64_t offset,
                                   int64_t len, bool aligned, int64_t rows, int64_t stride, int64_t gmPitch) {
  const int64_t pitchGm = gmPitch == 0 ? len : gmPitch;
  que.EnQue(staging);
  staging = que.template DeQue<V>();
  if (aligned && (rows == 1 || len == stride) && pitchGm == len) {
    DataCopy(dst[offset], staging, static_cast<uint32_t>(rows * len));
  } else {
    const int64_t pitch = rows == 1 ? AlignUp(len * static_cast<int64_t>(sizeof(V)), 32)
                                    : stride * static_cast<int64_t>(sizeof(V));
    DataCopyPad(dst[offset], staging, PitchedRows<V>(rows, len, pitchGm, pitch, true));
  }
  que.FreeTensor(staging);
}

// Stores `rows` rows of `len` values of src + add (fp32; rows `stride` apart in UB) as V,
// contiguous from `offset` of `dst`, through `que`: one DMA (StoreStaged).
template <typename V, typename Que>
__aicore__ inline void StoreStridedFromFloat(Que &que, const GlobalTensor<V> &dst, int64_t offset, int64_t len,
                                             const LocalTensor<float> &src, float add, bool aligned, int64_t rows,
                                             int64_t stride) {
  const int64_t span = (rows - 1) * stride + len;
  LocalTensor<V> staging = que.template AllocTensor<V>();
  if constexpr (IsSameType<V, float>::value) {
    Adds(staging, src, add, static_cast<int32_t>(span));
  } else {
    Adds(src, src, add, static_cast<int32_t>(span));
    Cast(staging, src, RoundMode::CAST_RINT, static_cast<uint32_t>(span));
  }
  StoreStaged(que, staging, dst, offset, len, aligned, rows, stride, 0);
}

// Blocks of blockRows rows of `len` (groupRows' groups of D channels): the rows of a block are contiguous in
// GM and `stride` elements apart in UB, the blocks blockPitch elements apart in GM and blockRows * stride in UB.
// Where the blocks are not contiguous in GM either (a batch of samples of one group), no one DataCopyPad
// pitch fits every row, so the move is one DMA per row of a block (d), each taking that row of every block
// (a burst a row, as one DMA of the rows would be).
struct BlockRows {
  int64_t blocks;
  int64_t blockRows;
  int64_t stride;
  int64_t blockPitch;
  __aicore__ inline int64_t Rows() const { return blocks * blockRows; }
  __aicore__ inline bool OneDma(int64_t len) const { return blockRows == 1 || blockPitch == blockRows * len; }
  // the GM pitch of the rows of one DMA: one DMA of every row, or one of row d of each block
  __aicore__ inline int64_t GmPitch(int64_t len) const { return blockRows == 1 ? blockPitch : len; }
};

// IssueStridedLoad of `b`'s rows (one buffer of `que`, one EnQue).
template <typename V, typename Que>
__aicore__ inline void IssueBlockRowsLoad(Que &que, const GlobalTensor<V> &src, int64_t offset, int64_t len,
                                          bool aligned, const BlockRows &b) {
  if (b.OneDma(len)) {
    IssueStridedLoad(que, src, offset, len, aligned, b.Rows(), b.stride, b.GmPitch(len));
    return;
  }
  const int64_t pitchUb = b.blockRows * b.stride * static_cast<int64_t>(sizeof(V));
  LocalTensor<V> staging = que.template AllocTensor<V>();
  const DataCopyExtParams copy = PitchedRows<V>(b.blocks, len, b.blockPitch, pitchUb, false);
  DataCopyPadExtParams<V> pad{false, 0, 0, V{}};
  for (int64_t d = 0; d < b.blockRows; ++d) DataCopyPad(staging[d * b.stride], src[offset + d * len], copy, pad);
  que.EnQue(staging);
}

// StoreStridedFromFloat with an `add` of each block's own (adds[k], over the block's rows and the padding
// between them): the same instructions a block (fp32: Adds into the staging buffer; 16-bit: Adds in
// place, then one Cast over the rows), then the rows of `b` to GM (StoreStaged, or a DMA per row of a block).
template <typename V, typename Que>
__aicore__ inline void StoreBlockRowsFromFloat(Que &que, const GlobalTensor<V> &dst, int64_t offset, int64_t len,
                                               const LocalTensor<float> &src, const float *adds, bool aligned,
                                               const BlockRows &b) {
  const int64_t blockSpan = (b.blockRows - 1) * b.stride + len;
  const int64_t blockStep = b.blockRows * b.stride;
  LocalTensor<V> staging = que.template AllocTensor<V>();
  for (int64_t k = 0; k < b.blocks; ++k) {
    if constexpr (IsSameType<V, float>::value) {
      Adds(staging[k * blockStep], src[k * blockStep], adds[k], static_cast<int32_t>(blockSpan));
    } else {
      Adds(src[k * blockStep], src[k * blockStep], adds[k], static_cast<int32_t>(blockSpan));
    }
  }
  if constexpr (!IsSameType<V, float>::value) {
    Cast(staging, src, RoundMode::CAST_RINT, static_cast<uint32_t>((b.Rows() - 1) * b.stride + len));
  }
  if (b.OneDma(len)) {
    StoreStaged(que, staging, dst, offset, len, aligned, b.Rows(), b.stride, b.GmPitch(len));
    return;
  }
  que.EnQue(staging);
  staging = que.template DeQue<V>();
  const int64_t pitchUb = blockStep * static_cast<int64_t>(sizeof(V));
  const DataCopyExtParams copy = PitchedRows<V>(b.blocks, len, b.blockPitch, pitchUb, true);
  for (int64_t d = 0; d < b.blockRows; ++d) DataCopyPad(dst[offset + d * len], staging[d * b.stride], copy);
  que.FreeTensor(staging);
}

// Copies `len` fp32 values of the VECOUT buffer `src` to the workspace (MTE3).
__aicore__ inline void StoreToWorkspace(const GlobalTensor<float> &dst, int64_t offset, int64_t len,
                                        const LocalTensor<float> &src) {
  DataCopyExtParams copy{1, static_cast<uint32_t>(len * sizeof(float)), 0, 0, 0};
  DataCopyPad(dst[offset], src, copy);
}

// `rows` rows of D elements from GM (contiguous) to UB rows of D rounded up to 16 (one DMA). D a
// multiple of 16: the UB rows are contiguous too, so the rows are one burst (one row a burst costs
// the DMA engine a burst each: 4096x512 G32 moved 22,080 bursts a core).
__aicore__ inline bool RowsAreOneBurst(int64_t D) { return D % 16 == 0; }
template <typename V>
__aicore__ inline void LoadPaddedRows(const LocalTensor<V> &dst, const GlobalTensor<V> &src, int64_t offset,
                                      int64_t rows, int64_t D) {
  const int64_t rowBytes = AlignUp(D * static_cast<int64_t>(sizeof(V)), 32);
  const int64_t pitchBytes = AlignUp(D, 16) * static_cast<int64_t>(sizeof(V));
  const bool one = RowsAreOneBurst(D);
  DataCopyExtParams copy{static_cast<uint16_t>(one ? 1 : rows), static_cast<uint32_t>((one ? rows : 1) * D * sizeof(V)),
                         0, static_cast<uint32_t>((pitchBytes - rowBytes) / 32), 0};
  DataCopyPadExtParams<V> pad{false, 0, 0, V{}};
  DataCopyPad(dst, src[offset], copy, pad);
}

// Mode 3 (hwOneGather): `len` contiguous elements from `offset` into a buffer of `que`, one burst.
template <typename V, typename Que>
__aicore__ inline void IssueRun(Que &que, const GlobalTensor<V> &src, int64_t offset, int64_t len) {
  LocalTensor<V> staging = que.template AllocTensor<V>();
  LoadRow(staging, src, offset, len);
  que.EnQue(staging);
}

// Mode 3 (hwOneGather): `len` elements of a VECOUT buffer to GM from `offset`, one burst.
template <typename V>
__aicore__ inline void StoreRun(const GlobalTensor<V> &dst, int64_t offset, int64_t len, const LocalTensor<V> &src) {
  DataCopyExtParams copy{1, static_cast<uint32_t>(len * sizeof(V)), 0, 0, 0};
  DataCopyPad(dst[offset], src, copy);
}

// Mode 3: the same into a buffer of `que`.
template <typename V, typename Que>
__aicore__ inline void IssuePaddedRows(Que &que, const GlobalTensor<V> &src, int64_t offset, int64_t rows,
                                       int64_t D) {
  LocalTensor<V> staging = que.template AllocTensor<V>();
  LoadPaddedRows(staging, src, offset, rows, D);
  que.EnQue(staging);
}

// Mode 3: `rows` UB rows of D rounded up to 16 (of a VECIN/VECOUT buffer) to rows x D
// contiguous GM elements.
template <typename V>
__aicore__ inline void StorePaddedRows(const GlobalTensor<V> &dst, int64_t offset, int64_t rows,
                                       const LocalTensor<V> &src, int64_t D) {
  const int64_t rowBytes = AlignUp(D * static_cast<int64_t>(sizeof(V)), 32);
  const int64_t pitchBytes = AlignUp(D, 16) * static_cast<int64_t>(sizeof(V));
  const bool one = RowsAreOneBurst(D);
  DataCopyExtParams copy{static_cast<uint16_t>(one ? 1 : rows), static_cast<uint32_t>((one ? rows : 1) * D * sizeof(V)),
                         static_cast<uint32_t>((pitchBytes - rowBytes) / 32), 0, 0};
  DataCopyPad(dst[offset], src, copy);
}

// The partials RowSums keeps per row of len > 64 floats: one per 64-float repeat and the tail,
// rounded up to a block (rows of partials start 32-byte aligned).
__aicore__ inline int64_t RowPartialElems(int32_t len) { return AlignUp((len + 63) / 64, FLOATS_PER_BLOCK); }

// One array of RowSums: the sums of its rows go to dst[r * dstStride], the rows are
// src[r * stride, r * stride + len), and `partial` is its work buffer.
struct RowSumOperands {
  LocalTensor<float> dst;
  LocalTensor<float> src;
  LocalTensor<float> partial;
};

// dst[r * dstStride] = sum of src[r * stride, r * stride + len) for r < rows, for each of `count`
// arrays of the same row geometry, written by the vector unit with WholeReduceSum (asc-devkit
// docs/zh/api/SIMD-API/基础API/Memory矢量计算/归约计算/ReduceRepeat.md: per repeat the sum of its
// first `mask` elements; repeatTime <= 255, the strides up to 2^16 - 1, dstRepStride in dst
// elements for a sum) instead of count-form ReduceSum, whose every call is a V -> S -> V round
// trip with a scalar store. A row of <= 64 floats is one repeat: one instruction per 255 rows. A
// longer row is summed in three steps, each over every row at once where a stride allows it: its
// 64-float repeats (one instruction per row, or, when a row has fewer repeats than there are
// rows, one per repeat column across the rows), its tail (one instruction across the rows), then
// the partials of each row (one instruction across the rows, P = the partials of a row rounded up
// to a block apart). Every row's partials and their sum are the same values in the same lanes
// whichever way the instructions are cut, so the bits do not depend on it. Each instruction is
// issued for every array before the next: arrays with partials of their own do not depend on each
// other, so two arrays share the V barrier the compiler puts between an instruction and the next
// one over the same partials. Rows longer than 64 x 64 floats use ReduceSum. `stride` is a
// multiple of 8 elements; each `partial` holds `partialElems` floats, at least ceil(len / 64)
// rounded up to 8 (rows go through it in batches of as many as fit).
__aicore__ inline void RowSums(const RowSumOperands *arrays, int32_t count, int64_t rows, int64_t stride,
                               int32_t len, int64_t partialElems, int64_t dstStride = 1) {
  const int32_t repStride = static_cast<int32_t>(stride / 8);  // in 32-byte blocks
  const int32_t dstRep = static_cast<int32_t>(dstStride);
  if (len <= 64) {
    for (int64_t r0 = 0; r0 < rows; r0 += 255) {
      const int32_t n = static_cast<int32_t>((rows - r0 < 255) ? rows - r0 : 255);
      for (int32_t a = 0; a < count; ++a) {
        WholeReduceSum<float>(arrays[a].dst[r0 * dstStride], arrays[a].src[r0 * stride], len, n, dstRep, 1, repStride);
      }
    }
    return;
  }
  const int32_t full = len / 64;
  const int32_t tail = len % 64;
  const int32_t parts = full + (tail > 0 ? 1 : 0);
  if (parts > 64) {
    for (int32_t a = 0; a < count; ++a) {
      for (int64_t r = 0; r < rows; ++r) {
        ReduceSum(arrays[a].dst[r * dstStride], arrays[a].src[r * stride], arrays[a].partial, len);
      }
    }
    return;
  }
  const int64_t P = RowPartialElems(len);
  int64_t batch = partialElems / P;
  if (batch > 255) batch = 255;
  for (int64_t r0 = 0; r0 < rows; r0 += batch) {
    const int32_t n = static_cast<int32_t>((rows - r0 < batch) ? rows - r0 : batch);
    if (full < n) {  // a repeat column across the rows per instruction
      for (int32_t j = 0; j < full; ++j) {
        for (int32_t a = 0; a < count; ++a) {
          WholeReduceSum<float>(arrays[a].partial[j], arrays[a].src[r0 * stride + j * 64], 64, n,
                                static_cast<int32_t>(P), 1, repStride);
        }
      }
    } else {  // a row's repeats per instruction
      for (int32_t r = 0; r < n; ++r) {
        for (int32_t a = 0; a < count; ++a) {
          WholeReduceSum<float>(arrays[a].partial[r * P], arrays[a].src[(r0 + r) * stride], 64, full, 1, 1, 8);
        }
      }
    }
    for (int32_t a = 0; a < count && tail > 0; ++a) {
      WholeReduceSum<float>(arrays[a].partial[full], arrays[a].src[r0 * stride + full * 64], tail, n,
                            static_cast<int32_t>(P), 1, repStride);
    }
    for (int32_t a = 0; a < count; ++a) {
      WholeReduceSum<float>(arrays[a].dst[r0 * dstStride], arrays[a].partial, parts, n, dstRep, 1,
                            static_cast<int32_t>(P / 8));
    }
  }
}

// RowSums of one array.
__aicore__ inline void RowSums(const LocalTensor<float> &dst, const LocalTensor<float> &src, int64_t rows,
                               int64_t stride, int32_t len, const LocalTensor<float> &partial,
                               int64_t partialElems, int64_t dstStride = 1) {
  const RowSumOperands one{dst, src, partial};
  RowSums(&one, 1, rows, stride, len, partialElems, dstStride);
}

}  // namespace GroupNormGradMsKernel

#endif  // GROUP_NORM_GRAD_MS_COPIES_H
