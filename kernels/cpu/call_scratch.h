// The O(N*C) scratch a kernel call needs (partial sums, coefficients), taken from a buffer
// that belongs to the calling thread and is kept between calls: a small call then
// allocates nothing, and the buffer is never zero-filled (every kernel writes a slot before
// reading it). MindSpore launches kernels from a few long-lived threads, so there are few
// such buffers; one larger than kMaxKeptBytes is allocated for that call only, and a
// call made while the thread's buffer is in use (none today) gets its own too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace ms_groupnorm {

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
        buffer.storage.reset(new unsigned char[bytes + kAlign]);
        buffer.capacity = bytes;
      }
      buffer.in_use = true;
      borrowed_ = &buffer;
      base_ = Aligned(buffer.storage.get());
    } else {
      owned_.reset(new unsigned char[bytes + kAlign]);
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
