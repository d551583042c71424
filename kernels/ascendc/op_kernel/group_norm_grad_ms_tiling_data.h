// Tiling data of GroupNormGradMs, shared by the host tiling function and the kernel.
//
// A plain struct of int64 fields and one float at the end (CANN's "standard C++ tiling struct": the host fills
// it, the kernel reads it with GET_TILING_DATA_WITH_STRUCT). Every UB buffer size the
// kernel passes to InitBuffer is computed here on the host, so the host's UB budget
// and the kernel's allocations cannot drift apart.
#ifndef GROUP_NORM_GRAD_MS_TILING_DATA_H
#define GROUP_NORM_GRAD_MS_TILING_DATA_H

#include <cstdint>

// Tiling modes: the ladder, chosen by what fits in the unified buffer (UB).
constexpr int64_t GNG_MODE_GROUP_RESIDENT = 0;  // a whole (n, g) group stays in UB: x and dy read once
constexpr int64_t GNG_MODE_CHANNEL = 1;         // one channel fits: two passes over GM (sums, then dx)
constexpr int64_t GNG_MODE_HW_CHUNKS = 2;       // one channel does not fit: HxW in chunks, cascade sums
constexpr int64_t GNG_MODE_HW_ONE = 3;          // HxW == 1: runs of whole groups as flat vectors

// Mean/rstd windows (statWindowElems groups each) in UB: mode 3 loads each batch's into one of
// two, a batch ahead of its use; the other modes keep one.
constexpr int64_t GngStatWindowSlots(int64_t mode) { return mode == GNG_MODE_HW_ONE ? 2 : 1; }

// Tiling keys: the (data, statistics) dtype pair.
constexpr int64_t GNG_KEY_FP32 = 1;       // float / float
constexpr int64_t GNG_KEY_FP16 = 2;       // half / half
constexpr int64_t GNG_KEY_BF16 = 3;       // bfloat16 / bfloat16
constexpr int64_t GNG_KEY_FP16_FP32 = 4;  // half data, float statistics
constexpr int64_t GNG_KEY_BF16_FP32 = 5;  // bfloat16 data, float statistics

struct GroupNormGradMsTilingData {
  // sizes
  int64_t N;
  int64_t C;
  int64_t HxW;
  int64_t G;
  int64_t D;  // C / G
  // what to compute
  int64_t mode;
  int64_t splitByChannel;  // 1: phase-1 tasks are (n, c) channels, else (n, g) groups (or group runs in mode 3)
  int64_t groupAcrossN;    // mode 0: phase-1 tasks are groups g over every n; dgamma/dbeta without workspace
  int64_t dxRequired;
  int64_t dgammaRequired;
  int64_t dbetaRequired;
  int64_t needWorkspace;  // per-(n, c) sums go to the fp32 workspace (stage 2 and/or channel split need them)
  // phase-1 work split: tasks [0, numTasks) over phase1Cores blocks, the first tailCores get one more
  int64_t numTasks;
  int64_t phase1Cores;
  int64_t tasksPerCore;
  int64_t tailCores;
  int64_t blockDim;  // max(phase1Cores, stage2Cores), at least 1
  // phase-1 UB layout
  int64_t chunkElems;        // K: elements per staging buffer (multiple of 16)
  int64_t chunksPerChannel;  // chunks of K per (full) HxW slice: ceil(sliceElems / K) in modes 1 and 2
  int64_t residentStride;    // mode 0, and mode 1 with channelsPerItem > 1: elements between channels in UB (HxW rounded up to 16)
  int64_t channelsPerItem;   // modes 0-1: channels per load/store (one DMA; K = channelsPerItem * residentStride); else 1
                             // (the channel split: a run of a core's consecutive (n, c) tasks of one group)
  int64_t groupsPerTask;     // mode 3: groups per task
  int64_t numFloatBufs;      // fp32 work buffers of K elements
  int64_t statElems;         // per-group arrays (db, dg, gamma) of D elements, rounded up to 16
  int64_t reduceWorkElems;   // ReduceSum work buffer
  int64_t copyAligned;       // 1: every GM row is a 32-byte multiple, so plain DataCopy is legal
  int64_t statWindowElems;   // mean/rstd of this many consecutive groups are loaded into UB at once
  // stage 2 (dgamma/dbeta: reduce the workspace over N)
  int64_t reduceRows;        // rows of the workspace to sum (N * hwSlices, or 0 when x is empty)
  int64_t stage2SliceElems;  // channels per stage-2 block
  int64_t stage2Cores;
  int64_t stage2PieceElems;  // channels per UB load in stage 2 (a multiple of 8)
  int64_t stage2RowsPerLoad; // workspace rows (samples, or sample slices) per strided DMA in stage 2
  // 1: one block sums every channel (C a multiple of 8, at most 64: stage2PieceElems == C), its
  // rows contiguous in GM and in UB: one DMA burst per array and load, and one repeat-form Add per
  // row for both arrays (their rows stage2RowsPerLoad x C floats apart)
  int64_t stage2WholeRows;
  // the channel split of short rows (rowsGather 2) with dgamma/dbeta: stage 2's buffers sit among phase
  // 1's, and a stage-2 block issues its one load (its slice is one piece, all rows in one load) after
  // SyncAll, before its dx pass ends, and sums it after (no pipe reset, no load latency of its own)
  int64_t stage2Ahead;
  // 1: N == 1 with the channel split (no HxW split) and dgamma/dbeta: stage 2 would add one
  // workspace row to zero after the dx pass; each phase-1 task stores its channels' instead
  int64_t ownStats;
  // bookkeeping for tests and logs: UB bytes the two phases allocate
  int64_t ubBytesPhase1;
  int64_t ubBytesStage2;
  // HxW split (channel split only): each channel's HxW is hwSlices slices of sliceElems elements
  // (the last one shorter), one phase-1 task each; hwSlices is 1 and sliceElems HxW without it.
  // Both depend on the shape and tiling constants only, never on the core count.
  int64_t hwSlices;
  int64_t sliceElems;
  // modes 1-2: (dy, x) items of chunkElems kept in UB as loaded from a task's sums pass to its dx
  // pass (with the channel split: from a core's sums passes, across SyncAll, to its dx passes),
  // so their dx pass reads no GM; the first heldItems items of each task (core), 0 for none
  int64_t heldItems;
  int64_t dxBuffers;  // buffers of the dx store queue (2-4; a store waits for the one dxBuffers back to land)
  // modes 0-2 without the channel split: 1 when gamma (and beta) of a core's next group are loaded
  // while the current group runs (a queue of their own), so no task waits for their DMA latency;
  // 2 (mode 0 without groupAcrossN): those of all G groups are loaded once, at the start
  int64_t affineAhead;
  // modes 1-2 without the channel split: (dy, x) items in flight ahead of the compute (2 or 3);
  // a third where UB allows covers a DMA latency with the vector work of three items, not two
  int64_t loadBuffers;
  // mode 0 with rows of at most 64 floats (residentStride) and a group in one item: the fp32
  // elements of the buffer of the rows' broadcast gamma/beta blocks (see BroadcastRows), else 0;
  // reserved last, where UB is left over, so no other field depends on it
  int64_t bcastElems;
  // mode 3 with dgamma/dbeta, many samples: phase-1 tasks are runs of hwOneSamples whole samples
  // (batches of whole samples), whose per-channel db and dg the task sums in sample order into one
  // workspace row (row = task); stage 2 adds those numTasks rows. A shape's count, never the core
  // count's (the sums' order depends on it). 0: tasks are runs of groups of one sample. Without
  // the workspace (needWorkspace 0: a small launch) there is one task of all N samples, and its
  // core stores its sums as dgamma/dbeta (no SyncAll, no stage 2).
  int64_t hwOneSamples;
  // mode 3 with groups of D < 64 channels, D not a multiple of 16 (a DMA burst a group otherwise):
  // dy, x and dx move between GM and UB as one contiguous run a batch, and Gather spreads them into
  // the rows of D padded to 16 the batch is computed in (and packs dx back); 0: a burst a group
  int64_t hwOneGather;
  // mode 1 with channelsPerItem > 1 and rows of HxW not a multiple of 16 (a DMA burst a row
  // otherwise): 1, the sums pass's dy and x move from GM to UB as one contiguous run an item, and
  // Gather spreads them into the rows residentStride apart they are computed in; 2
  // (RUNS_BOTH_PASSES), the dx pass too: it computes on the runs as loaded (a_c spread by Gather)
  // and stores dx as a run; 0: neither
  int64_t rowsGather;
  // mode 0 by (n, g) with groups of D <= 8 channels: a core's groups are consecutive in GM (q = n * G + g,
  // rows q * D .. q * D + D - 1 of HxW), so an item is groupRows of them (one DMA each way; across N one
  // per channel) and the per-group vector work runs over all its rows at once, with each group's own mean,
  // rstd and gamma (+ beta with SILU); gamma (+ beta) of every channel is loaded once a core. 0: a group an item.
  int64_t groupRows;
  // GroupNormSiluGradMs (the kernel class with SILU): 1 when dy is the gradient of
  // z = y * sigmoid(swishScale * y), y = gamma * xhat + beta, recomputed in the kernel
  int64_t silu;
  float swishScale;
};

#endif  // GROUP_NORM_GRAD_MS_TILING_DATA_H
