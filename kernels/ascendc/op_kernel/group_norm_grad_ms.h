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
 */
#ifndef GROUP_NORM_GRAD_MS_H
#define GROUP_NORM_GRAD_MS_H

#include "kernel_operator.h"
#include "group_norm_grad_ms_tiling_data.h"

namespace GroupNormGradMsKernel {
using namespace AscendC;

constexpr int32_t BUFFER_NUM = 2;  // double buffering of every GM <-> UB queue
constexpr int64_t FLOATS_PER_BLOCK = 8;

__aicore__ inline int64_t AlignUp(int64_t a, int64_t b) { return (a + b - 1) / b * b; }

template <typename V>
__aicore__ inline float ToF32(V v) {
  if constexpr (IsSameType<V, bfloat16_t>::value) {
    return ToFloat(v);
  } else {
    return static_cast<float>(v);
  }
}

// Sum of a stream of chunk sums, added as a binary counter: level i holds the sum of
// 2^i consecutive chunks. This is pairwise summation (error O(log chunks)) in a fixed
// order, without storing the chunks.
struct CascadeSum {
  float level[40];
  uint32_t count;
  __aicore__ inline void Reset() { count = 0; }
  __aicore__ inline void Add(float v) {
    uint32_t i = 0;
    for (uint32_t c = count; (c & 1U) != 0; c >>= 1) {
      v = level[i] + v;
      ++i;
    }
    level[i] = v;
    ++count;
  }
  __aicore__ inline float Total() const {
    float total = 0.0f;
    bool first = true;
    uint32_t i = 0;
    for (uint32_t c = count; c != 0; c >>= 1, ++i) {
      if ((c & 1U) != 0) {
        total = first ? level[i] : total + level[i];
        first = false;
      }
    }
    return total;
  }
};

template <typename T, typename U>
class KernelGroupNormGradMs {
 public:
  __aicore__ inline KernelGroupNormGradMs() {}

  __aicore__ inline void Init(GM_ADDR dy, GM_ADDR mean, GM_ADDR rstd, GM_ADDR x, GM_ADDR gamma, GM_ADDR dx,
                              GM_ADDR dgamma, GM_ADDR dbeta, GM_ADDR workspace,
                              const GroupNormGradMsTilingData *tiling) {
    t_ = tiling;
    const uint64_t numel = static_cast<uint64_t>(t_->N * t_->C * t_->HxW);
    dyGm_.SetGlobalBuffer((__gm__ T *)dy, numel);
    xGm_.SetGlobalBuffer((__gm__ T *)x, numel);
    dxGm_.SetGlobalBuffer((__gm__ T *)dx, numel);
    meanGm_.SetGlobalBuffer((__gm__ U *)mean, t_->N * t_->G);
    rstdGm_.SetGlobalBuffer((__gm__ U *)rstd, t_->N * t_->G);
    gammaGm_.SetGlobalBuffer((__gm__ U *)gamma, t_->C);
    dgammaGm_.SetGlobalBuffer((__gm__ U *)dgamma, t_->C);
    dbetaGm_.SetGlobalBuffer((__gm__ U *)dbeta, t_->C);
    wsDbGm_.SetGlobalBuffer((__gm__ float *)workspace, t_->N * t_->C);
    wsDgGm_.SetGlobalBuffer((__gm__ float *)workspace + t_->N * t_->C, t_->N * t_->C);
    invM_ = 1.0f / static_cast<float>(t_->D * t_->HxW);
  }

  __aicore__ inline void Process() {
    const int64_t block = GetBlockIdx();
    if (block < t_->phase1Cores) {
      InitPhase1Buffers();
      int64_t first = block * t_->tasksPerCore + (block < t_->tailCores ? block : t_->tailCores);
      int64_t count = t_->tasksPerCore + (block < t_->tailCores ? 1 : 0);
      if (t_->mode == GNG_MODE_HW_ONE) {
        for (int64_t task = first; task < first + count; ++task) HwOneTask(task);
      } else if (t_->splitByChannel != 0) {
        for (int64_t task = first; task < first + count; ++task) ChannelSumsTask(task);
      } else {
        for (int64_t task = first; task < first + count; ++task) GroupTask(task);
      }
    }
    if (t_->numTasks > 0 && t_->needWorkspace != 0) {
      SyncAll();  // the workspace is complete only when every block has finished phase 1
    }
    if (t_->splitByChannel != 0 && t_->dxRequired != 0 && block < t_->phase1Cores) {
      int64_t first = block * t_->tasksPerCore + (block < t_->tailCores ? block : t_->tailCores);
      int64_t count = t_->tasksPerCore + (block < t_->tailCores ? 1 : 0);
      cachedGroup_ = -1;
      for (int64_t task = first; task < first + count; ++task) ChannelDxTask(task);
    }
    if (t_->stage2Cores > 0 && block < t_->stage2Cores) {
      pipe_.Reset();
      Stage2(block);
    }
  }

 private:
  // ------------------------------------------------------------------ buffers
  __aicore__ inline void InitPhase1Buffers() {
    const int64_t K = t_->chunkElems;
    pipe_.InitBuffer(dyQue_, BUFFER_NUM, K * sizeof(T));
    pipe_.InitBuffer(xQue_, BUFFER_NUM, K * sizeof(T));
    pipe_.InitBuffer(dxQue_, BUFFER_NUM, K * sizeof(T));
    pipe_.InitBuffer(floatBuf_, t_->numFloatBufs * K * sizeof(float));
    pipe_.InitBuffer(reduceBuf_, (FLOATS_PER_BLOCK + t_->reduceWorkElems) * sizeof(float));
    if (t_->statElems > 0) {
      pipe_.InitBuffer(statBuf_, 3 * t_->statElems * sizeof(float));
      pipe_.InitBuffer(statQue_, 1, t_->statElems * sizeof(float));
    }
    if (t_->mode == GNG_MODE_GROUP_RESIDENT) {
      pipe_.InitBuffer(residentBuf_, 2 * t_->D * t_->residentStride * sizeof(float));
    }
    if (t_->mode == GNG_MODE_HW_ONE) {
      pipe_.InitBuffer(gammaQue_, 1, K * sizeof(U));
    }
  }

  __aicore__ inline LocalTensor<float> FloatBuf(int64_t i) { return floatBuf_.Get<float>()[i * t_->chunkElems]; }
  __aicore__ inline LocalTensor<float> StatArray(int64_t i) { return statBuf_.Get<float>()[i * t_->statElems]; }

  // ------------------------------------------------------------------ GM <-> UB
  // Loads `len` elements of `src` at `offset` into the fp32 buffer `dst` through `que`.
  template <typename V, typename Que>
  __aicore__ inline void LoadAsFloat(Que &que, const GlobalTensor<V> &src, int64_t offset, int64_t len,
                                     const LocalTensor<float> &dst, bool aligned) {
    LocalTensor<V> staging = que.template AllocTensor<V>();
    if (aligned) {
      DataCopy(staging, src[offset], static_cast<uint32_t>(len));
    } else {
      DataCopyExtParams copy{1, static_cast<uint32_t>(len * sizeof(V)), 0, 0, 0};
      DataCopyPadExtParams<V> pad{false, 0, 0, V{}};
      DataCopyPad(staging, src[offset], copy, pad);
    }
    que.EnQue(staging);
    staging = que.template DeQue<V>();
    if constexpr (IsSameType<V, float>::value) {
      DataCopy(dst, staging, static_cast<uint32_t>(AlignUp(len, FLOATS_PER_BLOCK)));
    } else {
      Cast(dst, staging, RoundMode::CAST_NONE, static_cast<uint32_t>(len));
    }
    que.FreeTensor(staging);
  }

  // Rounds `len` fp32 values of `src` to V and stores them at `offset` of `dst`.
  template <typename V, typename Que>
  __aicore__ inline void StoreFromFloat(Que &que, const GlobalTensor<V> &dst, int64_t offset, int64_t len,
                                        const LocalTensor<float> &src, bool aligned) {
    LocalTensor<V> staging = que.template AllocTensor<V>();
    if constexpr (IsSameType<V, float>::value) {
      DataCopy(staging, src, static_cast<uint32_t>(AlignUp(len, FLOATS_PER_BLOCK)));
    } else {
      Cast(staging, src, RoundMode::CAST_RINT, static_cast<uint32_t>(len));
    }
    que.EnQue(staging);
    staging = que.template DeQue<V>();
    if (aligned) {
      DataCopy(dst[offset], staging, static_cast<uint32_t>(len));
    } else {
      DataCopyExtParams copy{1, static_cast<uint32_t>(len * sizeof(V)), 0, 0, 0};
      DataCopyPad(dst[offset], staging, copy);
    }
    que.FreeTensor(staging);
  }

  // Writes `len` fp32 values that the scalar unit put into `src` to the workspace.
  __aicore__ inline void StoreScalarsToGm(const GlobalTensor<float> &dst, int64_t offset, int64_t len,
                                          const LocalTensor<float> &src) {
    PipeBarrier<PIPE_ALL>();  // scalar writes (SetValue) must land before MTE3 reads UB
    DataCopyExtParams copy{1, static_cast<uint32_t>(len * sizeof(float)), 0, 0, 0};
    DataCopyPad(dst[offset], src, copy);
    PipeBarrier<PIPE_ALL>();  // and MTE3 must be done before the scalar unit rewrites them
  }

  // Loads `len` values of `src` into the fp32 array `dst` for scalar reads (GetValue).
  template <typename V>
  __aicore__ inline void LoadForScalars(const GlobalTensor<V> &src, int64_t offset, int64_t len,
                                        const LocalTensor<float> &dst) {
    LoadAsFloat(statQue_, src, offset, len, dst, false);
    PipeBarrier<PIPE_ALL>();  // the vector cast must finish before scalar reads
  }

  __aicore__ inline float Sum(const LocalTensor<float> &src, int64_t len) {
    LocalTensor<float> all = reduceBuf_.Get<float>();
    ReduceSum(all, src, all[FLOATS_PER_BLOCK], static_cast<int32_t>(len));
    PipeBarrier<PIPE_ALL>();  // V -> S: the scalar read waits for the reduction
    return all.GetValue(0);
  }

  __aicore__ inline float Stat(const GlobalTensor<U> &gm, int64_t i) { return ToF32(gm.GetValue(i)); }

  // ------------------------------------------------------------------ per-channel building blocks
  // db and dg of channel c of sample n. Mode 0 keeps dy and xhat of channel `local` in UB.
  __aicore__ inline void ChannelSums(int64_t n, int64_t c, int64_t local, float mean, float rstd, float *db,
                                     float *dg) {
    const int64_t L = t_->HxW;
    const int64_t base = (n * t_->C + c) * L;
    const bool aligned = t_->copyAligned != 0;
    if (t_->mode == GNG_MODE_GROUP_RESIDENT) {
      LocalTensor<float> dyRes = ResidentDy(local);
      LocalTensor<float> xRes = ResidentX(local);
      LocalTensor<float> tmp = FloatBuf(0);
      LoadAsFloat(dyQue_, dyGm_, base, L, dyRes, aligned);
      LoadAsFloat(xQue_, xGm_, base, L, xRes, aligned);
      Adds(xRes, xRes, -mean, static_cast<int32_t>(L));
      Muls(xRes, xRes, rstd, static_cast<int32_t>(L));  // xRes now holds xhat
      Mul(tmp, dyRes, xRes, static_cast<int32_t>(L));
      *db = Sum(dyRes, L);
      *dg = Sum(tmp, L);
      return;
    }
    LocalTensor<float> dyF = FloatBuf(0);
    LocalTensor<float> xF = FloatBuf(1);
    LocalTensor<float> tmp = FloatBuf(2);
    CascadeSum dbSum;
    CascadeSum dgSum;
    dbSum.Reset();
    dgSum.Reset();
    for (int64_t chunk = 0; chunk < t_->chunksPerChannel; ++chunk) {
      const int64_t start = chunk * t_->chunkElems;
      const int64_t len = (L - start < t_->chunkElems) ? L - start : t_->chunkElems;
      LoadAsFloat(dyQue_, dyGm_, base + start, len, dyF, aligned);
      LoadAsFloat(xQue_, xGm_, base + start, len, xF, aligned);
      Adds(xF, xF, -mean, static_cast<int32_t>(len));
      Muls(xF, xF, rstd, static_cast<int32_t>(len));
      Mul(tmp, dyF, xF, static_cast<int32_t>(len));
      dbSum.Add(Sum(dyF, len));
      dgSum.Add(Sum(tmp, len));
    }
    *db = dbSum.Total();
    *dg = dgSum.Total();
  }

  // dx = a * dy - b * xhat - e with a = rstd*gamma_c, b = rstd*c2, e = rstd*c1.
  __aicore__ inline void ChannelDx(int64_t n, int64_t c, int64_t local, float mean, float rstd, float a, float b,
                                   float e) {
    const int64_t L = t_->HxW;
    const int64_t base = (n * t_->C + c) * L;
    const bool aligned = t_->copyAligned != 0;
    if (t_->mode == GNG_MODE_GROUP_RESIDENT) {
      LocalTensor<float> dyRes = ResidentDy(local);
      LocalTensor<float> tmp = FloatBuf(0);
      Muls(dyRes, dyRes, a, static_cast<int32_t>(L));
      Muls(tmp, ResidentX(local), b, static_cast<int32_t>(L));
      Sub(dyRes, dyRes, tmp, static_cast<int32_t>(L));
      Adds(dyRes, dyRes, -e, static_cast<int32_t>(L));
      StoreFromFloat(dxQue_, dxGm_, base, L, dyRes, aligned);
      return;
    }
    LocalTensor<float> dyF = FloatBuf(0);
    LocalTensor<float> xF = FloatBuf(1);
    for (int64_t chunk = 0; chunk < t_->chunksPerChannel; ++chunk) {
      const int64_t start = chunk * t_->chunkElems;
      const int64_t len = (L - start < t_->chunkElems) ? L - start : t_->chunkElems;
      LoadAsFloat(dyQue_, dyGm_, base + start, len, dyF, aligned);
      LoadAsFloat(xQue_, xGm_, base + start, len, xF, aligned);
      Adds(xF, xF, -mean, static_cast<int32_t>(len));
      Muls(xF, xF, rstd * b, static_cast<int32_t>(len));  // rstd * (x - mean) * b = xhat * b
      Muls(dyF, dyF, a, static_cast<int32_t>(len));
      Sub(dyF, dyF, xF, static_cast<int32_t>(len));
      Adds(dyF, dyF, -e, static_cast<int32_t>(len));
      StoreFromFloat(dxQue_, dxGm_, base + start, len, dyF, aligned);
    }
  }

  __aicore__ inline LocalTensor<float> ResidentDy(int64_t local) {
    return residentBuf_.Get<float>()[local * t_->residentStride];
  }
  __aicore__ inline LocalTensor<float> ResidentX(int64_t local) {
    return residentBuf_.Get<float>()[(t_->D + local) * t_->residentStride];
  }

  // c1 and c2 of a group from its per-channel arrays (fixed order: every task that needs
  // them computes bit-identical values).
  __aicore__ inline void GroupCoefficients(const LocalTensor<float> &db, const LocalTensor<float> &dg,
                                           const LocalTensor<float> &gamma, float *c1, float *c2) {
    float sumDb = 0.0f;
    float sumDg = 0.0f;
    for (int64_t c = 0; c < t_->D; ++c) {
      const float g = gamma.GetValue(c);
      sumDb += g * db.GetValue(c);
      sumDg += g * dg.GetValue(c);
    }
    *c1 = sumDb * invM_;
    *c2 = sumDg * invM_;
  }

  // ------------------------------------------------------------------ phase-1 tasks
  // Modes 0-2, one (n, g) group.
  __aicore__ inline void GroupTask(int64_t task) {
    const int64_t n = task / t_->G;
    const int64_t g = task % t_->G;
    const int64_t D = t_->D;
    const float mean = Stat(meanGm_, task);
    const float rstd = Stat(rstdGm_, task);
    LocalTensor<float> db = StatArray(0);
    LocalTensor<float> dg = StatArray(1);
    LocalTensor<float> gamma = StatArray(2);
    for (int64_t local = 0; local < D; ++local) {
      float sumDb;
      float sumDg;
      ChannelSums(n, g * D + local, local, mean, rstd, &sumDb, &sumDg);
      db.SetValue(local, sumDb);
      dg.SetValue(local, sumDg);
    }
    if (t_->needWorkspace != 0) {
      StoreScalarsToGm(wsDbGm_, n * t_->C + g * D, D, db);
      StoreScalarsToGm(wsDgGm_, n * t_->C + g * D, D, dg);
    }
    if (t_->dxRequired == 0) return;
    LoadForScalars(gammaGm_, g * D, D, gamma);
    float c1;
    float c2;
    GroupCoefficients(db, dg, gamma, &c1, &c2);
    for (int64_t local = 0; local < D; ++local) {
      const float gc = gamma.GetValue(local);
      ChannelDx(n, g * D + local, local, mean, rstd, rstd * gc, rstd * c2, rstd * c1);
    }
  }

  // Channel split, before SyncAll: the sums of one (n, c) channel into the workspace.
  __aicore__ inline void ChannelSumsTask(int64_t task) {
    const int64_t n = task / t_->C;
    const int64_t c = task % t_->C;
    const int64_t group = n * t_->G + c / t_->D;
    float sumDb;
    float sumDg;
    ChannelSums(n, c, 0, Stat(meanGm_, group), Stat(rstdGm_, group), &sumDb, &sumDg);
    LocalTensor<float> db = StatArray(0);
    LocalTensor<float> dg = StatArray(1);  // separate arrays: UB sources of a copy must be 32-byte aligned
    db.SetValue(0, sumDb);
    dg.SetValue(0, sumDg);
    StoreScalarsToGm(wsDbGm_, task, 1, db);
    StoreScalarsToGm(wsDgGm_, task, 1, dg);
  }

  // Channel split, after SyncAll: dx of one (n, c) channel from its group's workspace sums.
  __aicore__ inline void ChannelDxTask(int64_t task) {
    const int64_t n = task / t_->C;
    const int64_t c = task % t_->C;
    const int64_t g = c / t_->D;
    const int64_t group = n * t_->G + g;
    LocalTensor<float> db = StatArray(0);
    LocalTensor<float> dg = StatArray(1);
    LocalTensor<float> gamma = StatArray(2);
    if (group != cachedGroup_) {  // consecutive tasks mostly share a group
      LoadForScalars(wsDbGm_, n * t_->C + g * t_->D, t_->D, db);
      LoadForScalars(wsDgGm_, n * t_->C + g * t_->D, t_->D, dg);
      LoadForScalars(gammaGm_, g * t_->D, t_->D, gamma);
      GroupCoefficients(db, dg, gamma, &cachedC1_, &cachedC2_);
      cachedGroup_ = group;
    }
    const float rstd = Stat(rstdGm_, group);
    const float gc = gamma.GetValue(c - g * t_->D);
    ChannelDx(n, c, 0, Stat(meanGm_, group), rstd, rstd * gc, rstd * cachedC2_, rstd * cachedC1_);
  }

  // Mode 3 (HxW == 1): a run of whole groups of sample n as flat vectors of E channels.
  __aicore__ inline void HwOneTask(int64_t task) {
    const int64_t runsPerSample = (t_->G + t_->groupsPerTask - 1) / t_->groupsPerTask;
    const int64_t n = task / runsPerSample;
    const int64_t g0 = (task % runsPerSample) * t_->groupsPerTask;
    const int64_t groups = (t_->G - g0 < t_->groupsPerTask) ? t_->G - g0 : t_->groupsPerTask;
    const int64_t D = t_->D;
    const int64_t E = groups * D;
    const int64_t c0 = g0 * D;
    const int64_t base = n * t_->C + c0;  // HxW == 1: element offset == channel offset
    LocalTensor<float> dyF = FloatBuf(0);
    LocalTensor<float> xF = FloatBuf(1);
    LocalTensor<float> dgF = FloatBuf(2);
    LocalTensor<float> gF = FloatBuf(3);
    LocalTensor<float> meanC = FloatBuf(4);
    LocalTensor<float> rstdC = FloatBuf(5);
    LoadAsFloat(dyQue_, dyGm_, base, E, dyF, false);
    LoadAsFloat(xQue_, xGm_, base, E, xF, false);
    LoadAsFloat(gammaQue_, gammaGm_, c0, E, gF, false);
    PipeBarrier<PIPE_ALL>();  // scalar writes below follow vector work on the same buffers
    for (int64_t j = 0; j < groups; ++j) {  // broadcast each group's mean/rstd over its D channels
      const float mean = Stat(meanGm_, n * t_->G + g0 + j);
      const float rstd = Stat(rstdGm_, n * t_->G + g0 + j);
      for (int64_t i = 0; i < D; ++i) {
        meanC.SetValue(j * D + i, mean);
        rstdC.SetValue(j * D + i, rstd);
      }
    }
    PipeBarrier<PIPE_ALL>();
    Sub(xF, xF, meanC, static_cast<int32_t>(E));
    Mul(xF, xF, rstdC, static_cast<int32_t>(E));  // xhat
    Mul(dgF, dyF, xF, static_cast<int32_t>(E));   // per-channel dg (db is dy itself)
    if (t_->needWorkspace != 0) {
      StoreScalarsToGm(wsDbGm_, base, E, dyF);
      StoreScalarsToGm(wsDgGm_, base, E, dgF);
    }
    if (t_->dxRequired == 0) return;
    Mul(meanC, gF, dyF, static_cast<int32_t>(E));  // gamma * dy
    Mul(dgF, gF, dgF, static_cast<int32_t>(E));    // gamma * dy * xhat
    PipeBarrier<PIPE_ALL>();
    for (int64_t j = 0; j < groups; ++j) {  // c1, c2 per group, broadcast over its channels
      float sumDb = 0.0f;
      float sumDg = 0.0f;
      for (int64_t i = 0; i < D; ++i) {
        sumDb += meanC.GetValue(j * D + i);
        sumDg += dgF.GetValue(j * D + i);
      }
      const float c1 = sumDb * invM_;
      const float c2 = sumDg * invM_;
      for (int64_t i = 0; i < D; ++i) {
        gF.SetValue(j * D + i, c1);
        dyF.SetValue(j * D + i, c2);
      }
    }
    PipeBarrier<PIPE_ALL>();
    Mul(xF, xF, dyF, static_cast<int32_t>(E));       // xhat * c2
    Sub(meanC, meanC, xF, static_cast<int32_t>(E));  // gamma*dy - xhat*c2
    Sub(meanC, meanC, gF, static_cast<int32_t>(E));  // ... - c1
    Mul(meanC, meanC, rstdC, static_cast<int32_t>(E));
    StoreFromFloat(dxQue_, dxGm_, base, E, meanC, false);
  }

  // ------------------------------------------------------------------ stage 2
  // dgamma/dbeta of this block's channel slice: the workspace summed over n in order.
  __aicore__ inline void Stage2(int64_t block) {
    const int64_t P = t_->stage2PieceElems;
    pipe_.InitBuffer(wsQue_, BUFFER_NUM, P * sizeof(float));
    pipe_.InitBuffer(accBuf_, 2 * P * sizeof(float));
    pipe_.InitBuffer(outQue_, BUFFER_NUM, P * sizeof(U));
    LocalTensor<float> accDb = accBuf_.Get<float>();
    LocalTensor<float> accDg = accBuf_.Get<float>()[P];
    const int64_t sliceStart = block * t_->stage2SliceElems;
    const int64_t sliceEnd =
        (sliceStart + t_->stage2SliceElems < t_->C) ? sliceStart + t_->stage2SliceElems : t_->C;
    for (int64_t c0 = sliceStart; c0 < sliceEnd; c0 += P) {
      const int64_t len = (sliceEnd - c0 < P) ? sliceEnd - c0 : P;
      Duplicate(accDb, 0.0f, static_cast<int32_t>(len));
      Duplicate(accDg, 0.0f, static_cast<int32_t>(len));
      for (int64_t n = 0; n < t_->reduceRows; ++n) {
        if (t_->dbetaRequired != 0) AccumulateRow(wsDbGm_, n * t_->C + c0, len, accDb);
        if (t_->dgammaRequired != 0) AccumulateRow(wsDgGm_, n * t_->C + c0, len, accDg);
      }
      if (t_->dbetaRequired != 0) StoreFromFloat(outQue_, dbetaGm_, c0, len, accDb, false);
      if (t_->dgammaRequired != 0) StoreFromFloat(outQue_, dgammaGm_, c0, len, accDg, false);
    }
  }

  __aicore__ inline void AccumulateRow(const GlobalTensor<float> &src, int64_t offset, int64_t len,
                                       const LocalTensor<float> &acc) {
    LocalTensor<float> row = wsQue_.AllocTensor<float>();
    DataCopyExtParams copy{1, static_cast<uint32_t>(len * sizeof(float)), 0, 0, 0};
    DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};
    DataCopyPad(row, src[offset], copy, pad);
    wsQue_.EnQue(row);
    row = wsQue_.DeQue<float>();
    Add(acc, acc, row, static_cast<int32_t>(len));
    wsQue_.FreeTensor(row);
  }

  const GroupNormGradMsTilingData *t_ = nullptr;
  float invM_ = 0.0f;
  int64_t cachedGroup_ = -1;
  float cachedC1_ = 0.0f;
  float cachedC2_ = 0.0f;

  TPipe pipe_;
  TQue<QuePosition::VECIN, BUFFER_NUM> dyQue_;
  TQue<QuePosition::VECIN, BUFFER_NUM> xQue_;
  TQue<QuePosition::VECOUT, BUFFER_NUM> dxQue_;
  TQue<QuePosition::VECIN, 1> statQue_;
  TQue<QuePosition::VECIN, 1> gammaQue_;
  TBuf<QuePosition::VECCALC> floatBuf_;
  TBuf<QuePosition::VECCALC> reduceBuf_;
  TBuf<QuePosition::VECCALC> statBuf_;
  TBuf<QuePosition::VECCALC> residentBuf_;
  TQue<QuePosition::VECIN, BUFFER_NUM> wsQue_;
  TQue<QuePosition::VECOUT, BUFFER_NUM> outQue_;
  TBuf<QuePosition::VECCALC> accBuf_;

  GlobalTensor<T> dyGm_;
  GlobalTensor<T> xGm_;
  GlobalTensor<T> dxGm_;
  GlobalTensor<U> meanGm_;
  GlobalTensor<U> rstdGm_;
  GlobalTensor<U> gammaGm_;
  GlobalTensor<U> dgammaGm_;
  GlobalTensor<U> dbetaGm_;
  GlobalTensor<float> wsDbGm_;
  GlobalTensor<float> wsDgGm_;
};

}  // namespace GroupNormGradMsKernel

#endif  // GROUP_NORM_GRAD_MS_H
