// The UB plan of the GroupNormGradMs tiling (group_norm_grad_ms_tiling.cpp, its only includer):
// what a phase-1 and a stage-2 layout allocate, byte for byte as the kernel does.
//
// The kernel allocates, in this order, with every buffer rounded up to 32 bytes:
//   phase 1: dy, x (VECIN) and dx (VECOUT) queues of 2 x K data elements each;
//            numFloatBufs fp32 work buffers of K elements; the ReduceSum dst + work buffer;
//            mode 0-2: three per-group fp32 arrays (db, dg, gamma; + 2 accumulators with
//            groupAcrossN; + beta with silu) + one VECIN staging buffer;
//            mode 0: the resident fp32 copies of the group's dy and xhat (2 x D x HxW') (+ bcastElems;
//            with groupRows, D is the rows of a batch, and every channel's gamma follows);
//            mode 3: a VECIN buffer for K gamma elements (+ one for K beta elements with silu).
//   silu adds fp32 work buffers (see SiluExtraFloatBufs): t / scratch and the ones vector.
//   stage 2 (after pipe.Reset()): 2 fp32 workspace loads of R rows x P channels, 2 fp32
//            accumulators, 2 output staging buffers of P statistics elements.
// Phase1Bytes / Stage2Bytes below mirror that order exactly; the CPU twin checks the
// kernel's real InitBuffer calls against the configured UB size.
#ifndef GROUP_NORM_GRAD_MS_UB_H
#define GROUP_NORM_GRAD_MS_UB_H

#include <algorithm>
#include <cstdint>

#include "group_norm_grad_ms_tiling.h"

namespace ms_groupnorm::grad_tiling {
namespace {

constexpr int64_t kBlockBytes = 32;
constexpr int64_t kBufferNum = 2;        // double-buffered queues
constexpr int64_t kReduceDstFloats = 8;  // one 32-byte block receives the ReduceSum result
constexpr int64_t kMaxLoadBuffers = 3;  // MAX_LOAD_BUFFERS of the kernel
constexpr int64_t kResidentSumsBuffers = 3;  // RESIDENT_SUMS_BUFFERS of the kernel

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t AlignUp(int64_t a, int64_t b) { return CeilDiv(a, b) * b; }
int64_t AlignBytes(int64_t bytes) { return AlignUp(bytes, kBlockBytes); }

int64_t ReduceWorkElems(int64_t maxCount) {
  // ReduceSum keeps one fp32 partial per 64-element repeat, rounded up to a block.
  return AlignUp(std::max<int64_t>(CeilDiv(maxCount, 64), 1), 8);
}

struct Layout {
  int64_t mode;
  int64_t K;
  int64_t numFloatBufs;
  int64_t statElems;
  int64_t residentStride;
  int64_t D;
  int64_t statWindow;  // groups of mean/rstd in UB at once
  bool acrossN = false;  // groupAcrossN: dgamma/dbeta accumulators and their output staging
  bool silu = false;     // GroupNormSiluGradMs: a beta array (modes 0-2) or beta staging (mode 3)
  int64_t slices = 1;    // HxW split: a group's per-slice db and dg rows are loaded at once
  int64_t ownerRows = 0; // HxW split with dgamma/dbeta: N * slices rows of a group, and the stores
  bool workspaceSums = false;  // modes 0-2 with the workspace: two buffers of a task's db and dg
  int64_t held = 0;      // modes 1-2: (dy, x) items of K data elements kept from the sums to the dx pass
  int64_t dxBufs = kBufferNum;  // buffers of the dx store queue
  bool rowSumsWork = false;  // the fp32 work of RowSumsWork beyond ReduceWorkElems(K)
  bool affineAhead = false;  // modes 0-2: a queue for the next group's gamma (+ beta), loaded ahead
  int64_t affineRows = 0;    // mode 0 (affineAhead): instead, every group's gamma (+ beta) at once
  int64_t loadBufs = kBufferNum;  // buffers of each of the dy and x load queues
  int64_t bcastElems = 0;    // mode 0, short rows: fp32 broadcast blocks of the rows' gamma (+ beta)
  int64_t hwAccElems = 0;    // mode 3 with hwOneSamples: the task's fp32 db and dg sums (2 x G x P)
  int64_t stage2AheadBytes = 0;  // stage2Ahead: stage 2's one load buffer, accumulators and stores
  bool ownStats = false;     // ownStats (N == 1, channel split): the dgamma/dbeta stores of phase 1
  bool hwGather = false;     // hwOneGather (mode 3), rowsGather (mode 1): Gather's two offset tables of K int32
  int64_t gammaAllElems = 0;  // mode 0 with groupRows: every channel's gamma, loaded once a core
};

// The fp32 work for RowSums (copies.h) to sum an item's db and dg rows at once: 2 x rows (mode 0 and mode 1's
// channelsPerItem: up to 255 channels; else one) x ceil(Lp / 64) partials rounded to a block. Mode 0 always (mode 1
// gives the same bits); modes 1-2 from what their layout leaves (the kernel batches the rows).
int64_t RowSumsWork(const Layout &l) {
  if (!l.rowSumsWork || (l.mode != GNG_MODE_GROUP_RESIDENT && l.mode != GNG_MODE_CHANNEL)) return 0;
  const bool rowsOfItem = l.mode == GNG_MODE_GROUP_RESIDENT || l.residentStride > 0;  // mode 1: channels per item
  const int64_t rowLen = rowsOfItem ? l.residentStride : l.K;
  const int64_t rows = rowsOfItem ? std::min<int64_t>(l.K / rowLen, 255) : 1;
  return 2 * rows * ReduceWorkElems(rowLen);
}

// The next group's gamma (+ beta) queue: two buffers (a load waits for no cast); one with three loads
// in flight (six load buffers, it and statQue_ each hold a V -> MTE2 id once freed: 8).
int64_t AffineBuffers(const Layout &l) { return l.loadBufs == kMaxLoadBuffers ? 1 : kBufferNum; }

// The gamma (+ beta) staging of affineAhead: the next group's buffers, or the table of all groups.
int64_t AffineBytes(const Layout &l, int64_t statBytes) {
  const int64_t arrays = l.silu ? 2 : 1;
  if (l.affineRows > 0) return AlignBytes(arrays * l.affineRows * l.statElems * statBytes);
  return AffineBuffers(l) * AlignBytes(arrays * l.statElems * statBytes);
}

// fp32 work buffers of K elements the swish gradient adds (group_norm_grad_ms.h, SILU): modes
// 0-2 a scratch buffer and the ones vector (t reuses the product buffer); mode 3 beta's rows
// (formed once a core with whole-sample batches, as gamma's) and the ones vector (t and the
// scratch reuse the gamma*dy and sums buffers).
int64_t SiluExtraFloatBufs(int64_t) { return 2; }

int64_t Phase1Bytes(const Layout &l, int64_t dataBytes, int64_t statBytes) {
  int64_t total = (2 * l.loadBufs + l.dxBufs) * AlignBytes(l.K * dataBytes);  // dy, x, dx queues
  total += AlignBytes(l.numFloatBufs * l.K * 4);
  total += AlignBytes((kReduceDstFloats + std::max(ReduceWorkElems(l.K), RowSumsWork(l))) * 4);
  if (l.statElems > 0) {
    // db, dg, gamma (+ the 2 accumulators across N) (+ beta)
    total += AlignBytes(((l.acrossN ? 5 : 3) + (l.silu ? 1 : 0)) * l.statElems * 4);
    total += AlignBytes((l.silu ? 2 : 1) * l.statElems * 4);      // staging for gamma (+ beta) / workspace rows
    if (l.acrossN) total += kBufferNum * AlignBytes(l.statElems * statBytes);  // dgamma/dbeta stores
    // ownStats: a task's dbeta and dgamma in one buffer (the kernel's StoreOwnStats)
    if (l.ownStats) total += kBufferNum * AlignBytes(2 * AlignUp(l.statElems, 16) * statBytes);
  }
  if (l.mode == GNG_MODE_GROUP_RESIDENT) total += AlignBytes(2 * l.D * l.residentStride * 4);
  total += AlignBytes(l.bcastElems * 4);  // mode 0: the rows' broadcast blocks (0 without)
  if (l.mode == GNG_MODE_HW_ONE) total += (l.silu ? 2 : 1) * AlignBytes(l.K * statBytes);  // gamma (+ beta)
  total += AlignBytes(l.hwAccElems * 4);  // mode 3: the task's sums (0 without hwOneSamples)
  if (l.hwGather) total += AlignBytes(2 * l.K * 4);  // modes 1 and 3: the spread and pack offset tables
  total += AlignBytes(l.gammaAllElems * statBytes);  // mode 0 with groupRows: gamma (0 without)
  if (l.affineAhead) total += AffineBytes(l, statBytes);
  if (l.slices > 1) total += AlignBytes(2 * l.slices * l.statElems * 4);  // the slice partials of a group
  if (l.workspaceSums) {  // mode 0: more buffers (its tasks are short)
    total += (l.mode == GNG_MODE_GROUP_RESIDENT ? kResidentSumsBuffers : kBufferNum) * AlignBytes(2 * l.statElems * 4);
  }
  if (l.ownerRows > 0) {
    total += AlignBytes(2 * l.ownerRows * l.statElems * 4) + kBufferNum * AlignBytes(l.statElems * statBytes);
  }
  total += AlignBytes(GngStatWindowSlots(l.mode) * 2 * l.statWindow * statBytes);  // the mean/rstd window(s)
  if (l.held > 0) total += AlignBytes(2 * l.held * l.K * dataBytes);  // the held items, as loaded
  total += l.stage2AheadBytes;  // stage2Ahead: stage 2's buffers (Stage2AheadBytes)
  return total;
}

// Stage 2: two loads of `rows` workspace rows of width x P floats (width 2: a sample's db and dg
// rows side by side, when both dbeta and dgamma are asked for), two fp32 accumulators, two
// output staging buffers.
int64_t Stage2Bytes(int64_t pieceElems, int64_t rows, int64_t statBytes, int64_t width) {
  return kBufferNum * AlignBytes(rows * width * pieceElems * 4) + AlignBytes(2 * pieceElems * 4) +
         kBufferNum * AlignBytes(pieceElems * statBytes);
}

// stage2Ahead: the same with one load buffer (the kernel's GroupNormGradMsStage2::Init).
int64_t Stage2AheadBytes(int64_t pieceElems, int64_t rows, int64_t statBytes, int64_t width) {
  return AlignBytes(rows * width * pieceElems * 4) + AlignBytes(2 * pieceElems * 4) +
         kBufferNum * AlignBytes(pieceElems * statBytes);
}

}  // namespace
}  // namespace ms_groupnorm::grad_tiling

#endif  // GROUP_NORM_GRAD_MS_UB_H
