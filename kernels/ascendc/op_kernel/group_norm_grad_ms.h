/*
 * GroupNormGradMs kernel: the backward of GroupNorm (aclnnGroupNormBackward contract).
 *
 * For a group (n, g) of M = D * HxW elements, with xhat = (x - mean) * rstd:
 *   db[n, c] = sum_hw dy                 dg[n, c] = sum_hw dy * xhat
 *   c1 = sum_{c in g} gamma_c db[n, c] / M,   c2 = sum_{c in g} gamma_c dg[n, c] / M
 *   dx = rstd * (gamma_c * dy - c1 - xhat * c2)
 *   dbeta_c = sum_n db[n, c],  dgamma_c = sum_n dg[n, c]
 *
 * Work split (see the host tiling): phase 1 runs tasks that are (n, g) groups, or (n, c)
 * channels when N*G is smaller than the core count, or runs of whole groups when HxW == 1.
 * Per-(n, c) sums go to an fp32 workspace, each task writing only its own cells (no
 * atomics). After SyncAll, stage 2 reduces the workspace over n in a fixed order for a
 * slice of channels per block, so dgamma/dbeta do not depend on which core ran what.
 *
 * All arithmetic is fp32: fp16/bf16 are cast to fp32 on load and rounded to nearest even
 * (CAST_RINT) on store.
 *
 * Files: this class (buffers, the tasks); group_norm_grad_ms_stream.h the load stream, the
 * mean/rstd and gamma/beta loads; group_norm_grad_ms_channels.h and _hw_one.h its per-channel work
 * (modes 0-2) and mode 3; _group_rows.h mode 0's batches of one-channel groups (groupRows);
 * _copies.h the GM <-> UB moves and row sums; _stage2.h stage 2;
 * _common.h constants and CascadeSum; swish_grad_math.h the fused GroupNormSiluGradMs's swish
 * gradient (SILU = true).
 */
#ifndef GROUP_NORM_GRAD_MS_H
#define GROUP_NORM_GRAD_MS_H

#include "kernel_operator.h"
#include "group_norm_grad_ms_common.h"
#include "group_norm_grad_ms_copies.h"
#include "group_norm_ms_gather.h"
#include "group_norm_grad_ms_stage2.h"
#include "group_norm_grad_ms_tiling_data.h"
#include "swish_grad_math.h"

namespace GroupNormGradMsKernel {
using namespace AscendC;

// SILU: the fused GroupNormSiluGradMs backward. dy is then dz, the gradient of
// z = y * sigmoid(k * y), y = gamma_c * xhat + beta_c; right after each item is taken and xhat
// computed, g (swish_grad_math.h) is recomputed over it, and the code downstream is unchanged:
// db = sum g, dg = sum g * xhat, dx = rstd * (gamma_c * g - c1 - xhat * c2). gamma and beta are
// loaded for every task (also when only dgamma/dbeta are asked for).
template <typename T, typename U, bool SILU = false>
class KernelGroupNormGradMs {
 public:
  __aicore__ inline KernelGroupNormGradMs() {}

  // beta: GroupNormSiluGradMs's input (SILU only; nullptr for GroupNormGradMs).
  __aicore__ inline void Init(GM_ADDR dy, GM_ADDR mean, GM_ADDR rstd, GM_ADDR x, GM_ADDR gamma, GM_ADDR beta,
                              GM_ADDR dx, GM_ADDR dgamma, GM_ADDR dbeta, GM_ADDR workspace,
                              const GroupNormGradMsTilingData *tiling, TPipe *pipe) {
    t_ = tiling;
    pipe_ = pipe;
    const uint64_t numel = static_cast<uint64_t>(t_->N * t_->C * t_->HxW);
    dyGm_.SetGlobalBuffer((__gm__ T *)dy, numel);
    xGm_.SetGlobalBuffer((__gm__ T *)x, numel);
    dxGm_.SetGlobalBuffer((__gm__ T *)dx, numel);
    meanGm_.SetGlobalBuffer((__gm__ U *)mean, t_->N * t_->G);
    rstdGm_.SetGlobalBuffer((__gm__ U *)rstd, t_->N * t_->G);
    gammaGm_.SetGlobalBuffer((__gm__ U *)gamma, t_->C);
    if constexpr (SILU) {
      betaGm_.SetGlobalBuffer((__gm__ U *)beta, t_->C);
      swishScale_ = t_->swishScale;
    }
    dgammaGm_.SetGlobalBuffer((__gm__ U *)dgamma, t_->C);
    dbetaGm_.SetGlobalBuffer((__gm__ U *)dbeta, t_->C);
    // per-(n, slice, c) sums: rows n * hwSlices + s of C floats (hwSlices is 1 without the HxW split)
    const int64_t wsRows = t_->N * t_->hwSlices;
    wsDbGm_.SetGlobalBuffer((__gm__ float *)workspace, wsRows * t_->C);
    wsDgGm_.SetGlobalBuffer((__gm__ float *)workspace + wsRows * t_->C, wsRows * t_->C);
    invM_ = 1.0f / static_cast<float>(t_->D * t_->HxW);
    hwColumnsRows_ = HwColumnsPlan();  // once: every mode-3 batch asks
  }

  __aicore__ inline void Process() {
    const int64_t block = GetBlockIdx();
    if (block < t_->phase1Cores) {
      InitPhase1Buffers();
      int64_t first = block * t_->tasksPerCore + (block < t_->tailCores ? block : t_->tailCores);
      int64_t count = t_->tasksPerCore + (block < t_->tailCores ? 1 : 0);
      if (t_->mode == GNG_MODE_HW_ONE) {
        HwOneRun(first, count);
      } else if (t_->splitByChannel != 0) {
        // one stream: every task's sums pass, then (after SyncAll) every task's dx pass, so
        // the first dx loads are in flight across the SyncAll (they read inputs only)
        if (count > 0) IssueStatWindow(DecodeChannelTask(first).group);  // ahead of the stream's loads
        StreamBegin(first, count, true, true, false, t_->dxRequired != 0);
        for (int64_t task = first, rows = 0; task < first + count; task += rows) {
          rows = ChannelRun(task, first + count);
          ChannelSumsTask(task, rows);
        }
      } else if (t_->groupRows > 0) {  // (also across N)
        GroupRowsRun(first, count);
      } else if (t_->groupAcrossN != 0) {
        // tasks are groups g, each over n = 0..N-1 (stream tasks g * N + n): dgamma/dbeta of the
        // group's channels are summed here in the order stage 2 would use, with no workspace
        // group g's mean/rstd (a window from n = 0) and gamma ahead of the stream's loads
        if (count > 0) IssueStatWindow(first);
        if (count > 0 && t_->affineAhead != 0) IssueAffine(first);
        StreamBegin(first * t_->N, count * t_->N, false, true, false);
        for (int64_t g = first; g < first + count; ++g) GroupAcrossNTask(g, g + 1 < first + count);
      } else {
        if (count > 0) IssueStatWindow(first);  // ahead of the stream's loads
        const bool table = t_->affineAhead == AFFINE_TABLE;
        if (table) {  // the core's groups: a run of them, or all G when its tasks wrap around
          const bool run = count < t_->G && first % t_->G + count <= t_->G;
          tableFirst_ = run ? first % t_->G : 0;
          tableRows_ = run ? count : t_->G;
        }
        if (count > 0 && t_->affineAhead != 0) IssueAffine(table ? -1 : first % t_->G);  // ahead of the stream
        StreamBegin(first, count, false, true, t_->mode != GNG_MODE_GROUP_RESIDENT && t_->dxRequired != 0);
        for (int64_t task = first; task < first + count; ++task) {
          GroupTask(task, task + 1 < first + count ? (task + 1) % t_->G : -1);
        }
        // the table stays dequeued (nothing allocates from gammaQue_ again; stage 2 resets the pipe)
      }
    }
    bool stage2Issued = false;  // stage2Ahead: the block's stage-2 load is issued
    if (t_->numTasks > 0 && t_->needWorkspace != 0) {
      SyncAll();  // the workspace is complete only when every block has finished phase 1
    }
    if (t_->splitByChannel != 0 && block < t_->phase1Cores) {
      int64_t first = block * t_->tasksPerCore + (block < t_->tailCores ? block : t_->tailCores);
      int64_t count = t_->tasksPerCore + (block < t_->tailCores ? 1 : 0);
      cachedGroup_ = -1;
      if (t_->hwSlices > 1) {
        SlicedAfterSyncAll(first, count);
      } else if (t_->dxRequired != 0) {
        for (int64_t task = first, rows = 0; task < first + count; task += rows) {
          rows = ChannelRun(task, first + count);
          ChannelDxTask(task, rows, first + count);
          // stage2Ahead: this block's stage-2 load once at most two items of its dx pass are left: its
          // bursts (one a sample and array) then hold up no dx load still needed, and its latency passes
          // while those items run (64x512x7x7 G1 fp16 est. 28.3 us issued after the first task, 27.1 here)
          if (!stage2Issued && first + count - task - rows <= 2 * t_->channelsPerItem && t_->stage2Ahead != 0 &&
              block < t_->stage2Cores) {
            stage2_.IssueFirst(block);
            stage2Issued = true;
          }
        }
      }
    }
    if (t_->stage2Cores > 0 && block < t_->stage2Cores) {
      if (t_->stage2Ahead != 0 && block < t_->phase1Cores) {  // its buffers are among phase 1's
        stage2_.Sum(block, dgammaGm_, dbetaGm_, stage2Issued);
      } else {
        PipeBarrier<PIPE_ALL>();  // once: every pipe is done with the phase-1 buffers before UB is laid out anew
        pipe_->Reset();
        stage2_.Run(t_, pipe_, block, wsDbGm_, wsDgGm_, dgammaGm_, dbetaGm_);
      }
    }
  }

 private:
  // ------------------------------------------------------------------ buffers
  __aicore__ inline void InitPhase1Buffers() {
    const int64_t K = t_->chunkElems;
    if (t_->mode == GNG_MODE_HW_ONE) {  // two batches in flight (HwOneRun)
      pipe_->InitBuffer(rowDyQue_, BUFFER_NUM, K * sizeof(T));
      pipe_->InitBuffer(rowXQue_, BUFFER_NUM, K * sizeof(T));
    } else if (t_->loadBuffers == MAX_LOAD_BUFFERS) {
      pipe_->InitBuffer(dyQue3_, MAX_LOAD_BUFFERS, K * sizeof(T));
      pipe_->InitBuffer(xQue3_, MAX_LOAD_BUFFERS, K * sizeof(T));
    } else {
      pipe_->InitBuffer(dyQue_, BUFFER_NUM, K * sizeof(T));
      pipe_->InitBuffer(xQue_, BUFFER_NUM, K * sizeof(T));
    }
    pipe_->InitBuffer(dxQue_, t_->dxBuffers, K * sizeof(T));
    if (t_->mode == GNG_MODE_HW_ONE) {
      // The same bytes as numFloatBufs * K floats, split so that the two buffers MTE3 stores
      // to the workspace are VECOUT (UB -> GM copies read VECIN/VECOUT only).
      pipe_->InitBuffer(floatBuf_, (t_->numFloatBufs - 2) * K * sizeof(float));
      pipe_->InitBuffer(floatOutBuf_, 2 * K * sizeof(float));
    } else {
      pipe_->InitBuffer(floatBuf_, t_->numFloatBufs * K * sizeof(float));
    }
    pipe_->InitBuffer(reduceBuf_, (FLOATS_PER_BLOCK + t_->reduceWorkElems) * sizeof(float));
    if (t_->statElems > 0) {
      // db, dg, gamma (+ the dbeta/dgamma accumulators of groupAcrossN) (+ beta with SILU)
      pipe_->InitBuffer(statBuf_, StatArrays() * t_->statElems * sizeof(float));
      if (t_->groupAcrossN != 0) pipe_->InitBuffer(outQue_, BUFFER_NUM, t_->statElems * sizeof(U));
      // ownStats: a task's dbeta and dgamma, the second from AlignUp(channels, 16) (StoreOwnStats)
      if (t_->ownStats != 0) pipe_->InitBuffer(outQue_, BUFFER_NUM, 2 * AlignUp(t_->statElems, 16) * sizeof(U));
      pipe_->InitBuffer(statQue_, 1, (SILU ? 2 : 1) * t_->statElems * sizeof(float));  // SILU: gamma and beta
      if (t_->needWorkspace != 0 && t_->mode != GNG_MODE_HW_ONE) {  // db, dg of a task on their way to the workspace
        pipe_->InitBuffer(sumsQue_, t_->mode == GNG_MODE_GROUP_RESIDENT ? RESIDENT_SUMS_BUFFERS : BUFFER_NUM,
                          2 * t_->statElems * sizeof(float));
      }
    }
    if (t_->mode == GNG_MODE_GROUP_RESIDENT) {
      const int64_t rows = t_->groupRows > 0 ? t_->groupRows * t_->D : t_->D;  // a group's channels, or a batch's
      pipe_->InitBuffer(residentBuf_, 2 * rows * t_->residentStride * sizeof(float));
      if (GroupRowsAffine()) pipe_->InitBuffer(gammaAllBuf_, (SILU ? 2 * GroupRowsBetaAt() : t_->C) * sizeof(U));
    }
    if (t_->bcastElems > 0) pipe_->InitBuffer(bcastBuf_, t_->bcastElems * sizeof(float));  // modes 0-1
    if (t_->heldItems > 0) pipe_->InitBuffer(heldBuf_, 2 * t_->heldItems * K * sizeof(T));
    // spread (K) and, with DxOnRuns, row (an item's channelsPerItem * HxW) tables, built by StreamBegin
    if (t_->rowsGather != 0) pipe_->InitBuffer(gatherBuf_, 2 * K * sizeof(int32_t));
    if (t_->affineAhead != 0) {
      // Two buffers: the next group's load needs no wait for the current one's cast. One with
      // three (dy, x) loads in flight: every freed buffer of a VECIN queue holds a V -> MTE2
      // event id until it is allocated again (kernel_tquebind_impl.h FreeBuffer), and the six
      // load buffers, this one and statQue_ (GroupCoefficients' scratch) are the 8 ids.
      if (t_->affineAhead == AFFINE_TABLE) {  // every group's: G rows of statElems
        pipe_->InitBuffer(gammaQue_, 1, (SILU ? 2 : 1) * t_->G * t_->statElems * sizeof(U));
      } else {
        pipe_->InitBuffer(gammaQue_, t_->loadBuffers == MAX_LOAD_BUFFERS ? 1 : BUFFER_NUM,
                          (SILU ? 2 : 1) * t_->statElems * sizeof(U));
      }
    }
    if (t_->mode == GNG_MODE_HW_ONE) {
      if (t_->hwOneSamples > 0) pipe_->InitBuffer(hwAccBuf_, 2 * t_->G * AlignUp(t_->D, 16) * sizeof(float));
      if (t_->hwOneGather != 0) pipe_->InitBuffer(gatherBuf_, 2 * K * sizeof(int32_t));
      pipe_->InitBuffer(gammaQue_, 1, K * sizeof(U));
      if constexpr (SILU) pipe_->InitBuffer(betaQue_, 1, K * sizeof(U));
    }
    if (t_->hwSlices > 1) {
      pipe_->InitBuffer(partialQue_, 1, 2 * t_->hwSlices * t_->statElems * sizeof(float));
      if (t_->dgammaRequired != 0 || t_->dbetaRequired != 0) {  // a group's rows of every sample, and the stores
        pipe_->InitBuffer(ownerQue_, 1, 2 * t_->N * t_->hwSlices * t_->statElems * sizeof(float));
        pipe_->InitBuffer(outQue_, BUFFER_NUM, t_->statElems * sizeof(U));
      }
    }
    // mean, then rstd; mode 3: two such slots, the batch's and the next one's (HwOneIssueStats)
    pipe_->InitBuffer(statWindow_, GngStatWindowSlots(t_->mode) * 2 * t_->statWindowElems * sizeof(U));
    statFirst_ = 0;
    statCount_ = 0;
    if (t_->stage2Ahead != 0) stage2_.Init(t_, pipe_, wsDbGm_, wsDgGm_, 1);  // last, as the host's Phase1Bytes
    if constexpr (SILU) Duplicate(Ones(), 1.0f, static_cast<int32_t>(K));  // once: the numerator of s = 1 / (1 + e)
  }

  __aicore__ inline int64_t StatArrays() const {
    return (t_->groupAcrossN != 0 ? 5 : 3) + (SILU ? 1 : 0);
  }
  // SILU: the fp32 beta array of the task's group (after db, dg, gamma and the accumulators).
  __aicore__ inline LocalTensor<float> BetaArray() { return StatArray(StatArrays() - 1); }
  // SILU: the last fp32 work buffer holds 1.0 (floatBuf_ has numFloatBufs - 2 buffers in mode 3).
  __aicore__ inline LocalTensor<float> Ones() {
    return FloatBuf(t_->numFloatBufs - (t_->mode == GNG_MODE_HW_ONE ? 3 : 1));
  }
  // SILU: gamma and beta of group g as fp32 arrays in StatArray(2) and BetaArray(), readable by
  // the scalar unit, loaded now (nothing when they are there already); and, with affineAhead,
  // a group's gamma (+ beta) issued a task ahead (g -1: every group's, AFFINE_TABLE) and taken
  // (group_norm_grad_ms_stream.h).
  __aicore__ inline void LoadAffine(int64_t g);
  __aicore__ inline void IssueAffine(int64_t g);
  __aicore__ inline void TakeAffine(int64_t g);

  __aicore__ inline LocalTensor<float> FloatBuf(int64_t i) { return floatBuf_.Get<float>()[i * t_->chunkElems]; }
  __aicore__ inline LocalTensor<float> StatArray(int64_t i) { return statBuf_.Get<float>()[i * t_->statElems]; }
  __aicore__ inline LocalTensor<float> ReduceDst() { return reduceBuf_.Get<float>(); }
  __aicore__ inline LocalTensor<float> ReduceWork() { return reduceBuf_.Get<float>()[FLOATS_PER_BLOCK]; }

  // One producer -> consumer ordering between two pipes (a SetFlag/WaitFlag pair).
  template <HardEvent E>
  __aicore__ inline void Sync() {
    event_t id = static_cast<event_t>(pipe_->FetchEventID(E));
    SetFlag<E>(id);
    WaitFlag<E>(id);
  }

  // ------------------------------------------------------------------ GM <-> UB
  // The GM <-> UB moves of group_norm_grad_ms_copies.h with mode 0's row stride.
  template <typename V, typename Que>
  __aicore__ inline void IssueLoad(Que &que, const GlobalTensor<V> &src, int64_t offset, int64_t len, bool aligned,
                                   int64_t rows = 1) {
    IssueStridedLoad(que, src, offset, len, aligned, rows, t_->residentStride);
  }
  template <typename V, typename Que>
  __aicore__ inline void StoreFromFloat(Que &que, const GlobalTensor<V> &dst, int64_t offset, int64_t len,
                                        const LocalTensor<float> &src, float add, bool aligned, int64_t rows = 1) {
    StoreStridedFromFloat(que, dst, offset, len, src, add, aligned, rows, t_->residentStride);
  }

  template <typename V, typename Que>
  __aicore__ inline void LoadAsFloat(Que &que, const GlobalTensor<V> &src, int64_t offset, int64_t len,
                                     const LocalTensor<float> &dst) {
    IssueLoad(que, src, offset, len, false);
    TakeAsFloat<V>(que, len, dst);
  }

  // mean/rstd of group i, from a window of statWindowElems groups loaded into UB (one DMA for
  // each of mean and rstd) the first time a group outside the current window is asked for
  // (group_norm_grad_ms_stream.h).
  __aicore__ inline float Stat(bool isMean, int64_t i);
  __aicore__ inline void IssueStatWindow(int64_t first);

  // c1 and c2 of a group from db, dg and gamma (D values each): two vector products (into
  // the free stat staging buffer, so db and dg may still be on their way to the workspace)
  // and reductions. D <= 64: each product is one repeat, which WholeReduceSum sums in the same
  // lanes and tree as count-form ReduceSum (ReduceSum.md, ReduceRepeat.md), written by V, so
  // one V -> S hand-over serves both (ReduceSum makes a V -> S -> V round trip each).
  __aicore__ inline void GroupCoefficients(const LocalTensor<float> &db, const LocalTensor<float> &dg,
                                           const LocalTensor<float> &gamma, float *c1, float *c2) {
    const int32_t D = static_cast<int32_t>(t_->D);
    LocalTensor<float> red = ReduceDst();
    LocalTensor<float> scratch = statQue_.AllocTensor<float>();
    Mul(scratch, gamma, db, D);
    if (D <= 64) {
      WholeReduceSum<float>(red, scratch, D, 1, 1, 1, 8);
      Mul(scratch, gamma, dg, D);
      WholeReduceSum<float>(red[1], scratch, D, 1, 1, 1, 8);
      Sync<HardEvent::V_S>();  // the scalar reads of red[0], red[1]
    } else {
      ReduceSum(red, scratch, ReduceWork(), D);
      Mul(scratch, gamma, dg, D);
      ReduceSum(red[1], scratch, ReduceWork(), D);
    }
    statQue_.FreeTensor(scratch);
    *c1 = red.GetValue(0) * invM_;
    *c2 = red.GetValue(1) * invM_;
  }

  // ------------------------------------------------------------------ the load stream
  // The (dy, x) loads of a core's tasks in the order the compute takes them: per task its
  // sums pass, then (modes 1-2) its dx pass, over (channel, chunk) items. loadBuffers items
  // (2, or 3 in modes 1-2) are in flight ahead of the compute (the queues' buffers), across pass
  // and task boundaries: the load of item i + loadBuffers is issued as soon as item i is taken.
  // A channel's HxW is hwSlices slices of sliceElems (the last one shorter), each in chunks of
  // K = chunkElems; without the HxW split there is one slice, the whole channel.
  __aicore__ inline int64_t SliceLen(int64_t slice) const {
    const int64_t start = slice * t_->sliceElems;
    return (t_->HxW - start < t_->sliceElems) ? t_->HxW - start : t_->sliceElems;
  }
  __aicore__ inline int64_t SliceChunks(int64_t slice) const {
    return (SliceLen(slice) + t_->chunkElems - 1) / t_->chunkElems;
  }
  __aicore__ inline int64_t ItemLen(int64_t slice, int64_t chunk) const {
    const int64_t rest = SliceLen(slice) - chunk * t_->chunkElems;
    return (rest < t_->chunkElems) ? rest : t_->chunkElems;
  }
  // The slice of stream task t: channel-split tasks are (n, c, s), t = (n * C + c) * hwSlices + s.
  __aicore__ inline int64_t TaskSlice(int64_t t) const { return streamByChannel_ ? t % t_->hwSlices : 0; }
  __aicore__ inline int64_t TaskChannels(int64_t t) const { return streamByChannel_ ? ChannelRun(t, streamEnd_) : t_->D; }
  // Modes 0-1 move channelsPerItem channels per item (contiguous in GM, one DMA); else one.
  __aicore__ inline int64_t ItemsPerPass(int64_t t) const {
    const int64_t cpi = t_->channelsPerItem;
    return (TaskChannels(t) + cpi - 1) / cpi * SliceChunks(TaskSlice(t));
  }
  // The channel split with channelsPerItem > 1 (whole channels, no HxW split): the tasks from t
  // that one item moves, a run of consecutive (n, c) tasks, contiguous in GM, of one group (one
  // mean/rstd) and of the core's tasks [.., end): up to channelsPerItem. Else 1. Each channel's
  // sums are its own row's (RowSums), so the run changes no value, only the DMAs and queue turns.
  __aicore__ inline int64_t ChannelRun(int64_t t, int64_t end) const {
    const int64_t cpi = t_->channelsPerItem;
    if (cpi == 1) return 1;
    const int64_t groupEnd = t - (t % t_->C) % t_->D + t_->D;  // t = n * C + c (hwSlices is 1)
    int64_t run = end - t;
    if (groupEnd - t < run) run = groupEnd - t;
    return run < cpi ? run : cpi;
  }

  __aicore__ inline void StreamBegin(int64_t first, int64_t count, bool byChannel, bool sumsPass, bool dxPass,
                                     bool dxPassAfterAll = false);
  // The next item's GM offset, length and channel rows; false at the stream's end.
  __aicore__ inline bool StreamNext(int64_t *offset, int64_t *len, int64_t *rows);
  // rowsGather (mode 1): an item's rows of the sums pass as one run in GM and in its load buffers
  // (the dx pass loads and stores padded rows: a gather there costs the vector unit more than the
  // bursts it saves); Gather's tables (once a core), and the run of the rows spanning `span`
  // elements as fp32 in RowsRun() spread into dst's rows (group_norm_grad_ms_stream.h).
  __aicore__ inline void BuildRowsGatherTables();
  // the pass's items move as runs: the sums pass's with rowsGather, the dx pass's with RUNS_BOTH_PASSES
  __aicore__ inline bool RunPass(bool dxPass) const {
    return t_->rowsGather != 0 && (!dxPass || t_->rowsGather == RUNS_BOTH_PASSES);
  }
  __aicore__ inline int64_t RunElems(int64_t span) const {
    return ((span - t_->HxW) / t_->residentStride + 1) * t_->HxW;
  }
  __aicore__ inline LocalTensor<float> RowsRun() { return FloatBuf(2); }  // free while an item is taken
  // RUNS_BOTH_PASSES (never with SILU, whose per-row swish terms need the rows): the dx pass computes
  // on an item's run as loaded, no spread, and stores dx as that run (one burst, not one a row). dx
  // is element-wise but for a_c = rstd gamma_c, which one Gather spreads from gamma over the run
  // (RowTable(): rowOf[j] = 4 (j / HxW), BuildRowsGatherTables) and a Muls scales by rstd: the fp32
  // product the per-row path makes, so the bits are those of the rows.
  __aicore__ inline bool DxOnRuns() const { return !SILU && t_->rowsGather == RUNS_BOTH_PASSES; }
  __aicore__ inline LocalTensor<uint32_t> RowTable() { return gatherBuf_.Get<uint32_t>()[t_->chunkElems]; }
  __aicore__ inline void SpreadRun(const LocalTensor<float> &dst, int64_t span);
  // Issues loads until loadBuffers items are in flight.
  __aicore__ inline void Pump();
  template <typename Q>
  __aicore__ inline void PumpInto(Q &dyQ, Q &xQ);
  // TakeItem's part with the queues (dyQue_/xQue_, or the depth-3 pair with loadBuffers 3).
  template <typename Q>
  __aicore__ inline void TakeLoaded(Q &dyQ, Q &xQ, int64_t index, int32_t len, float mean,
                                    const LocalTensor<float> &dyF, const LocalTensor<float> &xF, bool dxPass);
  // Takes the next item of the sums pass (dxPass false) or of the dx pass: dy as fp32 into dyF,
  // (x - mean) into xF; then refills the stream (held items: see group_norm_grad_ms_stream.h).
  // dxItem: the dx pass's item index within the held scope where the compute says it (its held
  // items last), else -1 (the next, in order).
  __aicore__ inline void TakeItem(int32_t len, float mean, const LocalTensor<float> &dyF,
                                  const LocalTensor<float> &xF, bool dxPass = false, int64_t dxItem = -1);
  __aicore__ inline LocalTensor<T> HeldDy(int64_t i) { return heldBuf_.Get<T>()[2 * i * t_->chunkElems]; }
  __aicore__ inline LocalTensor<T> HeldX(int64_t i) { return heldBuf_.Get<T>()[(2 * i + 1) * t_->chunkElems]; }
  // A task of modes 1-2 without the channel split holds its own first items (the stream side
  // starts a task's count in StreamNext).
  __aicore__ inline void BeginHeldScope() {
    takeSums_ = 0;
    takeDx_ = 0;
  }

  // db and dg of `channels` channels (HxW slice `slice` of each) into db[0..channels) and
  // dg[0..channels) = db[statElems..) (V writes, or S writes when a slice has several chunks).
  // Mode 0 keeps dy and x - mean resident. SILU: affineIndex is channel c0's index in the
  // loaded gamma/beta arrays.
  // ChannelSums' db and dg row sums (group_norm_grad_ms_channels.h); DbDgHalf(): where dg's partials start.
  __aicore__ inline int64_t DbDgHalf() const {
    return t_->reduceWorkElems / (2 * FLOATS_PER_BLOCK) * FLOATS_PER_BLOCK;
  }
  __aicore__ inline bool DbDgSideBySide(int32_t len) const;
  __aicore__ inline void DbDgRowSums(const LocalTensor<float> &db, const LocalTensor<float> &dg,
                                     const LocalTensor<float> &dy, const LocalTensor<float> &prod, int64_t rows,
                                     int64_t stride, int32_t len);
  __aicore__ inline void ChannelSums(int64_t c0, int64_t channels, int64_t slice, float mean, float rstd,
                                     const LocalTensor<float> &db, int64_t affineIndex);

  // dx of slice `slice` of `channels` channels of sample n: dx = a_c * dy - b * xhat - e with
  // a_c = rstd * gamma_c. frontTaken: DxFront has run for the first item (modes 1-2).
  __aicore__ inline void ChannelDx(int64_t n, int64_t c0, int64_t channels, int64_t slice, float mean,
                                   float rstd, const LocalTensor<float> &gamma, int64_t gammaIndex, float b,
                                   float e, bool frontTaken = false);
  __aicore__ inline void DxFront(int32_t len, float mean, float rstd, const LocalTensor<float> &gamma,
                                 int64_t gammaIndex, int64_t dxItem = -1, int64_t rows = 1);

  __aicore__ inline LocalTensor<float> ResidentDy(int64_t local) {
    return residentBuf_.Get<float>()[local * t_->residentStride];
  }
  __aicore__ inline LocalTensor<float> ResidentX(int64_t local) {
    return residentBuf_.Get<float>()[(t_->D + local) * t_->residentStride];
  }
  // Mode 0 with bcastElems (rows of <= 64 floats, the group in one item): one 32-byte block per row
  // of -k gamma_c (area 0) and -k beta_c (1) with SILU, and of rstd gamma_c (SILU 2, else 0), for
  // the repeat forms of Mul/Add that replace a Muls (Adds) per row (group_norm_grad_ms_channels.h).
  // Mode 1 with bcastElems (rows of <= 64 floats, channelsPerItem <= 255): the same blocks of the whole
  // group, an item's rows from its first channel's block. dx: form the rstd gamma_c blocks too.
  __aicore__ inline void BroadcastRows(float rstd, int64_t group, bool dx);
  __aicore__ inline void AffineTRows(const LocalTensor<float> &t, const LocalTensor<float> &xhat, int64_t row,
                                     int64_t rows, float shift);
  __aicore__ inline LocalTensor<float> RowBlocks(int64_t area) {
    return bcastBuf_.Get<float>()[area * FLOATS_PER_BLOCK * AlignUp(t_->D, FLOATS_PER_BLOCK)];
  }

  // ------------------------------------------------------------------ phase-1 tasks
  // The (n, g) group index n * G + g of stream task t: t itself, or with groupAcrossN t = g * N + n.
  __aicore__ inline int64_t GroupIndex(int64_t t) const {
    return t_->groupAcrossN != 0 ? (t % t_->N) * t_->G + t / t_->N : t;
  }

  // groupAcrossN: group g of every sample; dgamma/dbeta of its channels accumulate in UB over
  // n = 0..N-1 (the order of stage 2, so the bits are the same) and are stored once.
  // more: the core's next task is group g + 1.
  __aicore__ inline void GroupAcrossNTask(int64_t g, bool more);
  // Modes 0-2, one (n, g) group (group_norm_grad_ms_channels.h); nextG: the group of the core's
  // next task, -1 for none.
  __aicore__ inline void GroupTask(int64_t task, int64_t nextG);
  __aicore__ inline LocalTensor<float> TakeSums();
  __aicore__ inline void StoreSums(LocalTensor<float> &db, int64_t cell, int64_t len);

  // Channel split (group_norm_grad_ms_split.h): before SyncAll the sums of one (n, c, slice)
  // task into the workspace; after it, dx of that slice from the group's combined sums.
  __aicore__ inline ChannelTask DecodeChannelTask(int64_t task) const;
  // rows: the tasks from `task` one item moves (ChannelRun), 1 with the HxW split.
  __aicore__ inline void ChannelSumsTask(int64_t task, int64_t rows);
  // end: the core's last task + 1 (its next group's sums are loaded ahead, IssueGroupSums).
  __aicore__ inline void ChannelDxTask(int64_t task, int64_t rows, int64_t end);
  __aicore__ inline void IssueGroupSums(int64_t group);
  __aicore__ inline void ScaleGamma(const LocalTensor<float> &gamma, float rstd);
  // db, dg = db[statElems] of channels [c0, c0 + D) of sample n: the hwSlices partial rows
  // loaded, then summed in slice order.
  __aicore__ inline void IssueSlicePartials(int64_t n, int64_t c0, bool gamma);
  __aicore__ inline void CombineSlicePartials(const LocalTensor<float> &db);
  // HxW split: dbeta and dgamma of group g (D values each) to GM.
  __aicore__ inline void StoreGroupStats(int64_t g, const LocalTensor<float> &db, const LocalTensor<float> &dg);
  __aicore__ inline void StoreOwnStats(int64_t c, int64_t rows, const LocalTensor<float> &db);
  __aicore__ inline void IssuePartialRows(const LocalTensor<float> &dst, int64_t row0, int64_t rows, int64_t c0);
  // HxW split, after SyncAll: the dx passes of tasks [first, first + count) and the dgamma/dbeta
  // of the groups whose first task is among them (no stage 2).
  __aicore__ inline void SlicedAfterSyncAll(int64_t first, int64_t count);

  // Mode 0 with groupRows (D <= MAX_GROUP_ROW_CHANNELS): the core's tasks [first, first + count), groups q whose rows
  // are consecutive in GM, in batches of groupRows (group_norm_grad_ms_group_rows.h).
  // With groupAcrossN the tasks are groups g over every n: batches of samples of one group.
  // Every channel's gamma (dx) and beta (SILU: the swish gradient's t needs both) in gammaAllBuf_,
  // beta from element GroupRowsBetaAt() (32-byte aligned for its DMA).
  __aicore__ inline bool GroupRowsAffine() const { return t_->groupRows > 0 && (SILU || t_->dxRequired != 0); }
  __aicore__ inline int64_t GroupRowsBetaAt() const { return AlignUp(t_->C, 16); }
  __aicore__ inline void GroupRowsWaitAffine();
  __aicore__ inline void GroupRowsRun(int64_t first, int64_t count);
  __aicore__ inline void GroupRowsBatchOf(int64_t k, int64_t first, int64_t count, int64_t *q, int64_t *step,
                                          int64_t *rows);
  __aicore__ inline BlockRows GroupRowsBlocks(int64_t step, int64_t rows) const;
  // the channel of row i of the batch at group q (groups step apart)
  __aicore__ inline int64_t GroupRowsChannel(int64_t q, int64_t step, int64_t i) const {
    return ((q + (i / t_->D) * step) % t_->G) * t_->D + i % t_->D;
  }
  __aicore__ inline void GroupRowsIssue(int64_t q, int64_t step, int64_t rows);
  __aicore__ inline void GroupRowsBatch(int64_t q, int64_t step, int64_t rows, int64_t nextQ, int64_t nextStep,
                                        int64_t nextRows);
  __aicore__ inline void GroupRowsStoreParamGrads(int64_t g);

  // Mode 3 (HxW == 1): a run of whole groups of sample n, or (hwOneSamples) of whole samples.
  // Each group's D channels sit in UB at a stride of P = D rounded up to 16 elements
  // (DataCopyPad rows), so every per-group vector operand starts 32-byte aligned; the groups go
  // through UB in batches of K / P (global groups q = n * G + g from q0).
  __aicore__ inline void HwOneRun(int64_t first, int64_t count);
  __aicore__ inline void HwOneTaskGroups(int64_t task, int64_t *q0, int64_t *groups) const;
  __aicore__ inline void HwOneIssueRows(int64_t q0, int64_t rows);
  // hwOneSamples without the workspace (one task of every sample): its sums stored as dgamma/dbeta.
  __aicore__ inline void HwOneStoreParamGrads(int64_t width);
  // hwOneGather: the offset tables (once a core), a batch's run as padded fp32 rows, dx back as a run.
  __aicore__ inline void HwOneBuildGatherTables();
  template <typename Que>
  __aicore__ inline void HwOneTakeRows(Que &que, int64_t rows, const LocalTensor<float> &dst);
  __aicore__ inline void HwOneStoreDx(int64_t base, int64_t rows);
  // A batch of `rows` groups from q0 whose dy and x rows HwOneIssueRows issued.
  __aicore__ inline void HwOneBatch(int64_t q0, int64_t rows);
  // gamma as fp32 rows once a core: batches of whole samples all use a prefix of the same rows.
  __aicore__ inline bool HwOneGammaOnce() const { return t_->hwOneSamples > 0; }
  __aicore__ inline int64_t HwOneGammaRows(int64_t rows) const { return HwOneGammaOnce() ? HwOneBatchRows() : rows; }
  __aicore__ inline void HwOneTakeGamma(const LocalTensor<float> &gF, int64_t rows);
  // SILU: beta's rows as fp32 (FloatBuf(4) of mode 3's SILU layout: the ones vector follows it).
  __aicore__ inline LocalTensor<float> HwOneBetaRows() { return FloatBuf(4); }
  // Groups of at most 64 channels whose coefficient rows fit in FloatBuf(3) (HwOneCoefElems): a
  // batch's per-group scalars go through UB as arrays, broadcast into a block a group (Brcb) and
  // applied to every group at once (one repeat a group); its c1/c2 sums by RowSums.
  // Groups a mode-3 batch: as many rows of D rounded up to 16 as K holds (>= 1), at most a stat
  // slot's (statWindowElems, whole samples where a sample fits): the batch size changes no sum's
  // order (dx is per group; the dgamma/dbeta rows add up by sample).
  __aicore__ inline int64_t HwOneBatchRows() const {
    if (HwOneColumns()) return HwColumnsRows();
    const int64_t rows = t_->chunkElems / AlignUp(t_->D, 16);
    const int64_t unit = t_->hwOneSamples > 0 ? t_->G : 1;
    const int64_t windowRows = t_->statWindowElems / unit * unit;
    return (windowRows > 0 && windowRows < rows) ? windowRows : rows;
  }
  // Mode 3 in columns (group_norm_grad_ms_hw_columns.h): groups of D <= 8 channels unpadded, channel
  // k of the batch's groups one contiguous column, columns HwColumnStride() apart.
  __aicore__ inline int64_t HwColumnsPlan() const;
  __aicore__ inline int64_t HwColumnsRows() const { return hwColumnsRows_; }
  __aicore__ inline bool HwOneColumns() const { return hwColumnsRows_ > 0; }
  __aicore__ inline int64_t HwColumnStride() const { return HwOneRows8(HwColumnsRows()); }
  __aicore__ inline int64_t HwOneSpan(int64_t rows) const {
    return HwOneColumns() ? (t_->D - 1) * HwColumnStride() + rows : rows * AlignUp(t_->D, 16);
  }
  // dg's rows in floatOutBuf_ (dy's at 0): in columns right after dy's D columns (HwColumnsAccumulate)
  __aicore__ inline int64_t HwOneDgAt() const { return HwOneColumns() ? t_->D * HwColumnStride() : t_->chunkElems; }
  __aicore__ inline int64_t HwOneAccWidth() const { return HwOneColumns() ? t_->C : t_->G * AlignUp(t_->D, 16); }
  __aicore__ inline void HwColumnsBuildTables();
  template <typename Que>
  __aicore__ inline void HwColumnsTakeRows(Que &que, int64_t rows, const LocalTensor<float> &dst);
  __aicore__ inline void HwColumnsApply(const LocalTensor<float> &dst, const LocalTensor<float> &coef, int64_t rows,
                                        bool add);
  __aicore__ inline void HwColumnsSum(const LocalTensor<float> &dst, const LocalTensor<float> &src, int64_t rows);
  __aicore__ inline void HwColumnsAccumulate(const LocalTensor<float> &acc, const LocalTensor<float> &dyF,
                                             int64_t s);
  __aicore__ inline void HwColumnsAccumulateBatch(const LocalTensor<float> &acc, const LocalTensor<float> &dyF,
                                                  int64_t rows);
  __aicore__ inline void HwColumnsPairRows(const LocalTensor<float> &dst, const LocalTensor<float> &src,
                                           int64_t pairs, int64_t dstStep, int64_t srcStep, int64_t apart);
  __aicore__ inline void HwColumnsPackSums(const LocalTensor<float> &dst);
  template <typename Que>
  __aicore__ inline void HwColumnsIssueAffine(Que &que, const GlobalTensor<U> &src, int64_t q0, int64_t rows);
  template <typename Que>
  __aicore__ inline void HwColumnsTakeAffine(Que &que, const LocalTensor<float> &dst, int64_t rows);
  // The batch's -mean and rstd as vectors from its stat slot (false: the scalar loop's job).
  __aicore__ inline bool HwOneStatsAsVectors(int64_t rows);
  __aicore__ inline void HwOneIssueStats(int64_t q0, int64_t rows);
  __aicore__ inline void HwOneTakeStats();
  // The current batch's mean (rstd) in its slot, as loaded; HwStat: of its group j, as fp32.
  __aicore__ inline LocalTensor<U> HwStatSlot(bool isMean) {
    return statWindow_.Get<U>()[(2 * hwStatSlot_ + (isMean ? 0 : 1)) * t_->statWindowElems];
  }
  __aicore__ inline float HwStat(bool isMean, int64_t j) { return ToF32(HwStatSlot(isMean).GetValue(j)); }
  __aicore__ inline bool HwOneVectorCoefficients(int64_t rows) const {
    return t_->D <= 64 && HwOneCoefElems(rows) <= t_->chunkElems;
  }
  // dst rows (P apart, D long) = dst rows op coefficient k of the batch's groups (op: Mul or Add)
  __aicore__ inline void HwOneApply(const LocalTensor<float> &dst, int64_t k, int64_t rows, bool add);
  template <typename Que>
  __aicore__ inline void IssueAffineRows(Que &que, const GlobalTensor<U> &src, int64_t q0, int64_t rows);
  // The gamma (beta) rows a batch loads: with hwOneSamples and groups of D not a multiple of 16 (a
  // burst a row) one sample's G rows, the same for every sample; else the batch's own rows (D a
  // multiple of 16: a sample's rows are one burst already and the UB copies cost more: 4096x512 G32
  // fp32 est./bound 7.17 -> 7.20 with them).
  __aicore__ inline int64_t HwOneAffineRows(int64_t rows) const {
    return (t_->hwOneSamples > 0 && !RowsAreOneBurst(t_->D)) ? t_->G : rows;
  }
  // The loaded gamma (beta) rows as fp32 into dst, then, with hwOneSamples, copied to every sample
  // of the batch's `rows` groups.
  template <typename Que>
  __aicore__ inline void HwOneTakeAffine(Que &que, const LocalTensor<float> &dst, int64_t rows);

  const GroupNormGradMsTilingData *t_ = nullptr;
  // the load stream (see StreamBegin)
  int64_t streamFirst_ = 0;
  bool streamDxAfterAll_ = false;
  int64_t streamTask_ = 0;
  int64_t streamEnd_ = 0;
  int64_t streamItem_ = 0;
  int64_t streamPass_ = 0;  // 0: sums pass, 1: dx pass
  bool streamByChannel_ = false;
  bool streamSums_ = false;
  bool streamDx_ = false;
  int64_t inFlight_ = 0;
  int64_t streamDxCount_ = 0;  // dx items the stream has passed in the current held scope
  bool streamHeldPerTask_ = true;  // the held scope is a task (else the core's whole stream)
  int64_t takeSums_ = 0;       // sums / dx items the compute has taken in the current held scope
  int64_t takeDx_ = 0;
  float invM_ = 0.0f;
  int64_t hwColumnsRows_ = 0;  // HwColumnsPlan(): mode 3's batch in columns (0: padded rows)
  int64_t cachedGroup_ = -1;
  int64_t sumsAhead_ = -1;  // channel split: the group whose db/dg loads are in flight (sumsEvent_ set)
  int32_t sumsEvent_ = 0;
  LocalTensor<float> scaledGamma_;  // DxOnRuns, channel split: rstd * gamma_c of the group (ScaleGamma)
  bool scaledHeld_ = false;
  float cachedC1_ = 0.0f;
  float cachedC2_ = 0.0f;
  int64_t affineGroup_ = -1;  // SILU: the group whose gamma/beta are in StatArray(2) and BetaArray()
  int64_t gammaGroup_ = -1;   // the group whose gamma is in StatArray(2) (GroupTask, the HxW split)
  int64_t bcastGroup_ = -1;   // the group whose -k gamma/beta blocks are in bcastBuf_ (BroadcastRows)
  bool affineUnsynced_ = false;  // SILU, affineAhead: TakeAffine's casts not yet ordered before scalar reads
  bool affineTableTaken_ = false;  // AFFINE_TABLE: affineTable_ is dequeued (and kept)
  LocalTensor<U> affineTable_;
  int64_t tableFirst_ = 0;  // AFFINE_TABLE: the groups [tableFirst_, tableFirst_ + tableRows_) are loaded
  int64_t tableRows_ = 0;
  float swishScale_ = 1.0f;

  // The TPipe lives in the kernel entry, not in this class: a TPipe member stops the compiler
  // from constant-folding the class's scalars (asc-devkit docs, 避免TPipe在对象内创建和初始化.md).
  TPipe *pipe_ = nullptr;
  TQue<QuePosition::VECIN, BUFFER_NUM> dyQue_;
  TQue<QuePosition::VECIN, BUFFER_NUM> xQue_;
  TQue<QuePosition::VECIN, MAX_LOAD_BUFFERS> dyQue3_;  // loadBuffers 3 (a depth is a type: two pairs)
  TQue<QuePosition::VECIN, MAX_LOAD_BUFFERS> xQue3_;
  TQue<QuePosition::VECOUT, 1> dxQue_;  // depth 1: a dx tensor is dequeued right after it is queued
  TQue<QuePosition::VECIN, 1> statQue_;
  TQue<QuePosition::VECIN, 1> gammaQue_;
  TQue<QuePosition::VECIN, 1> betaQue_;  // mode 3, SILU
  TQue<QuePosition::VECIN, BUFFER_NUM> rowDyQue_;  // mode 3: the batch's rows and the next batch's (HwOneRun)
  TQue<QuePosition::VECIN, BUFFER_NUM> rowXQue_;
  TBuf<QuePosition::VECCALC> floatBuf_;
  TBuf<QuePosition::VECOUT> floatOutBuf_;  // mode 3: dy and dg rows that MTE3 stores to the workspace
  int64_t hwStatsIssued_ = 0;  // mode 3: batches whose stats are issued, taken; the current one's slot
  int64_t hwStatsTaken_ = 0;
  int64_t hwStatSlot_ = 0;
  int32_t hwStatEvent_[2] = {};
  bool gammaFormed_ = false;  // mode 3: gamma's rows are in FloatBuf(1) for every later batch (HwOneGammaOnce)
  TBuf<QuePosition::VECOUT> hwAccBuf_;     // mode 3 with hwOneSamples: a task's db and dg sums per channel
  TBuf<QuePosition::VECCALC> gatherBuf_;   // hwOneGather (mode 3), rowsGather (mode 1): Gather's offset tables
  TBuf<QuePosition::VECCALC> reduceBuf_;
  TBuf<QuePosition::VECOUT> statBuf_;  // db, dg (stored to the workspace by MTE3) and gamma
  TBuf<QuePosition::VECCALC> residentBuf_;
  TBuf<QuePosition::VECCALC> bcastBuf_;  // modes 0-1, short rows: the rows' broadcast blocks (BroadcastRows)
  TBuf<QuePosition::VECCALC> heldBuf_;  // dy, x of the held items as loaded (see TakeItem)
  TBuf<QuePosition::VECIN> gammaAllBuf_;  // mode 0 with groupRows: every channel's gamma (+ beta) (MTE2 -> S)
  int32_t gammaAllEvent_ = 0;
  float acrossDb_[MAX_GROUP_ROW_CHANNELS] = {};  // groupRows with groupAcrossN: the group's sums over n so far
  float acrossDg_[MAX_GROUP_ROW_CHANNELS] = {};
  bool gammaAllPending_ = false;  // its load is issued and not waited for yet
  TQue<QuePosition::VECOUT, 1> outQue_;  // groupAcrossN, ownStats: dgamma/dbeta stores
  TQue<QuePosition::VECOUT, 1> sumsQue_;  // db, dg of a task to the workspace (depth 1, 2-3 buffers)
  TQue<QuePosition::VECIN, 1> partialQue_;  // HxW split: a group's per-slice db and dg rows
  TQue<QuePosition::VECIN, 1> ownerQue_;    // HxW split: the same for every sample (dgamma/dbeta)
  GroupNormGradMsStage2<U> stage2_;
  TBuf<QuePosition::VECIN> statWindow_;  // mean/rstd of statWindowElems consecutive groups (MTE2 -> S)
  int64_t statFirst_ = 0;
  int64_t statCount_ = 0;
  bool statPending_ = false;  // the window's loads are issued and not waited for yet (statEvent_)
  int32_t statEvent_ = 0;

  GlobalTensor<T> dyGm_;
  GlobalTensor<T> xGm_;
  GlobalTensor<T> dxGm_;
  GlobalTensor<U> meanGm_;
  GlobalTensor<U> rstdGm_;
  GlobalTensor<U> gammaGm_;
  GlobalTensor<U> betaGm_;
  GlobalTensor<U> dgammaGm_;
  GlobalTensor<U> dbetaGm_;
  GlobalTensor<float> wsDbGm_;
  GlobalTensor<float> wsDgGm_;
};

}  // namespace GroupNormGradMsKernel

// the member definitions of the load stream, modes 0-2's per-channel work, the channel split and mode 3
#include "group_norm_grad_ms_stream.h"
#include "group_norm_grad_ms_channels.h"
#include "group_norm_grad_ms_split.h"
#include "group_norm_grad_ms_group_rows.h"
#include "group_norm_grad_ms_hw_one.h"
#include "group_norm_grad_ms_hw_columns.h"

#endif  // GROUP_NORM_GRAD_MS_H
