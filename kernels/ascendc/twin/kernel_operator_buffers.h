// CPU twin, part of kernel_operator.h: tensors, buffers and queues. The TPosition values,
// LocalTensor / GlobalTensor, TQue, TBuf and TPipe with the rules kernel_operator.h lists
// under UB, Queues and GM (UB capacity of InitBuffer, 32-byte alignment, operands inside
// their buffer, queue depth and tensor life cycle, GM bounds), following the AscendC
// documentation of these classes.
#ifndef GNMS_TWIN_KERNEL_OPERATOR_BUFFERS_H
#define GNMS_TWIN_KERNEL_OPERATOR_BUFFERS_H

// Included by kernel_operator.h (after the parts it builds on); not a standalone header.

namespace AscendC {

enum class QuePosition { GM, VECIN, VECOUT, VECCALC };
using TPosition = QuePosition;

inline const char *PositionName(QuePosition p) {
  switch (p) {
    case QuePosition::GM: return "GM";
    case QuePosition::VECIN: return "VECIN";
    case QuePosition::VECOUT: return "VECOUT";
    case QuePosition::VECCALC: return "VECCALC";
  }
  return "?";
}

// ---------------------------------------------------------------- UB buffers
namespace detail {

enum class SlotState { kFree, kAllocated, kQueued, kBuf, kDead };

// One UB buffer: a queue buffer or a TBuf. `gen` changes on every AllocTensor,
// FreeTensor and Reset, so stale LocalTensor copies are detected.
struct Slot {
  uint32_t addr = 0;
  uint32_t bytes = 0;
  SlotState state = SlotState::kFree;
  uint32_t gen = 0;
  const char *owner = "";
  QuePosition pos = QuePosition::VECCALC;
  // A queue buffer's events (kernel_tquebind_impl.h): EnQue allocates an id of the
  // producer -> consumer event from the TPipe's pool and sets it, DeQue waits and releases
  // it; FreeTensor allocates and sets consumer -> producer, AllocTensor (or TPipe::Reset)
  // waits and releases. -1: none pending.
  int producer = 0;
  int consumer = 0;
  int enQueEvt = -1;
  int freeEvt = -1;
};

inline const char *StateName(SlotState s) {
  switch (s) {
    case SlotState::kFree: return "freed (FreeTensor was called)";
    case SlotState::kAllocated: return "allocated";
    case SlotState::kQueued: return "still in its queue (EnQue'd, not DeQue'd)";
    case SlotState::kBuf: return "a TBuf";
    case SlotState::kDead: return "released by TPipe::Reset";
  }
  return "?";
}

}  // namespace detail

template <typename T>
class LocalTensor {
 public:
  LocalTensor() = default;
  LocalTensor(detail::Slot *slot, uint32_t gen, uint32_t addr, uint32_t count)
      : slot_(slot), gen_(gen), addr_(addr), count_(count) {}

  LocalTensor operator[](uint32_t offset) const {
    Check("LocalTensor[]", offset, false);
    return LocalTensor(slot_, gen_, addr_ + offset * sizeof(T), count_ - offset);
  }
  template <typename U>
  LocalTensor<U> ReinterpretCast() const {
    return LocalTensor<U>(slot_, gen_, addr_, static_cast<uint32_t>(count_ * sizeof(T) / sizeof(U)));
  }
  // Scalar accesses run on the S pipe (at once, also under deferred execution).
  T GetValue(uint32_t i) const {
    twin::Checkpoint();
    Check("GetValue", i + 1, false);
    twin::PipeModel &pipes = twin::Block().pipes;
    pipes.stats().scalarUb += 1;
    pipes.Issue(twin::kPipeS, "GetValue", {twin::UbRange{addr_ + i * static_cast<uint32_t>(sizeof(T)), sizeof(T)}},
                {}, nullptr, pipes.Cycles(pipes.cost().scalarUbCycles));
    T v;
    std::memcpy(&v, Raw() + i * sizeof(T), sizeof(T));
    return v;
  }
  void SetValue(uint32_t i, T v) const {
    twin::Checkpoint();
    Check("SetValue", i + 1, false);
    twin::PipeModel &pipes = twin::Block().pipes;
    pipes.stats().scalarUb += 1;
    uint8_t *dst = Raw() + i * sizeof(T);
    pipes.Issue(twin::kPipeS, "SetValue", {}, {twin::UbRange{addr_ + i * static_cast<uint32_t>(sizeof(T)), sizeof(T)}},
                [dst, v] { std::memcpy(dst, &v, sizeof(T)); }, pipes.Cycles(pipes.cost().scalarUbCycles));
  }
  uint32_t GetSize() const { return count_; }

  // ---- twin internals ----
  // Validates a use of `count` elements from the start; `vector` adds the alignment rule.
  void Check(const char *op, uint64_t count, bool vector) const {
    if (slot_ == nullptr) twin::Fail(std::string(op) + ": LocalTensor was never allocated");
    if (slot_->gen != gen_ || (slot_->state != detail::SlotState::kAllocated && slot_->state != detail::SlotState::kBuf)) {
      twin::Fail(std::string(op) + ": tensor of " + slot_->owner + " used while it is " +
                 (slot_->gen != gen_ && slot_->state == detail::SlotState::kAllocated
                      ? "reallocated (a stale copy of an earlier AllocTensor)"
                      : detail::StateName(slot_->state)));
    }
    if (count > count_) {
      twin::Fail(std::string(op) + ": " + std::to_string(count) + " elements from UB address " +
                 std::to_string(addr_) + " overrun the buffer of " + slot_->owner + " (" + std::to_string(count_) +
                 " elements left)");
    }
    if (vector && addr_ % kUbBlockBytes != 0) {
      twin::Fail(std::string(op) + ": UB operand address " + std::to_string(addr_) +
                 " is not 32-byte aligned (vector instructions and DataCopy need aligned UB addresses)");
    }
  }
  // `bytes` from this tensor's start stay inside the buffer (queue buffer or TBuf) it was taken from.
  void CheckInBuffer(const char *op, uint64_t bytes) const {
    Check(op, 0, false);
    if (addr_ + bytes > static_cast<uint64_t>(slot_->addr) + slot_->bytes) {
      twin::Fail(std::string(op) + ": " + std::to_string(bytes) + " bytes from UB address " + std::to_string(addr_) +
                 " overrun the buffer of " + slot_->owner + " (it ends at " +
                 std::to_string(slot_->addr + slot_->bytes) + ")");
    }
  }
  uint8_t *Raw() const { return twin::Block().ub.data() + addr_; }
  twin::UbRange Range(uint64_t count) const {
    return twin::UbRange{addr_, static_cast<uint32_t>(count * sizeof(T))};
  }
  QuePosition pos() const { return slot_ == nullptr ? QuePosition::VECCALC : slot_->pos; }
  T *Data() const { return reinterpret_cast<T *>(Raw()); }
  detail::Slot *slot() const { return slot_; }
  uint32_t gen() const { return gen_; }
  uint32_t addr() const { return addr_; }

 private:
  detail::Slot *slot_ = nullptr;
  uint32_t gen_ = 0;
  uint32_t addr_ = 0;
  uint32_t count_ = 0;
};

template <typename T>
class GlobalTensor {
 public:
  void SetGlobalBuffer(__gm__ T *buffer, uint64_t size = 0) {
    base_ = buffer;
    size_ = size;
  }
  GlobalTensor operator[](uint64_t offset) const {
    GlobalTensor t;
    t.base_ = base_ + offset;
    t.size_ = size_ > offset ? size_ - offset : 0;
    return t;
  }
  // Scalar GM accesses run on the S pipe, through the scalar data cache (the kernel reads
  // only inputs this way; GM written by MTE3 would need DataCacheCleanAndInvalid first).
  T GetValue(uint64_t i) const {
    twin::Checkpoint();
    twin::CheckGm(base_ + i, sizeof(T), "GlobalTensor::GetValue");
    twin::PipeModel &pipes = twin::Block().pipes;
    pipes.stats().scalarGm += 1;
    pipes.Issue(twin::kPipeS, "GlobalTensor::GetValue", {}, {}, nullptr, pipes.cost().scalarGmNs);
    T v;
    std::memcpy(&v, base_ + i, sizeof(T));
    return v;
  }
  void SetValue(uint64_t i, T v) const {
    twin::Checkpoint();
    twin::CheckGm(base_ + i, sizeof(T), "GlobalTensor::SetValue");
    twin::PipeModel &pipes = twin::Block().pipes;
    pipes.stats().scalarGm += 1;
    T *dst = base_ + i;
    pipes.Issue(twin::kPipeS, "GlobalTensor::SetValue", {}, {}, [dst, v] { std::memcpy(dst, &v, sizeof(T)); },
                pipes.cost().scalarGmNs);
  }
  T *GetPhyAddr() const { return base_; }

 private:
  T *base_ = nullptr;
  uint64_t size_ = 0;
};

class TPipe;

template <QuePosition pos, int32_t depth>
class TQue {
 public:
  template <typename T>
  LocalTensor<T> AllocTensor() {
    twin::Checkpoint();
    // asc-devkit AllocBuffer (impl/basic_api/kernel_tquebind_impl.h): from a cursor that moves
    // on at every buffer it looks at, the first free one; so freed buffers are reused in turn.
    for (size_t probe = 0; probe < slots_.size(); ++probe) {
      detail::Slot *s = slots_[cursor_];
      cursor_ = (cursor_ + 1) % slots_.size();
      if (s->state == detail::SlotState::kFree) {
        s->state = detail::SlotState::kAllocated;
        ++s->gen;
        WaitFree(s);  // the producer waits until the consumer has released the buffer
        return LocalTensor<T>(s, s->gen, s->addr, s->bytes / sizeof(T));
      }
    }
    if (slots_.empty() || slots_[0]->state == detail::SlotState::kDead) {
      twin::Fail("AllocTensor on a queue that InitBuffer never set up (or that TPipe::Reset released)");
    }
    twin::Fail("AllocTensor: all " + std::to_string(slots_.size()) +
               " buffers of the queue are in flight (allocate no more tensors than the queue has buffers)");
  }
  template <typename T>
  void EnQue(const LocalTensor<T> &t) {
    twin::Checkpoint();
    Own(t, "EnQue");
    if (t.slot()->state != detail::SlotState::kAllocated) {
      twin::Fail(std::string("EnQue of a tensor that is ") + detail::StateName(t.slot()->state));
    }
    if (static_cast<int32_t>(queued_.size()) >= depth) {
      twin::Fail("EnQue beyond the queue depth of " + std::to_string(depth) + " (DeQue before enqueuing more)");
    }
    t.slot()->state = detail::SlotState::kQueued;
    queued_.push_back(t.slot());
    maxQueued_ = std::max<int32_t>(maxQueued_, static_cast<int32_t>(queued_.size()));
    ++enQueues_;
    if (kProducer != kConsumer) {
      t.slot()->enQueEvt = Pipes().AllocEventId(kProducer, kConsumer);
      Pipes().SetFlag(kProducer, kConsumer, t.slot()->enQueEvt, twin::kFlagQueue);
    }
  }
  template <typename T>
  LocalTensor<T> DeQue() {
    twin::Checkpoint();
    if (queued_.empty()) return DeQueEmpty<T>();
    detail::Slot *s = queued_.front();
    queued_.erase(queued_.begin());
    s->state = detail::SlotState::kAllocated;
    lastDeQueued_ = s;
    lastDeQueuedGen_ = s->gen;
    if (s->enQueEvt >= 0) {
      Pipes().WaitFlag(kProducer, kConsumer, s->enQueEvt, twin::kFlagQueue);
      Pipes().ReleaseEventId(kProducer, kConsumer, s->enQueEvt);
      s->enQueEvt = -1;
    }
    return LocalTensor<T>(s, s->gen, s->addr, s->bytes / sizeof(T));
  }
  template <typename T>
  void FreeTensor(const LocalTensor<T> &t) {
    twin::Checkpoint();
    Own(t, "FreeTensor");
    if (t.slot()->state != detail::SlotState::kAllocated || t.gen() != t.slot()->gen) {
      twin::Fail(std::string("FreeTensor of a tensor that is ") +
                 (t.gen() != t.slot()->gen ? "already freed (double free)" : detail::StateName(t.slot()->state)));
    }
    t.slot()->state = detail::SlotState::kFree;
    ++t.slot()->gen;
    if (kProducer != kConsumer) {
      t.slot()->freeEvt = Pipes().AllocEventId(kConsumer, kProducer);
      Pipes().SetFlag(kConsumer, kProducer, t.slot()->freeEvt, twin::kFlagQueue);
    }
  }

  // TQue简介.md: depth 1 gets the compiler's optimisation and is what the docs recommend
  // unless two tensors really are queued at once. A queue that was given at least `depth`
  // tensors but never held `depth` at once is flagged when it goes out of scope (the launch
  // then fails, see twin::DeferFault); with fewer EnQues the run shows nothing either way.
  // Not under Config::cannCompat: a recommendation, which CANN's GroupNormSilu does not follow.
  ~TQue() {
    if (depth > 1 && enQueues_ >= depth && maxQueued_ < depth && !twin::CurrentConfig().cannCompat) {
      twin::DeferFault("TQue of depth " + std::to_string(depth) + " never held more than " +
                       std::to_string(maxQueued_) + " tensor(s) at once: declare it with depth " +
                       std::to_string(std::max<int32_t>(maxQueued_, 1)) +
                       " (TQue简介.md recommends depth 1 unless tensors are really queued together; "
                       "double buffering comes from InitBuffer's buffer count)");
    }
  }

 private:
  friend class TPipe;
  // DeQue.md (约束说明): a DeQue of an empty queue is abnormal, reported in CPU debugging. On the
  // device a depth-1 queue hands back the buffer it last held, with no wait (asc-devkit
  // kernel_tquebind_impl.h DeQue: que_ is not cleared and the enqueue event was already spent).
  // CANN's GroupNormSwishGrad (MODE_3) enqueues gamma and beta once and dequeues them on every
  // chunk; under Config::cannCompat a depth-1 queue whose last dequeued buffer is still held (not
  // freed, not enqueued again) returns it again, as the device does. Anything else is a fault.
  template <typename T>
  LocalTensor<T> DeQueEmpty() {
    detail::Slot *s = lastDeQueued_;
    if (depth == 1 && twin::CurrentConfig().cannCompat && s != nullptr && s->state == detail::SlotState::kAllocated &&
        s->gen == lastDeQueuedGen_) {
      return LocalTensor<T>(s, s->gen, s->addr, s->bytes / sizeof(T));
    }
    twin::Fail("DeQue on an empty queue (DeQue before EnQue)");
  }
  static void WaitFree(detail::Slot *s) {
    if (s->freeEvt < 0) return;
    Pipes().WaitFlag(s->consumer, s->producer, s->freeEvt, twin::kFlagQueue);
    Pipes().ReleaseEventId(s->consumer, s->producer, s->freeEvt);
    s->freeEvt = -1;
  }
  // The pipes a queue hands its buffers between (asc-devkit GetQueEvt: GM -> VECIN is
  // MTE2 -> V, VECOUT -> GM is V -> MTE3; a VECCALC queue stays on V).
  static constexpr int kProducer = pos == QuePosition::VECIN ? twin::kPipeMte2 : twin::kPipeV;
  static constexpr int kConsumer = pos == QuePosition::VECOUT ? twin::kPipeMte3 : twin::kPipeV;
  template <typename T>
  void Own(const LocalTensor<T> &t, const char *op) {
    for (detail::Slot *s : slots_) {
      if (s == t.slot()) return;
    }
    twin::Fail(std::string(op) + ": the tensor does not belong to this queue");
  }
  std::vector<detail::Slot *> slots_;
  size_t cursor_ = 0;
  std::vector<detail::Slot *> queued_;
  detail::Slot *lastDeQueued_ = nullptr;
  uint32_t lastDeQueuedGen_ = 0;
  int32_t maxQueued_ = 0;
  int64_t enQueues_ = 0;
};

template <QuePosition pos>
class TBuf {
 public:
  template <typename T>
  LocalTensor<T> Get() const {
    if (slot_ == nullptr || slot_->state != detail::SlotState::kBuf) twin::Fail("TBuf::Get on a buffer without InitBuffer");
    return LocalTensor<T>(slot_, slot_->gen, slot_->addr, slot_->bytes / sizeof(T));
  }
  // Get.md (约束说明): len * sizeof(T) must not exceed the length the TBuf was initialised with.
  // asc-devkit checks it only in CPU-debug builds (kernel_tbuf_impl.h, ASCENDC_DEBUG_ASSERT); on the
  // device Get only records the length. CANN's GroupNormSwishGrad asks a one-channel TBuf for a whole
  // group and then uses one channel of it, so under Config::cannCompat the view is clipped to the
  // buffer instead: every access through it is still checked against the allocation.
  template <typename T>
  LocalTensor<T> Get(uint32_t count) const {
    LocalTensor<T> whole = Get<T>();
    if (count <= whole.GetSize()) return LocalTensor<T>(slot_, slot_->gen, slot_->addr, count);
    if (twin::CurrentConfig().cannCompat) return whole;
    twin::Fail("TBuf::Get: " + std::to_string(count) + " elements, more than the buffer holds (" +
               std::to_string(whole.GetSize()) + ")");
  }

 private:
  friend class TPipe;
  detail::Slot *slot_ = nullptr;
};

namespace detail {
// The block's current TPipe, what asc-devkit's GetTPipePtr() returns: the TPipe constructor
// registers itself (kernel_tpipe_impl.h, g_tPipePtr = this) and library code reaches the pipe's
// event-id pool through it. Blocks are threads, so the pointer is per thread.
inline class TPipe *&CurrentPipe() {
  static thread_local class TPipe *pipe = nullptr;
  return pipe;
}
}  // namespace detail

// Hands out UB in 32-byte-aligned pieces and refuses to exceed the configured UB size.
class TPipe {
 public:
  TPipe() { detail::CurrentPipe() = this; }
  ~TPipe() {
    if (detail::CurrentPipe() == this) detail::CurrentPipe() = nullptr;
  }
  TPipe(const TPipe &) = delete;
  TPipe &operator=(const TPipe &) = delete;
  template <QuePosition pos, int32_t depth>
  void InitBuffer(TQue<pos, depth> &que, int32_t num, uint32_t len) {
    for (detail::Slot *s : que.slots_) {
      if (s->state != detail::SlotState::kDead) twin::Fail("InitBuffer called twice for one queue without TPipe::Reset");
    }
    if (num < 1 || len == 0) twin::Fail("InitBuffer of a queue needs num >= 1 and len > 0");
    que.slots_.clear();
    que.cursor_ = 0;
    que.queued_.clear();
    for (int32_t i = 0; i < num; ++i) {
      detail::Slot *s = NewSlot(len, detail::SlotState::kFree, "a TQue", pos);
      s->producer = TQue<pos, depth>::kProducer;
      s->consumer = TQue<pos, depth>::kConsumer;
      que.slots_.push_back(s);
    }
  }
  template <QuePosition pos>
  void InitBuffer(TBuf<pos> &buf, uint32_t len) {
    if (buf.slot_ != nullptr && buf.slot_->state == detail::SlotState::kBuf) {
      twin::Fail("InitBuffer called twice for one TBuf without TPipe::Reset");
    }
    if (len == 0) twin::Fail("InitBuffer of a TBuf needs len > 0");
    buf.slot_ = NewSlot(len, detail::SlotState::kBuf, "a TBuf", pos);
  }
  // Releases every buffer so that UB can be laid out anew (the kernel's stage 2 does this);
  // tensors taken before the Reset become invalid.
  // Like kernel_tpipe_impl.h TPipe::Reset: waits for the free events still pending on free
  // queue buffers, then resets the buffer and event pools.
  void Reset() {
    twin::Checkpoint();
    for (auto &s : slots_) {
      if (s->freeEvt >= 0 && s->state == detail::SlotState::kFree) {
        Pipes().WaitFlag(s->consumer, s->producer, s->freeEvt, twin::kFlagQueue);
        Pipes().ReleaseEventId(s->consumer, s->producer, s->freeEvt);
        s->freeEvt = -1;
      }
      s->state = detail::SlotState::kDead;
      ++s->gen;
    }
    used_ = 0;
  }
  int64_t UsedBytes() const { return used_; }
  // The event-id pool (kernel_tpipe_impl.h): FetchEventID returns the lowest id not
  // allocated, without reserving it; AllocEventID reserves it until ReleaseEventID.
  int32_t FetchEventID(HardEvent e) const {
    return Pipes().FetchEventId(detail::EventSrc(e), detail::EventDst(e));
  }
  template <HardEvent e>
  int32_t FetchEventID() const {
    return FetchEventID(e);
  }
  template <HardEvent e>
  int32_t AllocEventID() {
    return Pipes().AllocEventId(detail::EventSrc(e), detail::EventDst(e));
  }
  template <HardEvent e>
  void ReleaseEventID(int32_t id) {
    Pipes().ReleaseEventId(detail::EventSrc(e), detail::EventDst(e), id);
  }

 private:
  detail::Slot *NewSlot(uint32_t len, detail::SlotState state, const char *owner, QuePosition pos) {
    const int64_t bytes = (static_cast<int64_t>(len) + kUbBlockBytes - 1) / kUbBlockBytes * kUbBlockBytes;
    const int64_t ub = twin::CurrentConfig().ubBytes;
    if (used_ + bytes > ub) {
      twin::Fail("UB overflow: InitBuffer of " + std::to_string(len) + " bytes brings the block's total to " +
                 std::to_string(used_ + bytes) + " bytes, above the " + std::to_string(ub) + "-byte unified buffer");
    }
    auto slot = std::make_unique<detail::Slot>();
    slot->addr = static_cast<uint32_t>(used_);
    slot->bytes = static_cast<uint32_t>(bytes);
    slot->state = state;
    slot->owner = owner;
    slot->pos = pos;
    used_ += bytes;
    slots_.push_back(std::move(slot));
    return slots_.back().get();
  }
  std::vector<std::unique_ptr<detail::Slot>> slots_;
  int64_t used_ = 0;
};

}  // namespace AscendC

#endif  // GNMS_TWIN_KERNEL_OPERATOR_BUFFERS_H
