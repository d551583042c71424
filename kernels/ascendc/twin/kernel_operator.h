// CPU twin of the subset of the AscendC API that the GroupNormGradMs kernel uses.
//
// The op_kernel sources compile unmodified against this header with g++. Semantics
// follow the AscendC documentation; where real hardware would fail or silently
// misbehave, the twin stops the launch with a message instead (twin::Fail):
//   * UB: the InitBuffer total of a block may not exceed the configured UB size; UB
//     operand addresses of vector ops and DataCopy must be 32-byte aligned; DataCopy
//     lengths must be 32-byte multiples (unaligned transfers need DataCopyPad);
//     operands must stay inside the buffer they were taken from.
//   * Queues: DeQue on an empty queue, EnQue beyond the depth, more tensors allocated
//     than the queue has buffers, double FreeTensor, use of a freed or enqueued tensor,
//     and use of any tensor after TPipe::Reset.
//   * GM: every read and write must fall inside a buffer the launch was given.
//   * Launch: blockDim <= core count; SyncAll is a real barrier of all blocks.
// The UB starts filled with 0xFF bytes (NaN as fp32), and DataCopyPad fills the padding
// of each row with the same garbage unless padding is requested, so a kernel that
// reads data it never wrote produces NaNs instead of passing by luck.
//
// Every call is issued on the pipe the hardware runs it on (MTE2: GM -> UB copies; MTE3:
// UB -> GM copies; V: vector instructions and UB -> UB copies; S: GetValue/SetValue on UB
// or GM); twin_pipes.h checks the synchronisation between pipes (UB hazards, SetFlag /
// WaitFlag pairing), can defer each pipe's work until a synchronisation forces it, and
// counts what the launch would cost. Copies are checked against the TPosition data paths
// of asc-devkit docs/zh/api/SIMD-API/基础API/Memory矢量计算/数据搬运/ (see CheckPath).
#ifndef GNMS_TWIN_KERNEL_OPERATOR_H
#define GNMS_TWIN_KERNEL_OPERATOR_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "../../cpu/half_types.h"
#include "build_rules.h"  // TILING_KEY_IS, KERNEL_TASK_TYPE_DEFAULT: CANN build rules
#include "twin_runtime.h"

#define __aicore__
#define __global__
#define __gm__
using GM_ADDR = uint8_t *;

// ---------------------------------------------------------------- scalar types
struct half {
  uint16_t bits = 0;
  half() = default;
  half(float f) : bits(ms_groupnorm::ToHalf(f).bits) {}  // NOLINT: implicit like the device type
  operator float() const { return ms_groupnorm::ToFloat(ms_groupnorm::Half{bits}); }
};

// No implicit float conversion: device code converts bf16 with ToFloat / ToBfloat16.
struct bfloat16_t {
  uint16_t bits = 0;
};

enum pipe_t { PIPE_S, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL };

// ---------------------------------------------------------------- kernel-entry macros
#define REGISTER_TILING_DEFAULT(type) \
  static_assert(std::is_trivially_copyable<type>::value, "tiling data must be a plain struct")
#define GET_TILING_DATA_WITH_STRUCT(type, var, tilingPtr) \
  type var;                                               \
  ::twin_api::ReadTiling(&(var), (tilingPtr), sizeof(type))

namespace twin_api {
inline void ReadTiling(void *dst, const uint8_t *tiling, size_t bytes) {
  twin::CheckGm(tiling, bytes, "GET_TILING_DATA");
  std::memcpy(dst, tiling, bytes);
}
}  // namespace twin_api

namespace AscendC {

inline float ToFloat(bfloat16_t v) { return ms_groupnorm::ToFloat(ms_groupnorm::BFloat16{v.bits}); }
inline bfloat16_t ToBfloat16(float f) { return bfloat16_t{ms_groupnorm::ToBFloat16(f).bits}; }

template <typename A, typename B>
struct IsSameType {
  static constexpr bool value = std::is_same<A, B>::value;
};

constexpr int64_t kUbBlockBytes = 32;

inline int64_t GetBlockIdx() { return twin::Block().blockIdx; }
inline int64_t GetBlockNum() { return twin::Block().blockNum; }
inline GM_ADDR GetUserWorkspace(GM_ADDR workspace) { return workspace; }

inline twin::PipeModel &Pipes() { return twin::Block().pipes; }

// PipeBarrier<PIPE_ALL> waits for every pipe; a barrier on one pipe orders only that pipe,
// whose instructions the model already runs in order.
template <pipe_t pipe>
inline void PipeBarrier() {
  twin::Checkpoint();
  if (pipe == PIPE_ALL) Pipes().BarrierAll(); else Pipes().BarrierPipe();
}

template <bool isAIVOnly = true>
inline void SyncAll() {
  twin::Checkpoint();
  Pipes().SyncAll();
  twin::SyncAllBlocks();
}

// Inter-pipe events (the ISASI form SetFlag<HardEvent>(id), as ops-nn's kernels use it).
enum class HardEvent { MTE2_V, V_MTE2, V_MTE3, MTE3_V, V_S, S_V, MTE2_S, S_MTE2, MTE3_S, S_MTE3, MTE2_MTE3, MTE3_MTE2 };
enum event_t : int32_t { EVENT_ID0 = 0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7 };

namespace detail {
constexpr int EventSrc(HardEvent e) {
  switch (e) {
    case HardEvent::MTE2_V: case HardEvent::MTE2_S: case HardEvent::MTE2_MTE3: return twin::kPipeMte2;
    case HardEvent::V_MTE2: case HardEvent::V_MTE3: case HardEvent::V_S: return twin::kPipeV;
    case HardEvent::MTE3_V: case HardEvent::MTE3_S: case HardEvent::MTE3_MTE2: return twin::kPipeMte3;
    default: return twin::kPipeS;
  }
}
constexpr int EventDst(HardEvent e) {
  switch (e) {
    case HardEvent::V_MTE2: case HardEvent::S_MTE2: case HardEvent::MTE3_MTE2: return twin::kPipeMte2;
    case HardEvent::MTE2_V: case HardEvent::MTE3_V: case HardEvent::S_V: return twin::kPipeV;
    case HardEvent::V_MTE3: case HardEvent::S_MTE3: case HardEvent::MTE2_MTE3: return twin::kPipeMte3;
    default: return twin::kPipeS;
  }
}
}  // namespace detail

template <HardEvent event>
inline void SetFlag(int32_t eventId) {
  twin::Checkpoint();
  Pipes().SetFlag(detail::EventSrc(event), detail::EventDst(event), eventId, false);
}
template <HardEvent event>
inline void WaitFlag(int32_t eventId) {
  twin::Checkpoint();
  Pipes().WaitFlag(detail::EventSrc(event), detail::EventDst(event), eventId, false);
}

template <typename T>
inline void SetAtomicAdd() {
  static_assert(std::is_same<T, float>::value, "the twin models fp32 atomic add only");
  twin::Block().atomicAdd = true;
}
inline void SetAtomicNone() { twin::Block().atomicAdd = false; }

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
enum class RoundMode { CAST_NONE, CAST_RINT, CAST_ROUND, CAST_FLOOR, CAST_CEIL, CAST_TRUNC, CAST_ODD };

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
  int eventId = 0;           // id of this buffer's queue events (unique per TPipe)
  bool freePending = false;  // FreeTensor set the consumer -> producer event, AllocTensor waits for it
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
    for (detail::Slot *s : slots_) {
      if (s->state == detail::SlotState::kFree) {
        s->state = detail::SlotState::kAllocated;
        ++s->gen;
        if (s->freePending) {  // the producer waits until the consumer has released the buffer
          s->freePending = false;
          if (kProducer != kConsumer) Pipes().WaitFlag(kConsumer, kProducer, s->eventId, true);
        }
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
    if (kProducer != kConsumer) Pipes().SetFlag(kProducer, kConsumer, t.slot()->eventId, true);
  }
  template <typename T>
  LocalTensor<T> DeQue() {
    twin::Checkpoint();
    if (queued_.empty()) twin::Fail("DeQue on an empty queue (DeQue before EnQue)");
    detail::Slot *s = queued_.front();
    queued_.erase(queued_.begin());
    s->state = detail::SlotState::kAllocated;
    if (kProducer != kConsumer) Pipes().WaitFlag(kProducer, kConsumer, s->eventId, true);
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
      Pipes().SetFlag(kConsumer, kProducer, t.slot()->eventId, true);
      t.slot()->freePending = true;
    }
  }

 private:
  friend class TPipe;
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
  std::vector<detail::Slot *> queued_;
};

template <QuePosition pos>
class TBuf {
 public:
  template <typename T>
  LocalTensor<T> Get() const {
    if (slot_ == nullptr || slot_->state != detail::SlotState::kBuf) twin::Fail("TBuf::Get on a buffer without InitBuffer");
    return LocalTensor<T>(slot_, slot_->gen, slot_->addr, slot_->bytes / sizeof(T));
  }
  template <typename T>
  LocalTensor<T> Get(uint32_t count) const {
    LocalTensor<T> whole = Get<T>();
    if (count > whole.GetSize()) twin::Fail("TBuf::Get: more elements than the buffer holds");
    return LocalTensor<T>(slot_, slot_->gen, slot_->addr, count);
  }

 private:
  friend class TPipe;
  detail::Slot *slot_ = nullptr;
};

// Hands out UB in 32-byte-aligned pieces and refuses to exceed the configured UB size.
class TPipe {
 public:
  template <QuePosition pos, int32_t depth>
  void InitBuffer(TQue<pos, depth> &que, int32_t num, uint32_t len) {
    for (detail::Slot *s : que.slots_) {
      if (s->state != detail::SlotState::kDead) twin::Fail("InitBuffer called twice for one queue without TPipe::Reset");
    }
    if (num < 1 || len == 0) twin::Fail("InitBuffer of a queue needs num >= 1 and len > 0");
    que.slots_.clear();
    que.queued_.clear();
    for (int32_t i = 0; i < num; ++i) que.slots_.push_back(NewSlot(len, detail::SlotState::kFree, "a TQue", pos));
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
  void Reset() {
    twin::Checkpoint();
    for (auto &s : slots_) {
      s->state = detail::SlotState::kDead;
      ++s->gen;
    }
    used_ = 0;
  }
  int64_t UsedBytes() const { return used_; }
  // Event ids for the kernel's own SetFlag/WaitFlag (the twin keeps queue events apart).
  int32_t FetchEventID(HardEvent) const { return EVENT_ID0; }

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
    slot->eventId = static_cast<int>(slots_.size());
    used_ += bytes;
    slots_.push_back(std::move(slot));
    return slots_.back().get();
  }
  std::vector<std::unique_ptr<detail::Slot>> slots_;
  int64_t used_ = 0;
};

// ---------------------------------------------------------------- data movement
// Constructor classes, as in asc-devkit (include/basic_api/kernel_struct_data_copy.h, dav-c220
// branch): built with no argument or with all of them; a partial brace-init such as
// DataCopyExtParams{1, len} does not compile on the real headers, so it must not here either.
struct DataCopyExtParams {
  DataCopyExtParams() {}
  DataCopyExtParams(const uint16_t count, const uint32_t len, const uint32_t srcStrideIn, const uint32_t dstStrideIn,
                    const uint32_t rsvIn)
      : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn), rsv(rsvIn) {}

  uint16_t blockCount = 1;
  uint32_t blockLen = 0;   // bytes per row
  uint32_t srcStride = 0;  // GM->UB: bytes between GM rows; UB->GM: 32-byte blocks between UB rows
  uint32_t dstStride = 0;  // GM->UB: 32-byte blocks between UB rows; UB->GM: bytes between GM rows
  uint32_t rsv = 0;
};

template <typename T>
struct DataCopyPadExtParams {
  DataCopyPadExtParams() {}
  DataCopyPadExtParams(const bool isPadValue, const uint8_t leftPadValue, const uint8_t rightPadValue, T padValue)
      : isPad(isPadValue), leftPadding(leftPadValue), rightPadding(rightPadValue), paddingValue(padValue) {}

  bool isPad = false;
  uint8_t leftPadding = 0;
  uint8_t rightPadding = 0;
  T paddingValue{};
};

namespace detail {

template <typename T>
void CheckCopyLength(const char *op, uint32_t count) {
  if ((static_cast<uint64_t>(count) * sizeof(T)) % kUbBlockBytes != 0) {
    twin::Fail(std::string(op) + ": length of " + std::to_string(count * sizeof(T)) +
               " bytes is not a multiple of 32 bytes (unaligned transfers need DataCopyPad)");
  }
}

// The TPosition data paths each copy accepts, from asc-devkit
// docs/zh/api/SIMD-API/基础API/Memory矢量计算/数据搬运/:
//   DataCopy（GM与UB连续数据搬运）.md   GM -> VECIN, VECOUT -> GM
//   DataCopyPad（GMToUB非对齐数据搬运）.md  GM -> VECIN, GM -> VECOUT (VECCALC only on Ascend 950)
//   DataCopyPad（UBToGM非对齐数据搬运）.md  VECIN -> GM, VECOUT -> GM
//   DataCopy（UBToUB连续数据搬运）.md   VECIN -> VECCALC, VECCALC -> VECOUT
inline void CheckPath(const char *op, QuePosition src, QuePosition dst, std::initializer_list<QuePosition> srcOk,
                      std::initializer_list<QuePosition> dstOk) {
  bool ok = false;
  auto s = srcOk.begin();
  auto d = dstOk.begin();
  for (; s != srcOk.end(); ++s, ++d) ok = ok || (*s == src && *d == dst);
  if (!ok) {
    std::string paths;
    s = srcOk.begin();
    d = dstOk.begin();
    for (; s != srcOk.end(); ++s, ++d) paths += std::string(paths.empty() ? "" : ", ") + PositionName(*s) + " -> " + PositionName(*d);
    twin::Fail(std::string(op) + ": the data path " + PositionName(src) + " -> " + PositionName(dst) +
               " is not supported (the documented paths are " + paths + ")");
  }
}

inline void GmWrite(uint8_t *dst, const uint8_t *src, size_t bytes, size_t elemBytes, bool atomic) {
  if (!atomic) {
    std::memcpy(dst, src, bytes);
    return;
  }
  if (elemBytes != sizeof(float)) twin::Fail("atomic add is modelled for fp32 only");
  twin::LockAtomics();
  for (size_t i = 0; i < bytes; i += sizeof(float)) {
    float a, b;
    std::memcpy(&a, dst + i, sizeof a);
    std::memcpy(&b, src + i, sizeof b);
    a += b;
    std::memcpy(dst + i, &a, sizeof a);
  }
  twin::UnlockAtomics();
}

// How long a DMA of `bytes` holds its MTE pipe (its latency comes on top, see DmaLatencyNs).
inline double DmaNs(uint64_t bytes) {
  twin::PipeModel &p = Pipes();
  return p.Cycles(p.cost().dmaSetupCycles) + static_cast<double>(bytes) / p.cost().gmBytesPerNs;
}
inline double DmaLatencyNs() { return Pipes().cost().dmaLatencyNs; }

// A vector instruction over `bytes` bytes of its widest operand: 256-byte repeats.
inline double VectorNs(uint64_t bytes) {
  twin::PipeModel &p = Pipes();
  const double repeats = static_cast<double>((bytes + 255) / 256);
  p.stats().vecCalls += 1;
  p.stats().vecRepeats += repeats;
  return p.Cycles(p.cost().vecStartCycles + repeats * p.cost().vecCyclesPerRepeat);
}

}  // namespace detail

template <typename T>
void DataCopy(const LocalTensor<T> &dst, const GlobalTensor<T> &src, uint32_t count) {
  twin::Checkpoint();
  detail::CheckCopyLength<T>("DataCopy GM->UB", count);
  detail::CheckPath("DataCopy GM->UB", QuePosition::GM, dst.pos(), {QuePosition::GM}, {QuePosition::VECIN});
  dst.Check("DataCopy GM->UB", count, true);
  twin::CheckGm(src.GetPhyAddr(), count * sizeof(T), "DataCopy GM->UB");
  const size_t bytes = count * sizeof(T);
  uint8_t *d = dst.Raw();
  const T *g = src.GetPhyAddr();
  Pipes().stats().gmReadBytes += bytes;
  Pipes().Issue(twin::kPipeMte2, "DataCopy GM->UB", {}, {dst.Range(count)}, [d, g, bytes] { std::memcpy(d, g, bytes); },
                detail::DmaNs(bytes), detail::DmaLatencyNs());
}

template <typename T>
void DataCopy(const GlobalTensor<T> &dst, const LocalTensor<T> &src, uint32_t count) {
  twin::Checkpoint();
  detail::CheckCopyLength<T>("DataCopy UB->GM", count);
  detail::CheckPath("DataCopy UB->GM", src.pos(), QuePosition::GM, {QuePosition::VECOUT}, {QuePosition::GM});
  src.Check("DataCopy UB->GM", count, true);
  twin::CheckGm(dst.GetPhyAddr(), count * sizeof(T), "DataCopy UB->GM");
  const size_t bytes = count * sizeof(T);
  uint8_t *g = reinterpret_cast<uint8_t *>(dst.GetPhyAddr());
  const uint8_t *u = src.Raw();
  const bool atomic = twin::Block().atomicAdd;
  Pipes().stats().gmWriteBytes += bytes;
  Pipes().Issue(twin::kPipeMte3, "DataCopy UB->GM", {src.Range(count)}, {},
                [g, u, bytes, atomic] { detail::GmWrite(g, u, bytes, sizeof(T), atomic); }, detail::DmaNs(bytes),
                detail::DmaLatencyNs());
}

template <typename T>
void DataCopy(const LocalTensor<T> &dst, const LocalTensor<T> &src, uint32_t count) {
  twin::Checkpoint();
  detail::CheckCopyLength<T>("DataCopy UB->UB", count);
  detail::CheckPath("DataCopy UB->UB", src.pos(), dst.pos(), {QuePosition::VECIN, QuePosition::VECCALC},
                    {QuePosition::VECCALC, QuePosition::VECOUT});
  dst.Check("DataCopy UB->UB", count, true);
  src.Check("DataCopy UB->UB", count, true);
  const size_t bytes = count * sizeof(T);
  uint8_t *d = dst.Raw();
  const uint8_t *u = src.Raw();
  Pipes().Issue(twin::kPipeV, "DataCopy UB->UB", {src.Range(count)}, {dst.Range(count)},
                [d, u, bytes] { std::memmove(d, u, bytes); }, detail::VectorNs(bytes));
}

template <typename T>
void DataCopyPad(const LocalTensor<T> &dst, const GlobalTensor<T> &src, const DataCopyExtParams &p,
                 const DataCopyPadExtParams<T> &pad) {
  twin::Checkpoint();
  detail::CheckPath("DataCopyPad GM->UB", QuePosition::GM, dst.pos(), {QuePosition::GM, QuePosition::GM},
                    {QuePosition::VECIN, QuePosition::VECOUT});
  if (p.blockLen % sizeof(T) != 0) twin::Fail("DataCopyPad GM->UB: blockLen is not a whole number of elements");
  const uint64_t rowUb = (p.blockLen + kUbBlockBytes - 1) / kUbBlockBytes * kUbBlockBytes;
  const uint64_t pitchUb = rowUb + static_cast<uint64_t>(p.dstStride) * kUbBlockBytes;
  const uint64_t pitchGm = p.blockLen + static_cast<uint64_t>(p.srcStride);
  if (p.blockCount == 0) return;
  const uint64_t ubBytes = pitchUb * (p.blockCount - 1) + rowUb;
  dst.Check("DataCopyPad GM->UB", (ubBytes + sizeof(T) - 1) / sizeof(T), true);
  const uint8_t *gm = reinterpret_cast<const uint8_t *>(src.GetPhyAddr());
  for (uint16_t r = 0; r < p.blockCount; ++r) twin::CheckGm(gm + r * pitchGm, p.blockLen, "DataCopyPad GM->UB");
  uint8_t *ub = dst.Raw();
  const DataCopyExtParams params = p;
  const DataCopyPadExtParams<T> padding = pad;
  Pipes().stats().gmReadBytes += static_cast<double>(p.blockLen) * p.blockCount;
  Pipes().Issue(
      twin::kPipeMte2, "DataCopyPad GM->UB", {}, {twin::UbRange{dst.addr(), static_cast<uint32_t>(ubBytes)}},
      [ub, gm, params, padding, rowUb, pitchUb, pitchGm] {
        for (uint16_t r = 0; r < params.blockCount; ++r) {
          uint8_t *row = ub + r * pitchUb;
          std::memcpy(row, gm + r * pitchGm, params.blockLen);
          for (uint64_t b = params.blockLen; b < rowUb; b += sizeof(T)) {
            if (padding.isPad) std::memcpy(row + b, &padding.paddingValue, sizeof(T)); else std::memset(row + b, 0xFF, sizeof(T));
          }
        }
      },
      detail::DmaNs(static_cast<uint64_t>(p.blockLen) * p.blockCount), detail::DmaLatencyNs());
}

template <typename T>
void DataCopyPad(const GlobalTensor<T> &dst, const LocalTensor<T> &src, const DataCopyExtParams &p) {
  twin::Checkpoint();
  detail::CheckPath("DataCopyPad UB->GM", src.pos(), QuePosition::GM, {QuePosition::VECIN, QuePosition::VECOUT},
                    {QuePosition::GM, QuePosition::GM});
  if (p.blockLen % sizeof(T) != 0) twin::Fail("DataCopyPad UB->GM: blockLen is not a whole number of elements");
  const uint64_t rowUb = (p.blockLen + kUbBlockBytes - 1) / kUbBlockBytes * kUbBlockBytes;
  const uint64_t pitchUb = rowUb + static_cast<uint64_t>(p.srcStride) * kUbBlockBytes;
  const uint64_t pitchGm = p.blockLen + static_cast<uint64_t>(p.dstStride);
  if (p.blockCount == 0) return;
  const uint64_t ubBytes = pitchUb * (p.blockCount - 1) + p.blockLen;
  src.Check("DataCopyPad UB->GM", (ubBytes + sizeof(T) - 1) / sizeof(T), true);
  uint8_t *gm = reinterpret_cast<uint8_t *>(dst.GetPhyAddr());
  for (uint16_t r = 0; r < p.blockCount; ++r) twin::CheckGm(gm + r * pitchGm, p.blockLen, "DataCopyPad UB->GM");
  const uint8_t *ub = src.Raw();
  const uint16_t rows = p.blockCount;
  const uint32_t len = p.blockLen;
  const bool atomic = twin::Block().atomicAdd;
  Pipes().stats().gmWriteBytes += static_cast<double>(len) * rows;
  Pipes().Issue(twin::kPipeMte3, "DataCopyPad UB->GM", {twin::UbRange{src.addr(), static_cast<uint32_t>(ubBytes)}}, {},
                [gm, ub, rows, len, pitchUb, pitchGm, atomic] {
                  for (uint16_t r = 0; r < rows; ++r) {
                    detail::GmWrite(gm + r * pitchGm, ub + r * pitchUb, len, sizeof(T), atomic);
                  }
                },
                detail::DmaNs(static_cast<uint64_t>(len) * rows), detail::DmaLatencyNs());
}

// ---------------------------------------------------------------- vector instructions (fp32)
namespace detail {

template <typename T>
void VectorOperands(const char *op) {
  static_assert(std::is_same<T, float>::value, "the twin models fp32 vector arithmetic only");
  twin::Checkpoint();
  (void)op;
}

// An elementwise V instruction: dst[i] = f(in, i) over `count` elements.
template <typename F>
void Elementwise(const char *op, const LocalTensor<float> &dst, std::initializer_list<const LocalTensor<float> *> srcs,
                 int32_t count, F f) {
  VectorOperands<float>(op);
  if (count < 0) twin::Fail(std::string(op) + ": negative count");
  dst.Check(op, count, true);
  std::vector<const float *> in;
  std::vector<twin::UbRange> reads;
  for (const LocalTensor<float> *s : srcs) {
    s->Check(op, count, true);
    in.push_back(s->Data());
    reads.push_back(s->Range(count));
  }
  float *out = dst.Data();
  const twin::UbRange r0 = reads.size() > 0 ? reads[0] : twin::UbRange{0, 0};
  const twin::UbRange r1 = reads.size() > 1 ? reads[1] : twin::UbRange{0, 0};
  Pipes().Issue(twin::kPipeV, op, {r0, r1}, {dst.Range(count)},
                [in, out, count, f] {
                  std::vector<float> result(static_cast<size_t>(count));  // operands may alias dst
                  for (int32_t i = 0; i < count; ++i) result[i] = f(in, i);
                  std::memcpy(out, result.data(), result.size() * sizeof(float));
                },
                VectorNs(static_cast<uint64_t>(count) * sizeof(float)));
}

}  // namespace detail

inline void Add(const LocalTensor<float> &dst, const LocalTensor<float> &a, const LocalTensor<float> &b,
                const int32_t &count) {
  detail::Elementwise("Add", dst, {&a, &b}, count, [](const auto &in, int i) { return in[0][i] + in[1][i]; });
}
inline void Sub(const LocalTensor<float> &dst, const LocalTensor<float> &a, const LocalTensor<float> &b,
                const int32_t &count) {
  detail::Elementwise("Sub", dst, {&a, &b}, count, [](const auto &in, int i) { return in[0][i] - in[1][i]; });
}
inline void Mul(const LocalTensor<float> &dst, const LocalTensor<float> &a, const LocalTensor<float> &b,
                const int32_t &count) {
  detail::Elementwise("Mul", dst, {&a, &b}, count, [](const auto &in, int i) { return in[0][i] * in[1][i]; });
}
inline void Adds(const LocalTensor<float> &dst, const LocalTensor<float> &a, const float &s, const int32_t &count) {
  const float v = s;
  detail::Elementwise("Adds", dst, {&a}, count, [v](const auto &in, int i) { return in[0][i] + v; });
}
inline void Muls(const LocalTensor<float> &dst, const LocalTensor<float> &a, const float &s, const int32_t &count) {
  const float v = s;
  detail::Elementwise("Muls", dst, {&a}, count, [v](const auto &in, int i) { return in[0][i] * v; });
}
inline void Duplicate(const LocalTensor<float> &dst, const float &s, const int32_t &count) {
  const float v = s;
  detail::Elementwise("Duplicate", dst, {}, count, [v](const auto &, int) { return v; });
}

// dst[0] = sum of src[0..count), in the order asc-devkit documents for the count form on
// Atlas A2/A3 (docs/zh/api/SIMD-API/基础API/Memory矢量计算/归约计算/ReduceSum.md, 关键特性说明,
// "方式一"): inside each 256-byte repeat (64 floats) a binary tree of neighbour pairs
// (ReduceDataBlock.md: 1+2, 3+4, ..., then the pair sums, ...), and the repeat results
// added one after another in order. In that mode the shared tmp buffer is not used. The
// destination needs only 4-byte alignment (ReduceRepeat.md, 表3: SUM float).
template <typename T>
void ReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<T> &work, const int32_t &count) {
  detail::VectorOperands<T>("ReduceSum");
  dst.Check("ReduceSum dst", 1, false);
  src.Check("ReduceSum src", count, true);
  work.Check("ReduceSum work", 0, true);
  if (count <= 0) return;  // a NOP on A2/A3 for count 0
  const float *s = src.Data();
  float *d = dst.Data();
  const int32_t n = count;
  Pipes().Issue(twin::kPipeV, "ReduceSum", {src.Range(count)}, {dst.Range(1)},
                [s, d, n] {
                  float total = 0.0f;
                  for (int32_t r = 0; r * 64 < n; ++r) {
                    float lanes[64];
                    const int32_t len = std::min(64, n - r * 64);
                    for (int32_t i = 0; i < 64; ++i) lanes[i] = i < len ? s[r * 64 + i] : 0.0f;  // masked lanes add 0
                    for (int32_t width = 32; width >= 1; width /= 2) {
                      for (int32_t i = 0; i < width; ++i) lanes[i] = lanes[2 * i] + lanes[2 * i + 1];
                    }
                    total = r == 0 ? lanes[0] : total + lanes[0];
                  }
                  std::memcpy(d, &total, sizeof total);
                },
                detail::VectorNs(static_cast<uint64_t>(count) * sizeof(float)));
}

template <typename D, typename S>
void Cast(const LocalTensor<D> &dst, const LocalTensor<S> &src, const RoundMode &mode, const uint32_t &count) {
  twin::Checkpoint();
  dst.Check("Cast dst", count, true);
  src.Check("Cast src", count, true);
  constexpr bool widen = std::is_same<D, float>::value && !std::is_same<S, float>::value;
  constexpr bool narrow = std::is_same<S, float>::value && !std::is_same<D, float>::value;
  static_assert(widen || narrow, "the twin models half/bf16 <-> float casts only");
  if (widen && mode != RoundMode::CAST_NONE) twin::Fail("Cast half/bf16 -> float must use CAST_NONE (it is exact)");
  if (narrow && mode != RoundMode::CAST_RINT && mode != RoundMode::CAST_NONE) {
    twin::Fail("Cast float -> half/bf16: the twin models CAST_RINT (round to nearest even) only");
  }
  uint8_t *out = dst.Raw();
  const uint8_t *inRaw = src.Raw();
  Pipes().Issue(twin::kPipeV, "Cast", {src.Range(count)}, {dst.Range(count)},
                [out, inRaw, count] {
                  std::vector<D> result(count);
                  for (uint32_t i = 0; i < count; ++i) {
                    S v;
                    std::memcpy(&v, inRaw + i * sizeof(S), sizeof(S));
                    if constexpr (widen) {
                      if constexpr (std::is_same<S, half>::value) result[i] = static_cast<float>(v); else result[i] = ToFloat(v);
                    } else {
                      if constexpr (std::is_same<D, half>::value) result[i] = half(v); else result[i] = ToBfloat16(v);
                    }
                  }
                  std::memcpy(out, result.data(), count * sizeof(D));
                },
                detail::VectorNs(static_cast<uint64_t>(count) * std::max(sizeof(D), sizeof(S))));
}

}  // namespace AscendC

// ---- forward-kernel vector math (Exp, Sqrt, Div): a separate header, see its comment
#include "kernel_operator_forward_math.h"

#endif  // GNMS_TWIN_KERNEL_OPERATOR_H
