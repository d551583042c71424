// Pipe model of the CPU twin (see twin_pipes.h).
#include <algorithm>

#include "twin_runtime.h"

namespace twin {

void PipeModel::Hazard(const Op &now, const char *access, UbRange r, const Op &before, const char *what) const {
  Fail(std::string("pipe hazard: ") + PipeName(now.pipe) + " " + now.name + " (call " + std::to_string(now.call) +
       ") " + access + " UB bytes [" + std::to_string(r.addr) + ", " + std::to_string(r.addr + r.bytes) + ") " +
       what + " by " + PipeName(before.pipe) + " " + before.name + " (call " + std::to_string(before.call) +
       ") with no " + PipeName(before.pipe) + "->" + PipeName(now.pipe) +
       " synchronisation in between (SetFlag/WaitFlag<" + PipeName(before.pipe) + "_" + PipeName(now.pipe) +
       ">, a TQue EnQue/DeQue or FreeTensor/AllocTensor hand-over, PipeBarrier<PIPE_ALL> or SyncAll)");
}

void PipeModel::Check(uint32_t opIndex, UbRange r, bool write) {
  const Op &op = ops_[opIndex];
  const int p = op.pipe;
  const size_t first = r.addr / 4;
  const size_t last = std::min<size_t>((static_cast<size_t>(r.addr) + r.bytes + 3) / 4, cells_.size());
  for (size_t c = first; c < last; ++c) {
    Cell &cell = cells_[c];
    const Op &w = ops_[cell.writer];
    if (cell.writer != 0 && w.pipe != p && w.seq > vc_[p][w.pipe]) {
      if (scalarAutoSync_ && (w.pipe == kPipeS || p == kPipeS)) {
        vc_[p][w.pipe] = w.seq;  // the compiler's S pair synchronisation (SetScalarAutoSync)
        if (execution_ == kDeferred) autoWaits_.emplace_back(w.pipe, w.position);
      } else {
        Hazard(op, write ? "writes" : "reads", r, w, "last written");
      }
    }
    if (write) {
      for (int q = 0; q < kPipeCount; ++q) {
        const uint32_t ri = cell.reader[q];
        if (q != p && ri != 0 && ops_[ri].seq > vc_[p][q]) {
          if (scalarAutoSync_ && p == kPipeS) {
            vc_[p][q] = ops_[ri].seq;  // the compiler's S pair synchronisation (SetScalarAutoSync)
            if (execution_ == kDeferred) autoWaits_.emplace_back(q, ops_[ri].position);
          } else {
            Hazard(op, "writes", r, ops_[ri], "still being read");
          }
        }
      }
      cell.writer = opIndex;
      for (uint32_t &ri : cell.reader) ri = 0;
    } else if (p != kPipeS) {  // a scalar read is complete when the scalar unit goes on
      cell.reader[p] = opIndex;
    }
  }
}

void PipeModel::CheckVectorOrder(uint32_t opIndex, std::initializer_list<UbRange> reads,
                                 std::initializer_list<UbRange> writes) {
  const Op &op = ops_[opIndex];
  auto laterVector = [&](uint32_t other) {
    return other != 0 && other != opIndex && ops_[other].pipe == kPipeV && ops_[other].seq > vBarrierSeq_;
  };
  const Op *earlier = nullptr;
  const char *what = "";
  UbRange where{0, 0};
  auto scan = [&](const UbRange &r, bool write) {
    const size_t first = r.addr / 4;
    const size_t last = std::min<size_t>((static_cast<size_t>(r.addr) + r.bytes + 3) / 4, cells_.size());
    for (size_t c = first; c < last && earlier == nullptr; ++c) {
      const Cell &cell = cells_[c];
      if (laterVector(cell.writer)) {
        earlier = &ops_[cell.writer];
        what = write ? "writes UB bytes last written" : "reads UB bytes last written";
      } else if (write && laterVector(cell.reader[kPipeV])) {
        earlier = &ops_[cell.reader[kPipeV]];
        what = "writes UB bytes still being read";
      }
      if (earlier != nullptr) where = r;
    }
  };
  for (const UbRange &r : reads) scan(r, false);
  for (const UbRange &r : writes) scan(r, true);
  if (earlier == nullptr) return;
  if (!autoSync_) {
    Fail(std::string("V->V dependency without a barrier: V ") + op.name + " (call " + std::to_string(op.call) + ") " +
         what + " [" + std::to_string(where.addr) + ", " + std::to_string(where.addr + where.bytes) + ") by V " +
         earlier->name + " (call " + std::to_string(earlier->call) +
         ") with no PipeBarrier<PIPE_V> in between: on arch 2201 the vector pipe does not order dependent "
         "instructions, only bisheng's --cce-auto-sync (off in this launch) would insert the barrier");
  }
  stats_.autoVBarriers += 1;  // the barrier bisheng inserts before this instruction
  vBarrierSeq_ = op.seq - 1;
  t_[kPipeV] += Cycles(cost_.vecBarrierCycles);
}

void PipeModel::Issue(int pipe, const char *name, std::initializer_list<UbRange> reads,
                      std::initializer_list<UbRange> writes, std::function<void()> effect, double durationNs,
                      double latencyNs) {
  const uint64_t seq = ++vc_[pipe][pipe];
  // The scalar unit issues every instruction, in program order, and a WaitFlag<X_S> stalls it
  // (asc-devkit docs/zh/guide/编程指南/编程模型/AI-Core-SIMD编程/抽象硬件架构.md: Scalar "把矢量计算、
  // 矩阵计算、数据搬运、同步指令发射给对应单元执行"; SetFlag-WaitFlag.md: the waiting queue's later
  // instructions are blocked). So an instruction issued after the scalar unit has waited for X is
  // ordered after X's work before that SetFlag, whatever pipe it runs on. Not after the scalar
  // unit's own writes (SetValue): those are posted, and a reader on another pipe needs S_X.
  if (pipe != kPipeS) {
    for (int q = 0; q < kPipeCount; ++q) {
      if (q != kPipeS && q != pipe) vc_[pipe][q] = std::max(vc_[pipe][q], vc_[kPipeS][q]);
    }
  }
  ops_.push_back(Op{name, pipe, seq, ++calls_, issued_[pipe] + 1});
  const uint32_t index = static_cast<uint32_t>(ops_.size() - 1);
  if (pipe == kPipeV) CheckVectorOrder(index, reads, writes);
  autoWaits_.clear();
  if (checkHazards_) {
    for (const UbRange &r : reads) Check(index, r, false);
    for (const UbRange &r : writes) Check(index, r, true);
  }
  if (!autoWaits_.empty()) {  // the compiler's WaitFlags run before the instruction's own work
    effect = [this, waits = autoWaits_, work = std::move(effect)] {
      for (const auto &wait : waits) DrainTo(wait.first, wait.second);
      if (work) work();
    };
  }
  // timeline: an instruction starts when its pipe is free and the scalar unit has issued it
  if (pipe == kPipeS) {
    t_[kPipeS] += durationNs;
  } else {
    const double start = std::max(t_[pipe], t_[kPipeS]);
    t_[pipe] = start + durationNs;
    t_[kPipeS] += Cycles(1.0);
  }
  done_[pipe] = std::max(done_[pipe], t_[pipe] + latencyNs);
  stats_.busyNs[pipe] += durationNs;
  ++issued_[pipe];
  // Deferred: scalar reads run at once (after the scalar unit's own earlier writes), scalar
  // writes are posted like the other pipes' work until a synchronisation forces them.
  if (execution_ == kDeferred && pipe == kPipeS) DrainTo(kPipeS, issued_[kPipeS] - 1);
  if (execution_ == kImmediate || (pipe == kPipeS && writes.size() == 0)) {
    ++executed_[pipe];
    if (effect) effect();
  } else {
    pending_[pipe].push_back(std::move(effect));
  }
}

namespace {
const char *FlagUserName(FlagUser u) {
  switch (u) {
    case kFlagKernel: return "the kernel";
    case kFlagQueue: return "a TQue";
    case kFlagApi: return "an API's internal synchronisation";
  }
  return "?";
}
std::string EventText(int src, int dst, int id) {
  return std::string("<") + PipeName(src) + "_" + PipeName(dst) + ">(" + std::to_string(id) + ")";
}
}  // namespace

int PipeModel::FetchEventId(int src, int dst) const {
  for (int id = 0; id < 8; ++id) {
    if ((eventOccupy_[src][dst] & (1U << id)) == 0) return id;
  }
  Fail(std::string("FetchEventID/AllocEventID<") + PipeName(src) + "_" + PipeName(dst) +
       ">: all 8 event ids are allocated (TQue events in flight and AllocEventID reservations share one pool)");
}

int PipeModel::AllocEventId(int src, int dst) {
  const int id = FetchEventId(src, dst);
  eventOccupy_[src][dst] = static_cast<uint8_t>(eventOccupy_[src][dst] | (1U << id));
  return id;
}

void PipeModel::ReleaseEventId(int src, int dst, int id) {
  if (id < 0 || id > 7 || (eventOccupy_[src][dst] & (1U << id)) == 0) {
    Fail("ReleaseEventID" + EventText(src, dst, id) + " of an id that is not allocated");
  }
  eventOccupy_[src][dst] = static_cast<uint8_t>(eventOccupy_[src][dst] & ~(1U << id));
}

void PipeModel::SetFlag(int src, int dst, int id, FlagUser user) {
  if (id < 0 || id > 7) Fail("SetFlag: event id " + std::to_string(id) + " is outside 0-7 (A2/A3)");
  Flag &f = flags_[std::make_tuple(src, dst, id)];
  if (f.set) {
    Fail("SetFlag" + EventText(src, dst, id) + " by " + FlagUserName(user) + " while that flag is still set by " +
         FlagUserName(f.user) + ": the flag is one bit, so the two SetFlags merge and the second "
         "WaitFlag would wait forever (a hang; ids come from one pool shared by FetchEventID/AllocEventID, the "
         "TQues and ReduceSum, and FetchEventID does not reserve its id)");
  }
  f.set = true;
  f.user = user;
  for (int q = 0; q < kPipeCount; ++q) f.vc[q] = vc_[src][q];
  f.issued = issued_[src];
  f.t = src == kPipeS ? t_[kPipeS] : std::max(done_[src], t_[kPipeS]);
}

void PipeModel::WaitFlag(int src, int dst, int id, FlagUser user) {
  auto it = flags_.find(std::make_tuple(src, dst, id));
  if (it == flags_.end() || !it->second.set) {
    Fail("WaitFlag" + EventText(src, dst, id) + " by " + FlagUserName(user) + " without a matching SetFlag: the " +
         PipeName(dst) + " pipe would wait forever (a hang on hardware)");
  }
  Flag &f = it->second;
  f.set = false;
  for (int q = 0; q < kPipeCount; ++q) vc_[dst][q] = std::max(vc_[dst][q], f.vc[q]);
  if (user == kFlagQueue) stats_.queueFlagPairs += 1; else if (user == kFlagApi) stats_.apiFlagPairs += 1;
  else stats_.userFlagPairs += 1;
  const uint64_t upTo = f.issued;
  const double ready = f.t;
  if (dst == kPipeS) {
    t_[kPipeS] = std::max(t_[kPipeS], ready);
    DrainTo(src, upTo);
    return;
  }
  // The wait is an instruction of the destination pipe: it holds that pipe until `ready`.
  t_[dst] = std::max(t_[dst], std::max(ready, t_[kPipeS]));
  ++issued_[dst];
  if (execution_ == kImmediate) {
    ++executed_[dst];
  } else {
    pending_[dst].push_back([this, src, upTo] { DrainTo(src, upTo); });
  }
}

bool PipeModel::LastWrittenBy(UbRange r, uint32_t op) const {
  const size_t first = r.addr / 4;
  const size_t last = std::min<size_t>((static_cast<size_t>(r.addr) + r.bytes + 3) / 4, cells_.size());
  for (size_t c = first; c < last; ++c) {
    if (cells_[c].writer != op) return false;
  }
  return op != 0 && first < last;
}

void PipeModel::DrainTo(int pipe, uint64_t count) {
  while (executed_[pipe] < count && !pending_[pipe].empty()) {
    std::function<void()> f = std::move(pending_[pipe].front());
    pending_[pipe].pop_front();
    ++executed_[pipe];
    if (f) f();
  }
}

// Consumers first: work nobody forced runs as late as possible relative to its producers.
void PipeModel::DrainAll() {
  bool any = true;
  while (any) {
    any = false;
    for (int p : {kPipeMte3, kPipeV, kPipeMte2, kPipeS}) {
      if (!pending_[p].empty()) {
        DrainTo(p, issued_[p]);
        any = true;
      }
    }
  }
}

void PipeModel::BarrierAll() {
  stats_.barriersAll += 1;
  uint64_t joined[kPipeCount] = {0, 0, 0, 0};
  double t = 0;
  for (int p = 0; p < kPipeCount; ++p) {
    for (int q = 0; q < kPipeCount; ++q) joined[q] = std::max(joined[q], vc_[p][q]);
    t = std::max(t, std::max(t_[p], done_[p]));
  }
  for (int p = 0; p < kPipeCount; ++p) {
    for (int q = 0; q < kPipeCount; ++q) vc_[p][q] = joined[q];
    t_[p] = t;
    done_[p] = t;
  }
  vBarrierSeq_ = vc_[kPipeV][kPipeV];
  DrainAll();
}

void PipeModel::BarrierPipe(int pipe) {
  stats_.barriersPipe += 1;
  if (pipe != kPipeV) return;  // the other pipes run their instructions in order
  vBarrierSeq_ = vc_[kPipeV][kPipeV];
  t_[kPipeV] += Cycles(cost_.vecBarrierCycles);
}

void PipeModel::SyncAll() {
  BarrierAll();
  stats_.barriersAll -= 1;  // counted as a SyncAll, not as a PipeBarrier
  stats_.syncAlls += 1;
  stats_.timeAtSyncAllNs = t_[kPipeS];
  for (int p = 0; p < kPipeCount; ++p) {
    t_[p] += cost_.syncAllNs;
    done_[p] = t_[p];
  }
}

void PipeModel::Finish() {
  DrainAll();
  double end = 0;
  for (int p = 0; p < kPipeCount; ++p) end = std::max(end, std::max(t_[p], done_[p]));
  stats_.endNs = end;
  for (const auto &entry : flags_) {
    // A TQue's FreeTensor flag waits for an AllocTensor that may never come (TPipe's
    // destructor waits for those); every other flag needs its WaitFlag.
    if (entry.second.set && entry.second.user != kFlagQueue) {
      Fail(std::string("SetFlag<") + PipeName(std::get<0>(entry.first)) + "_" + PipeName(std::get<1>(entry.first)) +
           ">(" + std::to_string(std::get<2>(entry.first)) +
           ") was never waited for: every SetFlag needs its WaitFlag before the kernel ends");
    }
  }
}

}  // namespace twin
