// Pipe model of the CPU twin: which hardware pipe runs each AscendC call, the
// synchronisation between pipes, UB hazards, deferred execution and a cost timeline.
//
// An AI vector core has independent instruction queues ("pipes"): MTE2 (GM -> UB copies),
// MTE3 (UB -> GM copies), V (vector instructions and UB -> UB copies) and S (the scalar
// unit, which issues everything and runs GetValue/SetValue itself). Instructions of one
// pipe run in order; instructions of different pipes are ordered only by
//   * SetFlag<X_Y>(id) / WaitFlag<X_Y>(id): Y's later instructions wait until X's earlier
//     ones are done (asc-devkit docs/zh/api/SIMD-API/基础API/同步控制/核内同步/SetFlag-WaitFlag.md:
//     the flag is one bit, set by SetFlag, cleared by WaitFlag; ids 0-7 on A2/A3);
//   * PipeBarrier<PIPE_ALL>, and SyncAll (which also waits for every pipe);
//   * a WaitFlag<X_S> on the scalar unit: it issues every instruction in program order, so
//     whatever it issues after the wait, on any pipe, comes after X's work before the SetFlag
//     (what CANN's kernels rely on between a ReduceSum's V -> S round trip and the next loads);
//   * V -> V: on arch 2201 the vector pipe does not order dependent instructions itself;
//     bisheng's --cce-auto-sync (on by default in custom-op projects) inserts a V barrier
//     between them (asc-devkit docs/zh/api/SIMD-API/基础API/同步控制/核内同步/关键特性说明.md:
//     "针对NPU架构2201，PIPE_V之间由毕昇编译器自动完成同步插入"). The model counts those compiler
//     barriers (and costs them); with autoSync off a dependent pair without
//     PipeBarrier<PIPE_V> between them stops the launch;
//   * a TQue hand-over: EnQue/DeQue insert SetFlag/WaitFlag from the producer pipe to the
//     consumer pipe, FreeTensor/AllocTensor the reverse (asc-devkit
//     impl/basic_api/kernel_tquebind_impl.h EnQue/DeQue/FreeBuffer/AllocBuffer, events from
//     impl/basic_api/kernel_event.h GetQueEvt: GM->UB queue MTE2_V / V_MTE2, UB->GM queue
//     V_MTE3 / MTE3_V). A TBuf has no events.
// The model keeps a vector clock per pipe (how far each pipe is known to have got in every
// other pipe) and, per 4-byte UB cell, the last writer and the last reader of every pipe.
// An access from pipe P to a cell last written (or, for a write, last read) by another
// pipe Q at a point P is not ordered after stops the launch, naming both calls.
// Scalar reads (GetValue) return their value to the scalar unit, so they are complete when
// the next instruction is issued: they are never the earlier half of a hazard. Scalar
// writes (SetValue) are not: a vector or MTE read of them needs S_V / S_MTE3.
//
// Execution: kImmediate runs every instruction when it is issued (program order);
// kDeferred runs scalar reads at once but queues V, MTE2 and MTE3 work and scalar writes
// until something forces them (a WaitFlag on that pipe's SetFlag, PipeBarrier<PIPE_ALL>,
// SyncAll, the end of the block), so a kernel that lacks a synchronisation also computes
// wrong numbers.
//
// Event ids: one pool per HardEvent (src, dst pipe pair), ids 0-7, shared by the kernel's
// FetchEventID / AllocEventID, the TQues (EnQue and FreeTensor allocate, DeQue and
// AllocTensor release: asc-devkit impl/basic_api/kernel_tquebind_impl.h) and the APIs that
// synchronise internally (ReduceSum: dav_c220/kernel_operator_vec_reduce_impl.h). A flag
// is one bit per (event, id): two live users of one id merge their SetFlags, and one of
// the WaitFlags waits forever; the model refuses the second SetFlag as that hang.
//
// Cost: each block counts GM bytes, scalar accesses, vector instructions and repeats,
// barriers and flag pairs, and keeps a per-pipe timeline (see CostModel) whose end is
// the block's estimated time.
#ifndef GNMS_TWIN_PIPES_H
#define GNMS_TWIN_PIPES_H

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

namespace twin {

enum PipeId : int { kPipeS = 0, kPipeV = 1, kPipeMte2 = 2, kPipeMte3 = 3, kPipeCount = 4 };
enum Execution : int { kImmediate = 0, kDeferred = 1 };

inline const char *PipeName(int p) {
  static const char *const names[kPipeCount] = {"S", "V", "MTE2", "MTE3"};
  return (p >= 0 && p < kPipeCount) ? names[p] : "?";
}

// Constants of the cost timeline (see scripts/ascendc_cost.py for their sources).
struct CostModel {
  double clockGhz = 1.85;          // AI core clock
  double gmBytesPerNs = 33.0;      // per-core share of HBM bandwidth (1.6 TB/s over 48 vector cores)
  double dmaSetupCycles = 64.0;    // a DMA instruction holds its MTE pipe for this plus bytes / bandwidth
  double dmaLatencyNs = 1000.0;    // and its data arrives this much later (consecutive DMAs overlap it)
  double vecCyclesPerRepeat = 1.0; // one 256-byte repeat per cycle
  double vecStartCycles = 10.0;    // issue/start-up of one vector instruction
  double scalarUbCycles = 4.0;     // one scalar UB access
  double scalarGmNs = 200.0;       // one scalar GM access (data-cache miss)
  double syncAllNs = 2000.0;       // one cross-core SyncAll
  double dmaBurstCycles = 16.0;    // per DMA burst (a DataCopyPad row; each row is at least 32 bytes)
  double vecBarrierCycles = 20.0;  // a V barrier (the compiler's, or PipeBarrier<PIPE_V>): the V pipeline drains
};

// Who set a flag (for the statistics, and for the end-of-block rule).
enum FlagUser : int { kFlagKernel = 0, kFlagQueue = 1, kFlagApi = 2 };

struct PipeStats {
  double gmReadBytes = 0, gmWriteBytes = 0;
  double scalarUb = 0, scalarGm = 0;
  double vecCalls = 0, vecRepeats = 0;
  double barriersAll = 0, barriersPipe = 0;
  double userFlagPairs = 0, queueFlagPairs = 0, apiFlagPairs = 0;
  double autoVBarriers = 0;  // V barriers the compiler inserts between dependent vector instructions
  double dmaBursts = 0;
  double syncAlls = 0;
  double busyNs[kPipeCount] = {0, 0, 0, 0};
  double timeAtSyncAllNs = -1;  // block time when it reached its (last) SyncAll
  double endNs = 0;             // block time when every pipe is done
};

struct UbRange {
  uint32_t addr;
  uint32_t bytes;
};

class PipeModel {
 public:
  void Reset(size_t ubBytes, int execution, const CostModel &cost, bool checkHazards = true, bool autoSync = true) {
    checkHazards_ = checkHazards;
    autoSync_ = autoSync;
    scalarAutoSync_ = false;
    vBarrierSeq_ = 0;
    for (auto &row : eventOccupy_) for (auto &bits : row) bits = 0;
    cells_.assign(ubBytes / 4 + 1, Cell{});
    ops_.assign(1, Op{});  // op 0 = "nobody"
    for (auto &row : vc_) for (auto &v : row) v = 0;
    for (int p = 0; p < kPipeCount; ++p) {
      pending_[p].clear();
      issued_[p] = executed_[p] = 0;
      t_[p] = 0;
      done_[p] = 0;
    }
    flags_.clear();
    execution_ = execution;
    cost_ = cost;
    stats_ = PipeStats{};
    calls_ = 0;
  }

  // bisheng's --cce-auto-sync also inserts the V <-> S, MTE2 <-> S and MTE3 <-> S synchronisation
  // between GetValue/SetValue and the instructions that touch the same tensor (asc-devkit
  // docs/zh/api/SIMD-API/基础API/同步控制/核内同步/关键特性说明.md, "支持的同步类型"). With this on, such a
  // pair is ordered as a SetFlag/WaitFlag would order it instead of being a hazard; under deferred
  // execution the later instruction first runs the earlier pipe's work up to the one it depends on,
  // as the inserted WaitFlag would. Off by default: our kernels synchronise those pairs themselves;
  // CANN's kernels rely on the compiler (twin::Config::cannCompat turns it on for their launches).
  void SetScalarAutoSync(bool on) { scalarAutoSync_ = on; }

  // One instruction on `pipe`. `effect` does its memory work (now, or later when deferred).
  // `durationNs` is how long the instruction holds its pipe, `latencyNs` how much later its
  // result is there (what a synchronisation on it waits for).
  void Issue(int pipe, const char *name, std::initializer_list<UbRange> reads, std::initializer_list<UbRange> writes,
             std::function<void()> effect, double durationNs, double latencyNs = 0.0);

  // SetFlag/WaitFlag of `id` from pipe src to pipe dst; `user` says who (statistics).
  void SetFlag(int src, int dst, int id, FlagUser user);
  void WaitFlag(int src, int dst, int id, FlagUser user);
  // The event-id pool of the (src, dst) event: Fetch returns the lowest free id without
  // reserving it, Alloc reserves it, Release frees it (TPipe::FetchEventID / AllocEventID /
  // ReleaseEventID, kernel_tpipe_impl.h).
  int FetchEventId(int src, int dst) const;
  int AllocEventId(int src, int dst);
  void ReleaseEventId(int src, int dst, int id);
  void BarrierAll();
  void BarrierPipe(int pipe);
  void SyncAll();
  // End of the block: runs what is still queued; SetFlags nobody waited for are a fault.
  void Finish();

  // The last instruction issued, and whether it (still) last wrote every byte of `r`: what a
  // caller needs to know that UB holds what that instruction wrote, also before deferred work runs.
  uint32_t LastOp() const { return static_cast<uint32_t>(ops_.size() - 1); }
  bool LastWrittenBy(UbRange r, uint32_t op) const;

  PipeStats &stats() { return stats_; }
  const CostModel &cost() const { return cost_; }
  int execution() const { return execution_; }
  double Cycles(double c) const { return c / cost_.clockGhz; }

 private:
  struct Op {
    const char *name = "";
    int pipe = -1;
    uint64_t seq = 0;
    uint64_t call = 0;
    uint64_t position = 0;  // instructions its pipe has issued up to and including it (DrainTo's count)
  };
  struct Cell {
    uint32_t writer = 0;
    uint32_t reader[kPipeCount] = {0, 0, 0, 0};
  };
  struct Flag {
    bool set = false;
    uint64_t vc[kPipeCount] = {0, 0, 0, 0};
    uint64_t issued = 0;  // instructions of the source pipe issued before the SetFlag
    double t = 0;         // time the source pipe reaches the SetFlag
    FlagUser user = kFlagKernel;
  };

  [[noreturn]] void Hazard(const Op &now, const char *access, UbRange r, const Op &before, const char *what) const;
  void Check(uint32_t opIndex, UbRange r, bool write);
  // A V instruction that depends on an earlier V one since the last V barrier (read after
  // write, write after read or write): the compiler's barrier, or a fault without autoSync.
  void CheckVectorOrder(uint32_t opIndex, std::initializer_list<UbRange> reads, std::initializer_list<UbRange> writes);
  void DrainTo(int pipe, uint64_t count);
  void DrainAll();

  std::vector<Cell> cells_;
  std::vector<Op> ops_;
  uint64_t vc_[kPipeCount][kPipeCount] = {};
  std::deque<std::function<void()>> pending_[kPipeCount];
  uint64_t issued_[kPipeCount] = {};
  uint64_t executed_[kPipeCount] = {};
  double t_[kPipeCount] = {};     // when each pipe can start its next instruction
  double done_[kPipeCount] = {};  // when the results of each pipe's instructions so far are all there
  std::map<std::tuple<int, int, int>, Flag> flags_;
  // Deferred execution: (pipe, position) the instruction being issued must wait for, from the
  // compiler's S pair synchronisation (SetScalarAutoSync)
  std::vector<std::pair<int, uint64_t>> autoWaits_;
  uint8_t eventOccupy_[kPipeCount][kPipeCount] = {};
  bool autoSync_ = true;
  bool scalarAutoSync_ = false;
  uint64_t vBarrierSeq_ = 0;  // V instructions up to this one are ordered before later V ones
  int execution_ = kImmediate;
  bool checkHazards_ = true;
  CostModel cost_;
  PipeStats stats_;
  uint64_t calls_ = 0;
};

}  // namespace twin

#endif  // GNMS_TWIN_PIPES_H
