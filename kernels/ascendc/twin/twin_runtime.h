// Runtime of the CPU twin: runs the blocks of one kernel launch as threads and checks
// the rules real Ascend hardware imposes (see kernel_operator.h for the API side).
//
// Blocks run under a scheduling policy so that tests can try several orders and
// interleavings of the same launch:
//   kConcurrent  every block is a free-running thread; SyncAll is a real barrier;
//   kForward     one block at a time, in index order, switching only at SyncAll / exit;
//   kReverse     the same in reverse index order;
//   kShuffle     the same in a random order, redrawn after every SyncAll (seeded);
//   kInterleave  one block at a time, but every API call may hand over to a random
//                other block (seeded), which interleaves the blocks at fine grain.
// A launch stops at the first rule violation: Fail() records the message, wakes every
// block and unwinds them; Launch() returns non-zero with the message.
#ifndef GNMS_TWIN_RUNTIME_H
#define GNMS_TWIN_RUNTIME_H

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "twin_pipes.h"

namespace twin {

enum Policy : int { kConcurrent = 0, kForward = 1, kReverse = 2, kShuffle = 3, kInterleave = 4 };

struct Config {
  int64_t ubBytes = 196608;  // unified buffer per vector core
  int64_t coreNum = 48;      // vector cores
  int policy = kConcurrent;
  uint64_t seed = 0;
  int execution = kImmediate;  // kDeferred: V/MTE2/MTE3 work waits until a synchronisation forces it
  CostModel cost;
  bool checkHazards = true;  // false only to show what a missing synchronisation computes
  // bisheng's --cce-auto-sync (default in custom-op projects): the compiler orders dependent
  // vector instructions; false: each needs a PipeBarrier<PIPE_V> (twin_pipes.h)
  bool autoSync = true;
  // float overflow mode: false INF_NAN (the Atlas A2 default, and what MindSpore 2.10 runs on
  // 910B), true saturation (inf -> +-max, NaN -> 0; kernel_operator.h Saturating)
  bool saturation = false;
  // Per-launch relaxations for CANN's own kernels (tests/cann_peer.py), each shown to give the
  // hardware's result; our kernels run with none (docs/ascend.md, "CANN's kernels on the twin"):
  //  * a fill that leaves every UB byte as it is (InitOutput refilling its popped UB with the
  //    value it already holds, or under deferred execution with the value of the fill that
  //    still last wrote it) is not a write a pending reader could observe, so it is not checked
  //    as a hazard;
  //  * the pairs of GetValue/SetValue with V, MTE2 and MTE3 work are synchronised by bisheng's
  //    --cce-auto-sync, as CANN builds its kernels (PipeModel::SetScalarAutoSync);
  //  * copies between the same physical memories whatever the UB positions, and DataCopyPad
  //    padding inside the buffer rather than the view (kernel_operator_data_copy.h);
  //  * a TQue declared deeper than it is ever filled (a recommendation of TQue简介.md, not a
  //    rule of the hardware) is not flagged.
  bool cannCompat = false;
};

// A global-memory buffer handed to the launch; every GM access must fall inside one.
struct GmRegion {
  const void *ptr;
  size_t bytes;
  std::string name;
};

// Thrown (and caught by the launcher) when the kernel breaks a rule.
struct KernelFault {};

[[noreturn]] void Fail(const std::string &message);
// A fault found where nothing may be thrown (a destructor): the block fails when its kernel
// body returns. The first one counts.
void DeferFault(const std::string &message);

// Called by every API entry point: stops the block if the launch was aborted and, under
// kInterleave, may hand the core over to another block.
void Checkpoint();

// Per-block state the API needs.
struct BlockState {
  int64_t blockIdx = 0;
  int64_t blockNum = 0;
  std::vector<uint8_t> ub;  // this core's unified buffer, filled with 0xFF garbage at start
  bool atomicAdd = false;   // SetAtomicAdd<float>() in effect
  PipeModel pipes;          // pipe synchronisation, hazards, deferred execution, cost
  std::string deferredFault;  // see DeferFault
  // The last InitOutput fill of the popped UB: the V instruction, its bytes and the value's bytes
  // (kernel_operator_common.h: whether a refill changes anything, also under deferred execution)
  struct Fill {
    uint32_t op = 0;
    uint32_t start = 0, bytes = 0;
    uint8_t value[8] = {};
    size_t valueBytes = 0;
  } initOutputFill;
};
BlockState &Block();
int64_t TilingKey();
const Config &CurrentConfig();

// Throws a fault unless [ptr, ptr + bytes) lies inside one region of the launch.
void CheckGm(const void *ptr, size_t bytes, const char *what);
// Serialises atomic read-modify-writes to GM across blocks.
void LockAtomics();
void UnlockAtomics();

void SyncAllBlocks();

// Per-block cost counters of the last launch that completed (for the cost report).
std::vector<PipeStats> LastLaunchStats();
// The cost constants launches from the C API use (the cost report may change them).
CostModel DefaultCost();
void SetDefaultCost(const CostModel &cost);
// The C API's view of both, one row per value: the name Python reads it by
// (kernels/ascendc/twin/twin.py's COST_FIELDS / STAT_FIELDS, which GnmsTwinFieldNames hands over)
// and the CostModel / PipeStats member it is. The arrays, their sizes and the names all come
// from these two lists, so they cannot drift apart.
#define GNMS_TWIN_COST_FIELDS(X)                                                                    \
  X(clock_ghz, clockGhz) X(gm_bytes_per_ns, gmBytesPerNs) X(dma_setup_cycles, dmaSetupCycles)       \
  X(dma_latency_ns, dmaLatencyNs) X(vec_cycles_per_repeat, vecCyclesPerRepeat)                      \
  X(vec_start_cycles, vecStartCycles) X(scalar_ub_cycles, scalarUbCycles) X(scalar_gm_ns, scalarGmNs) \
  X(syncall_ns, syncAllNs) X(dma_burst_cycles, dmaBurstCycles) X(vec_barrier_cycles, vecBarrierCycles)
#define GNMS_TWIN_STAT_FIELDS(X)                                                                    \
  X(gm_read_bytes, gmReadBytes) X(gm_write_bytes, gmWriteBytes) X(scalar_ub, scalarUb)              \
  X(scalar_gm, scalarGm) X(vec_calls, vecCalls) X(vec_repeats, vecRepeats)                          \
  X(barriers_all, barriersAll) X(barriers_pipe, barriersPipe) X(user_flag_pairs, userFlagPairs)     \
  X(queue_flag_pairs, queueFlagPairs) X(sync_alls, syncAlls) X(busy_s_ns, busyNs[0])               \
  X(busy_v_ns, busyNs[1]) X(busy_mte2_ns, busyNs[2]) X(busy_mte3_ns, busyNs[3])                     \
  X(time_at_syncall_ns, timeAtSyncAllNs) X(end_ns, endNs) X(api_flag_pairs, apiFlagPairs)           \
  X(auto_v_barriers, autoVBarriers) X(dma_bursts, dmaBursts)
#define GNMS_TWIN_ONE(name, member) +1
constexpr int kCostFieldCount = 0 GNMS_TWIN_COST_FIELDS(GNMS_TWIN_ONE);
constexpr int kStatFieldCount = 0 GNMS_TWIN_STAT_FIELDS(GNMS_TWIN_ONE);
#undef GNMS_TWIN_ONE
// Sets (values != nullptr) and returns in out[kCostFieldCount] the cost constants.
void ExchangeCostModel(const double *values, double *out);
// Copies kStatFieldCount doubles per block of the last launch into out[maxBlocks][...] and
// returns the number of blocks.
int CopyLastStats(double *out, int maxBlocks);
// The names of one list, comma-separated: which 0 the cost constants, 1 the counters.
const char *FieldNames(int which);

// Runs body() once per block. Returns 0, or 1 with *error set to the first fault.
int Launch(const Config &config, int64_t blockDim, int64_t tilingKey, const std::vector<GmRegion> &regions,
           const std::function<void()> &body, std::string *error);

}  // namespace twin

#endif  // GNMS_TWIN_RUNTIME_H
