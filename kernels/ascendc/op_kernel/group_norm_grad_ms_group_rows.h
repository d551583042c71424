// Member definitions of KernelGroupNormGradMs (group_norm_grad_ms.h) for mode 0 with groupRows:
// groups of one channel (D == 1, GroupNormGradMs only), whose rows are consecutive in GM (group
// q = n * G + g is row q, at q * HxW), taken groupRows at a time. A batch's dy and x are one DMA
// each, its dx one; every vector step runs over all the batch's rows (a V barrier and a queue turn
// a batch, not a group), with each group's mean, rstd and gamma. Per row these are the
// instructions of the per-group path (GroupTask: ChannelSums, GroupCoefficients, ChannelDx) on the
// same values, so the bits are the same whatever the batch size or the core count.
// Included by group_norm_grad_ms.h after the class; not a header of its own.
#ifndef GROUP_NORM_GRAD_MS_GROUP_ROWS_H
#define GROUP_NORM_GRAD_MS_GROUP_ROWS_H

namespace GroupNormGradMsKernel {

// Two batches in flight (dyQue_, xQue_: the tiling keeps loadBuffers 2); mean/rstd's window and
// (with dx) every channel's gamma are issued ahead of them.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::GroupRowsRun(int64_t first, int64_t count) {
  if (count <= 0) return;
  IssueStatWindow(first);
  if (t_->dxRequired != 0) {  // C values, one burst; read by the scalar unit (GroupRowsBatch)
    LoadRow(gammaAllBuf_.Get<U>(), gammaGm_, 0, t_->C);
    gammaAllEvent_ = pipe_->AllocEventID<HardEvent::MTE2_S>();  // reserved until the first read
    SetFlag<HardEvent::MTE2_S>(gammaAllEvent_);
    gammaAllPending_ = true;
  }
  const int64_t R = t_->groupRows;
  const int64_t end = first + count;
  for (int64_t q = first; q < end && q < first + BUFFER_NUM * R; q += R) GroupRowsIssue(q, end - q < R ? end - q : R);
  for (int64_t q = first; q < end; q += R) {
    const int64_t next = q + BUFFER_NUM * R;
    GroupRowsBatch(q, end - q < R ? end - q : R, next, next < end ? (end - next < R ? end - next : R) : 0);
  }
}

template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::GroupRowsIssue(int64_t q, int64_t rows) {
  const bool aligned = t_->copyAligned != 0;
  IssueLoad(dyQue_, dyGm_, q * t_->HxW, t_->HxW, aligned, rows);
  IssueLoad(xQue_, xGm_, q * t_->HxW, t_->HxW, aligned, rows);
}

// Groups [q, q + rows); then the loads of the batch at nextQ (nextRows 0: none) once this one's
// staging buffers are free.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::GroupRowsBatch(int64_t q, int64_t rows, int64_t nextQ,
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
    const float mean = Stat(true, q + r);
    rstd[r] = Stat(false, q + r);
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
  if (nextRows > 0) GroupRowsIssue(nextQ, nextRows);
  for (int64_t r = 0; r < rows; ++r) Muls(tmp[r * S], xR[r * S], factor[r], L);  // xhat (+ shift)
  Mul(tmp, dyR, tmp, span);
  // the row sums of ChannelSums (a row's sums do not depend on how many rows a call has)
  const int64_t need = RowPartialElems(L);
  const int64_t half = t_->reduceWorkElems / (2 * FLOATS_PER_BLOCK) * FLOATS_PER_BLOCK;
  if ((L > 64 && half >= need) || L <= 64) {
    const RowSumOperands both[2] = {{db, dyR, ReduceWork()}, {dg, tmp, ReduceWork()[half]}};
    RowSums(both, 2, rows, S, L, half);
  } else {
    RowSums(db, dyR, rows, S, L, ReduceWork(), t_->reduceWorkElems);
    RowSums(dg, tmp, rows, S, L, ReduceWork(), t_->reduceWorkElems);
  }
  // The scalar unit finishes each group: dg less shift * db (ChannelSums' Muls and Sub of one
  // element), and c1 = gamma db / M, c2 = gamma dg / M (GroupCoefficients' Mul, and its one-element
  // WholeReduceSum, which adds the lanes' zeros: + 0.0f).
  if (!dx && !(anyShift && ws)) {
    StoreSums(db, q, rows);
    return;
  }
  Sync<HardEvent::V_S>();  // the row sums, before their scalar reads
  if (dx && gammaAllPending_) {
    WaitFlag<HardEvent::MTE2_S>(gammaAllEvent_);
    pipe_->ReleaseEventID<HardEvent::MTE2_S>(gammaAllEvent_);
    gammaAllPending_ = false;
  }
  float a[MAX_GROUP_ROWS];  // rstd gamma, then b * factor
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
    if (!dx) continue;
    const float gamma = ToF32(gammaAll.GetValue((q + r) % t_->G));
    const float p1 = gamma * dbv;
    const float p2 = gamma * dgv;
    const float b = rstd[r] * ((p2 + 0.0f) * invM_);
    float e = rstd[r] * ((p1 + 0.0f) * invM_);
    if (shift[r] != 0.0f) e -= b * shift[r];  // as ChannelDx
    a[r] = rstd[r] * gamma;
    adds[r] = -e;
    factor[r] = factor[r] * b;
  }
  if (anyShift && ws) Sync<HardEvent::S_MTE3>();  // the scalar writes of dg, before its workspace copy
  StoreSums(db, q, rows);
  if (!dx) return;
  // ChannelDx's mode 0: dx = rstd gamma dy - (x - centre) factor b - (e - b shift)
  for (int64_t r = 0; r < rows; ++r) Muls(dyR[r * S], dyR[r * S], a[r], L);
  for (int64_t r = 0; r < rows; ++r) Muls(tmp[r * S], xR[r * S], factor[r], L);
  Sub(dyR, dyR, tmp, span);
  StoreRowsFromFloat(dxQue_, dxGm_, q * t_->HxW, L, dyR, adds, t_->copyAligned != 0, rows, S);
}

}  // namespace GroupNormGradMsKernel

#endif  // GROUP_NORM_GRAD_MS_GROUP_ROWS_H
