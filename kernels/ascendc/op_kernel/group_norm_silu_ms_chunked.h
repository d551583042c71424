// Member definitions of KernelGroupNormSiluMs (group_norm_silu_ms.h) for mode 1 (chunked):
// the chunk load stream, per-chunk statistics combined by ChanCascade, y in a second pass, and
// the split groups' slice statistics through the workspace around SyncAll.
// Included by group_norm_silu_ms.h after the class; not a header of its own.
#ifndef GROUP_NORM_SILU_MS_CHUNKED_H
#define GROUP_NORM_SILU_MS_CHUNKED_H

namespace GroupNormSiluMsKernel {

// The block's loads form one stream over its tasks, each task's items in passes
// firstPass..lastPass (0: statistics, 1: y): task by task with both passes inside (a whole
// group per task), or pass by pass over all tasks (`passMajor`: split groups, whose pass 1
// follows SyncAll, so the first y loads are in flight across it). xBuffers loads are in flight
// ahead of the compute (a chunk's buffer is freed as soon as it is converted to fp32, so that
// many buffers hold them): two, or four in the deep stream of short chunks (DeepStream).
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::StreamBegin(int64_t first, int64_t end, int64_t firstPass,
                                                             int64_t lastPass, bool passMajor) {
  streamFirst_ = first;
  streamTask_ = first;
  streamEnd_ = end;
  streamFirstPass_ = firstPass;
  streamLastPass_ = lastPass;
  streamPass_ = firstPass;
  streamPassMajor_ = passMajor;
  streamItem_ = TaskFirstItem(first);
  for (int64_t k = 0; k < t_->xBuffers && streamTask_ < streamEnd_; ++k) StreamIssue();
}

template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::StreamIssue() {
  const int64_t offset = ItemOffset(TaskGroup(streamTask_), streamItem_);
  if (DeepStream()) {
    IssueRows(xDeepQue_, xGm_, offset, 1, ItemLen(streamItem_));
  } else {
    IssueRows(xAheadQue_, xGm_, offset, 1, ItemLen(streamItem_));
  }
  if (++streamItem_ < TaskEndItem(streamTask_)) return;
  if (streamPassMajor_) {
    if (++streamTask_ == streamEnd_ && streamPass_ < streamLastPass_) {
      ++streamPass_;
      streamTask_ = streamFirst_;
    }
  } else if (streamPass_ < streamLastPass_) {
    ++streamPass_;
  } else {
    ++streamTask_;
    streamPass_ = streamFirstPass_;
  }
  streamItem_ = TaskFirstItem(streamTask_);
}

// The next chunk as fp32 in XF(); issues the load after it.
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::TakeChunk(int64_t len) {
  if (DeepStream()) {
    TakeAsFloat<T>(xDeepQue_, len, XF());
  } else {
    TakeAsFloat<T>(xAheadQue_, len, XF());
  }
  if (streamTask_ < streamEnd_) StreamIssue();
}

// A staged task's x into the next x buffer: a whole group as one copy of its rows (they land
// at rowPitch), a slice as one copy per chunk (at a pitch of chunkElems).
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::IssueStage(int64_t task) {
  const int64_t group = TaskGroup(task);
  if (t_->sliceCount == 1) {
    IssueRows(xQue_, xGm_, group * groupElems_, t_->rows, t_->rowLen);
    return;
  }
  if (StagedRows()) {  // the slice's rows are consecutive in GM: one copy lands them at rowPitch
    IssueRows(xQue_, xGm_, ItemOffset(group, TaskFirstItem(task)), TaskEndItem(task) - TaskFirstItem(task),
              t_->rowLen);
    return;
  }
  LocalTensor<T> stage = xQue_.template AllocTensor<T>();
  DataCopyPadExtParams<T> pad{false, 0, 0, T{}};
  for (int64_t item = TaskFirstItem(task); item < TaskEndItem(task); ++item) {
    DataCopyExtParams copy{1, static_cast<uint32_t>(ItemLen(item) * sizeof(T)), 0, 0, 0};
    DataCopyPad(stage[StageOffset(task, item)], xGm_[ItemOffset(group, item)], copy, pad);
  }
  xQue_.EnQue(stage);
}

// A block's one staged slice of row batches into an x buffer in up to MAX_STAGE_PIECES copies of
// whole batches, each with its own MTE2 -> V event, so that the first batch's statistics wait for
// its piece alone, not for the slice (64 KB: 8x512x255 G2 fp16). The block's gamma/beta load right
// after the first piece (the first statistics read them). The buffer is freed after the y pass.
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::IssueStagePieces(int64_t task, int64_t end) {
  stage_ = xQue_.template AllocTensor<T>();
  const int64_t group = TaskGroup(task);
  const int64_t first = TaskFirstItem(task);
  const int64_t rows = TaskEndItem(task) - first;
  const int64_t batches = (rows + t_->partItems - 1) / t_->partItems;
  stagePieceBatches_ = (batches + MAX_STAGE_PIECES - 1) / MAX_STAGE_PIECES;
  const int64_t pieceRows = stagePieceBatches_ * t_->partItems;
  stagePieces_ = (rows + pieceRows - 1) / pieceRows;
  DataCopyPadExtParams<T> pad{false, 0, 0, T{}};
  for (int64_t piece = 0; piece < stagePieces_; ++piece) {
    const int64_t row0 = piece * pieceRows;
    const int64_t n = rows - row0 < pieceRows ? rows - row0 : pieceRows;
    DataCopyPad(stage_[StageOffset(task, first + row0)], xGm_[ItemOffset(group, first + row0)],
                RowsCopy<T>(n, t_->rowLen), pad);
    stageEvent_[piece] = pipe_->AllocEventID<HardEvent::MTE2_V>();
    SetFlag<HardEvent::MTE2_V>(static_cast<event_t>(stageEvent_[piece]));
    if (piece == 0) IssueBlockCoefs(task, end);
  }
}

// Item `item` of `task` as fp32: from the task's x buffer when staged (the buffer itself in
// fp32), else the stream's next load (in XF(): its buffer goes back to the queue at once).
template <typename T, typename U>
__aicore__ inline LocalTensor<float> KernelGroupNormSiluMs<T, U>::TakeItem(int64_t task, int64_t item, int64_t len) {
  if (staged_) return AsFloat(stage_[StageOffset(task, item)], len);
  TakeChunk(len);
  return XF();
}

// A chunk's two-pass statistics of src - shift (src is left as it is; Tmp() is scratch), in the
// units of src (`scaled`); *inRange is false when a sum left the safe range.
template <typename T, typename U>
__aicore__ inline ChunkStats KernelGroupNormSiluMs<T, U>::ChunkMoments(const LocalTensor<float> &src, int64_t len,
                                                                      float shift, bool scaled, bool *inRange) {
  LocalTensor<float> tmp = Tmp();
  const int32_t n = static_cast<int32_t>(len);
  const float nb = static_cast<float>(len);
  if (shift == 0.0f) {  // (ChunkedShift) from x itself: sum x and sum x^2, kept where mean^2 <= var
    // (at most a factor 2 cancelled), else the two passes below: x - mean would round every x of
    // one binade with the same signed error, x^2 rounds on its own
    Mul(tmp, src, src, n);
    const float sum = SumRows(src, 1, len);
    TakeBlockCoefs();  // the block's first chunk: its gamma/beta have landed by now
    const float squares = SumRows(tmp, 1, len);
    ChunkStats direct;
    if (MomentsFromSums(sum, squares, nb, scaled, &direct)) {
      *inRange = true;
      return direct;
    }
  }
  Adds(tmp, src, -shift, n);
  const float sum = SumRows(tmp, 1, len);
  const float mb = sum / nb;
  Adds(tmp, tmp, -mb, n);
  Mul(tmp, tmp, tmp, n);
  TakeBlockCoefs();  // the block's first chunk: its gamma/beta have landed by now
  const float m2b = SumRows(tmp, 1, len);
  *inRange = InSafeRange(sum) && InSafeRange(m2b);
  return ChunkStats{nb, mb, m2b, scaled};
}

// A chunk's two-pass statistics of x - shift (x in src, fp32, left as it is) added to the
// cascade. A chunk whose sums leave the safe range is taken again from x * SCALE_DOWN.
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::ItemStats(const LocalTensor<float> &src, int64_t len, float shift,
                                                           ChanCascade *stats) {
  bool inRange = true;
  ChunkStats chunk = ChunkMoments(src, len, shift, false, &inRange);
  if (!inRange) {  // the rare path
    Muls(XF(), src, SCALE_DOWN, static_cast<int32_t>(len));
    chunk = ChunkMoments(XF(), len, shift * SCALE_DOWN, true, &inRange);
  }
  stats->Add(chunk);
}

// Pass 1 of a task: each chunk's statistics, combined pairwise.
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::SliceStats(int64_t task, float shift, ChanCascade *stats) {
  stats->Reset();
  if (staged_ && StagedRowBatches()) {  // batches of rows, each row's statistics added in order
    for (int64_t first = TaskFirstItem(task); first < TaskEndItem(task); first += t_->partItems) {
      const int64_t rows = TaskEndItem(task) - first < t_->partItems ? TaskEndItem(task) - first : t_->partItems;
      const int64_t batch = (first - TaskFirstItem(task)) / t_->partItems;
      if (stagePieces_ > 0 && batch % stagePieceBatches_ == 0) {  // the first batch of a piece: it has landed
        const int64_t piece = batch / stagePieceBatches_;
        WaitFlag<HardEvent::MTE2_V>(static_cast<event_t>(stageEvent_[piece]));
        pipe_->ReleaseEventID<HardEvent::MTE2_V>(stageEvent_[piece]);
        if (piece + 1 == stagePieces_) stagePieces_ = 0;
      }
      RowsPartStats(AsFloat(stage_[StageOffset(task, first)], rows * t_->rowPitch), rows, shift, stats);
    }
    return;
  }
  for (int64_t item = TaskFirstItem(task); item < TaskEndItem(task); ++item) {
    const int64_t len = ItemLen(item);
    ItemStats(TakeItem(task, item, len), len, shift, stats);
  }
}

// mean and rstd of a group from its combined statistics (recorded when `record`); returns the
// rstd that y uses, in the units of the statistics.
template <typename T, typename U>
__aicore__ inline float KernelGroupNormSiluMs<T, U>::GroupRstd(int64_t group, float shift, const ChunkStats &total,
                                                            bool record) {
  if (!total.scaled) {
    const float rstd = Rstd(total.m2 * invM_, t_->eps);
    if (record) RecordStats(group, shift + total.mean, rstd, false);
    return rstd;
  }
  const float rstd = Rstd(total.m2 * invM_, EpsScaled());
  if (record) RecordStats(group, (shift * SCALE_DOWN + total.mean) * SCALE_UP, rstd * SCALE_DOWN, false);
  return rstd;
}

// y = (x - shift) * a + b on `n` elements of one channel (a = rstd * gamma_c, b = beta_c -
// centre * a: the centring folded into the channel's shift, one Muls and one Adds), xF in place.
// x - shift is exact near the shift (Sterbenz), so a mean far larger than the spread costs y no
// digits; a and b are kept for the next chunk of the same channel.
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::ItemAffine(int64_t channel, const ItemCoefs &k,
                                                            const LocalTensor<float> &xF, int32_t n) {
  if (channel != coefChannel_) {
    coefA_ = k.rstd * ChannelGamma(channel);
    coefB_ = ChannelBeta(channel) - k.centre * coefA_;
    coefChannel_ = channel;
  }
  Muls(xF, xF, coefA_, n);
  Adds(xF, xF, coefB_, n);
}

// Pass 2 of one item (x in src, fp32): y in the units of the group's statistics, then its
// activation and its store (one copy per item, or per run of yRows rows).
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::ItemOutput(int64_t group, int64_t item,
                                                            const LocalTensor<float> &src, int64_t len,
                                                            const ItemCoefs &k, int64_t taskEnd) {
  const int64_t g = group % t_->G;
  const int32_t n = static_cast<int32_t>(len);
  LocalTensor<float> xF = XF();
  if (k.scaled) {  // the rare path
    Muls(xF, src, SCALE_DOWN, n);
    Adds(xF, xF, -k.shiftIn, n);
  } else if (!xfShifted_) {  // (else a split block's chunk, shifted before SyncAll: SliceStatsTask)
    Adds(xF, src, -k.shiftIn, n);
  }
  if (t_->vectorCoef != 0) {  // gamma/beta along the row: this chunk's slice of them
    const int64_t start = (item % t_->chunksPerRow) * t_->chunkElems;
    IssueRows(gammaQue_, gammaGm_, g * t_->D + start, 1, len);
    IssueRows(betaQue_, betaGm_, g * t_->D + start, 1, len);
    Adds(xF, xF, -k.centre, n);  // centred without the rounding of the stored mean
    Muls(xF, xF, k.rstd, n);
    TakeAsFloat<U>(gammaQue_, len, GammaF());
    TakeAsFloat<U>(betaQue_, len, BetaF());
    Mul(xF, xF, GammaF(), n);
    Add(xF, xF, BetaF(), n);
  } else if (t_->rowsPerItem == 1) {  // one channel (a row, or a chunk of one)
    ItemAffine(g * t_->D + item / t_->chunksPerRow, k, xF, n);
  } else {  // several whole rows (channels), contiguous in UB: every row's Muls, then every row's
    // Adds (one compiler V barrier between them, not one a row); a and b as ItemAffine's
    const int32_t rowLen = static_cast<int32_t>(t_->rowLen);
    const int64_t c0 = g * t_->D + item * t_->rowsPerItem;
    for (int64_t j = 0; j < ItemRows(item); ++j) {
      Muls(xF[j * t_->rowLen], xF[j * t_->rowLen], k.rstd * ChannelGamma(c0 + j), rowLen);
    }
    for (int64_t j = 0; j < ItemRows(item); ++j) {
      const float a = k.rstd * ChannelGamma(c0 + j);
      Adds(xF[j * t_->rowLen], xF[j * t_->rowLen], ChannelBeta(c0 + j) - k.centre * a, rowLen);
    }
  }
  if (t_->yRows == 1) {
    StoreRows(ItemOffset(group, item), ItemRows(item), len / ItemRows(item), len, xF);
    return;
  }
  if (yRunFirst_ < 0) {
    yRun_ = yQue_.template AllocTensor<T>();
    yRunFirst_ = item;
  }
  OutputY(xF, n, yRun_[(item - yRunFirst_) * t_->rowPitch]);
  if (item + 1 - yRunFirst_ == t_->yRows || item + 1 == taskEnd) {
    SendY(yRun_, ItemOffset(group, yRunFirst_), item + 1 - yRunFirst_, len);
    yRunFirst_ = -1;
  }
}

// Pass 2 of a task: y of its chunks (total.mean is mean - shift).
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::SliceOutput(int64_t task, float shift, const ChunkStats &total,
                                                             float rstd) {
  const ItemCoefs k{total.scaled ? shift * SCALE_DOWN : shift, total.mean, rstd, total.scaled};
  coefChannel_ = -1;
  xfShifted_ = xfShifted_ && !total.scaled;
  if (staged_ && StagedRowBatches() && !xfShifted_) {  // the group's a and b tables, then batches of rows
    RowsCoefTable(TaskGroup(task), k);
    for (int64_t first = TaskFirstItem(task); first < TaskEndItem(task); first += t_->partItems) {
      const int64_t rows = TaskEndItem(task) - first < t_->partItems ? TaskEndItem(task) - first : t_->partItems;
      RowsPartOutput(TaskGroup(task), first, AsFloat(stage_[StageOffset(task, first)], rows * t_->rowPitch), rows,
                     k);
    }
    return;
  }
  for (int64_t item = TaskFirstItem(task); item < TaskEndItem(task); ++item) {
    const int64_t len = ItemLen(item);
    ItemOutput(TaskGroup(task), item, xfShifted_ ? XF() : TakeItem(task, item, len), len, k, TaskEndItem(task));
  }
  xfShifted_ = false;
}

// A whole group in one block: both passes.
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::ChunkedTask(int64_t task) {
  const float shift = TakeHead();  // (issued by Process, or by the block's previous task)
  if (task + 1 < blockEnd_) IssueHead(TaskGroup(task + 1));
  ChanCascade stats;
  SliceStats(task, shift, &stats);
  const ChunkStats total = stats.Total();
  const float rstd = GroupRstd(TaskGroup(task), shift, total, true);
  if (task + 1 == blockEnd_) FlushStats();  // the block's last mean/rstd ahead of its y (ResidentTask's why)
  SliceOutput(task, shift, total, rstd);
}

// A whole group staged in UB: its load was issued ahead (with two x buffers, the next
// group's load is issued now and overlaps this one's compute); both passes read the buffer.
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::StagedTask(int64_t task, bool hasNext) {
  stage_ = xQue_.template DeQue<T>();
  staged_ = true;
  if (hasNext && t_->xBuffers > 1) IssueStage(task + 1);
  ChunkedTask(task);
  xQue_.FreeTensor(stage_);
  if (hasNext && t_->xBuffers == 1) IssueStage(task + 1);
}

// Split groups, before SyncAll: a slice's (count, mean, M2, scaled) to its workspace entry.
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::SliceStatsTask(int64_t task) {
  ChanCascade stats;
  // (the block's first head is issued by Process ahead of its x); kept for the y pass of the
  // block's last slice
  sliceShift_ = task == blockFirst_ ? TakeHead() : ChunkedShift(TaskGroup(task));
  SliceStats(task, sliceShift_, &stats);
  const ChunkStats total = stats.Total();
  LocalTensor<float> entry = sliceOutBuf_.Get<float>();
  if (entryInFlight_) Sync<HardEvent::MTE3_S>();  // the previous entry has left UB
  entry.SetValue(0, total.scaled ? -total.count : total.count);  // three scalar reads an entry after SyncAll
  entry.SetValue(1, total.mean);
  entry.SetValue(2, total.m2);
  Sync<HardEvent::S_MTE3>();
  DataCopyExtParams copy{1, static_cast<uint32_t>(SLICE_ENTRY_FLOATS * sizeof(float)), 0, 0, 0};
  DataCopyPad(wsGm_[task * FLOATS_PER_BLOCK], entry, copy);
  entryInFlight_ = true;
  // A block of one staged slice of one chunk (the usual split) keeps that chunk in UB across
  // SyncAll: its x - shift is taken now, while the entry's store and SyncAll run, not after them
  // (the y pass then starts at the scale; a group whose statistics end up scaled takes x again).
  const int64_t item = TaskFirstItem(task);
  if (staged_ && task == blockFirst_ && task + 1 == blockEnd_ && TaskEndItem(task) == item + 1) {
    const int64_t len = ItemLen(item);
    Adds(XF(), TakeItem(task, item, len), -sliceShift_, static_cast<int32_t>(len));
    xfShifted_ = true;
  }
}

// Split groups, after SyncAll: the group's slice statistics combined in slice order (the
// same on every block of the group, and the same tree as one block's cascade), then y.
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::SliceOutputTask(int64_t task) {
  const int64_t group = TaskGroup(task);
  const int64_t slices = t_->sliceCount;
  LocalTensor<float> entries = slicesInBuf_.Get<float>();
  // the group's entries are consecutive 32-byte rows of the workspace: one block of all of them
  // (one burst; the floats after each entry's four are read and not used)
  DataCopyExtParams copy{1, static_cast<uint32_t>(slices * FLOATS_PER_BLOCK * sizeof(float)), 0, 0, 0};
  DataCopyPadExtParams<float> pad{false, 0, 0, 0.0f};
  DataCopyPad(entries, wsGm_[group * slices * FLOATS_PER_BLOCK], copy, pad);
  Sync<HardEvent::MTE2_S>();
  ChanCascade stats;
  stats.Reset();
  for (int64_t s = 0; s < slices; ++s) {
    const uint32_t at = static_cast<uint32_t>(s * FLOATS_PER_BLOCK);
    const float count = entries.GetValue(at);
    stats.Add(ChunkStats{count < 0.0f ? -count : count, entries.GetValue(at + 1), entries.GetValue(at + 2),
                         count < 0.0f});
  }
  const ChunkStats total = stats.Total();
  const float shift = task + 1 == blockEnd_ ? sliceShift_ : ChunkedShift(group);
  const float rstd = GroupRstd(group, shift, total, task % slices == 0);
  FlushStats();  // the group's owner stores mean/rstd now, ahead of its y on the MTE3 queue
  SliceOutput(task, shift, total, rstd);
}

}  // namespace GroupNormSiluMsKernel

#endif  // GROUP_NORM_SILU_MS_CHUNKED_H
