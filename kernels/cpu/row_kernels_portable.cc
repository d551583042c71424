// The portable build of the row loops (any CPU, plain C++), the run-time choice of
// build, and the kernels' thread count.
#include <omp.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "row_kernels.h"

#include "fp_contract_off.h"
#include "portable_mul_add.h"

namespace ms_groupnorm {
namespace isa_portable {

// Four float lanes per "register"; the compiler turns the loops into SSE2 or NEON code.
struct V {
  static constexpr int kWidth = 4;
  struct reg {
    float v[kWidth];
  };
  static reg Zero() { return Set1(0.0f); }
  static reg Set1(float s) { return reg{{s, s, s, s}}; }
  static reg Add(reg a, reg b) {
    for (int k = 0; k < kWidth; ++k) a.v[k] += b.v[k];
    return a;
  }
  static reg Sub(reg a, reg b) {
    for (int k = 0; k < kWidth; ++k) a.v[k] -= b.v[k];
    return a;
  }
  static reg Mul(reg a, reg b) {
    for (int k = 0; k < kWidth; ++k) a.v[k] *= b.v[k];
    return a;
  }
  // a * b + c: one rounding where the target has a hardware FMA, else two (portable_mul_add.h).
  static reg MulAdd(reg a, reg b, reg c) {
    for (int k = 0; k < kWidth; ++k) a.v[k] = PortableMulAdd(a.v[k], b.v[k], c.v[k]);
    return a;
  }
  static float MulAdd(float a, float b, float c) { return PortableMulAdd(a, b, c); }
  template <typename T>
  static reg Load(const T *p) {
    reg r;
    for (int k = 0; k < kWidth; ++k) r.v[k] = ToFloat(p[k]);
    return r;
  }
  template <typename T>
  static void Store(T *p, reg r) {
    for (int k = 0; k < kWidth; ++k) p[k] = FromFloat<T>(r.v[k]);
  }
  template <typename T>
  static void Stream(T *p, reg r) { Store(p, r); }
  // Pairs in memory order (row_kernels_impl.h).
  template <typename T>
  static void LoadPair(const T *p, reg &a, reg &b) {
    a = Load(p);
    b = Load(p + kWidth);
  }
  template <typename T>
  static void StorePair(T *p, reg a, reg b) {
    Store(p, a);
    Store(p + kWidth, b);
  }
  template <typename T>
  static void StreamPair(T *p, reg a, reg b) { StorePair(p, a, b); }
  template <typename T>
  static void Unpair(const T *, reg &, reg &) {}
  static void StoreLanes(float *p, reg r) { std::memcpy(p, r.v, sizeof r.v); }
  static double FoldRegs(const reg *acc);  // after row_kernels_impl.h, which defines FoldLanes
  static double FoldRegsViaFloat(const reg *acc);
  static void Fence() {}
  // v[i] = sqrt(v[i]), correctly rounded
  static void SqrtDoubles(double *v, int n) {
    for (int i = 0; i < n; ++i) v[i] = __builtin_sqrt(v[i]);
  }

  // No partial vectors: a row's last elements go lane by lane (row_kernels_impl.h). Declared
  // only, for the code that the AVX-512 build's kPartial selects; never called here.
  template <typename T>
  static constexpr bool kPartial = false;
  template <typename T>
  static constexpr int64_t kPartialStoreMin = kWidth;
  template <typename T>
  static reg LoadFirst(const T *p, int n);
  template <typename T>
  static void StoreFirst(T *p, reg v, int n);
  static reg Select(int n, reg updated, reg kept);
  template <typename T>
  static constexpr int StreamAlign() { return 1; }
};

#include "row_kernels_impl.h"

double V::FoldRegs(const reg *acc) {
  float lanes[kLanes];
  for (int r = 0; r < kRegs; ++r) StoreLanes(lanes + r * kWidth, acc[r]);
  return FoldLanes(lanes);
}

double V::FoldRegsViaFloat(const reg *acc) {
  float lanes[kLanes];
  for (int r = 0; r < kRegs; ++r) StoreLanes(lanes + r * kWidth, acc[r]);
  return FoldLanesViaFloat(lanes);
}

}  // namespace isa_portable

const RowKernelSet &PortableRowKernels() {
  static const RowKernelSet set{"portable", isa_portable::MakeRowKernels<float>(),
                                isa_portable::MakeRowKernels<Half>(), isa_portable::MakeRowKernels<BFloat16>()};
  return set;
}

namespace {

const RowKernelSet *ByName(const char *isa) {
  if (isa == nullptr) return nullptr;
  if (std::strcmp(isa, "portable") == 0) return &PortableRowKernels();
  if (std::strcmp(isa, "avx2") == 0) return Avx2RowKernels();
  if (std::strcmp(isa, "avx512") == 0) return Avx512RowKernels();
  return nullptr;
}

const RowKernelSet *Widest() {
  if (const RowKernelSet *set = Avx512RowKernels()) return set;
  if (const RowKernelSet *set = Avx2RowKernels()) return set;
  return &PortableRowKernels();
}

const RowKernelSet *Initial() {
  const RowKernelSet *requested = ByName(std::getenv("MS_GROUPNORM_CPU_ISA"));
  return requested != nullptr ? requested : Widest();
}

std::atomic<const RowKernelSet *> &Active() {
  static std::atomic<const RowKernelSet *> active{Initial()};
  return active;
}

std::atomic<int> g_threads{0};

}  // namespace

const RowKernelSet &ActiveRowKernels() { return *Active().load(std::memory_order_acquire); }

bool SelectRowKernels(const char *isa) {
  const RowKernelSet *set = ByName(isa);
  if (set == nullptr) return false;
  Active().store(set, std::memory_order_release);
  return true;
}

void SetKernelThreads(int threads) { g_threads.store(threads > 0 ? threads : 0, std::memory_order_relaxed); }

int KernelThreads() {
  const int threads = g_threads.load(std::memory_order_relaxed);
  return threads > 0 ? threads : omp_get_max_threads();
}

namespace {
// A size setting of the kernels: a value > 0 set from any thread, anything else restoring
// the default.
class SizeSetting {
 public:
  constexpr explicit SizeSetting(int64_t fallback) : fallback_(fallback), value_(fallback) {}
  void Set(int64_t value) { value_.store(value > 0 ? value : fallback_, std::memory_order_relaxed); }
  int64_t Get() const { return value_.load(std::memory_order_relaxed); }

 private:
  const int64_t fallback_;
  std::atomic<int64_t> value_;
};

SizeSetting g_min_elements_per_thread{kDefaultMinElementsPerThread};
SizeSetting g_stream_min_bytes{kDefaultStreamMinBytes};
}  // namespace

void SetMinElementsPerThread(int64_t elements) { g_min_elements_per_thread.Set(elements); }
int64_t MinElementsPerThread() { return g_min_elements_per_thread.Get(); }

void SetStreamMinBytes(int64_t bytes) { g_stream_min_bytes.Set(bytes); }
int64_t StreamMinBytes() { return g_stream_min_bytes.Get(); }

}  // namespace ms_groupnorm
