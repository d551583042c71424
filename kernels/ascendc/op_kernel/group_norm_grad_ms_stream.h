// Member definitions of KernelGroupNormGradMs (group_norm_grad_ms.h): the load stream, the
// (dy, x) loads of a core's tasks in the order the compute takes them (see the class's
// "the load stream" section for the item layout), and the loads of mean/rstd and of a group's
// gamma/beta.
// Included by group_norm_grad_ms.h after the class; not a header of its own.
#ifndef GROUP_NORM_GRAD_MS_STREAM_H
#define GROUP_NORM_GRAD_MS_STREAM_H

namespace GroupNormGradMsKernel {

template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::StreamBegin(int64_t first, int64_t count, bool byChannel,
                                                                   bool sumsPass, bool dxPass, bool dxPassAfterAll) {
  BeginHeldScope();
  streamDxCount_ = 0;
  streamHeldPerTask_ = !dxPassAfterAll;
  streamFirst_ = first;
  streamDxAfterAll_ = dxPassAfterAll;
  streamTask_ = first;
  streamEnd_ = first + count;
  streamByChannel_ = byChannel;
  streamSums_ = sumsPass;
  streamDx_ = dxPass;
  streamPass_ = sumsPass ? 0 : 1;
  streamItem_ = 0;
  inFlight_ = 0;
  Pump();
  // rowsGather's tables (once a core: one stream a core), after the first loads are issued: the scalar
  // unit's ~450 table writes (~1 us) then pass within their latency instead of before them
  if (t_->rowsGather != 0) BuildRowsGatherTables();
}

template <typename T, typename U, bool SILU>
__aicore__ inline bool KernelGroupNormGradMs<T, U, SILU>::StreamNext(int64_t *offset, int64_t *len, int64_t *rows) {
  const int64_t cpi = t_->channelsPerItem;
  while (streamTask_ < streamEnd_) {
    if (streamItem_ < ItemsPerPass(streamTask_) && streamPass_ == 1 && streamDxCount_++ < t_->heldItems) {
      ++streamItem_;  // a held item: its dx pass takes it from UB
      continue;
    }
    if (streamItem_ < ItemsPerPass(streamTask_)) {
      const int64_t slice = TaskSlice(streamTask_);
      const int64_t chunks = SliceChunks(slice);
      const int64_t group = GroupIndex(streamTask_);
      const int64_t channel = streamTask_ / t_->hwSlices;  // channel split: n * C + c
      const int64_t n = streamByChannel_ ? channel / t_->C : group / t_->G;
      const int64_t c0 = streamByChannel_ ? channel % t_->C : (group % t_->G) * t_->D;
      const int64_t local = (streamItem_ / chunks) * cpi;
      const int64_t chunk = streamItem_ % chunks;
      *offset = (n * t_->C + c0 + local) * t_->HxW + slice * t_->sliceElems + chunk * t_->chunkElems;
      *len = ItemLen(slice, chunk);
      const int64_t channels = TaskChannels(streamTask_);
      *rows = (channels - local < cpi) ? channels - local : cpi;
      ++streamItem_;
      return true;
    }
    streamItem_ = 0;
    if (streamPass_ == 0 && streamDx_) {
      streamPass_ = 1;
    } else {
      streamTask_ += streamByChannel_ ? ChannelRun(streamTask_, streamEnd_) : 1;  // a run of channel tasks
      streamPass_ = streamSums_ ? 0 : 1;
      if (streamHeldPerTask_) streamDxCount_ = 0;  // the next task holds its own first items
    }
    if (streamTask_ == streamEnd_ && streamDxAfterAll_) {  // the dx passes follow all sums passes
      streamDxAfterAll_ = false;
      streamSums_ = false;
      streamPass_ = 1;
      streamTask_ = streamFirst_;
    }
  }
  return false;
}

template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::Pump() {
  if (t_->loadBuffers == MAX_LOAD_BUFFERS) {
    PumpInto(dyQue3_, xQue3_);
  } else {
    PumpInto(dyQue_, xQue_);
  }
}

template <typename T, typename U, bool SILU>
template <typename Q>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::PumpInto(Q &dyQ, Q &xQ) {
  const bool aligned = t_->copyAligned != 0;
  int64_t offset;
  int64_t len;
  int64_t rows;
  while (inFlight_ < t_->loadBuffers && StreamNext(&offset, &len, &rows)) {
    if (RunPass(streamPass_ == 1)) {  // the rows as one run: one burst, not one a row
      IssueLoad(dyQ, dyGm_, offset, rows * len, aligned, 1);
      IssueLoad(xQ, xGm_, offset, rows * len, aligned, 1);
    } else {
      IssueLoad(dyQ, dyGm_, offset, len, aligned, rows);
      IssueLoad(xQ, xGm_, offset, len, aligned, rows);
    }
    ++inFlight_;
  }
}

// rowsGather: spread[r * P + c] = 4 (r L + min(c, L - 1)) over the K elements of a load buffer
// (L = HxW, P = residentStride; group_norm_ms_gather.h), and for the dx pass on runs (DxOnRuns)
// rowOf[j] = 4 (j / L) over an item's channelsPerItem rows (RowTable()), the scalar heads ordered
// before the vector unit's doublings.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::BuildRowsGatherTables() {
  const int64_t L = t_->HxW;
  const int64_t P = t_->residentStride;
  const int64_t rowLen = DxOnRuns() ? t_->channelsPerItem * L : 0;
  LocalTensor<int32_t> spread = gatherBuf_.Get<int32_t>();
  LocalTensor<int32_t> rowOf = RowTable().template ReinterpretCast<int32_t>();
  GroupNormMsGather::WriteTableHeads(spread, rowOf, 0, L, P);  // spread only (no pack table)
  GroupNormMsGather::WriteRowTableHead(rowOf, rowLen, L);
  Sync<HardEvent::S_V>();
  GroupNormMsGather::GrowTables(spread, t_->chunkElems, rowOf, 0, L, P);
  GroupNormMsGather::GrowRowTable(rowOf, rowLen, L);
}

// rowsGather: the fp32 run in RowsRun() of the item whose rows span `span` elements of UB, into
// those rows of dst (a pure move: the rows hold the values a padded load would have given).
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::SpreadRun(const LocalTensor<float> &dst, int64_t span) {
  const int64_t rows = (span - t_->HxW) / t_->residentStride + 1;
  Gather(dst, RowsRun(), gatherBuf_.Get<uint32_t>(), 0, static_cast<uint32_t>(rows * t_->residentStride));
}


// Takes the next item of the sums pass (dxPass false) or of the dx pass: dy as fp32 into dyF,
// (x - mean) into xF; then refills the stream. Held items (the first heldItems items of a
// task's sums pass, or of a core's with the channel split, whose dx pass follows SyncAll) are
// also copied as loaded into heldBuf_, and their dx pass converts that copy: the same
// instructions on the same values, so holding changes the GM traffic, never the results.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::TakeItem(int32_t len, float mean, const LocalTensor<float> &dyF,
                                                                const LocalTensor<float> &xF, bool dxPass,
                                                                int64_t dxItem) {
  const int64_t index = !dxPass ? takeSums_++ : (dxItem >= 0 ? dxItem : takeDx_++);
  if (index < t_->heldItems && dxPass) {
    if (DxOnRuns()) {  // the held copy is the sums pass's run as loaded, computed on as it is
      RowAsFloat<T>(dyF, HeldDy(index), RunElems(len));
      CentredX<T>(HeldX(index), RunElems(len), mean, xF);
      return;
    }
    if (t_->rowsGather != 0) {  // the held copy is the sums pass's run as loaded
      RowAsFloat<T>(RowsRun(), HeldDy(index), RunElems(len));
      SpreadRun(dyF, len);
      CentredX<T>(HeldX(index), RunElems(len), mean, RowsRun());
      SpreadRun(xF, len);
      return;
    }
    RowAsFloat<T>(dyF, HeldDy(index), len);
    CentredX<T>(HeldX(index), len, mean, xF);
    return;  // nothing was in flight for it
  }
  if (t_->loadBuffers == MAX_LOAD_BUFFERS) {
    TakeLoaded(dyQue3_, xQue3_, index, len, mean, dyF, xF, dxPass);
  } else {
    TakeLoaded(dyQue_, xQue_, index, len, mean, dyF, xF, dxPass);
  }
  --inFlight_;
  Pump();
}

template <typename T, typename U, bool SILU>
template <typename Q>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::TakeLoaded(Q &dyQ, Q &xQ, int64_t index, int32_t len,
                                                                  float mean, const LocalTensor<float> &dyF,
                                                                  const LocalTensor<float> &xF, bool dxPass) {
  // rowsGather's sums pass: a run, made fp32 in RowsRun() and spread into the rows; the dx pass of
  // RUNS_BOTH_PASSES: a run, made fp32 in dyF and xF as it is (DxOnRuns)
  const bool runs = RunPass(dxPass);
  const bool gather = runs && !dxPass;
  const int64_t run = runs ? RunElems(len) : len;
  if (index >= t_->heldItems) {
    TakeAsFloat<T>(dyQ, run, gather ? RowsRun() : dyF);
    if (gather) SpreadRun(dyF, len);
    TakeCentredX<T>(xQ, run, mean, gather ? RowsRun() : xF);
    if (gather) SpreadRun(xF, len);
    return;
  }
  // a held item's sums pass: UB -> UB copies run on the vector pipe (ops-nn
  // rms_norm_whole_reduce_sum.h orders them with PIPE_V)
  const uint32_t copy = static_cast<uint32_t>(AlignUp(run, 32 / static_cast<int64_t>(sizeof(T))));
  LocalTensor<T> staging = dyQ.template DeQue<T>();
  DataCopy(HeldDy(index), staging, copy);
  RowAsFloat<T>(gather ? RowsRun() : dyF, staging, run);
  dyQ.FreeTensor(staging);
  if (gather) SpreadRun(dyF, len);
  staging = xQ.template DeQue<T>();
  DataCopy(HeldX(index), staging, copy);
  CentredX<T>(staging, run, mean, gather ? RowsRun() : xF);
  xQ.FreeTensor(staging);
  if (gather) SpreadRun(xF, len);
}

// mean/rstd of group i, from a window of statWindowElems groups loaded into UB (one DMA for
// each of mean and rstd) the first time a group outside the current window is asked for:
// a core's groups are consecutive, so this is one load per core in all but huge launches.
// The window is issued ahead of the task's data loads (MTE2 runs its copies in order) and
// waited for by the first scalar read of it.
template <typename T, typename U, bool SILU>
__aicore__ inline float KernelGroupNormGradMs<T, U, SILU>::Stat(bool isMean, int64_t i) {
  if (i < statFirst_ || i >= statFirst_ + statCount_) IssueStatWindow(i);
  if (statPending_) {
    WaitFlag<HardEvent::MTE2_S>(statEvent_);  // the scalar reads of the window wait for both loads
    pipe_->ReleaseEventID<HardEvent::MTE2_S>(statEvent_);
    statPending_ = false;
  }
  return ToF32(statWindow_.Get<U>()[isMean ? 0 : t_->statWindowElems].GetValue(i - statFirst_));
}

template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::IssueStatWindow(int64_t first) {
  const int64_t groups = t_->N * t_->G;
  statFirst_ = first;
  statCount_ = (groups - first < t_->statWindowElems) ? groups - first : t_->statWindowElems;
  DataCopyExtParams copy{1, static_cast<uint32_t>(statCount_ * sizeof(U)), 0, 0, 0};
  DataCopyPadExtParams<U> pad{false, 0, 0, U{}};
  LocalTensor<U> window = statWindow_.Get<U>();
  DataCopyPad(window, meanGm_[first], copy, pad);
  DataCopyPad(window[t_->statWindowElems], rstdGm_[first], copy, pad);
  statEvent_ = pipe_->AllocEventID<HardEvent::MTE2_S>();  // reserved until Stat has waited
  SetFlag<HardEvent::MTE2_S>(statEvent_);
  statPending_ = true;
}

// SILU: gamma and beta of group g as fp32 arrays, readable by the scalar unit: both loads in
// one statQue_ buffer, so their DMA latencies overlap; nothing when they are already loaded
// (consecutive tasks, and the sums and dx passes of the channel split, mostly share a group).
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::LoadAffine(int64_t g) {
  if (g == affineGroup_) return;
  affineGroup_ = g;
  const int64_t P = t_->statElems;
  LocalTensor<U> staging = statQue_.template AllocTensor<U>();
  LoadRow(staging, gammaGm_, g * t_->D, t_->D);
  LoadRow(staging[P], betaGm_, g * t_->D, t_->D);
  statQue_.EnQue(staging);
  staging = statQue_.template DeQue<U>();
  RowAsFloat<U>(StatArray(2), staging, t_->D);
  RowAsFloat<U>(BetaArray(), staging[P], t_->D);
  statQue_.FreeTensor(staging);
  Sync<HardEvent::V_S>();  // AffineT and ChannelDx read gamma/beta with GetValue
}

// affineAhead: gamma (+ beta) of group g into a gammaQue_ buffer, issued a task ahead of its use
// (Process, GroupTask) so that its DMA latency passes while the current task runs; g -1
// (AFFINE_TABLE): those of the core's groups (tableFirst_, tableRows_), rows statElems apart,
// once at the start of phase 1 (beta's G rows after gamma's).
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::IssueAffine(int64_t g) {
  LocalTensor<U> staging = gammaQue_.template AllocTensor<U>();
  if (g < 0) {
    LoadPaddedRows(staging, gammaGm_, tableFirst_ * t_->D, tableRows_, t_->D);
    if constexpr (SILU) {
      LoadPaddedRows(staging[t_->G * t_->statElems], betaGm_, tableFirst_ * t_->D, tableRows_, t_->D);
    }
  } else {
    LoadRow(staging, gammaGm_, g * t_->D, t_->D);
    if constexpr (SILU) LoadRow(staging[t_->statElems], betaGm_, g * t_->D, t_->D);
  }
  gammaQue_.EnQue(staging);
}

// ... and taken as the fp32 arrays of group g. SILU: AffineT's scalar reads of them wait for
// these casts (affineUnsynced_, in ChannelSums), after the task's first loads are issued.
// AFFINE_TABLE: group g's rows of the table, dequeued at its first use and kept (never freed:
// nothing allocates from gammaQue_ again).
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::TakeAffine(int64_t g) {
  const int64_t P = t_->statElems;
  if (t_->affineAhead == AFFINE_TABLE) {
    if (!affineTableTaken_) affineTable_ = gammaQue_.template DeQue<U>();
    affineTableTaken_ = true;
    RowAsFloat<U>(StatArray(2), affineTable_[(g - tableFirst_) * P], t_->D);
    if constexpr (SILU) RowAsFloat<U>(BetaArray(), affineTable_[(t_->G + g - tableFirst_) * P], t_->D);
  } else {
    LocalTensor<U> staging = gammaQue_.template DeQue<U>();
    RowAsFloat<U>(StatArray(2), staging, t_->D);
    if constexpr (SILU) RowAsFloat<U>(BetaArray(), staging[P], t_->D);
    gammaQue_.FreeTensor(staging);
  }
  gammaGroup_ = g;
  affineGroup_ = g;
  affineUnsynced_ = SILU;
}

}  // namespace GroupNormGradMsKernel

#endif  // GROUP_NORM_GRAD_MS_STREAM_H
