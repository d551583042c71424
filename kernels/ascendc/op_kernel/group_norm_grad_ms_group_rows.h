// Member definitions of KernelGroupNormGradMs (group_norm_grad_ms.h) for mode 0 with groupRows:
// groups of one channel (D == 1), whose rows are consecutive in GM (group
// q = n * G + g is row q, at q * HxW), taken groupRows at a time. A batch's dy and x are one DMA
// each, its dx one; every vector step runs over all the batch's rows (a V barrier and a queue turn
// a batch, not a group), with each group's mean, rstd and gamma. Per row these are the
// instructions of the per-group path (GroupTask: ChannelSums, GroupCoefficients, ChannelDx) on the
// same values, so the bits are the same whatever the batch size or the core count.
// SILU: each row's swish gradient as ChannelSums forms it (xhat + shift kept resident, AffineT's
// -t from the row's gamma_c, beta_c and shift, SwishGradFromNegT over the batch), so its bits too.
// With groupAcrossN a task is group g of every sample: rows (n, g) are C * HxW apart in GM, a batch
// is up to groupRows samples of one group (a pitched DMA), and dbeta/dgamma of the group add up
// over n on the scalar unit in GroupAcrossNTask's order (0 + row 0 + row 1 + ...).
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

template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::GroupRowsIssue(int64_t q, int64_t step, int64_t rows) {
  const bool aligned = t_->copyAligned != 0;
  const int64_t L = t_->HxW;
  IssueStridedLoad(dyQue_, dyGm_, q * L, L, aligned, rows, t_->residentStride, step * L);
  IssueStridedLoad(xQue_, xGm_, q * L, L, aligned, rows, t_->residentStride, step * L);
}

// gamma (+ beta) of every channel, before the scalar unit's first read of them.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::GroupRowsWaitAffine() {
  if (!gammaAllPending_) return;
  WaitFlag<HardEvent::MTE2_S>(gammaAllEvent_);
  pipe_->ReleaseEventID<HardEvent::MTE2_S>(gammaAllEvent_);
  gammaAllPending_ = false;
}

// Groups q, q + step, ... (rows of them); then the loads of the batch at nextQ (nextRows 0: none)
// once this one's staging buffers are free.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::GroupRowsBatch(int64_t q, int64_t step, int64_t rows,
                                                                      int64_t nextQ, int64_t nextStep,
                                                                      int64_t nextRows) {
  const int64_t S = t_->residentStride;
  const int32_t L = static_cast<int32_t>(t_->HxW);
  const int32_t span = static_cast<int32_t>((rows - 1) * S + L);
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
  LocalTensor<float> xR = dyR[t_->groupRows * S];
  LocalTensor<float> tmp = FloatBuf(0);
  TakeAsFloat<T>(dyQue_, span, dyR);
  if constexpr (IsSameType<T, float>::value) {  // straight from the staging buffer (TakeCentredX)
    LocalTensor<T> staging = xQue_.template DeQue<T>();
    for (int64_t r = 0; r < rows; ++r) CentredX<T>(staging[r * S], L, centre[r], xR[r * S]);
    xQue_.FreeTensor(staging);
  } else {
    TakeAsFloat<T>(xQue_, span, xR);
    for (int64_t r = 0; r < rows; ++r) CentreInPlace(L, centre[r], xR[r * S]);
  }
  if (nextRows > 0) GroupRowsIssue(nextQ, nextStep, nextRows);
  if constexpr (SILU) {  // xhat (+ shift) stays resident; -t in tmp (AffineT a row); dy becomes g
    float gk[MAX_GROUP_ROWS];  // AffineT's scalars of each row's channel: -k gamma_c, -k beta_c
    float bk[MAX_GROUP_ROWS];
    GroupRowsWaitAffine();
    const LocalTensor<U> affine = gammaAllBuf_.Get<U>();
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t c = (q + r * step) % t_->G;
      gk[r] = ToF32(affine.GetValue(c)) * -swishScale_;
      bk[r] = ToF32(affine.GetValue(GroupRowsBetaAt() + c)) * -swishScale_;
    }
    for (int64_t r = 0; r < rows; ++r) Muls(xR[r * S], xR[r * S], factor[r], L);
    for (int64_t r = 0; r < rows; ++r) {
      if (shift[r] != 0.0f) Adds(tmp[r * S], xR[r * S], -shift[r], L);
    }
    for (int64_t r = 0; r < rows; ++r) Muls(tmp[r * S], shift[r] != 0.0f ? tmp[r * S] : xR[r * S], gk[r], L);
    for (int64_t r = 0; r < rows; ++r) Adds(tmp[r * S], tmp[r * S], bk[r], L);
    SwishGradFromNegT(dyR, tmp, FloatBuf(1), Ones(), span);
    Mul(tmp, dyR, xR, span);
  } else {
    for (int64_t r = 0; r < rows; ++r) Muls(tmp[r * S], xR[r * S], factor[r], L);  // xhat (+ shift)
    Mul(tmp, dyR, tmp, span);
  }
  // the row sums of ChannelSums (a row's sums do not depend on how many rows a call has)
  DbDgRowSums(db, dg, dyR, tmp, rows, S, L);
  // The scalar unit finishes each group: dg less shift * db (ChannelSums' Muls and Sub of one
  // element), and c1 = gamma db / M, c2 = gamma dg / M (GroupCoefficients' Mul, and its one-element
  // WholeReduceSum, which adds the lanes' zeros: + 0.0f).
  const bool across = t_->groupAcrossN != 0;  // (no workspace)
  if (!dx && !(anyShift && ws) && !across) {
    StoreSums(db, q, rows);
    return;
  }
  Sync<HardEvent::V_S>();  // the row sums, before their scalar reads
  if (dx) GroupRowsWaitAffine();
  float a[MAX_GROUP_ROWS];  // rstd gamma
  float adds[MAX_GROUP_ROWS];
  LocalTensor<U> gammaAll;
  if (dx) gammaAll = gammaAllBuf_.Get<U>();
  for (int64_t r = 0; r < rows; ++r) {
    const float dbv = db.GetValue(r);
    float dgv = dg.GetValue(r);
    if (shift[r] != 0.0f) {
      const float product = dbv * shift[r];
      dgv = dgv - product;
      if (ws) dg.SetValue(r, dgv);
    }
    if (across) {  // GroupAcrossNTask's Adds over n, from 0
      if (q + r * step < t_->G) {
        acrossDb_ = 0.0f;
        acrossDg_ = 0.0f;
      }
      acrossDb_ = acrossDb_ + dbv;
      acrossDg_ = acrossDg_ + dgv;
    }
    if (!dx) continue;
    const float gamma = ToF32(gammaAll.GetValue((q + r * step) % t_->G));
    const float p1 = gamma * dbv;
    const float p2 = gamma * dgv;
    const float b = rstd[r] * ((p2 + 0.0f) * invM_);
    float e = rstd[r] * ((p1 + 0.0f) * invM_);
    if (shift[r] != 0.0f) e -= b * shift[r];  // as ChannelDx
    a[r] = rstd[r] * gamma;
    adds[r] = -e;
    factor[r] = SILU ? b : factor[r] * b;  // what multiplies the resident x (SILU: xhat + shift)
  }
  if (anyShift && ws) Sync<HardEvent::S_MTE3>();  // the scalar writes of dg, before its workspace copy
  StoreSums(db, q, rows);
  if (across && q + (rows - 1) * step >= (t_->N - 1) * t_->G) GroupRowsStoreParamGrads(q % t_->G);
  if (!dx) return;
  // ChannelDx's mode 0: dx = rstd gamma dy - (x - centre) factor b - (e - b shift) (SILU: g for dy,
  // (xhat + shift) b for the middle term)
  for (int64_t r = 0; r < rows; ++r) Muls(dyR[r * S], dyR[r * S], a[r], L);
  for (int64_t r = 0; r < rows; ++r) Muls(tmp[r * S], xR[r * S], factor[r], L);
  Sub(dyR, dyR, tmp, span);
  StoreRowsFromFloat(dxQue_, dxGm_, q * t_->HxW, L, dyR, adds, t_->copyAligned != 0, rows, S, step * L);
}

// groupAcrossN: dbeta and dgamma of group g (one channel) from the scalar sums over n, stored as
// GroupAcrossNTask stores its accumulators.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::GroupRowsStoreParamGrads(int64_t g) {
  LocalTensor<float> accDb = StatArray(3);
  LocalTensor<float> accDg = StatArray(4);
  accDb.SetValue(0, acrossDb_);
  accDg.SetValue(0, acrossDg_);
  Sync<HardEvent::S_V>();  // the stores' Adds read them
  if (t_->dbetaRequired != 0) StoreFromFloat(outQue_, dbetaGm_, g, 1, accDb, 0.0f, false);
  if (t_->dgammaRequired != 0) StoreFromFloat(outQue_, dgammaGm_, g, 1, accDg, 0.0f, false);
}

}  // namespace GroupNormGradMsKernel

#endif  // GROUP_NORM_GRAD_MS_GROUP_ROWS_H
