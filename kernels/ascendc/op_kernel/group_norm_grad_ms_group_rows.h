// Member definitions of KernelGroupNormGradMs (group_norm_grad_ms.h) for mode 0 with groupRows:
// short groups of D <= MAX_GROUP_ROW_CHANNELS channels, whose rows are consecutive in GM (group
// q = n * G + g is rows q * D .. q * D + D - 1), taken groupRows groups at a time. A batch's dy and x
// are one DMA each (across N: one per channel of the group), its dx the same; every vector step runs
// over all the batch's rows or one group's (a V barrier and a queue turn a batch, not a group), with
// each group's mean, rstd and gamma. Per element these are the instructions of the per-group path
// (GroupTask: ChannelSums, GroupCoefficients, ChannelDx) on the same values, and the scalar unit forms
// c1, c2 as GroupCoefficients' Mul and WholeReduceSum do (LaneTreeSum), so the bits are the same
// whatever the batch size or the core count.
// SILU: each row's swish gradient as ChannelSums forms it (xhat + shift kept resident, AffineT's
// -t from the row's gamma_c, beta_c and shift, SwishGradFromNegT over the batch), so its bits too.
// With groupAcrossN a task is group g of every sample: rows (n, g) are C * HxW apart in GM, a batch
// is up to groupRows samples of one group (a pitched DMA), and dbeta/dgamma of the group add up
// over n on the scalar unit in GroupAcrossNTask's order (0 + sample 0 + sample 1 + ..., each channel's).
// Included by group_norm_grad_ms.h after the class; not a header of its own.
#ifndef GROUP_NORM_GRAD_MS_GROUP_ROWS_H
#define GROUP_NORM_GRAD_MS_GROUP_ROWS_H

namespace GroupNormGradMsKernel {

// Batch k of a core's tasks [first, first + count): its first group q, the step between its rows'
// groups (1; G across N) and its rows.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::GroupRowsBatchOf(int64_t k, int64_t first, int64_t count,
                                                                        int64_t *q, int64_t *step, int64_t *rows) {
  const int64_t R = t_->groupRows;
  if (t_->groupAcrossN == 0) {
    *q = first + k * R;
    *step = 1;
    *rows = (first + count - *q < R) ? first + count - *q : R;
    return;
  }
  const int64_t perGroup = (t_->N + R - 1) / R;
  const int64_t n0 = (k % perGroup) * R;
  *q = n0 * t_->G + first + k / perGroup;
  *step = t_->G;
  *rows = (t_->N - n0 < R) ? t_->N - n0 : R;
}

// Two batches in flight (dyQue_, xQue_: the tiling keeps loadBuffers 2); mean/rstd's window and
// (with dx or SILU) every channel's gamma (+ beta) are issued ahead of them.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::GroupRowsRun(int64_t first, int64_t count) {
  if (count <= 0) return;
  IssueStatWindow(first);
  if (GroupRowsAffine()) {  // C values, one burst each; read by the scalar unit (GroupRowsBatch)
    LoadRow(gammaAllBuf_.Get<U>(), gammaGm_, 0, t_->C);
    if constexpr (SILU) LoadRow(gammaAllBuf_.Get<U>()[GroupRowsBetaAt()], betaGm_, 0, t_->C);
    gammaAllEvent_ = pipe_->AllocEventID<HardEvent::MTE2_S>();  // reserved until the first read
    SetFlag<HardEvent::MTE2_S>(gammaAllEvent_);
    gammaAllPending_ = true;
  }
  const int64_t R = t_->groupRows;
  const int64_t batches = t_->groupAcrossN != 0 ? count * ((t_->N + R - 1) / R) : (count + R - 1) / R;
  int64_t q;
  int64_t step;
  int64_t rows;
  for (int64_t k = 0; k < batches && k < BUFFER_NUM; ++k) {
    GroupRowsBatchOf(k, first, count, &q, &step, &rows);
    GroupRowsIssue(q, step, rows);
  }
  for (int64_t k = 0; k < batches; ++k) {
    int64_t nextQ = 0;
    int64_t nextStep = 1;
    int64_t nextRows = 0;
    if (k + BUFFER_NUM < batches) GroupRowsBatchOf(k + BUFFER_NUM, first, count, &nextQ, &nextStep, &nextRows);
    GroupRowsBatchOf(k, first, count, &q, &step, &rows);
    GroupRowsBatch(q, step, rows, nextQ, nextStep, nextRows);
  }
}

// The rows of a batch of `rows` groups q, q + step, ...: D rows each, the groups step * D rows apart in GM.
template <typename T, typename U, bool SILU>
__aicore__ inline BlockRows KernelGroupNormGradMs<T, U, SILU>::GroupRowsBlocks(int64_t step, int64_t rows) const {
  return BlockRows{rows, t_->D, t_->residentStride, step * t_->D * t_->HxW};
}

template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::GroupRowsIssue(int64_t q, int64_t step, int64_t rows) {
  const bool aligned = t_->copyAligned != 0;
  const int64_t L = t_->HxW;
  const BlockRows b = GroupRowsBlocks(step, rows);
  IssueBlockRowsLoad(dyQue_, dyGm_, q * t_->D * L, L, aligned, b);
  IssueBlockRowsLoad(xQue_, xGm_, q * t_->D * L, L, aligned, b);
}

// gamma (+ beta) of every channel, before the scalar unit's first read of them.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::GroupRowsWaitAffine() {
  if (!gammaAllPending_) return;
  WaitFlag<HardEvent::MTE2_S>(gammaAllEvent_);
  pipe_->ReleaseEventID<HardEvent::MTE2_S>(gammaAllEvent_);
  gammaAllPending_ = false;
}

// WholeReduceSum's sum of v[0..count) (count <= 64) on the scalar unit: its binary tree of neighbour
// pairs over 64 lanes, the lanes past count 0.0f (kernel_operator_vector.h of the twin; ReduceDataBlock.md).
// Lanes known to hold 0.0f are left out, but a lane added to one is added to 0.0f as the tree does
// (-0.0f + 0.0f is 0.0f), so the result is the instruction's bit for bit.
__aicore__ inline float LaneTreeSum(float *v, int64_t count) {
  int64_t n = count;
  for (int64_t level = 0; level < 6; ++level) {  // 64 lanes: six levels of pairs, past count too
    const int64_t next = (n + 1) / 2;
    for (int64_t i = 0; i < next; ++i) v[i] = v[2 * i] + (2 * i + 1 < n ? v[2 * i + 1] : 0.0f);
    n = next;
  }
  return v[0];
}

// Groups q, q + step, ... (rows of them, D rows each); then the loads of the batch at nextQ (nextRows 0:
// none) once this one's staging buffers are free.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::GroupRowsBatch(int64_t q, int64_t step, int64_t rows,
                                                                      int64_t nextQ, int64_t nextStep,
                                                                      int64_t nextRows) {
  const int64_t S = t_->residentStride;
  const int64_t D = t_->D;
  const int64_t GS = D * S;  // from one group's rows to the next's
  const int64_t lines = rows * D;
  const int32_t L = static_cast<int32_t>(t_->HxW);
  const int32_t span = static_cast<int32_t>((lines - 1) * S + L);
  const int32_t groupSpan = static_cast<int32_t>((D - 1) * S + L);  // a group's rows (and the padding between)
  const bool dx = t_->dxRequired != 0;
  const bool ws = t_->needWorkspace != 0;
  float centre[MAX_GROUP_ROWS];
  float factor[MAX_GROUP_ROWS];
  float rstd[MAX_GROUP_ROWS];
  float shift[MAX_GROUP_ROWS];
  bool anyShift = false;
  for (int64_t r = 0; r < rows; ++r) {  // as ChannelSums: x - centre, then the sums less shift * db
    const float mean = Stat(true, q + r * step);
    rstd[r] = Stat(false, q + r * step);
    const Centring cen = CentringOf(mean, rstd[r]);
    centre[r] = cen.centre;
    shift[r] = cen.shift;
    factor[r] = XhatFactor(cen.centre, rstd[r]);
    anyShift = anyShift || cen.shift != 0.0f;
  }
  LocalTensor<float> db = TakeSums();
  LocalTensor<float> dg = db[t_->statElems];
  LocalTensor<float> dyR = residentBuf_.Get<float>();
  LocalTensor<float> xR = dyR[t_->groupRows * GS];
  LocalTensor<float> tmp = FloatBuf(0);
  TakeAsFloat<T>(dyQue_, span, dyR);
  if constexpr (IsSameType<T, float>::value) {  // straight from the staging buffer (TakeCentredX)
    LocalTensor<T> staging = xQue_.template DeQue<T>();
    for (int64_t r = 0; r < rows; ++r) CentredX<T>(staging[r * GS], groupSpan, centre[r], xR[r * GS]);
    xQue_.FreeTensor(staging);
  } else {
    TakeAsFloat<T>(xQue_, span, xR);
    for (int64_t r = 0; r < rows; ++r) CentreInPlace(groupSpan, centre[r], xR[r * GS]);
  }
  if (nextRows > 0) GroupRowsIssue(nextQ, nextStep, nextRows);
  if constexpr (SILU) {  // xhat (+ shift) stays resident; -t in tmp (AffineT a row); dy becomes g
    float gk[MAX_GROUP_ROW_LINES];  // AffineT's scalars of each row's channel: -k gamma_c, -k beta_c
    float bk[MAX_GROUP_ROW_LINES];
    GroupRowsWaitAffine();
    const LocalTensor<U> affine = gammaAllBuf_.Get<U>();
    for (int64_t i = 0; i < lines; ++i) {
      gk[i] = ToF32(affine.GetValue(GroupRowsChannel(q, step, i))) * -swishScale_;
      bk[i] = ToF32(affine.GetValue(GroupRowsBetaAt() + GroupRowsChannel(q, step, i))) * -swishScale_;
    }
    for (int64_t r = 0; r < rows; ++r) Muls(xR[r * GS], xR[r * GS], factor[r], groupSpan);
    for (int64_t r = 0; r < rows; ++r) {
      if (shift[r] != 0.0f) Adds(tmp[r * GS], xR[r * GS], -shift[r], groupSpan);
    }
    for (int64_t i = 0; i < lines; ++i) Muls(tmp[i * S], shift[i / D] != 0.0f ? tmp[i * S] : xR[i * S], gk[i], L);
    for (int64_t i = 0; i < lines; ++i) Adds(tmp[i * S], tmp[i * S], bk[i], L);
    SwishGradFromNegT(dyR, tmp, FloatBuf(1), Ones(), span);
    Mul(tmp, dyR, xR, span);
  } else {
    for (int64_t r = 0; r < rows; ++r) Muls(tmp[r * GS], xR[r * GS], factor[r], groupSpan);  // xhat (+ shift)
    Mul(tmp, dyR, tmp, span);
  }
  // the row sums of ChannelSums (a row's sums do not depend on how many rows a call has)
  DbDgRowSums(db, dg, dyR, tmp, lines, S, L);
  // The scalar unit finishes each group: dg less shift * db (ChannelSums' Muls and Sub of each
  // channel), and c1 = sum gamma db / M, c2 = sum gamma dg / M (GroupCoefficients' Mul and
  // WholeReduceSum: LaneTreeSum).
  const bool across = t_->groupAcrossN != 0;  // (no workspace)
  if (!dx && !(anyShift && ws) && !across) {
    StoreSums(db, q * D, lines);
    return;
  }
  Sync<HardEvent::V_S>();  // the row sums, before their scalar reads
  if (dx) GroupRowsWaitAffine();
  float a[MAX_GROUP_ROW_LINES];  // rstd gamma
  float adds[MAX_GROUP_ROWS];
  LocalTensor<U> gammaAll;
  if (dx) gammaAll = gammaAllBuf_.Get<U>();
  for (int64_t r = 0; r < rows; ++r) {
    float p1[MAX_GROUP_ROW_CHANNELS];
    float p2[MAX_GROUP_ROW_CHANNELS];
    if (across && q + r * step < t_->G) {  // sample 0: GroupAcrossNTask's accumulators from 0
      for (int64_t d = 0; d < D; ++d) {
        acrossDb_[d] = 0.0f;
        acrossDg_[d] = 0.0f;
      }
    }
    for (int64_t d = 0; d < D; ++d) {
      const int64_t i = r * D + d;
      const float dbv = db.GetValue(i);
      float dgv = dg.GetValue(i);
      if (shift[r] != 0.0f) {
        const float product = dbv * shift[r];
        dgv = dgv - product;
        if (ws) dg.SetValue(i, dgv);
      }
      if (across) {  // GroupAcrossNTask's Adds over n
        acrossDb_[d] = acrossDb_[d] + dbv;
        acrossDg_[d] = acrossDg_[d] + dgv;
      }
      if (!dx) continue;
      const float gamma = ToF32(gammaAll.GetValue(GroupRowsChannel(q, step, i)));
      p1[d] = gamma * dbv;
      p2[d] = gamma * dgv;
      a[i] = rstd[r] * gamma;
    }
    if (!dx) continue;
    const float b = rstd[r] * (LaneTreeSum(p2, D) * invM_);
    float e = rstd[r] * (LaneTreeSum(p1, D) * invM_);
    if (shift[r] != 0.0f) e -= b * shift[r];  // as ChannelDx
    adds[r] = -e;
    factor[r] = SILU ? b : factor[r] * b;  // what multiplies the resident x (SILU: xhat + shift)
  }
  if (anyShift && ws) Sync<HardEvent::S_MTE3>();  // the scalar writes of dg, before its workspace copy
  StoreSums(db, q * D, lines);
  if (across && q + (rows - 1) * step >= (t_->N - 1) * t_->G) GroupRowsStoreParamGrads(q % t_->G);
  if (!dx) return;
  // ChannelDx's mode 0: dx = rstd gamma dy - (x - centre) factor b - (e - b shift) (SILU: g for dy,
  // (xhat + shift) b for the middle term)
  for (int64_t i = 0; i < lines; ++i) Muls(dyR[i * S], dyR[i * S], a[i], L);
  for (int64_t r = 0; r < rows; ++r) Muls(tmp[r * GS], xR[r * GS], factor[r], groupSpan);
  Sub(dyR, dyR, tmp, span);
  StoreBlockRowsFromFloat(dxQue_, dxGm_, q * D * t_->HxW, L, dyR, adds, t_->copyAligned != 0,
                          GroupRowsBlocks(step, rows));
}

// groupAcrossN: dbeta and dgamma of group g's D channels from the scalar sums over n, stored as
// GroupAcrossNTask stores its accumulators.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::GroupRowsStoreParamGrads(int64_t g) {
  const int64_t D = t_->D;
  LocalTensor<float> accDb = StatArray(3);
  LocalTensor<float> accDg = StatArray(4);
  for (int64_t d = 0; d < D; ++d) {
    accDb.SetValue(d, acrossDb_[d]);
    accDg.SetValue(d, acrossDg_[d]);
  }
  Sync<HardEvent::S_V>();  // the stores' Adds read them
  if (t_->dbetaRequired != 0) StoreFromFloat(outQue_, dbetaGm_, g * D, D, accDb, 0.0f, false);
  if (t_->dgammaRequired != 0) StoreFromFloat(outQue_, dgammaGm_, g * D, D, accDg, 0.0f, false);
}

}  // namespace GroupNormGradMsKernel

#endif  // GROUP_NORM_GRAD_MS_GROUP_ROWS_H
