// Host tiling of GroupNormGradMs (see group_norm_grad_ms_tiling.h).
// The UB each layout needs is in group_norm_grad_ms_ub.h.
#include "group_norm_grad_ms_tiling.h"
#include "group_norm_grad_ms_ub.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace ms_groupnorm::grad_tiling {
namespace {

constexpr int64_t kElemAlign = 16;       // 16 elements are 32 bytes of fp16/bf16 and 64 bytes of fp32
constexpr int64_t kMinUbBytes = 16 * 1024;
constexpr int64_t kStatWindowGroups = 256;  // 2 KiB of fp32 mean/rstd
// groupRows across N: a core reads group g of every sample, G apart in mean/rstd, so its window holds
// up to this many groups (8 KiB of fp32 each), every sample's where N * G fits: one window load, not one
// every kStatWindowGroups / G samples, each a DMA latency in series (32x96x7x7 G32: four)
constexpr int64_t kAcrossStatWindowGroups = 2048;
constexpr int64_t kAcrossNMaxExtraBytes = 128 * 1024;  // about 4 us of one core's HBM share
// HxW split: when a launch has fewer than kSliceTargetTasks (n, c) channels, each channel's HxW
// is cut into slices of at least kMinSliceElems elements, up to kSliceTargetTasks tasks in all.
// The target is a constant (the 910B's 48 vector cores), not the launch's core count: the slices,
// and so the order in which their sums are added, must be the same on any number of cores.
constexpr int64_t kSliceTargetTasks = 48;
constexpr int64_t kMinSliceElems = 2048;  // 8 KiB of fp32: below that a slice is mostly DMA latency
// Buffers of the dx store queue at most: each freed one holds an MTE3 -> V event id until it is
// allocated again (kernel_tquebind_impl.h), and with the two of sumsQue_ and of outQue_ that is
// the 8 ids of the pool (asc-devkit kernel_tpipe_impl.h) at most.
constexpr int64_t kMaxDxBuffers = 4;
constexpr int64_t kAffineTableMaxBytes = 98304;  // mode 0's table of every group's gamma (+ beta)
constexpr int64_t kAffineTableSiluTasks = 64;    // ... with SILU: from this many tasks a core
constexpr int64_t kMaxGroupRows = 64;  // mode 0's groupRows: the kernel keeps a batch's per-group scalars on its stack
constexpr int64_t kMaxGroupRowChannels = 8;  // and with D > 1 (MAX_GROUP_ROW_CHANNELS): channels a group
constexpr int64_t kMaxGroupRowLines = 128;   // and rows a batch (MAX_GROUP_ROW_LINES)
constexpr int64_t kMaxDmaRows = 4095;             // rows (bursts) of one DataCopyPad
constexpr int64_t kMaxGatherElems = 255 * 64;     // fp32 elements of one Gather (count form, A2/A3)
// Mode 3's groups of D <= 8 in columns (op_kernel/group_norm_grad_ms_hw_columns.h HwOneColumns: Gather's
// run layout, whole samples of G a multiple of 8): a batch is as many groups as a stat slot holds, and
// a batch's DMA latency (its loads issued one batch ahead), not its vector work, set the pace: 8000x64
// G32 took 21 batches of 256 groups a core, ~1 us each. Slots of this many groups halve the batches.
constexpr int64_t kHwColumnsMaxD = 8;
constexpr int64_t kHwColumnsStatWindow = 512;
constexpr int64_t kHwOneTasks = 48;  // mode 3 with many samples: about this many tasks of whole samples
// Mode 3 with dgamma/dbeta where dy, x and dx together are at most kHwOneOneCoreBytes in at most
// kHwOneOneCoreRows groups: one task of every sample on one core, which stores dgamma/dbeta itself.
// The workspace, SyncAll and stage 2 cost about 2 us and two DMA latencies; one core moves these
// bytes in about 1 us (the cost model's 33 GB/s), but a group of D < 16 is a DMA burst of its own
// in each array, so the rows bound it too (cost model, fp32: 11x18 G6, 66 groups, 3.26 -> 1.78
// est./bound and 32x12 G4, 128 groups, 3.54 -> 2.63; 31x8 G8, 248 groups, 3.41 -> 3.82).
constexpr int64_t kHwOneOneCoreBytes = 32768;
constexpr int64_t kHwOneOneCoreRows = 128;
// ... or, where the groups move as one run a batch (hwGather: no burst a group), in at most this many
// elements of vector work: N G rows of D padded to 16 (in columns: D). The one core's vector work then
// costs less than the workspace route's chain (cost model est./bound, fp16: 20x30 G15 (4,800 elements)
// 3.51 -> 2.27, 64x4 G4 (4,096) 2.76 -> 2.23, 32x64 G64 in columns (2,048) 3.42 -> 1.73; past it they
// would not: 96x4 G4 (6,144) 2.95 -> 2.98, 49x11 G11 (8,624) 2.75 -> 3.34).
constexpr int64_t kHwOneOneCoreGatherElems = 5120;
// Mode 3's fp32 elements of FloatBuf(3) that HwOneBatch's vector coefficients take for `rows`
// groups (op_kernel/group_norm_grad_ms_common.h HwOneCoefElems: 2 sums and 3 scalars a group,
// rounded up to 8 groups, and 8 for each of up to 248 groups' blocks)
int64_t HwOneCoefElems(int64_t rows) {
  const int64_t r8 = (rows + 7) / 8 * 8;
  return 5 * r8 + 8 * std::min<int64_t>(r8, 248);
}
constexpr int64_t kShortChannelElems = 1024;  // mode 1 moves several channels an item below this channel length
constexpr int64_t kShortItemElems = 4096;     // ... up to about this many elements an item
// Mode 1's items of several channels of fewer elements than this, not a multiple of 16, move as one
// run (rowsGather): below it a row's DMA burst (16 cycles, cost model) costs more than Gather's share
// of it (5 elements a cycle) in each of the sums pass's loads; 64x320x14x14 G1 fp16 (rows of 196)
// est./bound 3.32 with the run against 2.75 without
constexpr int64_t kGatherRowsBelow = 128;
constexpr int64_t kUnevenMinBytes = 65536;  // a SyncAll (2 us) at a core's 33 GB/s (cost model)
constexpr int64_t kStage2AheadMaxBytes = 16384;  // stage2Ahead's reservation in phase 1's UB at most
constexpr int64_t kLatencyBytes = 32768;  // ~GM bytes per core in a DMA latency (33 GB/s x 1 us: the cost model's)

using ms_groupnorm::tiling::BytesOf;
using ms_groupnorm::tiling::NumElements;
using ms_groupnorm::tiling::ShapeText;

// Slices per channel of the HxW split (1: no split), from the shape only (see kSliceTargetTasks).
int64_t HwSlices(int64_t N, int64_t C, int64_t L) {
  const int64_t channels = N * C;
  if (channels >= kSliceTargetTasks) return 1;
  return std::max<int64_t>(1, std::min(CeilDiv(kSliceTargetTasks, channels), L / kMinSliceElems));
}

// The largest multiple of `align` in [align, limit] for which fits(value) holds, or 0.
template <typename Fits>
int64_t LargestFitting(int64_t limit, int64_t align, Fits fits) {
  int64_t lo = 0;
  int64_t hi = limit / align;  // in units of align
  while (lo < hi) {            // binary search on a monotone predicate
    const int64_t mid = (lo + hi + 1) / 2;
    if (fits(mid * align)) lo = mid; else hi = mid - 1;
  }
  return lo * align;
}

void SplitTasks(int64_t numTasks, int64_t coreNum, GroupNormGradMsTilingData *t) {
  t->numTasks = numTasks;
  t->phase1Cores = std::min(numTasks, coreNum);
  t->tasksPerCore = t->phase1Cores > 0 ? numTasks / t->phase1Cores : 0;
  t->tailCores = t->phase1Cores > 0 ? numTasks % t->phase1Cores : 0;
}

const char *const kInputNames[kNumSiluGradInputs] = {"dy", "mean", "rstd", "x", "gamma", "beta"};

// The message names the operator (`op`): GroupNormGradMs or GroupNormSiluGradMs.
int Reject(const char *op, int status, const std::string &text, std::string *message) {
  if (message != nullptr) *message = std::string(op) + ": " + text;
  return status;
}

// The rules of CheckInputs for the first `count` inputs of `shapes` (kNumInputs, or
// kNumSiluGradInputs with beta, which must have C elements like gamma).
int CheckGradShapes(const ShapeView *shapes, int count, const int64_t *numGroups, const char *op,
                    std::string *message) {
  for (int i = 0; i < count; ++i) {
    if (!shapes[i].present || (shapes[i].rank > 0 && shapes[i].dims == nullptr)) {
      return Reject(op, kTilingMissingInput,
                    std::string("input '") + kInputNames[i] + "' is missing (no tensor descriptor or shape)", message);
    }
  }
  if (numGroups == nullptr) return Reject(op, kTilingMissingInput, "attribute 'num_groups' is missing", message);
  const ShapeView &x = shapes[kInputX];
  const ShapeView &dy = shapes[kInputDy];
  if (x.rank < 2) {
    return Reject(op, kTilingBadShape, "input 'x' must have rank >= 2 (N, C, *), got " + ShapeText(x), message);
  }
  if (NumElements(x) < 0) {
    return Reject(op, kTilingBadShape, "input 'x' has a negative dimension " + ShapeText(x), message);
  }
  bool sameShape = dy.rank == x.rank;
  for (int64_t i = 0; sameShape && i < x.rank; ++i) sameShape = dy.dims[i] == x.dims[i];
  if (!sameShape) {
    return Reject(op, kTilingBadShape, "input 'dy' must have the shape of 'x': dy " + ShapeText(dy) + " vs x " +
                                       ShapeText(x), message);
  }
  const int64_t N = x.dims[0];
  const int64_t C = x.dims[1];
  const int64_t G = *numGroups;
  if (G <= 0) return Reject(op, kTilingBadShape, "attribute 'num_groups' must be > 0, got " + std::to_string(G), message);
  if (C % G != 0) {
    return Reject(op, kTilingBadShape, "attribute 'num_groups' (" + std::to_string(G) + ") must divide C = " +
                                       std::to_string(C), message);
  }
  for (int i : {kInputMean, kInputRstd}) {
    if (NumElements(shapes[i]) != N * G) {
      return Reject(op, kTilingBadShape, std::string("input '") + kInputNames[i] + "' must have N*G = " +
                                         std::to_string(N * G) + " elements (N = " + std::to_string(N) +
                                         ", G = " + std::to_string(G) + "), got " + ShapeText(shapes[i]), message);
    }
  }
  for (int i = kInputGamma; i < count; ++i) {  // gamma, and beta when present
    if (NumElements(shapes[i]) != C) {
      return Reject(op, kTilingBadShape, std::string("input '") + kInputNames[i] + "' must have C = " +
                                             std::to_string(C) + " elements, got " + ShapeText(shapes[i]), message);
    }
  }
  return kTilingOk;
}

}  // namespace

int CheckInputs(const ShapeView (&shapes)[kNumInputs], const int64_t *numGroups, std::string *message) {
  return CheckGradShapes(shapes, kNumInputs, numGroups, "GroupNormGradMs", message);
}

int CheckSiluGradInputs(const ShapeView (&shapes)[kNumSiluGradInputs], const int64_t *numGroups,
                        const float *swishScale, std::string *message) {
  const int status = CheckGradShapes(shapes, kNumSiluGradInputs, numGroups, "GroupNormSiluGradMs", message);
  if (status != kTilingOk) return status;
  if (swishScale != nullptr && !std::isfinite(*swishScale)) {
    return Reject("GroupNormSiluGradMs", kTilingBadShape,
                  "attribute 'swish_scale' must be finite, got " + std::to_string(*swishScale), message);
  }
  return kTilingOk;
}

int64_t TilingKeyFor(ScalarType data, ScalarType stat) {
  if (stat == data) {
    switch (data) {
      case ScalarType::kFloat32: return GNG_KEY_FP32;
      case ScalarType::kFloat16: return GNG_KEY_FP16;
      case ScalarType::kBFloat16: return GNG_KEY_BF16;
    }
  }
  if (stat == ScalarType::kFloat32 && data == ScalarType::kFloat16) return GNG_KEY_FP16_FP32;
  if (stat == ScalarType::kFloat32 && data == ScalarType::kBFloat16) return GNG_KEY_BF16_FP32;
  return -1;
}

const char *ModeName(int64_t mode) {
  switch (mode) {
    case GNG_MODE_GROUP_RESIDENT: return "group_resident";
    case GNG_MODE_CHANNEL: return "channel_two_pass";
    case GNG_MODE_HW_CHUNKS: return "hw_chunks";
    case GNG_MODE_HW_ONE: return "hw_one";
    default: return "unknown";
  }
}

int64_t UserWorkspaceBytes(const GroupNormGradMsTilingData &t) {
  return t.needWorkspace ? 2 * t.N * t.hwSlices * t.C * static_cast<int64_t>(sizeof(float)) : 0;
}

int ComputeTiling(const TilingInput &in, GroupNormGradMsTilingData *out) {
  if (in.N < 0 || in.C < 0 || in.HxW < 0 || in.G <= 0 || in.C % in.G != 0) return kTilingBadShape;
  if (TilingKeyFor(in.dataType, in.statType) < 0) return kTilingBadDtype;
  if (in.ubBytes < kMinUbBytes || in.coreNum < 1) return kTilingBadPlatform;
  const int64_t ubUsable = in.ubBytes - kUbReserveBytes;  // the plan never touches the reserve

  GroupNormGradMsTilingData t{};
  int64_t phase1AheadBytes = 0;  // the stage2Ahead reservation of the chosen phase-1 layout
  t.N = in.N;
  t.C = in.C;
  t.HxW = in.HxW;
  t.G = in.G;
  t.D = in.C / in.G;
  t.channelsPerItem = 1;
  t.dxRequired = in.dxRequired;
  t.dgammaRequired = in.dgammaRequired;
  t.dbetaRequired = in.dbetaRequired;
  t.hwSlices = 1;
  t.sliceElems = in.HxW;
  const int64_t dataBytes = BytesOf(in.dataType);
  const int64_t statBytes = BytesOf(in.statType);
  const int64_t L = in.HxW;
  const int64_t D = t.D;
  const bool empty = in.N * L == 0 || in.C == 0;
  const bool wantsStats = in.dgammaRequired || in.dbetaRequired;

  // mean/rstd: a window of up to kStatWindowGroups consecutive groups in UB (a core's groups are
  // consecutive, so it is loaded once per core unless a core has more groups than that)
  const int64_t statWindow = AlignUp(std::max<int64_t>(1, std::min<int64_t>(in.N * in.G, kStatWindowGroups)),
                                     kElemAlign);
  Layout layout{GNG_MODE_CHANNEL, kElemAlign, 3, AlignUp(std::max<int64_t>(D, 1), kElemAlign), 0, D, statWindow};
  // (Gather's count form issues at most 255 repeats of 64 fp32: a batch of K elements is one call)
  auto fits = [&](const Layout &l) {
    return Phase1Bytes(l, dataBytes, statBytes) <= ubUsable && !(l.hwGather && l.K > kMaxGatherElems);
  };
  // every layout of the fused backward carries the swish gradient's extra buffers
  auto withSilu = [&](Layout l) {
    if (in.silu) {
      l.silu = true;
      l.numFloatBufs += SiluExtraFloatBufs(l.mode);
    }
    return l;
  };
  t.silu = in.silu ? 1 : 0;
  bool hwOneOneTask = false;  // mode 3: one task of every sample, whose core stores dgamma/dbeta
  t.swishScale = in.silu ? in.swishScale : 1.0f;

  if (!empty && (in.dxRequired || wantsStats)) {
    // Mode 3: runs of whole groups; per element 3 staging queues, 6 fp32 buffers, gamma. It holds a
    // whole group in each buffer: a larger group (about 3,700 fp32 channels in 192 KiB) takes the
    // channel modes below, an item a channel of one element (slow, but every HxW = 1 shape runs).
    Layout hwOne = withSilu(Layout{GNG_MODE_HW_ONE, AlignUp(D, kElemAlign), 6, 0, 0, D, statWindow});
    // groups of D < 64 not a multiple of 16 were a DMA burst each per array (8000x64 G32: ~16,200 a
    // core); Gather (5 elements a cycle) spreads one contiguous run a batch into the padded rows
    hwOne.hwGather = D % kElemAlign != 0 && D < 64 && in.N * in.G > 1;
    if (L == 1 && fits(hwOne)) {
      layout = hwOne;
      const int64_t rowElems = AlignUp(D, kElemAlign);
      // Many samples with dgamma/dbeta: a task is hwOneSamples whole samples (N / kHwOneTasks rounded up: the
      // shape's count, not the core count's, since it orders the sums), in batches of whole samples, its
      // per-channel sums one workspace row: stage 2 adds numTasks rows, not N (a 2-D input's stage 2
      // was a burst per sample and array on every block), and no batch stops at a sample's end.
      const int64_t sampleElems = in.G * rowElems;
      // A small launch: one task of all N samples (its sums added as a workspace task adds them), on
      // one core, which stores dgamma/dbeta: no workspace.
      // in columns (the kernel's HwColumnsPlan for whole samples)
      const bool columns = hwOne.hwGather && D <= kHwColumnsMaxD && in.G % 8 == 0;
      const bool fewRows = in.N * in.G <= kHwOneOneCoreRows ||
                           (hwOne.hwGather && in.N * in.G * (columns ? D : rowElems) <= kHwOneOneCoreGatherElems);
      const bool oneCore = wantsStats && 3 * in.N * in.C * dataBytes <= kHwOneOneCoreBytes && fewRows;
      const int64_t samples = oneCore ? in.N : CeilDiv(in.N, kHwOneTasks);  // at most kHwOneTasks tasks
      if (wantsStats && (samples > 1 || oneCore) && in.G <= kMaxDmaRows) {
        Layout acc = layout;
        acc.hwAccElems = 2 * sampleElems;
        // a batch is whole samples and its mean/rstd fill one stat slot: a slot holds a sample at least
        acc.statWindow = std::max(acc.statWindow, AlignUp(in.G, kElemAlign));
        if (columns) {
          acc.statWindow = std::max(acc.statWindow, AlignUp(std::min(in.N * in.G, kHwColumnsStatWindow), kElemAlign));
        }
        const int64_t perBatch = std::min<int64_t>(samples, kMaxDmaRows / in.G);
        auto largestBatch = [&](const Layout &base) {
          return LargestFitting(perBatch * sampleElems, sampleElems, [&](int64_t k) {
            Layout l = base;
            l.K = k;
            return fits(l);
          });
        };
        int64_t k = largestBatch(acc);
        if (k == 0 && acc.hwGather) {  // whole samples without Gather's tables before runs of groups with them
          acc.hwGather = false;        // (100x516 G258 fp16 est./bound 10.7 against 12.8)
          k = largestBatch(acc);
        }
        if (k > 0) {
          layout = acc;
          layout.K = k;
          // one core, one batch of every group: room for the batch's coefficient arrays and blocks
          // (HwOneCoefElems), as for the runs of groups below (a batch of 9 groups of D <= 64 had
          // 144 elements a buffer against 208 and took the per-group path), from 8 groups (fewer are
          // cheaper a group at a time: 1x24 G1 est./bound 0.84 against 0.92)
          Layout roomy = layout;
          roomy.K = std::max(k, AlignUp(HwOneCoefElems(in.N * in.G), kElemAlign));
          if (oneCore && k == in.N * sampleElems && in.N * in.G >= 8 && D <= 64 && fits(roomy)) layout = roomy;
          t.hwOneSamples = samples;
          t.groupsPerTask = samples * in.G;
          SplitTasks(CeilDiv(in.N, samples), in.coreNum, &t);
          hwOneOneTask = oneCore;
        }
      }
      if (t.hwOneSamples == 0) {
        const int64_t maxElems = LargestFitting(std::min(in.G, kMaxDmaRows) * rowElems, kElemAlign, [&](int64_t k) {
          Layout l = layout;
          l.K = k;
          return fits(l);
        });
        // the kernel holds each group at a stride of D rounded up to 16 (HwOneBatch), so a task's
        // groups are one batch (one DMA per array, at most kMaxDmaRows rows) only when K holds
        // groupsPerTask such rows: sized to D alone, a task of D = 1 groups took one batch (four
        // DMA latencies) per group
        if (maxElems < rowElems) return kTilingNoFit;
        const int64_t groupsFit = std::min<int64_t>(maxElems / rowElems, in.G);
        // Enough tasks to occupy the cores when the problem allows it.
        const int64_t groupsForCores = std::max<int64_t>(1, in.N * in.G / in.coreNum);
        t.groupsPerTask = std::max<int64_t>(1, std::min(groupsFit, groupsForCores));
        layout.K = t.groupsPerTask * rowElems;
        // groups of at most 64 channels: room in each fp32 buffer for the batch's coefficient
        // arrays and blocks (the kernel's HwOneCoefElems), where the UB has it, so a short task
        // (few groups) takes the vector coefficients too; more rows a batch than a task has are unused
        Layout roomy = layout;
        roomy.K = std::max(layout.K, AlignUp(HwOneCoefElems(t.groupsPerTask), kElemAlign));
        if (D <= 64 && fits(roomy)) layout = roomy;
        SplitTasks(in.N * CeilDiv(in.G, t.groupsPerTask), in.coreNum, &t);
      }
    } else {
      const int64_t slices = HwSlices(in.N, in.C, L);
      if (slices > 1) {  // slices of whole 16-element blocks: every slice starts 32-byte aligned in GM
        t.sliceElems = AlignUp(CeilDiv(L, slices), kElemAlign);
        t.hwSlices = CeilDiv(L, t.sliceElems);
      }
      const int64_t Lp = AlignUp(t.sliceElems, kElemAlign);  // the whole channel without the split
      // The channel split also where whole groups leave the busiest core 15 % and more than a SyncAll's
      // worth of bytes (the split's extra chain: its workspace round trip) above an even share: 64 groups
      // of GroupNorm(1, 512) over 7x7 on 48 cores put 2 groups on 16 cores, 1.33 on average (fp16
      // est./bound 5.61 -> 4.78 with the split's sums loaded ahead); 290x332x242 G1 (16 %) fp32 2.16 ->
      // 1.94, but 5x128x64x64 G32 (14 %) fp32 1.66 -> 1.88
      const int64_t groupCoreChannels = CeilDiv(in.N * in.G, in.coreNum) * D;
      const int64_t splitCoreChannels = CeilDiv(in.N * in.C, in.coreNum);
      const bool uneven = D > 1 && 20 * groupCoreChannels > 23 * splitCoreChannels &&
                          (groupCoreChannels - splitCoreChannels) * L * 3 * dataBytes > kUnevenMinBytes;
      t.splitByChannel = (t.hwSlices > 1 || (in.N * in.G < in.coreNum && D > 1) || uneven) ? 1 : 0;
      Layout resident = withSilu(Layout{GNG_MODE_GROUP_RESIDENT, Lp, 1, layout.statElems, Lp, D, statWindow});
      // mode 0 always loads the next group's gamma (+ beta) ahead (a task is one DMA of its channels,
      // so a per-task load would be waited for): if that pushes it out of UB, mode 1 gives the
      // same bits (test_the_split_chosen_by_the_core_count_does_not_change_the_bits)
      resident.affineAhead = in.dxRequired || in.silu;
      resident.rowSumsWork = true;
      Layout channel = withSilu(Layout{GNG_MODE_CHANNEL, Lp, 3, layout.statElems, 0, D, statWindow});
      channel.slices = t.hwSlices;
      channel.ownerRows = (t.hwSlices > 1 && wantsStats) ? in.N * t.hwSlices : 0;
      t.channelsPerItem = 1;
      // groupAcrossN: a core takes group g of every sample and sums dgamma/dbeta itself, so the
      // launch has no workspace, SyncAll or stage 2 (a chain of about two DMA latencies and a
      // SyncAll); worth it while the coarser split adds at most kAcrossNMaxExtraBytes per core.
      // Not over the channel split where the resident group leaves room for items (dy and x) of under
      // kLatencyBytes / 4, several a group: a core's loads then run three items a DMA latency and its dx stores four
      // (2x640x32x32 G32 fp16: 40 items of 2 KiB a core, est. 27.0 us across N, 19.9 split).
      Layout across = resident;
      across.acrossN = true;
      if (t.hwSlices == 1 && wantsStats && fits(across)) {
        const int64_t normalChannels =
            t.splitByChannel ? CeilDiv(in.N * in.C, in.coreNum) : CeilDiv(in.N * in.G, in.coreNum) * D;
        const int64_t acrossChannels = CeilDiv(in.G, in.coreNum) * in.N * D;
        const int64_t extraBytes = (acrossChannels - normalChannels) * L * 3 * dataBytes;
        const int64_t acrossCpi = LargestFitting(std::min<int64_t>(D, kMaxDmaRows), 1, [&](int64_t cpi) {
          Layout l = across;
          l.K = cpi * Lp;
          return fits(l);
        });
        const bool starved = t.splitByChannel && acrossCpi < D && 2 * acrossCpi * Lp * dataBytes < kLatencyBytes / 4;
        if (extraBytes <= kAcrossNMaxExtraBytes && !starved) {
          t.groupAcrossN = 1;
          t.splitByChannel = 0;
          resident = across;
        }
      }
      resident.workspaceSums = channel.workspaceSums = t.splitByChannel || (wantsStats && !t.groupAcrossN);
      // Mode 0 without groupAcrossN whose tasks (dy, x) are under a DMA latency: the next group's
      // gamma a task ahead comes late (a task then lasts a DMA latency: 456x698x444 G698 ran at
      // ~1.05 us a task), so the core's groups' at once (one DMA at the start, a burst a row of the
      // core's run of groups, or of all G when its tasks wrap: at most two a task) where fitting.
      // With SILU only for cores of many tasks (vector-bound, its few tasks wait for the larger
      // first DMA: 32x32x28x28 G8, 6 tasks a core, est. 14.3 -> 14.5 us with the table), each well
      // under a DMA latency (493x1200x292 G120, 23 KiB a task in fp32: 1.15 -> 1.17 with it).
      const bool manyTasks = CeilDiv(in.N * in.G, in.coreNum) >= kAffineTableSiluTasks &&
                             4 * 2 * D * L * dataBytes < kLatencyBytes;
      if (resident.affineAhead && (!in.silu || manyTasks) && !t.groupAcrossN && in.G <= kMaxDmaRows &&
          2 * D * L * dataBytes < kLatencyBytes) {
        Layout l = resident;
        l.affineRows = in.G;
        if (AffineBytes(l, statBytes) <= kAffineTableMaxBytes && fits(l)) resident = l;
      }
      // How a channel is chunked decides the order its sums are added in, so it must not follow the
      // core count (which decides the split, and with it the workspace): whole channels only where
      // they fit with the workspace's buffers too, and chunks sized with them. Mode 0 sums whole
      // channels, so with D > 1 (a launch a larger core count splits by channel) it needs the same.
      Layout channelAnySplit = channel;
      channelAnySplit.workspaceSums = true;
      const bool wholeChannels = fits(channelAnySplit);
      if (!t.splitByChannel && fits(resident) && (D == 1 || wholeChannels)) {
        // as many channels per DMA as fit (a DataCopyPad has at most 4095 rows)
        t.channelsPerItem = LargestFitting(std::min<int64_t>(D, 4095), 1, [&](int64_t cpi) {
          Layout l = resident;
          l.K = cpi * Lp;
          return fits(l);
        });
        layout = resident;
        layout.K = t.channelsPerItem * Lp;
      } else if (wholeChannels) {
        layout = channel;
        // Short channels (a group too large for mode 0, as GroupNorm(1, C) over short rows): an item of
        // one channel is mostly DMA setup and per-item vector work, so an item is channelsPerItem whole
        // channels, contiguous in GM (one DMA), Lp apart in UB as mode 0's. Each channel's sums are its
        // own row's (RowSums), so the bits are those of one channel an item (and of the channel split).
        // The channel split (without the HxW split) too, for any channel length: a core's tasks are
        // consecutive (n, c) channels, so an item is a run of them within one group (the kernel's
        // ChannelRun), as many as fit up to a core's tasks: a task is then no longer a DMA latency
        // and queue turns of its own (8x512x255 G2 fp32: 85 tasks a core in about 5 items; the
        // items leave little UB to hold, so the dx pass reads most again, yet est./bound 8.8 -> 2.7).
        if (t.hwSlices == 1 && D > 1 && (t.splitByChannel || Lp < kShortChannelElems)) {
          const int64_t itemCap = t.splitByChannel ? CeilDiv(in.N * in.C, in.coreNum)
                                                   : std::max<int64_t>(1, kShortItemElems / Lp);
          const int64_t cap = std::min<int64_t>({D, kMaxDmaRows, itemCap});
          Layout rows = channel;
          rows.residentStride = Lp;
          // rows of L not a multiple of 16 are a DMA burst each in every array (64x512x7x7 G1: ~5,300
          // a core): an item moves as one run instead, spread into the rows by Gather (and dx packed)
          rows.hwGather = Lp != L && L < kGatherRowsBelow;
          // GroupNormGradMs's runs (rowsGather 2): both passes load runs and dx is stored as runs, so UB
          // holds no rows of T, only fp32 rows, which need 32-byte alignment alone: L rounded up to 8, not
          // 16 (64x512x7x7: rows of 56, and Gather spreads 7/8 of the lanes it spread at 64)
          if (rows.hwGather && !in.silu) rows.residentStride = AlignUp(L, 8);
          const int64_t P = rows.residentStride;
          // stage2Ahead (see the tiling data) for the channel split of these runs, with dx and dgamma/dbeta:
          // stage 2 after the dx pass was a pipe reset, its loads' bursts (a sample a burst) and latency, ~3
          // us of 64x512x7x7's ~31; a block's slice of channels (as the stage-2 section below cuts it), every
          // sample in one load, reserved here, where it shrinks the items a little
          if (t.splitByChannel && rows.hwGather && !in.silu && in.dxRequired && wantsStats &&
              !(in.C % 8 == 0 && in.C <= 64) && in.N <= kMaxDmaRows) {
            const int64_t width = (in.dgammaRequired && in.dbetaRequired) ? 2 : 1;
            const int64_t bytes = Stage2AheadBytes(AlignUp(CeilDiv(in.C, in.coreNum), 8), in.N, statBytes, width);
            if (bytes <= kStage2AheadMaxBytes) rows.stage2AheadBytes = bytes;
          }
          auto largestCpi = [&](const Layout &base, int64_t limit) {
            return LargestFitting(base.hwGather ? std::min(limit, kMaxGatherElems / P) : limit, 1, [&](int64_t c) {
              Layout l = base;
              l.K = AlignUp(c * P, kElemAlign);
              return fits(l);
            });
          };
          // rows of one repeat (<= 64 floats): a 32-byte block a row of the group's -k gamma, -k beta
          // (silu) and rstd gamma (dx) (kernel BroadcastRows), so that an item's per-row Muls/Adds are
          // one repeat-form instruction each (at most 255 rows an item; silu 64x512x7x7 G1 fp16 vector
          // busy 43 -> 27 us, est./bound 6.96 -> 5.80)
          // (not with GroupNormGradMs's runs: its dx pass spreads rstd gamma_c over the run by Gather instead)
          if (Lp <= 64 && (in.silu || (in.dxRequired && !rows.hwGather))) {
            Layout b = rows;
            b.bcastElems = ((in.silu ? 2 : 0) + (in.dxRequired ? 1 : 0)) * 8 * AlignUp(D, 8);
            if (largestCpi(b, std::min<int64_t>(cap, 255)) > 1) rows = b;
          }
          const int64_t cpi = largestCpi(rows, rows.bcastElems > 0 ? std::min<int64_t>(cap, 255) : cap);
          if (cpi > 1) {
            t.channelsPerItem = cpi;
            layout = rows;
            layout.K = AlignUp(cpi * P, kElemAlign);
          }
        }
      } else {
        layout = withSilu(Layout{GNG_MODE_HW_CHUNKS, 0, 3, layout.statElems, 0, D, statWindow});
        layout.slices = t.hwSlices;
        layout.ownerRows = channel.ownerRows;
        layout.workspaceSums = true;  // the chunk size of any split (see wholeChannels)
        layout.K = LargestFitting(Lp - kElemAlign, kElemAlign, [&](int64_t k) {
          Layout l = layout;
          l.K = k;
          return fits(l);
        });
        if (layout.K == 0) return kTilingNoFit;
        layout.workspaceSums = channel.workspaceSums;
      }
      t.chunksPerChannel = CeilDiv(t.sliceElems, layout.K);
      t.residentStride = layout.residentStride;
      t.copyAligned = (L * dataBytes) % kBlockBytes == 0 ? 1 : 0;
      SplitTasks(t.splitByChannel ? in.N * in.C * t.hwSlices : (t.groupAcrossN ? in.G : in.N * in.G), in.coreNum,
                 &t);
      // Mode 0 with groups of a few channels, tasks under a DMA latency: a core's
      // groups are consecutive rows in GM, so an item is groupRows of them and each vector step runs
      // over all its rows (a V barrier and queue turn a batch, not a group: 456x698x444 G698 had
      // ~12 barriers and ~9 queue flag pairs a group). Every channel's gamma is loaded once a core
      // (the table's rows are a group each), and with SILU every channel's beta (the swish gradient's
      // t needs both, also without dx; silu 456x698x444 G698 fp16 est./bound 7.00 -> 2.00). Each row's
      // values are the per-group path's, so the batch size (it follows the core's tasks) changes no bit.
      // With groupAcrossN a batch is samples of one group (rows C * HxW apart in GM: a pitched DMA, one
      // per channel of the group; 32x96x7x7 G32, D = 3, moved a sample an item).
      // Groups of several channels only where a group is well under a latency's bytes: one of 16 KiB of dy
      // and x (2x64x32x32 G32 fp32) or 7.9 KiB (8x256x13x19 G32 fp16) already keeps the loads busy a group
      // an item (est./bound 1.02 -> 1.13, 1.46 -> 1.71 batched).
      if (layout.mode == GNG_MODE_GROUP_RESIDENT && D <= kMaxGroupRowChannels && !t.splitByChannel &&
          (in.dxRequired || wantsStats) && 2 * D * L * dataBytes < (D == 1 ? kLatencyBytes : kLatencyBytes / 8)) {
        const int64_t coreTasks = std::min(t.groupAcrossN ? in.N : t.tasksPerCore + (t.tailCores > 0 ? 1 : 0),
                                           kMaxGroupRowLines / D);  // (the kernel's per-row scalars)
        auto batchOf = [&](int64_t rows) {
          Layout l = layout;
          l.affineAhead = false;
          l.affineRows = 0;
          // the kernel's gammaAllBuf_: gamma, and with SILU beta from AlignUp(C, 16) (GroupRowsBetaAt)
          l.gammaAllElems = in.silu ? 2 * AlignUp(in.C, kElemAlign) : (in.dxRequired ? in.C : 0);
          l.D = rows * D;  // the resident rows
          l.K = rows * D * Lp;
          l.statElems = AlignUp(rows * D, kElemAlign);
          if (t.groupAcrossN) {
            l.statWindow = std::max(l.statWindow, AlignUp(std::min(in.N * in.G, kAcrossStatWindowGroups), kElemAlign));
          }
          return l;
        };
        // groups of several channels: at least three batches where the core has the groups, so that a
        // batch's loads, vector work and dx store overlap the next's and the last's (32x96x7x7 G32 fp16: one
        // batch of 32 samples est. 8.3 us, three of 11 6.4 us; one-channel groups are shorter and keep
        // one batch where it fits: 5x28x1x3x1 G28 0.90 -> 1.18 in three)
        const int64_t batchCap = D == 1 ? coreTasks : std::max<int64_t>(2, CeilDiv(coreTasks, 3));
        const int64_t rows = LargestFitting(std::min({coreTasks, kMaxGroupRows, batchCap}), 1,
                                            [&](int64_t r) { return fits(batchOf(r)); });
        if (rows > 1) {
          t.groupRows = rows;
          layout = batchOf(rows);
        }
      }
      // Without the HxW split (whose partial-row and owner queues would take the V -> MTE2 ids past 8):
      // a third load in flight where an item's two loads are under a DMA latency (else MTE2 is busy
      // with two) and UB allows, before the held items and the dx buffers (K, bits unchanged). Not in
      // the fused mode 0: vector-bound, it gains more from the dx buffers and the two-buffer gamma/beta
      // queue the third load would take (16x128x56x56 fp16: 1.81 -> 2.18); in the channel split only
      // where it balances the cores and not in the fused kernel, for the held items it would take
      // (1x128x64x64 G32 fused fp16 3.36 -> 3.47, 16x384x56x56 G1 fp32 1.64 -> 1.65; 2x320x64x64 G32
      // fp16 2.21 -> 2.12).
      const bool thirdLoad = !t.splitByChannel || (uneven && t.hwSlices == 1 && !in.silu);
      if (thirdLoad && (layout.mode != GNG_MODE_GROUP_RESIDENT || !in.silu) && t.groupRows == 0 &&
          2 * layout.K * dataBytes < kLatencyBytes) {
        Layout l = layout;
        l.loadBufs = kMaxLoadBuffers;
        if (fits(l)) layout = l;
      }
      // N == 1, the channel split without the HxW split: stage 2 would add each channel's one workspace
      // row to zero after the dx pass (a pipe reset, a load and a store, each a DMA latency in series:
      // ~2 us of 1x2048x16 G1's ~10); each phase-1 task stores its channels' dgamma/dbeta instead, its
      // stores' latency passing under SyncAll's. Its two staging buffers come before the held items.
      if (t.splitByChannel && t.hwSlices == 1 && in.N == 1 && wantsStats && layout.mode != GNG_MODE_HW_ONE) {
        Layout l = layout;
        l.ownStats = true;
        l.stage2AheadBytes = 0;  // (K was chosen with it: it stays as it was)
        if (fits(l)) layout = l;
      }
      // Modes 1-2 read dy and x twice; the UB the layout leaves over holds, as loaded, the first
      // items of a task's sums pass for its dx pass (with the channel split, of a core's sums
      // passes, across SyncAll), which then read no GM. Up to the items of a task (of the
      // busiest core): holding only moves data, so it may follow the core count.
      if (layout.mode != GNG_MODE_GROUP_RESIDENT && in.dxRequired) {
        // the channel split's items of the busiest core: runs of channelsPerItem tasks, each group
        // boundary in its range cutting one more
        const int64_t coreTasks = t.tasksPerCore + (t.tailCores > 0 ? 1 : 0);
        const int64_t scopeTasks =
            t.splitByChannel ? std::min(coreTasks, CeilDiv(coreTasks, t.channelsPerItem) + CeilDiv(coreTasks, D) + 1)
                             : CeilDiv(D, t.channelsPerItem);
        layout.held = LargestFitting(scopeTasks * t.chunksPerChannel, 1, [&](int64_t h) {
          Layout l = layout;
          l.held = h;
          return fits(l);
        });
      }
      t.heldItems = layout.held;
      // Modes 1-2 load the next group's gamma (+ beta) ahead in what the held items leave over
      // (layout choices made without it: K, and so the bits, stay as they were).
      if (layout.mode != GNG_MODE_GROUP_RESIDENT && !t.splitByChannel && (in.dxRequired || in.silu)) {
        Layout l = layout;
        l.affineAhead = true;
        if (fits(l)) layout = l;
      }
      if (!layout.rowSumsWork) {
        Layout l = layout;
        l.rowSumsWork = true;
        if (fits(l)) layout = l;
      }
      // A dx store's buffer is free again when the store has landed (a DMA latency): more
      // buffers, in what is left, let more stores be on their way at once.
      for (int64_t bufs = layout.dxBufs + 1; bufs <= kMaxDxBuffers; ++bufs) {
        Layout l = layout;
        l.dxBufs = bufs;
        if (fits(l)) layout = l;
      }
      // Mode 0, rows of one repeat (<= 64 floats), the group (<= 255 rows) in one item: a block a row of -k gamma,
      // -k beta (silu), rstd gamma (dx) (kernel BroadcastRows) in what is left at the end: no other field changes.
      if (layout.mode == GNG_MODE_GROUP_RESIDENT && layout.residentStride <= 64 && t.channelsPerItem == D && D <= 255 &&
          t.groupRows == 0) {
        Layout l = layout;
        l.bcastElems = ((in.silu ? 2 : 0) + (in.dxRequired ? 1 : 0)) * 8 * AlignUp(D, 8);
        if (fits(l)) layout = l;
      }
    }
    t.mode = layout.mode;
    t.chunkElems = layout.K;
    t.numFloatBufs = layout.numFloatBufs;
    t.dxBuffers = layout.dxBufs;
    t.affineAhead = !layout.affineAhead ? 0 : (layout.affineRows > 0 ? 2 : 1);
    t.loadBuffers = layout.loadBufs;
    t.bcastElems = layout.bcastElems;
    t.hwOneGather = layout.mode == GNG_MODE_HW_ONE && layout.hwGather ? 1 : 0;
    t.rowsGather = layout.mode == GNG_MODE_CHANNEL && layout.hwGather ? (in.silu ? 1 : 2) : 0;
    t.statElems = layout.statElems;
    t.reduceWorkElems = std::max(ReduceWorkElems(layout.K), RowSumsWork(layout));
    t.statWindowElems = layout.statWindow;
    t.ubBytesPhase1 = Phase1Bytes(layout, dataBytes, statBytes);
    phase1AheadBytes = layout.stage2AheadBytes;
    t.ownStats = layout.ownStats ? 1 : 0;
    t.needWorkspace = (t.splitByChannel || (wantsStats && !t.groupAcrossN && !hwOneOneTask)) ? 1 : 0;
  }

  // stage 2 unless dgamma/dbeta come from the group-across-N cores, mode 3's one task, the HxW
  // split's group owners or (ownStats) the channel split's phase-1 tasks
  if (wantsStats && in.C > 0 && !t.groupAcrossN && !hwOneOneTask && t.hwSlices == 1 && !t.ownStats) {
    // workspace rows (n, slice), added in that order; mode 3's hwOneSamples: a row a task
    t.reduceRows = empty ? 0 : (t.hwOneSamples > 0 ? t.numTasks : in.N * t.hwSlices);
    const int64_t width = (in.dgammaRequired && in.dbetaRequired) ? 2 : 1;
    // Whole rows: where C is a multiple of 8 and at most 64 (one fp32 repeat), one block reads
    // every channel, so its rows are contiguous in GM and in UB: one burst per array and load,
    // where slices of 8 channels would take a 32-byte burst per sample and array on each of
    // C / 8 blocks (the stage-2 rows' DMA, not their bytes, is then what costs).
    const bool wholeRows = in.C % 8 == 0 && in.C <= 64 && Stage2Bytes(in.C, 1, statBytes, width) <= ubUsable;
    t.stage2WholeRows = wholeRows ? 1 : 0;
    t.stage2SliceElems = wholeRows ? in.C : AlignUp(CeilDiv(in.C, in.coreNum), 8);
    t.stage2Cores = CeilDiv(in.C, t.stage2SliceElems);
    // mode 3's tasks of whole samples (at most kHwOneTasks rows): every row in one load, pieces narrowed
    // to fit, since stage 2 folds a load's rows as a tree (the kernel's FoldRows), whose order must
    // follow the rows alone, not the core count (the slice width, and with it the rows that fit a load)
    const bool foldRows = t.hwOneSamples > 0;
    t.stage2PieceElems = LargestFitting(t.stage2SliceElems, 8, [&](int64_t p) {
      return Stage2Bytes(p, foldRows ? t.reduceRows : 1, statBytes, width) <= ubUsable;
    });
    if (t.stage2PieceElems == 0) return kTilingNoFit;
    // as many samples per DMA as fit (a strided DMA has at most 4095 rows; whole rows are added
    // by a repeat-form Add whose source repeat stride, the rows of a load, is at most 255 blocks,
    // except where they are folded: then a row Add an array)
    const int64_t rowLimit = foldRows ? t.reduceRows : (wholeRows ? 255 * 8 / in.C : 4095);
    const int64_t maxRows = std::max<int64_t>(1, std::min<int64_t>(t.reduceRows, rowLimit));
    t.stage2RowsPerLoad = std::max<int64_t>(1, LargestFitting(maxRows, 1, [&](int64_t r) {
      return Stage2Bytes(t.stage2PieceElems, r, statBytes, width) <= ubUsable;
    }));
    t.ubBytesStage2 = Stage2Bytes(t.stage2PieceElems, t.stage2RowsPerLoad, statBytes, width);
    if (phase1AheadBytes > 0 && !wholeRows) {  // the slice as one piece, every sample in one load (as reserved)
      t.stage2Ahead = 1;
      t.stage2PieceElems = t.stage2SliceElems;
      t.stage2RowsPerLoad = t.reduceRows;
      t.ubBytesStage2 = 0;  // no stage-2 layout of its own: phase 1's holds its buffers
    }
  }
  t.blockDim = std::max<int64_t>({1, t.phase1Cores, t.stage2Cores});
  *out = t;
  return kTilingOk;
}

}  // namespace ms_groupnorm::grad_tiling
