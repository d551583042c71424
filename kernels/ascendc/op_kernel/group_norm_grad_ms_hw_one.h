// Member definitions of KernelGroupNormGradMs (group_norm_grad_ms.h) for mode 3 (HxW == 1):
// runs of whole groups as flat vectors, gamma (and with SILU beta) loaded as rows like the data
// (one sample's rows a batch of whole samples, copied in UB: HwOneTakeAffine).
// Included by group_norm_grad_ms.h after the class; not a header of its own.
#ifndef GROUP_NORM_GRAD_MS_HW_ONE_H
#define GROUP_NORM_GRAD_MS_HW_ONE_H

namespace GroupNormGradMsKernel {

// Mode 3 (HxW == 1): a task is a run of whole groups of sample n, or (hwOneSamples) of that many
// whole samples, in batches of whole samples. Each group's D channels sit in UB at a stride of
// P = D rounded up to 16 elements (DataCopyPad rows), so every per-group vector operand starts
// 32-byte aligned; the groups go through UB in batches (HwOneBatchRows).
// The groups of a mode-3 task: [*q0, *q0 + *groups).
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::HwOneTaskGroups(int64_t task, int64_t *q0,
                                                                          int64_t *groups) const {
  if (t_->hwOneSamples > 0) {
    const int64_t taskRows = t_->hwOneSamples * t_->G;
    *q0 = task * taskRows;
    *groups = (t_->N * t_->G - *q0 < taskRows) ? t_->N * t_->G - *q0 : taskRows;
    return;
  }
  const int64_t runsPerSample = (t_->G + t_->groupsPerTask - 1) / t_->groupsPerTask;
  const int64_t g0 = (task % runsPerSample) * t_->groupsPerTask;
  *q0 = (task / runsPerSample) * t_->G + g0;
  *groups = (t_->G - g0 < t_->groupsPerTask) ? t_->G - g0 : t_->groupsPerTask;
}

// Mode 3, a core's tasks [first, first + count) as one stream of batches: the dy and x loads of
// the next batch (of this task or the next one) are issued before a batch is computed, so their
// DMA latency overlaps its vector work (the queues hold two batches: InitPhase1Buffers). With
// hwOneSamples, each task's per-channel sums start at 0 and are stored as workspace row `task`
// at its end; stage 2 adds the rows of the tasks.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::HwOneRun(int64_t first, int64_t count) {
  const int64_t perBatch = HwOneBatchRows();
  int64_t q0 = 0;
  int64_t groups = 0;
  if (count > 0 && HwOneColumns()) {
    if (t_->D > 1) HwColumnsBuildTables();
  } else if (count > 0 && t_->hwOneGather != 0) {
    HwOneBuildGatherTables();
  }
  if (count > 0) {
    HwOneTaskGroups(first, &q0, &groups);
    HwOneIssueRows(q0, groups < perBatch ? groups : perBatch);
  }
  for (int64_t task = first; task < first + count; ++task) {
    HwOneTaskGroups(task, &q0, &groups);
    const int64_t width = HwOneAccWidth();  // a sample's rows (hwOneSamples)
    if (t_->hwOneSamples > 0) Duplicate(hwAccBuf_.Get<float>(), 0.0f, static_cast<int32_t>(2 * width));
    for (int64_t j0 = 0; j0 < groups; j0 += perBatch) {
      const int64_t rows = (groups - j0 < perBatch) ? groups - j0 : perBatch;
      if (j0 + perBatch < groups) {  // the next batch of this task
        const int64_t left = groups - j0 - perBatch;
        HwOneIssueRows(q0 + j0 + perBatch, left < perBatch ? left : perBatch);
      } else if (task + 1 < first + count) {  // the first batch of the next task
        int64_t nq0 = 0;
        int64_t ngroups = 0;
        HwOneTaskGroups(task + 1, &nq0, &ngroups);
        HwOneIssueRows(nq0, ngroups < perBatch ? ngroups : perBatch);
      }
      HwOneBatch(q0 + j0, rows);
    }
    if (t_->hwOneSamples > 0 && t_->needWorkspace == 0) {
      HwOneStoreParamGrads(width);  // the one task: its sums are dgamma/dbeta
    } else if (t_->hwOneSamples > 0) {
      LocalTensor<float> acc = hwAccBuf_.Get<float>();
      if (HwOneColumns()) {  // as channel rows into dy's workspace rows (free between batches)
        LocalTensor<float> rowsOut = floatOutBuf_.Get<float>();
        HwColumnsPackSums(rowsOut);
        Sync<HardEvent::V_MTE3>();
        StoreRun(wsDbGm_, task * t_->C, t_->C, rowsOut);
        StoreRun(wsDgGm_, task * t_->C, t_->C, rowsOut[t_->C]);
        Sync<HardEvent::MTE3_V>();  // the next batch rewrites those rows
        continue;
      }
      Sync<HardEvent::V_MTE3>();
      StorePaddedRows(wsDbGm_, task * t_->C, t_->G, acc, t_->D);
      StorePaddedRows(wsDgGm_, task * t_->C, t_->G, acc[width], t_->D);
      Sync<HardEvent::MTE3_V>();  // the next task's Duplicate rewrites the sums
    }
  }
}

// A launch of one task (every sample, no workspace): the task's per-channel sums, added in sample
// order from 0 as stage 2 adds workspace rows, are dgamma/dbeta. Stored as stage 2 stores them
// (StoreStridedFromFloat: + 0.0f, then 16-bit by CAST_RINT), a row of D a group; 16-bit through
// floatOutBuf_, whose batch rows the vector unit has finished with (nothing else reads it: no
// workspace stores).
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::HwOneStoreParamGrads(int64_t width) {
  LocalTensor<float> acc = hwAccBuf_.Get<float>();
  Adds(acc, acc, 0.0f, static_cast<int32_t>(2 * width));
  if (HwOneColumns()) {  // as channel rows (floatOutBuf_'s first 2 C floats), 16-bit after them
    LocalTensor<float> rowsOut = floatOutBuf_.Get<float>();
    HwColumnsPackSums(rowsOut);
    if constexpr (IsSameType<U, float>::value) {
      Sync<HardEvent::V_MTE3>();
      if (t_->dbetaRequired != 0) StoreRun(dbetaGm_, 0, t_->C, rowsOut);
      if (t_->dgammaRequired != 0) StoreRun(dgammaGm_, 0, t_->C, rowsOut[t_->C]);
    } else {
      LocalTensor<U> out = floatOutBuf_.Get<U>()[4 * t_->C];  // after the 2 C floats
      const int64_t dgAt = AlignUp(t_->C, 16);                 // a 32-byte aligned UB start
      Cast(out, rowsOut, RoundMode::CAST_RINT, static_cast<uint32_t>(t_->C));
      Cast(out[dgAt], rowsOut[t_->C], RoundMode::CAST_RINT, static_cast<uint32_t>(t_->C));
      Sync<HardEvent::V_MTE3>();
      if (t_->dbetaRequired != 0) StoreRun(dbetaGm_, 0, t_->C, out);
      if (t_->dgammaRequired != 0) StoreRun(dgammaGm_, 0, t_->C, out[dgAt]);
    }
    return;
  }
  if constexpr (IsSameType<U, float>::value) {
    Sync<HardEvent::V_MTE3>();
    if (t_->dbetaRequired != 0) StorePaddedRows(dbetaGm_, 0, t_->G, acc, t_->D);
    if (t_->dgammaRequired != 0) StorePaddedRows(dgammaGm_, 0, t_->G, acc[width], t_->D);
  } else {
    LocalTensor<U> out = floatOutBuf_.Get<U>();
    Cast(out, acc, RoundMode::CAST_RINT, static_cast<uint32_t>(2 * width));
    Sync<HardEvent::V_MTE3>();
    if (t_->dbetaRequired != 0) StorePaddedRows(dbetaGm_, 0, t_->G, out, t_->D);
    if (t_->dgammaRequired != 0) StorePaddedRows(dgammaGm_, 0, t_->G, out[width], t_->D);
  }
}

// The dy and x rows of groups q0 .. q0 + rows - 1 into their queues, their mean and rstd into a
// stat slot (HwOneBatch takes them).
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::HwOneIssueRows(int64_t q0, int64_t rows) {
  if (t_->hwOneGather != 0) {  // the groups' D-element rows are one contiguous run
    IssueRun(rowDyQue_, dyGm_, q0 * t_->D, rows * t_->D);
    IssueRun(rowXQue_, xGm_, q0 * t_->D, rows * t_->D);
  } else {
    IssuePaddedRows(rowDyQue_, dyGm_, q0 * t_->D, rows, t_->D);  // HxW == 1: group q starts at q * D
    IssuePaddedRows(rowXQue_, xGm_, q0 * t_->D, rows, t_->D);
  }
  HwOneIssueStats(q0, rows);
}

// hwOneGather's offset tables (group_norm_ms_gather.h), once a core: spread for K elements of rows P
// apart, pack for the runs of the K / P rows a batch holds at most.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::HwOneBuildGatherTables() {
  const int64_t D = t_->D;
  const int64_t P = AlignUp(D, 16);
  const int64_t K = t_->chunkElems;
  const int64_t packLen = K / P * D;
  LocalTensor<int32_t> spread = gatherBuf_.Get<int32_t>();
  LocalTensor<int32_t> pack = gatherBuf_.Get<int32_t>()[K];
  GroupNormMsGather::WriteTableHeads(spread, pack, packLen, D, P);
  Sync<HardEvent::S_V>();
  GroupNormMsGather::GrowTables(spread, K, pack, packLen, D, P);
}

// The oldest load of `que` as fp32 rows P apart in dst: with hwOneGather a run made fp32 first (in gdy's
// buffer, free until the batch forms gamma * dy) and spread by Gather, else padded rows as loaded. Either
// way the data's first vector operation is the same Muls by 1 or Cast, on the same values (the saturation
// mode turns a NaN into 0 there: a Gather first would carry it into an accumulating Add).
template <typename T, typename U, bool SILU>
template <typename Que>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::HwOneTakeRows(Que &que, int64_t rows,
                                                                        const LocalTensor<float> &dst) {
  const int64_t P = AlignUp(t_->D, 16);
  if (HwOneColumns()) {
    HwColumnsTakeRows(que, rows, dst);
    return;
  }
  if (t_->hwOneGather == 0) {
    TakeAsFloat<T>(que, rows * P, dst);
    return;
  }
  LocalTensor<T> staging = que.template DeQue<T>();
  LocalTensor<float> run = FloatBuf(2);
  RowAsFloat<T>(run, staging, rows * t_->D);
  que.FreeTensor(staging);
  Gather(dst, run, gatherBuf_.Get<uint32_t>(), 0, static_cast<uint32_t>(rows * P));
}

// dx of the batch's rows (fp32 in FloatBuf(2), P apart) to GM as T: with hwOneGather packed into a run by
// Gather (16-bit: into FloatBuf(0), x's buffer, done with, then cast) and stored as one burst.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::HwOneStoreDx(int64_t base, int64_t rows) {
  const int64_t D = t_->D;
  const int64_t P = AlignUp(D, 16);
  LocalTensor<float> dx = FloatBuf(2);
  LocalTensor<T> staging = dxQue_.template AllocTensor<T>();
  const bool run = t_->hwOneGather != 0;           // dx leaves as one contiguous run
  const bool gather = run && !(HwOneColumns() && D == 1);  // one column is that run already
  const int64_t len = run ? rows * D : rows * P;
  if constexpr (IsSameType<T, float>::value) {
    if (gather) {
      Gather(staging, dx, gatherBuf_.Get<uint32_t>()[t_->chunkElems], 0, static_cast<uint32_t>(len));
    } else {
      Muls(staging, dx, 1.0f, static_cast<int32_t>(len));
    }
  } else {
    if (gather) {
      Gather(FloatBuf(0), dx, gatherBuf_.Get<uint32_t>()[t_->chunkElems], 0, static_cast<uint32_t>(len));
      dx = FloatBuf(0);
    }
    Cast(staging, dx, RoundMode::CAST_RINT, static_cast<uint32_t>(len));
  }
  dxQue_.EnQue(staging);
  staging = dxQue_.template DeQue<T>();
  if (run) {
    StoreRun(dxGm_, base, len, staging);
  } else {
    StorePaddedRows(dxGm_, base, rows, staging, D);
  }
  dxQue_.FreeTensor(staging);
}

// gamma (or beta) rows of groups q0 .. q0 + rows - 1 (group q's row is g = q % G), P apart, into
// a buffer of `que`: one DMA a sample the rows touch (one for a run within a sample).
template <typename T, typename U, bool SILU>
template <typename Que>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::IssueAffineRows(Que &que, const GlobalTensor<U> &src,
                                                                          int64_t q0, int64_t rows) {
  if (HwOneColumns()) {
    HwColumnsIssueAffine(que, src, q0, rows);
    return;
  }
  const int64_t P = AlignUp(t_->D, 16);
  LocalTensor<U> staging = que.template AllocTensor<U>();
  for (int64_t j = 0; j < rows;) {
    const int64_t g = (q0 + j) % t_->G;
    const int64_t piece = (t_->G - g < rows - j) ? t_->G - g : rows - j;
    LoadPaddedRows(staging[j * P], src, g * t_->D, piece, t_->D);
    j += piece;
  }
  que.EnQue(staging);
}

// With hwOneSamples a batch is whole samples from a sample's first group and every sample's gamma
// (beta) rows are the same G rows: they are loaded once and copied sample to sample in UB, doubling
// the copied run each step (log2 of the batch's samples instructions). Muls by 1.0f is exact, so
// the values are those a per-sample load gives, bit for bit.
template <typename T, typename U, bool SILU>
template <typename Que>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::HwOneTakeAffine(Que &que, const LocalTensor<float> &dst,
                                                                          int64_t rows) {
  if (HwOneColumns()) {
    HwColumnsTakeAffine(que, dst, rows);
    return;
  }
  const int64_t P = AlignUp(t_->D, 16);
  const int64_t loaded = HwOneAffineRows(rows) * P;
  const int64_t span = rows * P;
  TakeAsFloat<U>(que, loaded, dst);
  for (int64_t have = loaded; have < span; have *= 2) {
    const int64_t n = (span - have < have) ? span - have : have;
    Muls(dst[have], dst, 1.0f, static_cast<int32_t>(n));
  }
}

// gamma's rows as fp32 in gF (FloatBuf(1), which nothing else writes in mode 3): with whole-sample
// batches every batch's are a prefix of the same rows, so they are formed once a core, for a full
// batch (8000x64 G32 loaded and copied them on each of its 24 batches a core). beta's (SILU) go the
// same way, into HwOneBetaRows (4096x512 G32 read a batch's worth of beta from GM every batch).
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::HwOneTakeGamma(const LocalTensor<float> &gF,
                                                                        int64_t rows) {
  HwOneTakeAffine(gammaQue_, gF, HwOneGammaRows(rows));
  gammaFormed_ = HwOneGammaOnce();
}

template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::HwOneBatch(int64_t q0, int64_t rows) {
  const int64_t D = t_->D;
  const int64_t P = AlignUp(D, 16);
  const int32_t span = static_cast<int32_t>(HwOneSpan(rows));
  const int32_t d = static_cast<int32_t>(D);
  const int64_t base = q0 * D;  // HxW == 1: group q's elements start at q * D
  LocalTensor<float> xF = FloatBuf(0);
  LocalTensor<float> gF = FloatBuf(1);
  LocalTensor<float> gdy = FloatBuf(2);
  LocalTensor<float> sums = FloatBuf(3);                               // per-group sums of gamma*dy, gamma*dg
  LocalTensor<float> dyF = floatOutBuf_.Get<float>();                  // db rows of the workspace
  LocalTensor<float> dgF = floatOutBuf_.Get<float>()[HwOneDgAt()];  // dg rows of the workspace
  // gamma (beta) rows: with whole samples a batch, one sample's G rows (G bursts a batch, not a
  // burst a group: 8000x64 G32 moved ~5,300 gamma bursts a core of its ~21,500), copied in UB;
  // gamma's then only once a core (HwOneGammaOnce)
  const bool loadGamma = (SILU || t_->dxRequired != 0) && !(HwOneGammaOnce() && gammaFormed_);
  if (loadGamma) IssueAffineRows(gammaQue_, gammaGm_, q0, HwOneAffineRows(HwOneGammaRows(rows)));
  const bool loadBeta = SILU && !(HwOneGammaOnce() && gammaFormed_);  // beta's rows: as gamma's
  if (loadBeta) IssueAffineRows(betaQue_, betaGm_, q0, HwOneAffineRows(HwOneGammaRows(rows)));
  HwOneTakeRows(rowDyQue_, rows, dyF);
  HwOneTakeRows(rowXQue_, rows, xF);
  const bool columns = HwOneColumns();
  const bool vectorCoefficients = columns || HwOneVectorCoefficients(rows);
  const int64_t r8 = HwOneRows8(rows);
  // The batch's mean and rstd as fp32 vectors (slots 3, 4 of FloatBuf(3)) from its stat slot, when
  // no group needs CentringScale's scaling.
  HwOneTakeStats();
  const bool vectorStats = vectorCoefficients && HwOneStatsAsVectors(rows);
  if (vectorCoefficients) {  // xhat of every group at once, from the same products and sums
    if (!vectorStats) {  // the scalar loop: -mean * scale and XhatFactor (with vectorStats, scale is 1)
      // (the vector unit's reads and writes of the scalar arrays are done: HwOneStatsAsVectors'
      // ReduceSum ends with a V -> S wait)
      bool scaled = false;
      for (int64_t j = 0; j < rows; ++j) {
        const float mean = HwStat(true, j);
        const float scale = CentringScale(mean);
        scaled = scaled || scale != 1.0f;
        sums.SetValue(2 * r8 + j, scale);
        sums.SetValue(3 * r8 + j, -mean * scale);
        sums.SetValue(4 * r8 + j, XhatFactor(mean, HwStat(false, j)));
      }
      Sync<HardEvent::S_V>();  // Brcb reads the scalars
      if (scaled) HwOneApply(xF, 0, rows, false);  // the rare path (x * 1 is x for the other groups)
    }
    HwOneApply(xF, 1, rows, true);
    HwOneApply(xF, 2, rows, false);
  } else {
    for (int64_t j = 0; j < rows; ++j) {  // xhat, one group at a time
      const float mean = HwStat(true, j);
      const float scale = CentringScale(mean);
      if (scale != 1.0f) Muls(xF[j * P], xF[j * P], scale, d);  // the rare path
      Adds(xF[j * P], xF[j * P], -mean * scale, d);
      Muls(xF[j * P], xF[j * P], XhatFactor(mean, HwStat(false, j)), d);
    }
  }
  if constexpr (SILU) {  // dz -> g with gamma and beta rows as vectors: -t = -k * (gamma * xhat + beta)
    if (loadGamma) HwOneTakeGamma(gF, rows);
    if (loadBeta) HwOneTakeAffine(betaQue_, HwOneBetaRows(), HwOneGammaRows(rows));
    Mul(gdy, gF, xF, span);
    Add(gdy, gdy, HwOneBetaRows(), span);
    Muls(gdy, gdy, -swishScale_, span);  // -t
    SwishGradFromNegT(dyF, gdy, sums, Ones(), span);
  }
  Mul(dgF, dyF, xF, span);  // per-channel dg (db is dy itself)
  if (t_->hwOneSamples > 0) {  // each sample's rows added to the task's sums at once (in columns: a batch's tree)
    const int64_t width = HwOneAccWidth();
    LocalTensor<float> acc = hwAccBuf_.Get<float>();
    if (columns) HwColumnsAccumulateBatch(acc, dyF, rows);
    for (int64_t s = 0; !columns && s < rows; s += t_->G) {
      Add(acc, acc, dyF[s * P], static_cast<int32_t>(width));
      Add(acc[width], acc[width], dgF[s * P], static_cast<int32_t>(width));
    }
  } else if (t_->needWorkspace != 0) {
    Sync<HardEvent::V_MTE3>();
    if (columns) {  // D = 1: a column is the groups' channels in GM order
      StoreRun(wsDbGm_, base, rows, dyF);
      StoreRun(wsDgGm_, base, rows, dgF);
    } else {
      StorePaddedRows(wsDbGm_, base, rows, dyF, D);
      StorePaddedRows(wsDgGm_, base, rows, dgF, D);
    }
    Sync<HardEvent::MTE3_V>();  // the vector unit rewrites dgF (and the next batch dyF)
  }
  if (t_->dxRequired == 0) return;
  if constexpr (!SILU) {
    if (loadGamma) HwOneTakeGamma(gF, rows);
  }
  Mul(gdy, gF, dyF, span);  // gamma * dy
  Mul(dgF, gF, dgF, span);  // gamma * dy * xhat
  if (vectorCoefficients) {  // the sums by WholeReduceSum: ReduceSum's lanes and tree for D <= 64
    if (columns) {
      HwColumnsSum(sums, gdy, rows);
      HwColumnsSum(sums[r8], dgF, rows);
    } else {
      const RowSumOperands both[2] = {{sums, gdy, ReduceWork()}, {sums[r8], dgF, ReduceWork()}};
      RowSums(both, 2, rows, P, d, 0);
    }
    // Only rstd goes through the scalar unit (a read and a write a group, not 6: 8000x64 G32 had
    // ~58,700 scalar UB accesses a core); c1 = sum * invM, rstd * c2 and -(rstd * c1) are formed by
    // the vector unit over the batch, each element the same fp32 products as the scalar forms
    // (-rstd * c1 is -(rstd * c1) exactly).
    if (vectorStats) {  // the batch's rstd, still in its slot (reloaded two batches on)
      RowAsFloat<U>(sums[3 * r8], HwStatSlot(false), rows);
    } else {
      Sync<HardEvent::V_S>();  // the first part's Brcb reads of the rstd slot are done
      for (int64_t j = 0; j < rows; ++j) sums.SetValue(3 * r8 + j, HwStat(false, j));
      Sync<HardEvent::S_V>();  // the vector unit reads the rstd slot
    }
    const int32_t n = static_cast<int32_t>(rows);
    Muls(sums[2 * r8], sums[r8], invM_, n);    // c2
    Mul(sums[2 * r8], sums[2 * r8], sums[3 * r8], n);  // rstd * c2
    Muls(sums[4 * r8], sums, invM_, n);        // c1
    Mul(sums[4 * r8], sums[4 * r8], sums[3 * r8], n);  // rstd * c1
    Muls(sums[4 * r8], sums[4 * r8], -1.0f, n);
    HwOneApply(xF, 0, rows, false);
    HwOneApply(gdy, 1, rows, false);
    HwOneApply(gdy, 2, rows, true);
  } else {
    for (int64_t j = 0; j < rows; ++j) {
      ReduceSum(sums[j], gdy[j * P], ReduceWork(), d);
      ReduceSum(sums[rows + j], dgF[j * P], ReduceWork(), d);
    }
    for (int64_t j = 0; j < rows; ++j) {  // dx = rstd * (gamma*dy - xhat*c2 - c1)
      const float rstd = HwStat(false, j);
      const float c1 = sums.GetValue(j) * invM_;
      const float c2 = sums.GetValue(rows + j) * invM_;
      Muls(xF[j * P], xF[j * P], rstd * c2, d);
      Muls(gdy[j * P], gdy[j * P], rstd, d);
      Adds(gdy[j * P], gdy[j * P], -rstd * c1, d);
    }
  }
  Sub(gdy, gdy, xF, span);
  HwOneStoreDx(base, rows);
}

// Mode 3's statistics as vectors: from the batch's stat slot, in FloatBuf(3) slot 3 = -mean and
// slot 4 = rstd of the batch's groups, each the value the scalar loop would write for a group with
// CentringScale 1. Whether every group has that scale is one vector test a batch: the sum of
// (mean * 2^-102)^2 is below 1 only when every |mean| < 2^102 (a sum of non-negative terms, each
// >= 1 for such a mean; inf and NaN fail it too). A sum >= 1 without such a group only sends the
// batch to the scalar loop, which is right for every group.
// 8000x64 G32 had ~37,000 scalar UB accesses a core, 4096x512 G32 ~19,000 (5 of 7 a group).
template <typename T, typename U, bool SILU>
__aicore__ inline bool KernelGroupNormGradMs<T, U, SILU>::HwOneStatsAsVectors(int64_t rows) {
  const int64_t r8 = HwOneRows8(rows);
  const int32_t n = static_cast<int32_t>(rows);
  LocalTensor<float> sums = FloatBuf(3);
  RowAsFloat<U>(sums[3 * r8], HwStatSlot(true), rows);
  Muls(sums[2 * r8], sums[3 * r8], MEAN_SCALE_TEST, n);
  Mul(sums[2 * r8], sums[2 * r8], sums[2 * r8], n);
  ReduceSum(ReduceDst(), sums[2 * r8], ReduceWork(), n);
  const float test = ReduceDst().GetValue(0);
  if (!(test < 1.0f)) return false;
  Muls(sums[3 * r8], sums[3 * r8], -1.0f, n);
  RowAsFloat<U>(sums[4 * r8], HwStatSlot(false), rows);
  return true;
}

// Mode 3's mean and rstd of a batch: loaded with its dy and x rows (HwOneIssueRows) into one of
// two slots of the stat window, taken in the same order by HwOneBatch. The slot's previous batch
// may still be read by the vector unit (V_MTE2 first); the scalar unit's wait for the loads
// (HwOneTakeStats) orders every later read, scalar or vector, after them.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::HwOneIssueStats(int64_t q0, int64_t rows) {
  const int64_t slot = hwStatsIssued_ % 2;
  ++hwStatsIssued_;
  LocalTensor<U> window = statWindow_.Get<U>()[slot * 2 * t_->statWindowElems];
  DataCopyExtParams copy{1, static_cast<uint32_t>(rows * sizeof(U)), 0, 0, 0};
  DataCopyPadExtParams<U> pad{false, 0, 0, U{}};
  Sync<HardEvent::V_MTE2>();
  DataCopyPad(window, meanGm_[q0], copy, pad);
  DataCopyPad(window[t_->statWindowElems], rstdGm_[q0], copy, pad);
  hwStatEvent_[slot] = pipe_->AllocEventID<HardEvent::MTE2_S>();
  SetFlag<HardEvent::MTE2_S>(hwStatEvent_[slot]);
}

template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::HwOneTakeStats() {
  hwStatSlot_ = hwStatsTaken_ % 2;
  ++hwStatsTaken_;
  WaitFlag<HardEvent::MTE2_S>(hwStatEvent_[hwStatSlot_]);
  pipe_->ReleaseEventID<HardEvent::MTE2_S>(hwStatEvent_[hwStatSlot_]);
}

// Coefficient k of the batch's groups (FloatBuf(3) from 2 * r8 + k * r8), each broadcast into a
// 32-byte block (Brcb: 8 groups a repeat), then one Mul (Add) over up to HW_ONE_PIECE groups, a
// repeat a group of D <= 64 elements (RowBlockParams): each element the fp32 product (sum) of the
// same two values as a per-group Muls (Adds), so the bits are those of the per-group path.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::HwOneApply(const LocalTensor<float> &dst, int64_t k,
                                                                     int64_t rows, bool add) {
  const int64_t P = AlignUp(t_->D, 16);
  const int64_t r8 = HwOneRows8(rows);
  LocalTensor<float> scalars = FloatBuf(3)[2 * r8 + k * r8];
  if (HwOneColumns()) {
    HwColumnsApply(dst, scalars, rows, add);
    return;
  }
  LocalTensor<float> blocks = FloatBuf(3)[5 * r8];
  const BrcbRepeatParams brcb(1, 8);  // 8 consecutive blocks a repeat
  const BinaryRepeatParams params = RowBlockParams(P);
  const uint64_t mask = static_cast<uint64_t>(t_->D);
  for (int64_t r0 = 0; r0 < rows; r0 += HW_ONE_PIECE) {
    const int64_t n = (rows - r0 < HW_ONE_PIECE) ? rows - r0 : HW_ONE_PIECE;
    Brcb(blocks, scalars[r0], RepeatTimes(HwOneRows8(n) / FLOATS_PER_BLOCK), brcb);
    if (add) {
      Add(dst[r0 * P], dst[r0 * P], blocks, mask, RepeatTimes(n), params);
    } else {
      Mul(dst[r0 * P], dst[r0 * P], blocks, mask, RepeatTimes(n), params);
    }
  }
}

}  // namespace GroupNormGradMsKernel

#endif  // GROUP_NORM_GRAD_MS_HW_ONE_H
