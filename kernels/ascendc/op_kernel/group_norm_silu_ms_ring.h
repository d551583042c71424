// Member definitions of KernelGroupNormSiluMs (group_norm_silu_ms.h) for the part ring of mode
// 1: whole groups (sliceCount == 1) of whole-row chunks, loaded in parts of partItems chunks
// (one DataCopyPad of the part's rows each) into xBuffers slots of one UB buffer.
//
// The block's part loads form one stream in the order the compute takes them: each task's
// parts 0..P-1 (pass 1: statistics), then its parts R..P-1 again (pass 2: y), then the next
// task's. A load is issued as soon as a slot is free, so the next group's parts load while this
// group's pass 2 frees its slots. Parts 0..R-1 stay in their slots from pass 1 to pass 2: with
// R == P x is read once; with R < P (a group larger than the UB) only the rest is read twice.
// The chunks, and so the arithmetic, are those of every other mode-1 plan with the same chunk
// size: the ring changes where x comes from, not the bits.
//
// Slots are taken in any order (a resident part holds its slot while later parts stream
// through the others), so the hand-overs are explicit rather than a TQue's: each load sets its
// own MTE2 -> V event (an id reserved by AllocEventID until the consumer's WaitFlag), and a
// slot that held a part before is loaded again only after a V -> MTE2 wait, which orders the
// load after every vector read of the old part (those were issued before the slot was freed).
// With RingRows a part's rows are one batch for the vector unit (group_norm_silu_ms_ring_rows.h).
// Included by group_norm_silu_ms.h after the class; not a header of its own.
#ifndef GROUP_NORM_SILU_MS_RING_H
#define GROUP_NORM_SILU_MS_RING_H

namespace GroupNormSiluMsKernel {

template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::RingBegin(int64_t first, int64_t end) {
  ringTask_ = first;
  ringEnd_ = end;
  ringPass_ = 0;
  ringPart_ = 0;
  ringHead_ = 0;
  ringQueued_ = 0;
  ringFree_ = 1U;  // the first part's load, then the block's gamma/beta, then the other slots
  ringUsed_ = 0;
  RingFill();
  IssueBlockCoefs(first, end);
  ringFree_ |= ((1U << static_cast<uint32_t>(t_->xBuffers)) - 1U) & ~1U;
  RingFill();
}

// Issues the stream's next part loads while a slot is free (and, while the block's gamma/beta
// loads hold two of the 8 MTE2 -> V event ids, no more than the other six are in flight).
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::RingFill() {
  const int64_t ids = coefsPending_ ? MAX_RING_SLOTS - 2 : MAX_RING_SLOTS;
  while (ringFree_ != 0 && ringTask_ < ringEnd_ && ringQueued_ < ids) {
    int64_t slot = 0;
    while ((ringFree_ & (1U << slot)) == 0) ++slot;
    ringFree_ &= ~(1U << slot);
    if ((ringUsed_ & (1U << slot)) != 0) Sync<HardEvent::V_MTE2>();  // the old part has been read
    ringUsed_ |= 1U << slot;
    const int64_t rowFirst = ringPart_ * t_->partItems * t_->rowsPerItem;
    const int64_t rowEnd = PartItemEnd(ringPart_) * t_->rowsPerItem;
    const int64_t rows = (rowEnd < t_->rows ? rowEnd : t_->rows) - rowFirst;
    const DataCopyExtParams copy = RowsCopy<T>(rows, t_->rowLen);
    DataCopyPadExtParams<T> pad{false, 0, 0, T{}};
    DataCopyPad(ringBuf_.Get<T>()[slot * t_->xBufferElems], xGm_[ringTask_ * groupElems_ + rowFirst * t_->rowLen],
                copy, pad);
    ringEvent_[slot] = pipe_->AllocEventID<HardEvent::MTE2_V>();
    SetFlag<HardEvent::MTE2_V>(static_cast<event_t>(ringEvent_[slot]));
    ringQueue_[(ringHead_ + ringQueued_) % MAX_RING_SLOTS] = slot;
    ++ringQueued_;
    if (++ringPart_ < t_->ringParts) continue;
    if (ringPass_ == 0 && t_->ringResident < t_->ringParts) {  // pass 2 reads the other parts again
      ringPass_ = 1;
      ringPart_ = t_->ringResident;
    } else {
      ringPass_ = 0;
      ringPart_ = 0;
      ++ringTask_;
    }
  }
}

// The slot of the stream's oldest load, once it has landed.
template <typename T, typename U>
__aicore__ inline int64_t KernelGroupNormSiluMs<T, U>::RingTake() {
  const int64_t slot = ringQueue_[ringHead_];
  ringHead_ = (ringHead_ + 1) % MAX_RING_SLOTS;
  --ringQueued_;
  WaitFlag<HardEvent::MTE2_V>(static_cast<event_t>(ringEvent_[slot]));
  pipe_->ReleaseEventID<HardEvent::MTE2_V>(ringEvent_[slot]);
  return slot;
}

// A slot whose part has been read by every vector instruction that needs it (all issued).
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::RingRelease(int64_t slot) {
  ringFree_ |= 1U << slot;
  RingFill();
}

// Chunk `item` of the part in `slot` as fp32.
template <typename T, typename U>
__aicore__ inline LocalTensor<float> KernelGroupNormSiluMs<T, U>::RingItem(int64_t slot, int64_t part, int64_t item,
                                                                        int64_t len) {
  const int64_t row = (item - part * t_->partItems) * t_->rowsPerItem;
  return AsFloat(ringBuf_.Get<T>()[slot * t_->xBufferElems + row * t_->rowPitch], len);
}

// A whole group: the statistics of its parts in order (the first R kept), then y.
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::RingTask(int64_t task) {
  const float shift = TakeHead();  // (issued by Process, or by the block's previous task)
  if (task + 1 < blockEnd_) IssueHead(task + 1);
  ChanCascade stats;
  stats.Reset();
  for (int64_t part = 0; part < t_->ringParts; ++part) {
    const int64_t slot = RingTake();
    if (RingRows()) {
      const int64_t rows = PartItemEnd(part) - part * t_->partItems;
      RowsPartStats(RingItem(slot, part, part * t_->partItems, rows * t_->rowPitch), rows, shift, &stats);
    }
    for (int64_t item = part * t_->partItems; item < PartItemEnd(part) && !RingRows(); ++item) {
      const int64_t len = ItemLen(item);
      ItemStats(RingItem(slot, part, item, len), len, shift, &stats);
    }
    if (part < t_->ringResident) {
      ringResident_[part] = slot;
    } else {
      RingRelease(slot);
    }
  }
  const ChunkStats total = stats.Total();
  const float rstd = GroupRstd(task, shift, total, true);
  const ItemCoefs k{total.scaled ? shift * SCALE_DOWN : shift, total.mean, rstd, total.scaled};
  coefChannel_ = -1;
  if (task + 1 == blockEnd_) FlushStats();  // the block's last mean/rstd ahead of its y (ResidentTask's why)
  if (RingRows()) RowsCoefTable(task, k);
  for (int64_t part = 0; part < t_->ringParts; ++part) {
    const int64_t slot = part < t_->ringResident ? ringResident_[part] : RingTake();
    if (RingRows()) {
      const int64_t first = part * t_->partItems;
      const int64_t rows = PartItemEnd(part) - first;
      RowsPartOutput(task, first, RingItem(slot, part, first, rows * t_->rowPitch), rows, k);
    }
    for (int64_t item = part * t_->partItems; item < PartItemEnd(part) && !RingRows(); ++item) {
      const int64_t len = ItemLen(item);
      ItemOutput(task, item, RingItem(slot, part, item, len), len, k, ItemsPerGroup());
    }
    RingRelease(slot);
  }
}

}  // namespace GroupNormSiluMsKernel

#endif  // GROUP_NORM_SILU_MS_RING_H
