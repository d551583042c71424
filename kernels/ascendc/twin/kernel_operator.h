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
// Pipe synchronisation (SetFlag/WaitFlag/PipeBarrier) is accepted and not modelled:
// the twin executes every instruction in program order.
#ifndef GNMS_TWIN_KERNEL_OPERATOR_H
#define GNMS_TWIN_KERNEL_OPERATOR_H

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

template <pipe_t pipe>
inline void PipeBarrier() {
  twin::Checkpoint();
}

template <bool isAIVOnly = true>
inline void SyncAll() {
  twin::Checkpoint();
  twin::SyncAllBlocks();
}

template <typename T>
inline void SetAtomicAdd() {
  static_assert(std::is_same<T, float>::value, "the twin models fp32 atomic add only");
  twin::Block().atomicAdd = true;
}
inline void SetAtomicNone() { twin::Block().atomicAdd = false; }

enum class QuePosition { VECIN, VECOUT, VECCALC };
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
  T GetValue(uint32_t i) const {
    Check("GetValue", i + 1, false);
    T v;
    std::memcpy(&v, Raw() + i * sizeof(T), sizeof(T));
    return v;
  }
  void SetValue(uint32_t i, T v) const {
    Check("SetValue", i + 1, false);
    std::memcpy(Raw() + i * sizeof(T), &v, sizeof(T));
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
  T GetValue(uint64_t i) const {
    twin::CheckGm(base_ + i, sizeof(T), "GlobalTensor::GetValue");
    T v;
    std::memcpy(&v, base_ + i, sizeof(T));
    return v;
  }
  void SetValue(uint64_t i, T v) const {
    twin::CheckGm(base_ + i, sizeof(T), "GlobalTensor::SetValue");
    std::memcpy(base_ + i, &v, sizeof(T));
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
  }
  template <typename T>
  LocalTensor<T> DeQue() {
    twin::Checkpoint();
    if (queued_.empty()) twin::Fail("DeQue on an empty queue (DeQue before EnQue)");
    detail::Slot *s = queued_.front();
    queued_.erase(queued_.begin());
    s->state = detail::SlotState::kAllocated;
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
  }

 private:
  friend class TPipe;
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
    for (int32_t i = 0; i < num; ++i) que.slots_.push_back(NewSlot(len, detail::SlotState::kFree, "a TQue"));
  }
  template <QuePosition pos>
  void InitBuffer(TBuf<pos> &buf, uint32_t len) {
    if (buf.slot_ != nullptr && buf.slot_->state == detail::SlotState::kBuf) {
      twin::Fail("InitBuffer called twice for one TBuf without TPipe::Reset");
    }
    if (len == 0) twin::Fail("InitBuffer of a TBuf needs len > 0");
    buf.slot_ = NewSlot(len, detail::SlotState::kBuf, "a TBuf");
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

 private:
  detail::Slot *NewSlot(uint32_t len, detail::SlotState state, const char *owner) {
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
    used_ += bytes;
    slots_.push_back(std::move(slot));
    return slots_.back().get();
  }
  std::vector<std::unique_ptr<detail::Slot>> slots_;
  int64_t used_ = 0;
};

// ---------------------------------------------------------------- data movement
struct DataCopyExtParams {
  uint16_t blockCount = 1;
  uint32_t blockLen = 0;   // bytes per row
  uint32_t srcStride = 0;  // GM->UB: bytes between GM rows; UB->GM: 32-byte blocks between UB rows
  uint32_t dstStride = 0;  // GM->UB: 32-byte blocks between UB rows; UB->GM: bytes between GM rows
  uint32_t rsv = 0;
};

template <typename T>
struct DataCopyPadExtParams {
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

inline void GmWrite(uint8_t *dst, const uint8_t *src, size_t bytes, size_t elemBytes) {
  if (!twin::Block().atomicAdd) {
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

}  // namespace detail

template <typename T>
void DataCopy(const LocalTensor<T> &dst, const GlobalTensor<T> &src, uint32_t count) {
  twin::Checkpoint();
  detail::CheckCopyLength<T>("DataCopy GM->UB", count);
  dst.Check("DataCopy GM->UB", count, true);
  twin::CheckGm(src.GetPhyAddr(), count * sizeof(T), "DataCopy GM->UB");
  std::memcpy(dst.Raw(), src.GetPhyAddr(), count * sizeof(T));
}

template <typename T>
void DataCopy(const GlobalTensor<T> &dst, const LocalTensor<T> &src, uint32_t count) {
  twin::Checkpoint();
  detail::CheckCopyLength<T>("DataCopy UB->GM", count);
  src.Check("DataCopy UB->GM", count, true);
  twin::CheckGm(dst.GetPhyAddr(), count * sizeof(T), "DataCopy UB->GM");
  detail::GmWrite(reinterpret_cast<uint8_t *>(dst.GetPhyAddr()), src.Raw(), count * sizeof(T), sizeof(T));
}

template <typename T>
void DataCopy(const LocalTensor<T> &dst, const LocalTensor<T> &src, uint32_t count) {
  twin::Checkpoint();
  detail::CheckCopyLength<T>("DataCopy UB->UB", count);
  dst.Check("DataCopy UB->UB", count, true);
  src.Check("DataCopy UB->UB", count, true);
  std::memmove(dst.Raw(), src.Raw(), count * sizeof(T));
}

template <typename T>
void DataCopyPad(const LocalTensor<T> &dst, const GlobalTensor<T> &src, const DataCopyExtParams &p,
                 const DataCopyPadExtParams<T> &pad) {
  twin::Checkpoint();
  if (p.blockLen % sizeof(T) != 0) twin::Fail("DataCopyPad GM->UB: blockLen is not a whole number of elements");
  const uint64_t rowUb = (p.blockLen + kUbBlockBytes - 1) / kUbBlockBytes * kUbBlockBytes;
  const uint64_t pitchUb = rowUb + static_cast<uint64_t>(p.dstStride) * kUbBlockBytes;
  const uint64_t pitchGm = p.blockLen + static_cast<uint64_t>(p.srcStride);
  if (p.blockCount == 0) return;
  const uint64_t ubBytes = pitchUb * (p.blockCount - 1) + rowUb;
  dst.Check("DataCopyPad GM->UB", (ubBytes + sizeof(T) - 1) / sizeof(T), true);
  const uint8_t *gm = reinterpret_cast<const uint8_t *>(src.GetPhyAddr());
  for (uint16_t r = 0; r < p.blockCount; ++r) {
    twin::CheckGm(gm + r * pitchGm, p.blockLen, "DataCopyPad GM->UB");
    uint8_t *row = dst.Raw() + r * pitchUb;
    std::memcpy(row, gm + r * pitchGm, p.blockLen);
    for (uint64_t b = p.blockLen; b < rowUb; b += sizeof(T)) {
      if (pad.isPad) std::memcpy(row + b, &pad.paddingValue, sizeof(T)); else std::memset(row + b, 0xFF, sizeof(T));
    }
  }
}

template <typename T>
void DataCopyPad(const GlobalTensor<T> &dst, const LocalTensor<T> &src, const DataCopyExtParams &p) {
  twin::Checkpoint();
  if (p.blockLen % sizeof(T) != 0) twin::Fail("DataCopyPad UB->GM: blockLen is not a whole number of elements");
  const uint64_t rowUb = (p.blockLen + kUbBlockBytes - 1) / kUbBlockBytes * kUbBlockBytes;
  const uint64_t pitchUb = rowUb + static_cast<uint64_t>(p.srcStride) * kUbBlockBytes;
  const uint64_t pitchGm = p.blockLen + static_cast<uint64_t>(p.dstStride);
  if (p.blockCount == 0) return;
  src.Check("DataCopyPad UB->GM", (pitchUb * (p.blockCount - 1) + p.blockLen + sizeof(T) - 1) / sizeof(T), true);
  uint8_t *gm = reinterpret_cast<uint8_t *>(dst.GetPhyAddr());
  for (uint16_t r = 0; r < p.blockCount; ++r) {
    twin::CheckGm(gm + r * pitchGm, p.blockLen, "DataCopyPad UB->GM");
    detail::GmWrite(gm + r * pitchGm, src.Raw() + r * pitchUb, p.blockLen, sizeof(T));
  }
}

// ---------------------------------------------------------------- vector instructions (fp32)
namespace detail {

template <typename T>
void VectorOperands(const char *op) {
  static_assert(std::is_same<T, float>::value, "the twin models fp32 vector arithmetic only");
  twin::Checkpoint();
  (void)op;
}

template <typename F>
void Elementwise(const char *op, const LocalTensor<float> &dst, std::initializer_list<const LocalTensor<float> *> srcs,
                 int32_t count, F f) {
  VectorOperands<float>(op);
  if (count < 0) twin::Fail(std::string(op) + ": negative count");
  dst.Check(op, count, true);
  std::vector<const float *> in;
  for (const LocalTensor<float> *s : srcs) {
    s->Check(op, count, true);
    in.push_back(s->Data());
  }
  float *out = dst.Data();
  for (int32_t i = 0; i < count; ++i) out[i] = f(in, i);
}

}  // namespace detail

inline void Add(const LocalTensor<float> &dst, const LocalTensor<float> &a, const LocalTensor<float> &b,
                const int32_t &count) {
  detail::Elementwise("Add", dst, {&a, &b}, count, [](auto &in, int i) { return in[0][i] + in[1][i]; });
}
inline void Sub(const LocalTensor<float> &dst, const LocalTensor<float> &a, const LocalTensor<float> &b,
                const int32_t &count) {
  detail::Elementwise("Sub", dst, {&a, &b}, count, [](auto &in, int i) { return in[0][i] - in[1][i]; });
}
inline void Mul(const LocalTensor<float> &dst, const LocalTensor<float> &a, const LocalTensor<float> &b,
                const int32_t &count) {
  detail::Elementwise("Mul", dst, {&a, &b}, count, [](auto &in, int i) { return in[0][i] * in[1][i]; });
}
inline void Adds(const LocalTensor<float> &dst, const LocalTensor<float> &a, const float &s, const int32_t &count) {
  detail::Elementwise("Adds", dst, {&a}, count, [s](auto &in, int i) { return in[0][i] + s; });
}
inline void Muls(const LocalTensor<float> &dst, const LocalTensor<float> &a, const float &s, const int32_t &count) {
  detail::Elementwise("Muls", dst, {&a}, count, [s](auto &in, int i) { return in[0][i] * s; });
}
inline void Duplicate(const LocalTensor<float> &dst, const float &s, const int32_t &count) {
  detail::Elementwise("Duplicate", dst, {}, count, [s](auto &, int) { return s; });
}

// dst[0] = sum of src[0..count). Modelled as the hardware does it: one fp32 partial per
// 64-element repeat (summed as a binary tree), then the partials (again as a tree).
template <typename T>
void ReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<T> &work, const int32_t &count) {
  detail::VectorOperands<T>("ReduceSum");
  const int32_t repeats = (count + 63) / 64;
  const int32_t workNeeded = (std::max(repeats, 1) + 7) / 8 * 8;
  dst.Check("ReduceSum dst", 1, true);
  src.Check("ReduceSum src", count, true);
  work.Check("ReduceSum work", workNeeded, true);
  auto tree = [](std::vector<float> v) {
    if (v.empty()) return 0.0f;
    while (v.size() > 1) {
      std::vector<float> next((v.size() + 1) / 2);
      for (size_t i = 0; i < v.size() / 2; ++i) next[i] = v[2 * i] + v[2 * i + 1];
      if (v.size() % 2) next.back() = v.back();
      v.swap(next);
    }
    return v[0];
  };
  const float *s = src.Data();
  std::vector<float> partials;
  for (int32_t r = 0; r < repeats; ++r) {
    const int32_t n = std::min(64, count - r * 64);
    partials.push_back(tree(std::vector<float>(s + r * 64, s + r * 64 + n)));
  }
  std::memset(work.Raw(), 0xFF, workNeeded * sizeof(float));  // the instruction clobbers its work area
  dst.SetValue(0, tree(partials));
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
  std::vector<D> out(count);
  const S *in = src.Data();
  for (uint32_t i = 0; i < count; ++i) {
    const S v = in[i];
    if constexpr (widen) {
      if constexpr (std::is_same<S, half>::value) out[i] = static_cast<float>(v); else out[i] = ToFloat(v);
    } else {
      if constexpr (std::is_same<D, half>::value) out[i] = half(v); else out[i] = ToBfloat16(v);
    }
  }
  std::memcpy(dst.Raw(), out.data(), count * sizeof(D));
}

}  // namespace AscendC

#endif  // GNMS_TWIN_KERNEL_OPERATOR_H
