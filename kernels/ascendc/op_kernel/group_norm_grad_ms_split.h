// Member definitions of KernelGroupNormGradMs (group_norm_grad_ms.h) for the channel split,
// used when a launch has fewer (n, g) groups than cores: phase-1 tasks are (n, c, s), HxW slice
// s of channel c of sample n (hwSlices slices per channel, 1 unless the host's HxW split is on),
// t = (n * C + c) * hwSlices + s. Before SyncAll a task writes its slice's db and dg to
// workspace row n * hwSlices + s, column c; after it, the dx pass of the same task sums its
// group's rows in slice order (a function of the shape only, never of the core count or of
// which core wrote which row), so the bits do not depend on the schedule. With the HxW split
// there is no stage 2: the core running task (0, g * D, 0) sums group g's N * hwSlices rows per
// channel in (n, s) order and stores its dgamma/dbeta, its load in flight during its dx pass.
// Included by group_norm_grad_ms.h after the class; not a header of its own.
#ifndef GROUP_NORM_GRAD_MS_SPLIT_H
#define GROUP_NORM_GRAD_MS_SPLIT_H

namespace GroupNormGradMsKernel {

template <typename T, typename U, bool SILU>
__aicore__ inline ChannelTask KernelGroupNormGradMs<T, U, SILU>::DecodeChannelTask(int64_t task) const {
  ChannelTask k;
  k.slice = task % t_->hwSlices;
  k.n = task / t_->hwSlices / t_->C;
  k.c = task / t_->hwSlices % t_->C;
  k.g = k.c / t_->D;
  k.group = k.n * t_->G + k.g;
  return k;
}

template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::ChannelSumsTask(int64_t task, int64_t rows) {
  const ChannelTask k = DecodeChannelTask(task);
  LocalTensor<float> db = TakeSums();
  // dg is db[statElems] (ChannelSums): statElems apart, as UB sources of a copy must be 32-byte aligned
  if constexpr (SILU) LoadAffine(k.g);
  // the dx pass's gamma, loaded before SyncAll (taken after this task's sums are on their way): with
  // the HxW split, and with DxOnRuns, whose first dx item then needs no sums (DxFront) while they load
  const bool newGamma = !SILU && (t_->hwSlices > 1 || DxOnRuns()) && t_->dxRequired != 0 && k.g != gammaGroup_;
  if (newGamma) IssueLoad(statQue_, gammaGm_, k.g * t_->D, t_->D, false);
  ChannelSums(k.c, rows, k.slice, Stat(true, k.group), Stat(false, k.group), db, k.c - k.g * t_->D);
  if (t_->ownStats != 0) StoreOwnStats(k.c, rows, db);
  StoreSums(db, (k.n * t_->hwSlices + k.slice) * t_->C + k.c, rows);
  if (newGamma) {
    TakeAsFloat<U>(statQue_, t_->D, StatArray(2));
    gammaGroup_ = k.g;
  }
}

template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::ChannelDxTask(int64_t task, int64_t rows, int64_t end) {
  const ChannelTask k = DecodeChannelTask(task);
  const int64_t n = k.n;
  const int64_t g = k.g;
  LocalTensor<float> db = StatArray(0);
  LocalTensor<float> dg = StatArray(1);
  LocalTensor<float> gamma = StatArray(2);
  const float rstd = Stat(false, k.group);
  const float mean = Stat(true, k.group);
  bool front = false;  // the task's first dx item is taken (DxFront) before the sums arrive
  if (k.group != cachedGroup_) {  // consecutive tasks mostly share a group
    if (t_->hwSlices > 1) {
      const bool newGamma = !SILU && g != gammaGroup_;  // mostly loaded before SyncAll
      IssueSlicePartials(n, g * t_->D, newGamma);
      if constexpr (SILU) LoadAffine(g);  // mostly still in UB from the sums pass
      if (!newGamma && t_->dxRequired != 0) {  // what of it needs no sums, while they load
        DxFront(ItemLen(k.slice, 0), mean, rstd, gamma, k.c - g * t_->D);
        front = true;
      }
      CombineSlicePartials(db);  // and dg = db[statElems]
      if (newGamma) {
        TakeAsFloat<U>(statQue_, t_->D, gamma);
        gammaGroup_ = g;
      }
      // N == 1: the group's owner (the core running its first task) has its dbeta and dgamma
      // here already (the sum over s of sample 0's rows), so it stores them without a load
      if (t_->N == 1 && k.c == g * t_->D && k.slice == 0) StoreGroupStats(g, db, dg);
    } else {
      // db and dg straight into their arrays, issued at the previous group's switch (or now), with
      // gamma (the same for every n: loaded once with G == 1) in flight beside them
      if (sumsAhead_ != k.group) IssueGroupSums(k.group);
      const bool newGamma = !SILU && g != gammaGroup_;
      if (newGamma) IssueLoad(statQue_, gammaGm_, g * t_->D, t_->D, false);
      if (!newGamma && DxOnRuns()) {  // gamma is here (the sums pass loaded it): the first item's
        ScaleGamma(gamma, rstd);
        DxFront(ItemLen(k.slice, 0), mean, rstd, gamma, k.c - g * t_->D, -1, rows);  // front, as they load
        front = true;
      }
      WaitFlag<HardEvent::MTE2_V>(sumsEvent_);
      pipe_->ReleaseEventID<HardEvent::MTE2_V>(sumsEvent_);
      sumsAhead_ = -1;
      // a vector copy as LoadAsFloat's (RowAsFloat) made: the same values (dg is db[statElems])
      Muls(db, db, 1.0f, static_cast<int32_t>(t_->statElems + t_->D));
      if (newGamma) {
        TakeAsFloat<U>(statQue_, t_->D, gamma);
        gammaGroup_ = g;
        if (DxOnRuns()) ScaleGamma(gamma, rstd);
      }
    }
    if constexpr (SILU) LoadAffine(g);  // mostly still in UB from the sums pass
    GroupCoefficients(db, dg, gamma, &cachedC1_, &cachedC2_);  // its ReduceSums end with V -> S
    cachedGroup_ = k.group;
    // the core's next group's sums (its tasks are consecutive channels: group k.group + 1 when
    // its first channel is below `end`), on their way while this group's dx runs
    // (GroupCoefficients' last vector reads of db and dg are waited for by its V -> S hand-over)
    if (t_->hwSlices == 1 && (k.group + 1) * t_->D < end) IssueGroupSums(k.group + 1);
  }
  ChannelDx(n, k.c, rows, k.slice, mean, rstd, gamma, k.c - g * t_->D, rstd * cachedC2_, rstd * cachedC1_, front);
}

// DxOnRuns with the channel split: rstd * gamma_c of the group's channels into ScaledGamma() (a
// sumsQue_ buffer, free after the sums pass: taken at the first group and kept, never freed, as nothing
// allocates from sumsQue_ after the sums pass), once a group, so
// that each item gathers a_c without a Muls of its own (the same fp32 products).
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::ScaleGamma(const LocalTensor<float> &gamma, float rstd) {
  if (!scaledHeld_) {
    scaledGamma_ = sumsQue_.template AllocTensor<float>();
    scaledHeld_ = true;
  }
  Muls(scaledGamma_, gamma, rstd, static_cast<int32_t>(t_->D));
}

// Without the HxW split: the workspace's db and dg of (n, g) group `group` (D floats each, at its
// channels n * C + g * D = group * D) into StatArray(0) and db[statElems], the event that says
// they have landed set (waited for by ChannelDxTask).
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::IssueGroupSums(int64_t group) {
  LocalTensor<float> db = StatArray(0);
  LoadRow(db, wsDbGm_, group * t_->D, t_->D);
  LoadRow(db[t_->statElems], wsDgGm_, group * t_->D, t_->D);
  sumsEvent_ = pipe_->AllocEventID<HardEvent::MTE2_V>();
  SetFlag<HardEvent::MTE2_V>(sumsEvent_);
  sumsAhead_ = group;
}

// Two strided DMAs (db rows, dg rows) of `rows` workspace rows from `row0`, channels [c0, c0 + D)
// of each: rows C floats apart in GM; in UB interleaved, row r's db at dst[2 r P] and its dg
// at dst[(2 r + 1) P] (P = statElems), so that one vector instruction of 2P adds a row's db and
// dg to the sums db, dg = db[P] (StatArray(0) and (1)).
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::IssuePartialRows(const LocalTensor<float> &dst,
                                                                           int64_t row0, int64_t rows, int64_t c0) {
  const int64_t P = t_->statElems;  // a multiple of 16: every row starts 32-byte aligned
  const int64_t rowUb = AlignUp(t_->D * static_cast<int64_t>(sizeof(float)), 32);
  DataCopyExtParams copy{static_cast<uint16_t>(rows), static_cast<uint32_t>(t_->D * sizeof(float)),
                         static_cast<uint32_t>((t_->C - t_->D) * sizeof(float)),
                         static_cast<uint32_t>((2 * P * static_cast<int64_t>(sizeof(float)) - rowUb) / 32), 0};
  DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};
  DataCopyPad(dst, wsDbGm_[row0 * t_->C + c0], copy, pad);
  DataCopyPad(dst[P], wsDgGm_[row0 * t_->C + c0], copy, pad);
}

// Sample n's hwSlices rows of db and dg for channels [c0, c0 + D) are loaded (Issue...), then
// added to zero in slice order on the vector unit, both in one instruction per slice (dg is
// db[statElems]; the lanes past D add the rows' padding, which nothing reads).
// gamma: also issue the load of the group's gamma (after the rows: they are on the critical path).
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::IssueSlicePartials(int64_t n, int64_t c0, bool gamma) {
  LocalTensor<float> rows = partialQue_.AllocTensor<float>();
  IssuePartialRows(rows, n * t_->hwSlices, t_->hwSlices, c0);
  partialQue_.EnQue(rows);
  if (gamma) IssueLoad(statQue_, gammaGm_, c0, t_->D, false);
}

template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::CombineSlicePartials(const LocalTensor<float> &db) {
  const int64_t S = t_->hwSlices;
  const int64_t P = t_->statElems;
  LocalTensor<float> rows = partialQue_.DeQue<float>();
  const int32_t both = static_cast<int32_t>(P + t_->D);  // db's P lanes, then dg's D
  Duplicate(db, 0.0f, both);
  for (int64_t s = 0; s < S; ++s) Add(db, db, rows[2 * s * P], both);
  partialQue_.FreeTensor(rows);
}

// The HxW split after SyncAll: the loads of the first group this core owns (it runs the
// group's task (0, g * D, 0)) are issued first, then the dx passes run, then the owned groups'
// dgamma/dbeta are summed (rows in (n, s) order, into row 0) and stored.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::SlicedAfterSyncAll(int64_t first, int64_t count) {
  const int64_t perGroup = t_->D * t_->hwSlices;  // tasks of sample 0 per group
  const int64_t gEnd = (first + count + perGroup - 1) / perGroup;
  int64_t g = (first + perGroup - 1) / perGroup;
  const int64_t ownedEnd = (gEnd < t_->G) ? gEnd : t_->G;
  // N == 1 with dx: the owners store from their dx tasks' sums (ChannelDxTask)
  const bool stats = (t_->dgammaRequired != 0 || t_->dbetaRequired != 0) && (t_->N > 1 || t_->dxRequired == 0);
  const int64_t R = t_->N * t_->hwSlices;
  LocalTensor<float> rows;
  if (stats && g < ownedEnd) {
    rows = ownerQue_.AllocTensor<float>();
    IssuePartialRows(rows, 0, R, g * t_->D);
    ownerQue_.EnQue(rows);
  }
  if (t_->dxRequired != 0) {
    for (int64_t task = first; task < first + count; ++task) ChannelDxTask(task, 1, first + count);
  }
  for (; stats && g < ownedEnd; ++g) {
    if (g != (first + perGroup - 1) / perGroup) {
      rows = ownerQue_.AllocTensor<float>();
      IssuePartialRows(rows, 0, R, g * t_->D);
      ownerQue_.EnQue(rows);
    }
    rows = ownerQue_.DeQue<float>();
    const int64_t P = t_->statElems;
    const int32_t both = static_cast<int32_t>(P + t_->D);  // row 0's db and dg (interleaved rows)
    for (int64_t r = 1; r < R; ++r) Add(rows, rows, rows[2 * r * P], both);
    StoreGroupStats(g, rows, rows[P]);
    ownerQue_.FreeTensor(rows);
  }
}

template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::StoreGroupStats(int64_t g, const LocalTensor<float> &db,
                                                                          const LocalTensor<float> &dg) {
  if (t_->dbetaRequired != 0) StoreFromFloat(outQue_, dbetaGm_, g * t_->D, t_->D, db, 0.0f, false);
  if (t_->dgammaRequired != 0) StoreFromFloat(outQue_, dgammaGm_, g * t_->D, t_->D, dg, 0.0f, false);
}

// ownStats (N == 1): dbeta and dgamma of channels [c, c + rows) are the task's own sums, stored as
// stage 2 stores them: 0 + sum (stage 2's add of its one row; -0 becomes +0) and its store's + 0,
// the same rounding (fp32: sum + 0 into the staging buffer; 16-bit: into FloatBuf(2) and
// FloatBuf(1), the sums pass's scratch, then cast), so the bits are stage 2's. Both arrays in one
// staging buffer (dgamma from AlignUp(rows, 16)): one queue turn a task, not two, so a task waits
// only for the stores of the task two back to land. db is left as the workspace store reads it.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::StoreOwnStats(int64_t c, int64_t rows,
                                                                        const LocalTensor<float> &db) {
  const int32_t count = static_cast<int32_t>(rows);
  const int64_t second = AlignUp(rows, 16);  // 32-byte aligned in U and in fp32
  const bool both = t_->dbetaRequired != 0 && t_->dgammaRequired != 0;
  const LocalTensor<float> first = t_->dbetaRequired != 0 ? db : db[t_->statElems];
  LocalTensor<U> staging = outQue_.template AllocTensor<U>();
  if constexpr (IsSameType<U, float>::value) {
    Adds(staging, first, 0.0f, count);
    if (both) Adds(staging[second], db[t_->statElems], 0.0f, count);
  } else {
    LocalTensor<float> sum = FloatBuf(2);
    LocalTensor<float> sumDg = FloatBuf(1);
    Adds(sum, first, 0.0f, count);
    if (both) Adds(sumDg, db[t_->statElems], 0.0f, count);
    Cast(staging, sum, RoundMode::CAST_RINT, static_cast<uint32_t>(count));
    if (both) Cast(staging[second], sumDg, RoundMode::CAST_RINT, static_cast<uint32_t>(count));
  }
  outQue_.EnQue(staging);
  staging = outQue_.template DeQue<U>();
  const DataCopyExtParams copy{1, static_cast<uint32_t>(rows * sizeof(U)), 0, 0, 0};
  if (t_->dbetaRequired != 0) DataCopyPad(dbetaGm_[c], staging, copy);
  if (t_->dgammaRequired != 0) DataCopyPad(dgammaGm_[c], staging[both ? second : 0], copy);
  outQue_.FreeTensor(staging);
}

}  // namespace GroupNormGradMsKernel

#endif  // GROUP_NORM_GRAD_MS_SPLIT_H
