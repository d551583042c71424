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
    // mode 3's tasks of whole samples (hwOneSamples, a split the shape alone decides: no other route
    // sums these rows), every row in one load (the tiling's stage2RowsPerLoad): the rows folded as a
    // tree (FoldRows), then added once
    const bool fold = t_->hwOneSamples > 0;
    BinaryRepeatParams bothRows;  // whole rows only, where C <= 64 keeps the strides within 8 bits
    if (whole && !fold) {
      bothRows = BinaryRepeatParams(1, 1, 1, BlockStride(P / 8), BlockStride(P / 8), BlockStride(R * P / 8));
    }
    LocalTensor<float> accDb = accBuf_.Get<float>();
    LocalTensor<float> accDg = accBuf_.Get<float>()[P];
    LocalTensor<float> acc = t_->dbetaRequired != 0 ? accDb : accDg;  // the first array of a row
    const int64_t sliceStart = block * t_->stage2SliceElems;
    const int64_t sliceEnd =
        (sliceStart + t_->stage2SliceElems < t_->C) ? sliceStart + t_->stage2SliceElems : t_->C;
    const int64_t batches = (t_->reduceRows + R - 1) / R;
    // R workspace rows (samples) per load, the loads of every piece one stream: load k + 1 is
    // issued before load k is added; a piece's rows are added in order n = 0..N-1 (or folded)
    const int64_t loads = (sliceEnd - sliceStart + P - 1) / P * batches;
    if (loads > 0 && !firstIssued) IssueLoad(0, sliceStart, sliceEnd, batches, W);
    for (int64_t c0 = sliceStart; c0 < sliceEnd; c0 += P) {
      const int64_t len = (sliceEnd - c0 < P) ? sliceEnd - c0 : P;
      const int32_t lanes = static_cast<int32_t>((W - 1) * P + len);
      Duplicate(acc, 0.0f, lanes);
      for (int64_t batch = 0; batch < batches; ++batch) {
        const int64_t k = (c0 - sliceStart) / P * batches + batch;
        if (k + 1 < loads) IssueLoad(k + 1, sliceStart, sliceEnd, batches, W);
        const int64_t first = batch * R;
        const int64_t rows = (t_->reduceRows - first < R) ? t_->reduceRows - first : R;
        LocalTensor<float> loaded = wsQue_.DeQue<float>();
        if (fold) {
          FoldRows(loaded, rows, W, P, R * P);
          if (whole) {  // row 0 of each array, R x P apart (a repeat stride past 255 blocks)
            for (int64_t a = 0; a < W; ++a) Add(acc[a * P], acc[a * P], loaded[a * R * P], static_cast<int32_t>(P));
          } else {
            Add(acc, acc, loaded, lanes);
          }
        } else {
          for (int64_t r = 0; r < rows; ++r) {
            if (whole) {
              Add(acc, acc, loaded[r * P], static_cast<uint64_t>(P), RepeatTimes(W), bothRows);
            } else {
              Add(acc, acc, loaded[r * W * P], lanes);
            }
          }
        }
        wsQue_.FreeTensor(loaded);
      }
      if (t_->dbetaRequired != 0) StoreStridedFromFloat(outQue_, dbeta, c0, len, accDb, 0.0f, false, 1, 0);
      if (t_->dgammaRequired != 0) StoreStridedFromFloat(outQue_, dgamma, c0, len, accDg, 0.0f, false, 1, 0);
    }
  }

 private:
  // The n rows of a load added into row 0 as a tree, one Add a level for each array: rows [0, h) +=
  // rows [n - h, n), h = n / 2, until one is left (1023x257 G1: 47 dependent row Adds, each with its
  // V barrier, became 6). Its order is fixed by the rows alone, so the bits are the same on any core
  // count. Non-whole rows are W x P floats apart (both arrays in one run, padding lanes added as the
  // row Adds add them); whole rows, each array's rows are P apart, the dg rows from dgAt.
  __aicore__ inline void FoldRows(const LocalTensor<float> &loaded, int64_t n, int64_t W, int64_t P, int64_t dgAt) {
    const bool whole = t_->stage2WholeRows != 0;
    const int64_t row = whole ? P : W * P;
    while (n > 1) {
      const int64_t h = n / 2;
      const int32_t lanes = static_cast<int32_t>(h * row);
      Add(loaded, loaded, loaded[(n - h) * row], lanes);
      if (whole && W == 2) Add(loaded[dgAt], loaded[dgAt], loaded[dgAt + (n - h) * row], lanes);
      n -= h;
    }
  }

  // Load k of Sum's stream: batch k % batches of piece k / batches of the slice [sliceStart, sliceEnd).
  __aicore__ inline void IssueLoad(int64_t k, int64_t sliceStart, int64_t sliceEnd, int64_t batches, int64_t W) {
    const int64_t P = t_->stage2PieceElems;
    const int64_t c0 = sliceStart + k / batches * P;
    IssueWorkspaceRows(c0, (sliceEnd - c0 < P) ? sliceEnd - c0 : P, k % batches, W);
  }

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
