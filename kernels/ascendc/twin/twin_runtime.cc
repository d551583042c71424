// Scheduler, barrier and fault handling of the CPU twin (see twin_runtime.h).
#include <cstring>
#include "twin_runtime.h"

#include "build_rules.h"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <numeric>
#include <random>
#include <thread>

namespace twin {
namespace {

struct Aborted {};  // unwinds the blocks that did not cause the fault

enum class State { kRunnable, kAtBarrier, kDone };

class LaunchState {
 public:
  LaunchState(const Config &config, int64_t blockDim, int64_t key, const std::vector<GmRegion> &regions)
      : config_(config), n_(static_cast<int>(blockDim)), key_(key), regions_(regions), state_(n_, State::kRunnable),
        rng_(config.seed), order_(n_) {
    std::iota(order_.begin(), order_.end(), 0);
    if (config.policy == kReverse) std::reverse(order_.begin(), order_.end());
    if (config.policy == kShuffle) std::shuffle(order_.begin(), order_.end(), rng_);
  }

  bool Cooperative() const { return config_.policy != kConcurrent; }

  [[noreturn]] void FailWith(const std::string &message) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!aborted_) error_ = message;
      aborted_ = true;
    }
    cv_.notify_all();
    throw KernelFault{};
  }

  void ThrowIfAborted() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (aborted_) throw Aborted{};
  }

  // ---- cooperative scheduling: exactly one block holds the baton ----
  void Start() {
    if (!Cooperative()) return;
    std::lock_guard<std::mutex> lock(mutex_);
    current_ = PickLocked(-1);
  }

  void WaitTurn(int b) {
    if (!Cooperative()) return;
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return aborted_ || current_ == b; });
    if (aborted_) throw Aborted{};
  }

  void Yield(int b) {
    if (config_.policy != kInterleave) {
      ThrowIfAborted();
      return;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (aborted_) throw Aborted{};
      current_ = PickLocked(b);
    }
    cv_.notify_all();
    WaitTurn(b);
  }

  void Barrier(int b) {
    if (Cooperative()) {
      {
        std::lock_guard<std::mutex> lock(mutex_);
        if (aborted_) throw Aborted{};
        state_[b] = State::kAtBarrier;
        CheckBarrierLocked(b);
        if (std::all_of(state_.begin(), state_.end(), [](State s) { return s == State::kAtBarrier; })) {
          std::fill(state_.begin(), state_.end(), State::kRunnable);
          if (config_.policy == kShuffle) std::shuffle(order_.begin(), order_.end(), rng_);
        }
        current_ = PickLocked(-1);
      }
      cv_.notify_all();
      WaitTurn(b);
      return;
    }
    std::unique_lock<std::mutex> lock(mutex_);
    if (aborted_) throw Aborted{};
    state_[b] = State::kAtBarrier;
    CheckBarrierLocked(b);
    const uint64_t phase = phase_;
    if (++arrived_ == n_) {
      arrived_ = 0;
      ++phase_;
      std::fill(state_.begin(), state_.end(), State::kRunnable);
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return aborted_ || phase_ != phase; });
    if (aborted_) throw Aborted{};
  }

  void Finish(int b) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (aborted_) return;
      state_[b] = State::kDone;
      for (int i = 0; i < n_; ++i) {
        if (state_[i] == State::kAtBarrier) {
          error_ = "SyncAll mismatch: block " + std::to_string(b) + " finished while block " + std::to_string(i) +
                   " waits in SyncAll (every block must call SyncAll the same number of times)";
          aborted_ = true;
          break;
        }
      }
      if (!aborted_ && Cooperative()) current_ = PickLocked(-1);
    }
    cv_.notify_all();
  }

  void RecordForeign(const std::string &message) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!aborted_) error_ = message;
      aborted_ = true;
    }
    cv_.notify_all();
  }

  bool InRegions(const void *ptr, size_t bytes) const {
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    for (const GmRegion &r : regions_) {
      const auto begin = reinterpret_cast<uintptr_t>(r.ptr);
      if (p >= begin && p + bytes <= begin + r.bytes && p + bytes >= p) return true;
    }
    return false;
  }

  std::string Describe(const void *ptr) const {
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    std::string nearest = "no launch buffer";
    for (const GmRegion &r : regions_) {
      const auto begin = reinterpret_cast<uintptr_t>(r.ptr);
      if (p >= begin && p < begin + r.bytes + 4096) {
        nearest = "byte offset " + std::to_string(p - begin) + " of '" + r.name + "' (" + std::to_string(r.bytes) +
                  " bytes)";
      }
    }
    return nearest;
  }

  const Config &config() const { return config_; }
  int64_t key() const { return key_; }
  std::string error() const { return error_; }
  bool aborted() const { return aborted_; }
  std::mutex &atomics() { return atomics_; }

 private:
  // A block that already finished can never reach the barrier: that launch deadlocks on hardware.
  void CheckBarrierLocked(int b) {
    for (int i = 0; i < n_; ++i) {
      if (state_[i] == State::kDone) {
        error_ = "SyncAll mismatch: block " + std::to_string(b) + " waits in SyncAll but block " + std::to_string(i) +
                 " already finished (every block must call SyncAll the same number of times)";
        aborted_ = true;
        cv_.notify_all();
        throw KernelFault{};
      }
    }
  }

  // Next block to run; `self` is the caller under kInterleave (it may be picked again).
  int PickLocked(int self) {
    std::vector<int> runnable;
    for (int i : order_) {
      if (state_[i] == State::kRunnable) runnable.push_back(i);
    }
    if (runnable.empty()) return -1;
    if (config_.policy == kInterleave) {
      (void)self;
      return runnable[std::uniform_int_distribution<size_t>(0, runnable.size() - 1)(rng_)];
    }
    return runnable.front();
  }

  Config config_;
  int n_;
  int64_t key_;
  std::vector<GmRegion> regions_;
  std::vector<State> state_;
  std::mt19937_64 rng_;
  std::vector<int> order_;
  std::mutex mutex_;
  std::mutex atomics_;
  std::condition_variable cv_;
  bool aborted_ = false;
  std::string error_;
  int current_ = -1;
  int arrived_ = 0;
  uint64_t phase_ = 0;
};

std::mutex g_stats_mutex;
std::vector<PipeStats> g_last_stats;
CostModel g_default_cost;

thread_local LaunchState *tls_launch = nullptr;
thread_local BlockState *tls_block = nullptr;

LaunchState &Current() {
  if (tls_launch == nullptr) throw std::logic_error("twin: AscendC API used outside a twin launch");
  return *tls_launch;
}

}  // namespace

void Fail(const std::string &message) {
  Current().FailWith("block " + std::to_string(tls_block ? tls_block->blockIdx : -1) + ": " + message);
}

void Checkpoint() { Current().Yield(static_cast<int>(tls_block->blockIdx)); }

BlockState &Block() {
  Current();
  return *tls_block;
}

int64_t TilingKey() { return Current().key(); }
const Config &CurrentConfig() { return Current().config(); }

void CheckGm(const void *ptr, size_t bytes, const char *what) {
  LaunchState &launch = Current();
  if (bytes == 0) return;
  if (!launch.InRegions(ptr, bytes)) {
    Fail(std::string(what) + ": global-memory access of " + std::to_string(bytes) + " bytes at " +
         launch.Describe(ptr) + " is outside every buffer the launch was given");
  }
}

void DeferFault(const std::string &message) {
  if (tls_block != nullptr && tls_block->deferredFault.empty()) tls_block->deferredFault = message;
}

void LockAtomics() { Current().atomics().lock(); }
void UnlockAtomics() { Current().atomics().unlock(); }

void SyncAllBlocks() {
  twin::rules::CheckSyncAllKernelType();  // SyncAll under AIV_ONLY/AIC_ONLY cannot work on hardware
  Current().Barrier(static_cast<int>(tls_block->blockIdx));
}

int Launch(const Config &config, int64_t blockDim, int64_t tilingKey, const std::vector<GmRegion> &regions,
           const std::function<void()> &body, std::string *error) {
  if (blockDim < 1 || blockDim > config.coreNum) {
    *error = "launch of " + std::to_string(blockDim) + " blocks on a device with " + std::to_string(config.coreNum) +
             " vector cores: SyncAll needs every block resident at once, so blockDim must be in [1, coreNum]";
    return 1;
  }
  LaunchState launch(config, blockDim, tilingKey, regions);
  std::vector<BlockState> blocks(static_cast<size_t>(blockDim));
  launch.Start();
  std::vector<std::thread> threads;
  threads.reserve(blocks.size());
  for (int64_t b = 0; b < blockDim; ++b) {
    threads.emplace_back([&, b] {
      tls_launch = &launch;
      tls_block = &blocks[b];
      blocks[b].blockIdx = b;
      blocks[b].blockNum = blockDim;
      try {
        launch.WaitTurn(static_cast<int>(b));
        blocks[b].ub.assign(static_cast<size_t>(config.ubBytes), 0xFF);
        blocks[b].pipes.Reset(blocks[b].ub.size(), config.execution, config.cost, config.checkHazards,
                              config.autoSync);
        blocks[b].pipes.SetScalarAutoSync(config.cannCompat);
        body();
        if (!blocks[b].deferredFault.empty()) Fail(blocks[b].deferredFault);
        blocks[b].pipes.Finish();
        launch.Finish(static_cast<int>(b));
      } catch (const KernelFault &) {
      } catch (const Aborted &) {
      } catch (const std::exception &e) {
        launch.RecordForeign(std::string("block ") + std::to_string(b) + ": exception: " + e.what());
      }
      tls_launch = nullptr;
      tls_block = nullptr;
    });
  }
  for (std::thread &t : threads) t.join();
  if (launch.aborted()) {
    *error = launch.error();
    return 1;
  }
  std::lock_guard<std::mutex> lock(g_stats_mutex);
  g_last_stats.clear();
  for (BlockState &b : blocks) g_last_stats.push_back(b.pipes.stats());
  return 0;
}

CostModel DefaultCost() {
  std::lock_guard<std::mutex> lock(g_stats_mutex);
  return g_default_cost;
}

void SetDefaultCost(const CostModel &cost) {
  std::lock_guard<std::mutex> lock(g_stats_mutex);
  g_default_cost = cost;
}

void ExchangeCostModel(const double *values, double *out) {
  CostModel c = DefaultCost();
#define GNMS_TWIN_ADDRESS(name, member) &c.member,
  double *fields[kCostFieldCount] = {GNMS_TWIN_COST_FIELDS(GNMS_TWIN_ADDRESS)};
#undef GNMS_TWIN_ADDRESS
  if (values != nullptr) {
    for (int i = 0; i < kCostFieldCount; ++i) *fields[i] = values[i];
    SetDefaultCost(c);
  }
  for (int i = 0; i < kCostFieldCount; ++i) out[i] = *fields[i];
}

int CopyLastStats(double *out, int maxBlocks) {
  const std::vector<PipeStats> stats = LastLaunchStats();
  for (int b = 0; b < maxBlocks && b < static_cast<int>(stats.size()); ++b) {
    const PipeStats &s = stats[b];
#define GNMS_TWIN_VALUE(name, member) s.member,
    const double row[kStatFieldCount] = {GNMS_TWIN_STAT_FIELDS(GNMS_TWIN_VALUE)};
#undef GNMS_TWIN_VALUE
    std::memcpy(out + kStatFieldCount * b, row, sizeof row);
  }
  return static_cast<int>(stats.size());
}

const char *FieldNames(int which) {
#define GNMS_TWIN_NAME(name, member) #name ","
  static const char *const kNames[2] = {GNMS_TWIN_COST_FIELDS(GNMS_TWIN_NAME), GNMS_TWIN_STAT_FIELDS(GNMS_TWIN_NAME)};
#undef GNMS_TWIN_NAME
  return which == 0 || which == 1 ? kNames[which] : "";
}

std::vector<PipeStats> LastLaunchStats() {
  std::lock_guard<std::mutex> lock(g_stats_mutex);
  return g_last_stats;
}

}  // namespace twin
