// Stage 2 of the GroupNormGradMs kernel (group_norm_grad_ms.h): after SyncAll, each block
// sums its slice of channels of the per-(n, c) fp32 workspace over n = 0..N-1 in order and
// stores dgamma/dbeta, so they do not depend on which core ran which phase-1 task. It lays out
// UB anew after TPipe::Reset (Stage2Bytes in op_host/group_norm_grad_ms_tiling.cpp).
#ifndef GROUP_NORM_GRAD_MS_STAGE2_H
#define GROUP_NORM_GRAD_MS_STAGE2_H

#include "kernel_operator.h"
#include "group_norm_grad_ms_common.h"
#include "group_norm_grad_ms_copies.h"
#include "group_norm_grad_ms_tiling_data.h"

namespace GroupNormGradMsKernel {
using namespace AscendC;

template <typename U>
class GroupNormGradMsStage2 {
 public:
  __aicore__ inline GroupNormGradMsStage2() {}

  // dgamma/dbeta of block `block`'s channel slice from the db and dg workspaces.
  __aicore__ inline void Run(const GroupNormGradMsTilingData *tiling, TPipe *pipe, int64_t block,
                             const GlobalTensor<float> &wsDb, const GlobalTensor<float> &wsDg,
                             const GlobalTensor<U> &dgamma, const GlobalTensor<U> &dbeta) {
    t_ = tiling;
    wsDbGm_ = wsDb;
    wsDgGm_ = wsDg;
    const int64_t P = t_->stage2PieceElems;  // a multiple of 8: every UB row starts 32-byte aligned
    const int64_t R = t_->stage2RowsPerLoad;
    pipe->InitBuffer(wsQue_, BUFFER_NUM, R * P * sizeof(float));
    pipe->InitBuffer(accBuf_, 2 * P * sizeof(float));
    pipe->InitBuffer(outQue_, BUFFER_NUM, P * sizeof(U));
    LocalTensor<float> accDb = accBuf_.Get<float>();
    LocalTensor<float> accDg = accBuf_.Get<float>()[P];
    const int64_t sliceStart = block * t_->stage2SliceElems;
    const int64_t sliceEnd =
        (sliceStart + t_->stage2SliceElems < t_->C) ? sliceStart + t_->stage2SliceElems : t_->C;
    const int64_t perLoad = (t_->dbetaRequired != 0 ? 1 : 0) + (t_->dgammaRequired != 0 ? 1 : 0);
    const int64_t batches = (t_->reduceRows + R - 1) / R;
    for (int64_t c0 = sliceStart; c0 < sliceEnd; c0 += P) {
      const int64_t len = (sliceEnd - c0 < P) ? sliceEnd - c0 : P;
      Duplicate(accDb, 0.0f, static_cast<int32_t>(len));
      Duplicate(accDg, 0.0f, static_cast<int32_t>(len));
      // R workspace rows (samples) per strided DMA, streamed: load i + 1 is issued before
      // load i is added; the rows are added in order n = 0..N-1
      const int64_t items = batches * perLoad;
      if (items > 0) IssueWorkspaceRows(c0, len, 0, perLoad);
      for (int64_t item = 0; item < items; ++item) {
        if (item + 1 < items) IssueWorkspaceRows(c0, len, item + 1, perLoad);
        const bool isDb = t_->dbetaRequired != 0 && item % perLoad == 0;
        const int64_t first = (item / perLoad) * R;
        const int64_t rows = (t_->reduceRows - first < R) ? t_->reduceRows - first : R;
        LocalTensor<float> loaded = wsQue_.DeQue<float>();
        LocalTensor<float> acc = isDb ? accDb : accDg;
        for (int64_t r = 0; r < rows; ++r) Add(acc, acc, loaded[r * P], static_cast<int32_t>(len));
        wsQue_.FreeTensor(loaded);
      }
      if (t_->dbetaRequired != 0) StoreStridedFromFloat(outQue_, dbeta, c0, len, accDb, 0.0f, false, 1, 0);
      if (t_->dgammaRequired != 0) StoreStridedFromFloat(outQue_, dgamma, c0, len, accDg, 0.0f, false, 1, 0);
    }
  }

 private:
  // One DMA of up to R rows n of the db or dg workspace, channels [c0, c0 + len) of each: rows
  // C floats apart in GM (srcStride in bytes), P floats apart in UB (dstStride in 32-byte blocks).
  __aicore__ inline void IssueWorkspaceRows(int64_t c0, int64_t len, int64_t item, int64_t perLoad) {
    const int64_t R = t_->stage2RowsPerLoad;
    const int64_t P = t_->stage2PieceElems;
    const int64_t first = (item / perLoad) * R;
    const int64_t rows = (t_->reduceRows - first < R) ? t_->reduceRows - first : R;
    const bool isDb = t_->dbetaRequired != 0 && item % perLoad == 0;
    const int64_t rowUb = AlignUp(len * static_cast<int64_t>(sizeof(float)), 32);
    LocalTensor<float> staging = wsQue_.AllocTensor<float>();
    DataCopyExtParams copy{static_cast<uint16_t>(rows), static_cast<uint32_t>(len * sizeof(float)),
                           static_cast<uint32_t>((t_->C - len) * sizeof(float)),
                           static_cast<uint32_t>((P * static_cast<int64_t>(sizeof(float)) - rowUb) / 32), 0};
    DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};
    DataCopyPad(staging, (isDb ? wsDbGm_ : wsDgGm_)[first * t_->C + c0], copy, pad);
    wsQue_.EnQue(staging);
  }

  const GroupNormGradMsTilingData *t_ = nullptr;
  TQue<QuePosition::VECIN, BUFFER_NUM> wsQue_;
  TQue<QuePosition::VECOUT, 1> outQue_;
  TBuf<QuePosition::VECCALC> accBuf_;
  GlobalTensor<float> wsDbGm_;
  GlobalTensor<float> wsDgGm_;
};

}  // namespace GroupNormGradMsKernel

#endif  // GROUP_NORM_GRAD_MS_STAGE2_H
