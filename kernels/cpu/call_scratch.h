// The O(N*C) scratch a kernel call needs (partial sums, coefficients), taken from a buffer
// that belongs to the calling thread and is kept between calls: a small call then
// allocates nothing, and the buffer is zero-filled only when it grows (every kernel writes a
// slot before reading it; StoreIfChanged below reads it first). MindSpore launches kernels
// from a few long-lived threads, so there are few such buffers; one larger than kMaxKeptBytes
// is allocated for that call only, and a call made while the thread's buffer is in use (none
// today) gets its own too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

namespace ms_groupnorm {

// *slot = value, unless *slot already holds those bits. The calling thread fills per-call arrays
// (gamma and beta converted, once a call) that every kernel thread then reads: writing the same
// values again on each call took the lines out of the other cores' caches, and the call waited for
// them (2x640x8x8 G32 forward on 2 threads: 24.3 us, 18.8 us without the rewrites; 22.7 us on 1).
// Bits, not ==, so that -0 replaces +0 and a NaN stays what it is.
template <typename F>
inline void StoreIfChanged(F *slot, F value) {
  if (std::memcmp(slot, &value, sizeof(F)) != 0) *slot = value;
}

class CallScratch {
 public:
  static constexpr size_t kAlign = 64;
  static constexpr size_t kMaxKeptBytes = size_t{64} << 20;

  // Bytes that Take<T>(count) uses.
  template <typename T>
  static size_t Bytes(int64_t count) {
    return (static_cast<size_t>(count) * sizeof(T) + kAlign - 1) / kAlign * kAlign;
  }

  explicit CallScratch(size_t bytes) {
    Buffer &buffer = ThreadBuffer();
    if (!buffer.in_use && bytes <= kMaxKeptBytes) {
      if (buffer.capacity < bytes) {
        buffer.storage.reset(new unsigned char[bytes + kAlign]());
        buffer.capacity = bytes;
      }
      buffer.in_use = true;
      borrowed_ = &buffer;
      base_ = Aligned(buffer.storage.get());
    } else {
      owned_.reset(new unsigned char[bytes + kAlign]());
      base_ = Aligned(owned_.get());
    }
  }
  ~CallScratch() {
    if (borrowed_ != nullptr) borrowed_->in_use = false;
  }
  CallScratch(const CallScratch &) = delete;
  CallScratch &operator=(const CallScratch &) = delete;

  // The next count elements of T (uninitialised), kAlign-aligned.
  template <typename T>
  T *Take(int64_t count) {
    T *p = reinterpret_cast<T *>(base_ + used_);
    used_ += Bytes<T>(count);
    return p;
  }

 private:
  struct Buffer {
    std::unique_ptr<unsigned char[]> storage;
    size_t capacity = 0;
    bool in_use = false;
  };
  static Buffer &ThreadBuffer() {
    static thread_local Buffer buffer;
    return buffer;
  }
  static unsigned char *Aligned(unsigned char *p) {
    const uintptr_t address = reinterpret_cast<uintptr_t>(p);
    return p + (kAlign - address % kAlign) % kAlign;
  }

  Buffer *borrowed_ = nullptr;
  std::unique_ptr<unsigned char[]> owned_;
  unsigned char *base_ = nullptr;
  size_t used_ = 0;
};

}  // namespace ms_groupnorm
