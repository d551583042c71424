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
    Init(tiling, pipe, wsDb, wsDg, BUFFER_NUM);
    Sum(block, dgamma, dbeta, false);
  }

  // stage2Ahead: the buffers among phase 1's (one load buffer: the slice is one piece, its rows one
  // load), the load issued after SyncAll (IssueFirst) near the end of the core's dx pass, then Sum.
  __aicore__ inline void Init(const GroupNormGradMsTilingData *tiling, TPipe *pipe, const GlobalTensor<float> &wsDb,
                              const GlobalTensor<float> &wsDg, int32_t loadBuffers) {
    t_ = tiling;
    wsDbGm_ = wsDb;
    wsDgGm_ = wsDg;
    const int64_t W = (t_->dbetaRequired != 0 ? 1 : 0) + (t_->dgammaRequired != 0 ? 1 : 0);
    const int64_t P = t_->stage2PieceElems;
    pipe->InitBuffer(wsQue_, loadBuffers, t_->stage2RowsPerLoad * W * P * sizeof(float));
    pipe->InitBuffer(accBuf_, 2 * P * sizeof(float));
    pipe->InitBuffer(outQue_, BUFFER_NUM, P * sizeof(U));
  }
  __aicore__ inline void IssueFirst(int64_t block) {
    const int64_t W = (t_->dbetaRequired != 0 ? 1 : 0) + (t_->dgammaRequired != 0 ? 1 : 0);
    const int64_t sliceStart = block * t_->stage2SliceElems;
    const int64_t rest = t_->C - sliceStart;
    const int64_t len = rest < t_->stage2PieceElems ? rest : t_->stage2PieceElems;
    if (t_->reduceRows > 0 && len > 0) IssueWorkspaceRows(sliceStart, len, 0, W);
  }

  // firstIssued: IssueFirst has issued the first piece's first load.
  __aicore__ inline void Sum(int64_t block, const GlobalTensor<U> &dgamma, const GlobalTensor<U> &dbeta,
                             bool firstIssued) {
    const int64_t P = t_->stage2PieceElems;  // a multiple of 8: every UB row starts 32-byte aligned
    const int64_t R = t_->stage2RowsPerLoad;
    // width 2 (dbeta and dgamma): a load holds R samples' db and dg rows side by side (db at
    // 2 r P, dg at (2 r + 1) P), so one Add of P + len lanes adds a sample to accDb and
    // accDg = accDb[P] (the lanes between add the rows' padding, which nothing reads). With
    // whole rows (P == C) the db rows come first, then the dg rows (db at r P, dg at (R + r) P),
    // each array one burst, and one Add of two repeats adds a sample to both accumulators.
    const int64_t W = (t_->dbetaRequired != 0 ? 1 : 0) + (t_->dgammaRequired != 0 ? 1 : 0);
    const bool whole = t_->stage2WholeRows != 0;
    BinaryRepeatParams bothRows;  // whole rows only, where C <= 64 keeps the strides within 8 bits
    if (whole) bothRows = BinaryRepeatParams(1, 1, 1, BlockStride(P / 8), BlockStride(P / 8), BlockStride(R * P / 8));
    LocalTensor<float> accDb = accBuf_.Get<float>();
    LocalTensor<float> accDg = accBuf_.Get<float>()[P];
    LocalTensor<float> acc = t_->dbetaRequired != 0 ? accDb : accDg;  // the first array of a row
    const int64_t sliceStart = block * t_->stage2SliceElems;
    const int64_t sliceEnd =
        (sliceStart + t_->stage2SliceElems < t_->C) ? sliceStart + t_->stage2SliceElems : t_->C;
    const int64_t batches = (t_->reduceRows + R - 1) / R;
    for (int64_t c0 = sliceStart; c0 < sliceEnd; c0 += P) {
      const int64_t len = (sliceEnd - c0 < P) ? sliceEnd - c0 : P;
      const int32_t lanes = static_cast<int32_t>((W - 1) * P + len);
      Duplicate(acc, 0.0f, lanes);
      // R workspace rows (samples) per load, streamed: load i + 1 is issued before load i is
      // added; the rows are added in order n = 0..N-1
      if (batches > 0 && !(firstIssued && c0 == sliceStart)) IssueWorkspaceRows(c0, len, 0, W);
      for (int64_t batch = 0; batch < batches; ++batch) {
        if (batch + 1 < batches) IssueWorkspaceRows(c0, len, batch + 1, W);
        const int64_t first = batch * R;
        const int64_t rows = (t_->reduceRows - first < R) ? t_->reduceRows - first : R;
        LocalTensor<float> loaded = wsQue_.DeQue<float>();
        for (int64_t r = 0; r < rows; ++r) {
          if (whole) {
            Add(acc, acc, loaded[r * P], static_cast<uint64_t>(P), RepeatTimes(W), bothRows);
          } else {
            Add(acc, acc, loaded[r * W * P], lanes);
          }
        }
        wsQue_.FreeTensor(loaded);
      }
      if (t_->dbetaRequired != 0) StoreStridedFromFloat(outQue_, dbeta, c0, len, accDb, 0.0f, false, 1, 0);
      if (t_->dgammaRequired != 0) StoreStridedFromFloat(outQue_, dgamma, c0, len, accDg, 0.0f, false, 1, 0);
    }
  }

 private:
  // Up to R rows n of the db and (or) dg workspace, channels [c0, c0 + len) of each, into one
  // buffer: a DMA per array, rows C floats apart in GM (srcStride in bytes), W x P floats apart
  // in UB (dstStride in 32-byte blocks); with whole rows, each array's rows as one burst, the
  // arrays R x P floats apart.
  __aicore__ inline void IssueWorkspaceRows(int64_t c0, int64_t len, int64_t batch, int64_t W) {
    const int64_t R = t_->stage2RowsPerLoad;
    const int64_t P = t_->stage2PieceElems;
    const int64_t first = batch * R;
    const int64_t rows = (t_->reduceRows - first < R) ? t_->reduceRows - first : R;
    const int64_t rowUb = AlignUp(len * static_cast<int64_t>(sizeof(float)), 32);
    LocalTensor<float> staging = wsQue_.AllocTensor<float>();
    const bool whole = t_->stage2WholeRows != 0;
    DataCopyExtParams copy{static_cast<uint16_t>(rows), static_cast<uint32_t>(len * sizeof(float)),
                           static_cast<uint32_t>((t_->C - len) * sizeof(float)),
                           static_cast<uint32_t>((W * P * static_cast<int64_t>(sizeof(float)) - rowUb) / 32), 0};
    if (whole) copy = DataCopyExtParams{1, static_cast<uint32_t>(rows * P * sizeof(float)), 0, 0, 0};
    DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};
    const int64_t second = whole ? R * P : P;  // where the dg rows start when both arrays load
    if (t_->dbetaRequired != 0) DataCopyPad(staging, wsDbGm_[first * t_->C + c0], copy, pad);
    if (t_->dgammaRequired != 0) DataCopyPad(staging[(W - 1) * second], wsDgGm_[first * t_->C + c0], copy, pad);
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
