// Host tiling of GroupNormSiluMs (see group_norm_silu_ms_tiling.h).
//
// The kernel allocates, in this order, with every buffer rounded up to 32 bytes (K =
// chunkElems: the whole group in mode 0, one chunk in mode 1):
//   the x queue of xBuffers buffers of xBufferElems x-dtype elements (mode 0 and streamed
//   chunks: VECIN depth 2, 2 buffers of K, one load in flight while the previous one is
//   computed; staged chunks: VECIN depth 1, 2 or 1 buffers of the task's whole x; with a part
//   ring, one TBuf of xBuffers x xBufferElems instead); the y queue (VECOUT,
//   depth 1) of 2 buffers of K; 2 fp32 work buffers of K; a scratch buffer: reduce result (8
//   floats), the constant 1.0 (8), the per-row partial sums and the ReduceSum work buffer;
//   mean/rstd staging (VECOUT, 2 x statBatch floats); with coefficient arrays (coefElems > 0):
//   one gamma and one beta staging buffer of coefElems parameter elements and 2 fp32 arrays of
//   coefElems; in mode 1, the slice statistics buffers (kMaxSlices x 8 floats VECIN, 8 floats
//   VECOUT), whatever the split.
// Mode 2 (empty groups) allocates the mean/rstd staging only. PlanBytes mirrors that order;
// the CPU twin checks the kernel's real InitBuffer calls against the configured UB size.
#include "group_norm_silu_ms_tiling.h"

#include <algorithm>
#include <cmath>
#include <string>

namespace ms_groupnorm::forward_tiling {
namespace {

constexpr int64_t kBlockBytes = 32;
constexpr int64_t kBufferNum = 2;
constexpr int64_t kMaxYBuffers = 4;
// Chunks of long rows: a launch of fewer chunks than this gets smaller ones, down to kMinChunkElems.
constexpr int64_t kMinLaunchChunks = 48;
constexpr int64_t kMinChunkElems = 1024;
constexpr int64_t kDeepStreamLoads = 4;  // op_kernel DEEP_STREAM_LOADS
// A ring chunk of several rows takes at most this many elements (its two fp32 work buffers 64 KiB).
constexpr int64_t kMaxRingItemElems = 8192;
constexpr int64_t kElemAlign = 16;  // 16 elements: 32 bytes of fp16/bf16, 64 of fp32
constexpr int64_t kScratchHeadFloats = 16;  // reduce result block + the 1.0 block
constexpr int64_t kMaxStatBatch = 256;
constexpr int64_t kMaxGatherElems = 255 * 64;   // fp32 elements of one Gather (count form, A2/A3)
constexpr int64_t kMaxGroupRows = 2040;          // groups a batch of mode 0 with HxW == 1
constexpr int64_t kMaxRepeatStrideBlocks = 255;  // a vector instruction's repeat stride, in 32-byte blocks
constexpr int64_t kMinUbBytes = 16 * 1024;
// gamma/beta of every channel are kept per block when their arrays take at most this much UB.
constexpr int64_t kMaxBlockCoefBytes = 32 * 1024;

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
int64_t AlignUp(int64_t a, int64_t b) { return CeilDiv(a, b) * b; }
int64_t AlignBytes(int64_t bytes) { return AlignUp(bytes, kBlockBytes); }
using ms_groupnorm::tiling::BytesOf;
using ms_groupnorm::tiling::NumElements;
using ms_groupnorm::tiling::ShapeText;

int64_t ReduceWorkElems(int64_t maxCount) {
  // ReduceSum keeps one fp32 partial per 64-element repeat, rounded up to a block.
  return AlignUp(std::max<int64_t>(CeilDiv(maxCount, 64), 1), 8);
}

struct Plan {
  int64_t mode;
  int64_t K;
  int64_t coefElems;
  int64_t partialElems;
  int64_t reduceWorkElems;
  int64_t statBatch;
  int64_t xBuffers = kBufferNum;
  int64_t xElems = 0;  // elements per x buffer; 0: K
  int64_t yElems = 0;  // elements per y buffer; 0: K
  int64_t yBuffers = kBufferNum;
  int64_t bcastElems = 0;
  int64_t gatherElems = 0;  // batches of groups by Gather: its spread and pack tables (int32)
};

int64_t PlanBytes(const Plan &p, int64_t dataBytes, int64_t paramBytes) {
  const int64_t stats = AlignBytes(2 * p.statBatch * 4);
  if (p.mode == GNS_MODE_EMPTY_GROUPS) return stats;
  int64_t total = p.xBuffers * AlignBytes((p.xElems > 0 ? p.xElems : p.K) * dataBytes);  // x queue
  total += p.yBuffers * AlignBytes((p.yElems > 0 ? p.yElems : p.K) * dataBytes);         // y queue
  total += AlignBytes(2 * p.K * 4);                              // fp32 work buffers
  total += AlignBytes((kScratchHeadFloats + p.partialElems + p.reduceWorkElems) * 4);
  total += stats;
  if (p.coefElems > 0) total += 2 * AlignBytes(p.coefElems * paramBytes) + AlignBytes(2 * p.coefElems * 4);
  if (p.bcastElems > 0) total += AlignBytes(p.bcastElems * 4);  // row scale/shift blocks
  total += AlignBytes(p.gatherElems * 4);
  if (p.mode == GNS_MODE_CHUNKED) {  // slice statistics: read back (VECIN) and written (VECOUT)
    total += AlignBytes(kMaxSlices * kSliceEntryFloats * 4) + AlignBytes(kSliceEntryFloats * 4);
  }
  return total;
}

// The largest multiple of `align` in [align, limit] for which fits(value) holds, or 0.
template <typename Fits>
int64_t LargestFitting(int64_t limit, int64_t align, Fits fits) {
  int64_t lo = 0;
  int64_t hi = limit / align;
  while (lo < hi) {  // binary search on a monotone predicate
    const int64_t mid = (lo + hi + 1) / 2;
    if (fits(mid * align)) lo = mid; else hi = mid - 1;
  }
  return lo * align;
}

// The part ring (kernel: group_norm_silu_ms_ring.h). A model of its time per group, to choose
// its shape: the vector work (instructions per chunk, each its start and barrier cycles plus
// one per 256-byte repeat) against the GM bytes at one core's share of the bandwidth (x once,
// the parts that are not resident once more, y once). Assumed figures (the cost script's),
// used only to rank plans; every plan it can pick is correct. The DMA's per-row bursts, the vector
// unit's waits for y buffers and the latency shown with two slots for the parts read twice count
// where `detail` (kRingDetail) says so: the chunk rows, which fix the arithmetic (and so y's bits),
// are ranked without them (kRingBytesOnly), so that a finer model of the schedule cannot change the
// results; the parts, slots and resident parts, which move x but do not change it, with them.
struct RingShape {
  int64_t rowsPerItem;
  int64_t partItems;
  int64_t slots;
  int64_t resident;
  int64_t parts;
  bool rowBatches = false;  // a part's rows one batch for the vector unit (bcastElems > 0)
};

struct RingCosts {
  double burstNs;         // a DMA burst (a row: each lands at rowPitch), 16 cycles
  double twoSlotsNs;      // a part read twice, streamed through two slots
  double yBufferWaitNs;   // a group, for each y buffer short of kMaxYBuffers
};
constexpr RingCosts kRingBytesOnly{0.0, 0.0, 0.0};
constexpr RingCosts kRingDetail{16.0 / 1.85, 1000.0, 1000.0};
// A block of one group: no next group's loads and statistics run beside this one's last stores, so each y
// buffer short shows more (the twin's 1x512x64x64 G32 fp32, a group a block: 4 of 16 parts resident with
// 2 y buffers ended at 24.9 us, 2 of 16 with 4 at 20.3 us; blocks of two groups or more gain nothing or lose)
constexpr RingCosts kRingDetailOneGroup{16.0 / 1.85, 1000.0, 1500.0};

double RingNs(const RingShape &r, int64_t rows, int64_t rowLen, int64_t dataBytes, int64_t yBuffers,
              const RingCosts &detail) {
  const int64_t items = (rows + r.rowsPerItem - 1) / r.rowsPerItem;
  const double itemElems = static_cast<double>(r.rowsPerItem * rowLen);
  // per chunk: pass 1 (Cast, Adds, ReduceSum, Adds, Mul, ReduceSum; fp32 reads x in place) and
  // pass 2 (Cast, Adds, Muls/Adds per row, SiLU's four, Cast; fp32 without the casts)
  const double instr = (dataBytes == 4 ? 10.0 : 13.0) + 2.0 * static_cast<double>(r.rowsPerItem);
  double vecNs = static_cast<double>(items) * instr * (30.0 + itemElems * 4.0 / 256.0) / 1.85;
  if (r.rowBatches) {
    // per part: about 24 instructions plus four a 64-column piece of a row (RowsSum, RowsApply), the
    // same element work as a row at a time, and two V -> S round trips with the scalar unit's few
    // accesses a row exposed between them
    const double pieces = static_cast<double>((rowLen + 63) / 64);
    const double partRows = static_cast<double>(std::min(rows, r.partItems));
    vecNs = static_cast<double>(r.parts) * ((24.0 + 4.0 * pieces) * 30.0 + 2.0 * 600.0 + partRows * 20.0) / 1.85 +
            static_cast<double>(rows * rowLen) * instr * 4.0 / 256.0 / 1.85;
  }
  const int64_t residentRows = std::min(rows, r.resident * r.partItems * r.rowsPerItem);
  const double elems = static_cast<double>(rows * rowLen);
  const double again = static_cast<double>(rows - residentRows) / static_cast<double>(rows);
  // every row a DMA burst of its own: with short rows (7x7: 98 bytes of fp16) the bursts, not the
  // bytes, take most of the DMA's time, and rows read again cost them again
  const double dmaNs = elems * static_cast<double>(dataBytes) * (2.0 + again) / 33.0 +
                       static_cast<double>(rows) * (2.0 + again) * detail.burstNs;
  // one slot for the parts read twice: each of their loads (about 1 us) is in series; two: about half
  // of that shows (the twin's 64x320x14x14 G1 fp16 runs: parts of 40 rows streamed through 2 slots
  // took 14 us more than through 4); one slot to spare for the next group: its second part is loaded
  // only when this group's pass 2 frees a slot, one part's compute before it is needed, so about a
  // DMA latency shows once a group
  const double streamed = static_cast<double>(r.parts - r.resident);
  const double exposedNs = r.resident < r.parts ? (r.slots < r.resident + 2   ? 2000.0 * streamed
                                                   : r.slots < r.resident + 3 ? detail.twoSlotsNs * streamed
                                                                              : 0.0)
                                                : (r.slots < r.resident + 2 ? 1000.0 : 0.0);
  // with fewer than kMaxYBuffers y buffers the vector unit waits on the stores of pass 2 of a group of
  // more parts than y buffers, about a store's latency a group for each one short (the twin's
  // 64x512x7x7 G1 fp16 runs: 4 y buffers beside 5 slots beat 3 beside 6 by 1 us; 5x128x64x64 G32,
  // 2 parts a group, gains nothing from more)
  const int64_t waits = std::min(kMaxYBuffers - yBuffers, std::max<int64_t>(0, r.parts - yBuffers));
  vecNs += detail.yBufferWaitNs * static_cast<double>(waits);
  // the two overlap only in part (a group's first load and last store, the statistics' round
  // trips), so the lesser counts for half
  return std::max(vecNs, dmaNs) + 0.5 * std::min(vecNs, dmaNs) + exposedNs;
}

const char *const kInputNames[kNumInputs] = {"x", "gamma", "beta"};

int Reject(int status, const std::string &text, std::string *message) {
  if (message != nullptr) *message = "GroupNormSiluMs: " + text;
  return status;
}

const char *TypeName(ScalarType t) {
  switch (t) {
    case ScalarType::kFloat32: return "float32";
    case ScalarType::kFloat16: return "float16";
    case ScalarType::kBFloat16: return "bfloat16";
  }
  return "?";
}

}  // namespace

int CheckInputs(const ShapeView (&shapes)[kNumInputs], const int64_t *numGroups, std::string *message) {
  for (int i = 0; i < kNumInputs; ++i) {
    if (!shapes[i].present || (shapes[i].rank > 0 && shapes[i].dims == nullptr)) {
      return Reject(kTilingMissingInput,
                    std::string("input '") + kInputNames[i] + "' is missing (no tensor descriptor or shape)", message);
    }
  }
  if (numGroups == nullptr) return Reject(kTilingMissingInput, "attribute 'num_groups' is missing", message);
  const ShapeView &x = shapes[kInputX];
  if (x.rank < 2) {
    return Reject(kTilingBadShape, "input 'x' must have rank >= 2 (N, C, *), got " + ShapeText(x), message);
  }
  if (NumElements(x) < 0) return Reject(kTilingBadShape, "input 'x' has a negative dimension " + ShapeText(x), message);
  const int64_t C = x.dims[1];
  const int64_t G = *numGroups;
  if (G <= 0) return Reject(kTilingBadShape, "attribute 'num_groups' must be > 0, got " + std::to_string(G), message);
  if (C % G != 0) {
    return Reject(kTilingBadShape,
                  "attribute 'num_groups' (" + std::to_string(G) + ") must divide C = " + std::to_string(C), message);
  }
  for (int i : {kInputGamma, kInputBeta}) {
    if (NumElements(shapes[i]) != C) {
      return Reject(kTilingBadShape, std::string("input '") + kInputNames[i] + "' must have C = " + std::to_string(C) +
                                         " elements, got " + ShapeText(shapes[i]), message);
    }
  }
  return kTilingOk;
}

int CheckDtypes(ScalarType x, ScalarType gamma, ScalarType beta, std::string *message) {
  if (gamma != beta) {
    return Reject(kTilingBadDtype, std::string("inputs 'gamma' and 'beta' must have one dtype, got ") +
                                       TypeName(gamma) + " and " + TypeName(beta), message);
  }
  if (TilingKeyFor(x, gamma) < 0) {
    return Reject(kTilingBadDtype, std::string("input 'gamma' must be float32 or x's dtype (") + TypeName(x) +
                                       "), got " + TypeName(gamma), message);
  }
  return kTilingOk;
}

int CheckAttributes(float eps, float swishScale, std::string *message) {
  if (!(std::isfinite(eps) && eps > 0.0f)) {
    return Reject(kTilingBadAttribute, "attribute 'eps' must be a finite number > 0, got " + std::to_string(eps),
                  message);
  }
  if (!std::isfinite(swishScale)) {
    return Reject(kTilingBadAttribute, "attribute 'swish_scale' must be finite, got " + std::to_string(swishScale),
                  message);
  }
  return kTilingOk;
}

int64_t TilingKeyFor(ScalarType data, ScalarType param) {
  if (param == data) {
    switch (data) {
      case ScalarType::kFloat32: return GNS_KEY_FP32;
      case ScalarType::kFloat16: return GNS_KEY_FP16;
      case ScalarType::kBFloat16: return GNS_KEY_BF16;
    }
  }
  if (param == ScalarType::kFloat32 && data == ScalarType::kFloat16) return GNS_KEY_FP16_FP32;
  if (param == ScalarType::kFloat32 && data == ScalarType::kBFloat16) return GNS_KEY_BF16_FP32;
  return -1;
}

int64_t UserWorkspaceBytes(const GroupNormSiluMsTilingData &t) {
  return t.sliceCount > 1 ? t.numTasks * kSliceEntryFloats * static_cast<int64_t>(sizeof(float)) : 0;
}

const char *ModeName(int64_t mode) {
  switch (mode) {
    case GNS_MODE_GROUP_RESIDENT: return "group_resident";
    case GNS_MODE_CHUNKED: return "chunked";
    case GNS_MODE_EMPTY_GROUPS: return "empty_groups";
    default: return "unknown";
  }
}

int ComputeTiling(const TilingInput &in, GroupNormSiluMsTilingData *out) {
  if (in.N < 0 || in.C < 0 || in.HxW < 0 || in.G <= 0 || in.C % in.G != 0) return kTilingBadShape;
  if (TilingKeyFor(in.dataType, in.paramType) < 0) return kTilingBadDtype;
  if (CheckAttributes(in.eps, in.swishScale, nullptr) != kTilingOk) return kTilingBadAttribute;
  if (in.ubBytes < kMinUbBytes || in.coreNum < 1) return kTilingBadPlatform;
  const int64_t ubUsable = in.ubBytes - kUbReserveBytes;

  GroupNormSiluMsTilingData t{};
  t.yRows = 1;
  t.rowsPerItem = 1;
  t.N = in.N;
  t.C = in.C;
  t.HxW = in.HxW;
  t.G = in.G;
  t.D = in.C / in.G;
  t.eps = in.eps;
  t.swishScale = in.swishScale;
  t.activateSilu = in.activateSilu ? 1 : 0;
  const int64_t dataBytes = BytesOf(in.dataType);
  const int64_t paramBytes = BytesOf(in.paramType);
  const int64_t M = t.D * in.HxW;

  const int64_t groups = in.N * in.G;
  if (groups == 0) {  // nothing to compute or write
    t.sliceCount = 1;
    t.blockDim = 1;
    t.statBatch = 8;
    *out = t;
    return kTilingOk;
  }
  // statBatch is sized below, once the task count is known; the plans only need an upper bound.
  t.statBatch = kMaxStatBatch;

  Plan plan{GNS_MODE_EMPTY_GROUPS, 0, 0, 0, 0, t.statBatch};
  t.sliceCount = 1;
  if (M == 0) {
    t.mode = GNS_MODE_EMPTY_GROUPS;
  } else {
    t.vectorCoef = in.HxW == 1 ? 1 : 0;
    t.rows = t.vectorCoef ? 1 : t.D;
    t.rowLen = t.vectorCoef ? t.D : in.HxW;
    t.rowPitch = AlignUp(t.rowLen, kBlockBytes / dataBytes);
    const int64_t coefElems = AlignUp(t.D, kElemAlign);  // >= rowPitch when the coefficients are vectors
    const int64_t blockCoefElems = AlignUp(t.C, kElemAlign);
    const bool blockCoef = !t.vectorCoef && blockCoefElems * (2 * paramBytes + 8) <= kMaxBlockCoefBytes;
    auto fits = [&](const Plan &p) { return PlanBytes(p, dataBytes, paramBytes) <= ubUsable; };
    const int64_t groupElems = t.rows * t.rowPitch;
    Plan resident{GNS_MODE_GROUP_RESIDENT, groupElems, blockCoef ? blockCoefElems : coefElems, AlignUp(t.rows, 8),
                  ReduceWorkElems(groupElems), t.statBatch};
    t.coefPerBlock = blockCoef && fits(resident) ? 1 : 0;
    if (!t.coefPerBlock) resident.coefElems = coefElems;
    if (t.rows <= kMaxCopyRows && fits(resident)) {
      plan = resident;
      // a third x buffer when it fits: two group loads in flight while one group is computed
      Plan three = resident;
      three.xBuffers = 3;
      if (fits(three)) plan = three;
      t.chunksPerRow = 1;
      // Short rows (one repeat each): every row's scale and shift broadcast into a 32-byte block,
      // one Mul and one Add for all the rows of a group (Brcb reads the group's gamma/beta from a
      // 32-byte aligned channel: D a multiple of 8 where the block's arrays hold several groups)
      if (t.rowLen <= 64 && t.rows <= 255 && (!t.coefPerBlock || t.D % 8 == 0)) {
        Plan bcast = plan;
        bcast.bcastElems = 2 * 8 * AlignUp(t.rows, 8);
        if (fits(bcast)) plan = bcast;
      }
      // Groups of one channel (D == 1, HxW > 1) whose row is at most 255 blocks: batches of groupRows
      // groups as rows (group_norm_silu_ms_channel_rows.h), with the block's gamma/beta, instead of a
      // group at a time (456x698x444 G698: 6,631 groups a core, each a dozen vector instruction starts
      // and three V -> S round trips). Each group's arithmetic is that of a group at a time.
      // Only for launches of more than kMinLaunchChunks (48) groups (fewer, about one a block: a batch of
      // one costs its rows' pieces and round trips, 1x4x199 G4 0.83 -> 0.89 of its bound); from the
      // shape alone, so that the plan, and the NaN payloads of a group with an inf, do not follow the
      // core count.
      if (t.rows == 1 && !t.vectorCoef && t.rowPitch * 4 <= kMaxRepeatStrideBlocks * kBlockBytes && blockCoef &&
          groups > kMinLaunchChunks) {
        auto channelPlan = [&](int64_t r) {
          Plan p{GNS_MODE_GROUP_RESIDENT, r * t.rowPitch, blockCoefElems, 8, 8, kMaxStatBatch};
          p.bcastElems = GnsGroupRowsBcastElems(r);
          return p;
        };
        const int64_t wanted = std::min(AlignUp(CeilDiv(groups, in.coreNum), 8), kMaxGroupRows);
        const int64_t r = LargestFitting(wanted, 8, [&](int64_t rr) { return fits(channelPlan(rr)); });
        if (r > 0) {
          plan = channelPlan(r);
          t.groupRows = r;
          t.coefPerBlock = 1;
        }
      }
      // HxW == 1 with rows of at most 255 blocks (a vector repeat stride's limit): batches of
      // groupRows groups, as many as a block has (up to kMaxGroupRows) and fit, instead of a group at
      // a time (8000x64 G32 fp32 took ~5,300 groups a core, each a load, two reductions with their
      // V -> S round trips, a scalar GM read of its shift, a store: 944x the bound). Every group's
      // arithmetic is the same, so the batch size (which follows the core count) changes no bit.
      if (t.vectorCoef && t.rowPitch * 4 <= kMaxRepeatStrideBlocks * kBlockBytes && in.G <= kMaxCopyRows) {
        // rows that are not a 32-byte multiple were a DMA burst each (8000x64 G32: ~5,300 a core for x
        // and as many for y): then a batch moves as one run, which Gather (5 elements a cycle, one call
        // of at most 255 repeats of 64) spreads into the rows and packs back. Only short rows: Gather
        // costs about (rowPitch + D) / 5 cycles a row against two 16-cycle bursts (1023x257 G1 fp32
        // est./bound 1.33 -> 2.78 with it)
        const bool gather = (t.D * dataBytes) % kBlockBytes != 0 && t.D < 64;
        auto rowsPlan = [&](int64_t r) {
          Plan p{GNS_MODE_GROUP_RESIDENT, r * t.rowPitch, (r + in.G) * t.rowPitch, 8, ReduceWorkElems(r),
                 2 * AlignUp(r, 8)};  // statBatch: two slots of the batch's mean/rstd
          p.bcastElems = GnsGroupRowsBcastElems(r);
          if (gather) p.gatherElems = 2 * r * t.rowPitch;
          return p;
        };
        const int64_t wanted = std::min(AlignUp(CeilDiv(groups, in.coreNum), 8), kMaxGroupRows);
        const int64_t r = LargestFitting(wanted, 1, [&](int64_t rr) {
          return fits(rowsPlan(rr)) && !(gather && rr * t.rowPitch > kMaxGatherElems);
        });
        if (r > 0) {
          plan = rowsPlan(r);
          t.groupRows = r;
          t.groupRowsGather = gather && r > 1 ? 1 : 0;
          if (t.groupRowsGather == 0) plan.gatherElems = 0;
          t.coefPerBlock = 0;
        }
        // Groups of 2..8 elements: a row a group still costs a vector repeat a group for each row-wise
        // step (8000x64 G32 fp16: 12 repeats a group, vector 47 us against a bound of 5.6). Gather turns
        // a batch into D columns instead (group_norm_silu_ms_group_columns.h), every step an instruction
        // over whole columns; batches of a multiple of G groups, so that gamma/beta's columns are built
        // once a block. Each group's arithmetic is unchanged (the bits do not depend on it).
        if (t.D >= 2 && t.D <= GNS_MAX_COLUMNS) {
          auto columnsPlan = [&](int64_t rr) {
            const int64_t k = t.D * AlignUp(rr, 8);  // x, y and the work buffers hold D columns of the batch
            Plan p{GNS_MODE_GROUP_RESIDENT, k, k, 8, ReduceWorkElems(rr), 2 * AlignUp(rr, 8)};
            p.bcastElems = GnsGroupRowsBcastElems(rr);
            p.gatherElems = 3 * k;  // spread, pack and gamma/beta's table
            return p;
          };
          const int64_t limit = std::min(AlignUp(CeilDiv(groups, in.coreNum), in.G), kMaxGroupRows / in.G * in.G);
          const int64_t rc = LargestFitting(limit, in.G, [&](int64_t rr) {
            return fits(columnsPlan(rr)) && t.D * AlignUp(rr, 8) <= kMaxGatherElems;
          });
          if (rc > 0) {
            plan = columnsPlan(rc);
            t.groupRows = rc;
            t.groupRowsGather = GNS_GATHER_COLUMNS;
            t.coefPerBlock = 0;
          }
        }
      }
    } else {
      // Chunks of one row; with vector coefficients each chunk brings its gamma/beta slice.
      const int64_t limit = AlignUp(t.rowLen, kElemAlign);
      auto chunkedPlan = [&](int64_t k, int64_t xBuffers, int64_t xElems, bool coefs, int64_t coefElems = 0) {
        Plan p{GNS_MODE_CHUNKED, k, t.vectorCoef ? k : (coefs ? (coefElems > 0 ? coefElems : blockCoefElems) : 0), 8,
               ReduceWorkElems(k), t.statBatch, xBuffers, xElems};
        return p;
      };
      // Staged: the whole group in one x buffer (its rows, one copy) and chunks of whole rows,
      // two x buffers when they fit (the next group's load overlaps this one's compute), else
      // one; y leaves in runs of yRows rows (one copy each), as many as fit.
      t.staged = 0;
      t.yRows = 1;
      // The part ring, for groups of whole-row chunks with per-channel gamma/beta: the chunk rows,
      // part size, slots and resident parts of the fastest plan that fits. The chunks are also
      // ones a split group can stream (the split below keeps them), so the arithmetic does not
      // depend on the core count.
      RingShape ring{0, 0, 0, 0, 0};
      bool ringCoefs = false;
      double ringBest = 0.0;
      const bool wholeRows = !t.vectorCoef && t.rows <= kMaxCopyRows && fits(chunkedPlan(limit, 2, 0, false));
      // Chunks of one row may go in batches of a part's rows (RowsSum and RowsApply take fp32 rows a
      // repeat stride apart, at most 255 blocks; a part starts at a multiple of 8 rows so that its
      // rows' vectors start 32-byte aligned); the chunks stay the rows, so the bits do not change.
      const bool rowBatches = t.rowPitch * 4 <= kMaxRepeatStrideBlocks * kBlockBytes;
      // The block's gamma/beta arrays: of all C channels first (blockCoef), then, for the chunk rows
      // chosen so, of the block's channels only (below).
      bool ringCoef = blockCoef;
      int64_t ringCoefElems = blockCoefElems;
      RingCosts ringCosts = kRingBytesOnly;
      auto consider = [&](const RingShape &shape, int64_t k, int64_t partElems, int64_t bcastElems) {
        bool coefs = ringCoef;
        Plan p = chunkedPlan(k, shape.slots, partElems, coefs, ringCoefElems);
        p.bcastElems = bcastElems;
        if (!fits(p)) {
          coefs = false;
          p = chunkedPlan(k, shape.slots, partElems, false);
          p.bcastElems = bcastElems;
        }
        if (!fits(p)) return;
        // with the y buffers the UB left over gives it (as sized at the end); without the block's
        // gamma/beta arrays, pass 2 reads gamma_c and beta_c of every row from GM on the scalar unit
        // (about 200 ns each)
        Plan withY = p;
        for (Plan more = p; more.yBuffers < kMaxYBuffers; withY = more) {
          ++more.yBuffers;
          if (!fits(more)) break;
        }
        const double ns = RingNs(shape, t.rows, t.rowLen, dataBytes, withY.yBuffers, ringCosts) +
                          (coefs ? 0.0 : 400.0 * t.rows);
        if (ring.parts == 0 || ns < ringBest) {
          ring = shape;
          ringCoefs = coefs;
          ringBest = ns;
          plan = p;
        }
      };
      auto searchRing = [&](int64_t onlyRows) {  // every ring shape (of chunks of onlyRows rows if > 0)
        for (int64_t r = 1; wholeRows && r <= t.rows && (r == 1 || t.rowPitch == t.rowLen); ++r) {
          if (onlyRows > 0 && r != onlyRows) continue;
          const int64_t k = r == 1 ? limit : r * t.rowLen;
          if (r > 1 && (k > kMaxRingItemElems || !fits(chunkedPlan(k, 2, 0, false)))) break;
          const int64_t items = CeilDiv(t.rows, r);
          for (int64_t q = 1; q <= items; ++q) {
            const int64_t parts = CeilDiv(items, q);
            const int64_t partElems = std::min(q * r, t.rows) * t.rowPitch;
            if (2 * partElems * dataBytes > ubUsable) break;  // larger parts fit even less
            const bool batched = r == 1 && rowBatches && (q % 8 == 0 || q == t.rows);
            for (int64_t slots = 2; slots <= kMaxRingSlots; ++slots) {
              for (int64_t res = std::min(parts, slots - 1); res >= 0; --res) {
                consider(RingShape{r, q, slots, res, parts}, k, partElems, 0);
                if (batched) {
                  consider(RingShape{r, q, slots, res, parts, true}, q * t.rowPitch, partElems,
                           GnsRingRowsBcastElems(q, t.rows));
                }
              }
            }
          }
        }
      };
      searchRing(0);
      // The chunk rows fix the arithmetic, so they are chosen above without the core count (and by the
      // bytes-only ranking). For them, the parts, slots and resident parts are chosen again with the
      // model's detail and, where they fit, gamma/beta arrays of the block's channels only: the ring's
      // blocks take whole groups, at most ringBlockGroups each (the work split below), and with one
      // sample those never wrap into the next one, so IssueBlockCoefs loads only their channels (arrays
      // of all C may not fit: 1x2130x1x1664 G71 with float32 gamma is 2 x 2144 floats each, over
      // kMaxBlockCoefBytes, and without arrays pass 2 reads gamma_c and beta_c of every row from GM).
      if (ring.parts > 0) {
        const int64_t ringBlockGroups = CeilDiv(groups, std::min(groups, in.coreNum));
        if (!blockCoef && !t.vectorCoef && in.N == 1) {
          const int64_t span = AlignUp(std::min(t.C, ringBlockGroups * t.D), kElemAlign);
          if (span * (2 * paramBytes + 8) <= kMaxBlockCoefBytes) {
            ringCoef = true;
            ringCoefElems = span;
          }
        }
        ringCosts = ringBlockGroups == 1 ? kRingDetailOneGroup : kRingDetail;
        const int64_t rows = ring.rowsPerItem;
        ring.parts = 0;
        searchRing(rows);
      }
      if (ring.parts > 0) {
        t.staged = 0;
        t.coefPerBlock = ringCoefs ? 1 : 0;
        t.rowsPerItem = ring.rowsPerItem;
        t.ringParts = ring.parts;
        t.ringResident = ring.resident;
        t.partItems = ring.partItems;
      }
      if (t.rows <= kMaxCopyRows && ring.parts == 0) {
        for (int64_t xBuffers = kBufferNum; xBuffers >= 1 && !t.staged; --xBuffers) {
          for (int coefs = blockCoef ? 1 : 0; coefs >= 0 && !t.staged; --coefs) {
            Plan p = chunkedPlan(limit, xBuffers, groupElems, coefs != 0);
            if (!fits(p)) continue;
            t.staged = 1;
            t.coefPerBlock = coefs;
            t.yRows = LargestFitting(t.rows, 1, [&](int64_t r) {
              Plan q = p;
              q.yElems = r * t.rowPitch;
              return fits(q);
            });
            if (t.yRows > 1) p.yElems = t.yRows * t.rowPitch; else t.yRows = 1;
            // Contiguous rows: chunks of several rows, as many as fit (balanced), one copy of y each;
            // chunks a split group can also stream (if its slice is not staged), so that the
            // chunks, which fix the arithmetic, do not depend on the split.
            if (t.rowPitch == t.rowLen && t.rows > 1) {
              int64_t r = LargestFitting(t.rows, 1, [&](int64_t rr) {
                return fits(chunkedPlan(rr * t.rowLen, xBuffers, groupElems, coefs != 0)) &&
                       fits(chunkedPlan(rr * t.rowLen, 2, 0, false));
              });
              if (r > 1) {
                r = CeilDiv(t.rows, CeilDiv(t.rows, r));
                p = chunkedPlan(r * t.rowLen, xBuffers, groupElems, coefs != 0);
                t.rowsPerItem = r;
                t.yRows = 1;
              }
            }
            plan = p;
          }
        }
      }
      if (!t.staged && ring.parts == 0) {  // streamed: the largest chunk with two x buffers of one chunk
        t.coefPerBlock = 0;
        int64_t k = LargestFitting(limit, kElemAlign, [&](int64_t kk) { return fits(chunkedPlan(kk, 2, 0, false)); });
        if (k == 0) return kTilingNoFit;
        // A launch of few chunks (few long groups): chunks small enough that the launch has
        // kMinLaunchChunks of them, so that a split spreads each group over that many blocks
        // (less data, so shorter loads and stores, on its path through SyncAll); not below
        // kMinChunkElems, where each instruction's start and barrier cycles would dominate.
        // From the shape alone, so the chunks do not depend on the core count.
        const int64_t perRow = CeilDiv(t.rowLen, k);
        const int64_t launchRows = groups * t.rows;
        if (launchRows * perRow < kMinLaunchChunks) {
          const int64_t small = AlignUp(CeilDiv(t.rowLen, CeilDiv(kMinLaunchChunks, launchRows)), kElemAlign);
          k = std::min(k, std::max(small, kMinChunkElems));
        }
        // The same number of chunks a row, balanced, where four of them fit: four loads in flight
        // (1x64x128x128 fp32: 3 chunks a row of 5,472 instead of 7,952, 7,952 and 480).
        const int64_t balanced = AlignUp(CeilDiv(t.rowLen, CeilDiv(t.rowLen, k)), kElemAlign);
        const int64_t loads = fits(chunkedPlan(balanced, kDeepStreamLoads, 0, false)) ? kDeepStreamLoads : 2;
        if (loads > 2) k = balanced;
        plan = chunkedPlan(k, loads, 0, false);
        // gamma/beta of the block's channels in UB where they fit beside the chunks (else every chunk's
        // channel costs scalar GM reads of gamma_c and beta_c, about 200 ns each); the chunk size above
        // is chosen without them, so the arithmetic does not depend on it
        if (blockCoef && fits(chunkedPlan(k, loads, 0, true))) {
          plan = chunkedPlan(k, loads, 0, true);
          t.coefPerBlock = 1;
        }
      }
      t.chunksPerRow = t.rowsPerItem > 1 ? 1 : CeilDiv(t.rowLen, plan.K);
      // Fewer groups than cores: slices of 2^k chunks, as few as fill the cores. The chunk size
      // is fixed above, without the core count, so the slices' arithmetic is the same.
      const int64_t items = t.rowsPerItem > 1 ? CeilDiv(t.rows, t.rowsPerItem) : t.rows * t.chunksPerRow;
      const int64_t maxSlices = std::min(kMaxSlices, in.coreNum / groups);
      if (maxSlices >= 2 && items >= 2) {
        if (ring.rowBatches) {  // the chunks are the rows, one at a time
          plan.K = limit;
          plan.bcastElems = 0;
        }
        int64_t p = 1;
        while (CeilDiv(items, p) > maxSlices) p *= 2;
        t.sliceItems = p;
        t.sliceCount = CeilDiv(items, p);
        // A slice is staged when its chunks (one copy each, at a pitch of K) fit one x buffer;
        // the block then keeps them across SyncAll and reads x once.
        Plan slice = chunkedPlan(plan.K, 1, p * plan.K, blockCoef);
        t.coefPerBlock = blockCoef && fits(slice) ? 1 : 0;
        if (!t.coefPerBlock) slice = chunkedPlan(plan.K, 1, p * plan.K, false);
        t.staged = fits(slice) ? 1 : 0;
        t.yRows = 1;
        t.ringParts = t.ringResident = t.partItems = 0;  // the ring takes whole groups
        if (t.staged) {
          plan = slice;
          // A staged slice of one-row chunks: its rows in one copy at rowPitch, and the vector work in
          // batches of rows (the ring's: a few instructions and two V -> S round trips a batch, not a
          // dozen and two a row; 8x512x255 G2: 128 rows a slice). Batches start at multiples of 8 rows
          // (their coefficient tables' Brcb source 32-byte aligned), as slices of 2^k >= 8 rows do.
          // The chunks are still the rows: the bits do not change.
          if (!t.vectorCoef && t.chunksPerRow == 1 && t.rowsPerItem == 1 && rowBatches && p % 8 == 0 &&
              p <= kMaxCopyRows) {
            auto batchPlan = [&](int64_t b) {
              Plan q = chunkedPlan(b * t.rowPitch, 1, p * t.rowPitch, t.coefPerBlock != 0);
              q.bcastElems = GnsRingRowsBcastElems(b, t.rows);
              return q;
            };
            int64_t b = LargestFitting(std::min(p, GNS_ROWS_PIECE), 8, [&](int64_t bb) { return fits(batchPlan(bb)); });
            if (b > 0) {
              b = AlignUp(CeilDiv(p, CeilDiv(p, b)), 8);  // balanced batches
              plan = batchPlan(b);
              t.partItems = b;
            }
          }
        } else {  // stream the slices (with the block's gamma/beta where they fit, as above), four
          // loads in flight where they fit (a short chunk's load is mostly its latency)
          t.coefPerBlock = blockCoef && fits(chunkedPlan(plan.K, 2, 0, true)) ? 1 : 0;
          plan = chunkedPlan(plan.K, 2, 0, t.coefPerBlock != 0);
          if (fits(chunkedPlan(plan.K, kDeepStreamLoads, 0, t.coefPerBlock != 0))) {
            plan = chunkedPlan(plan.K, kDeepStreamLoads, 0, t.coefPerBlock != 0);
          }
        }
      }
    }
    t.mode = plan.mode;
  }
  if (t.sliceCount == 1) t.sliceItems = t.rowsPerItem > 1 ? CeilDiv(t.rows, t.rowsPerItem) : t.rows * t.chunksPerRow;
  t.numTasks = groups * t.sliceCount;
  t.usedCores = std::min(t.numTasks, in.coreNum);
  t.tasksPerCore = t.numTasks / t.usedCores;
  t.tailCores = t.numTasks % t.usedCores;
  t.blockDim = std::max<int64_t>(1, t.usedCores);
  t.statBatch = t.groupRows > 0 ? plan.statBatch : std::min<int64_t>(AlignUp(t.tasksPerCore + 1, 8), kMaxStatBatch);
  plan.statBatch = t.statBatch;
  // More y buffers where the UB left over allows: a y buffer is rewritten only after its store
  // has landed, so with two the vector unit waits for the store two chunks back.
  if (plan.mode != GNS_MODE_EMPTY_GROUPS) {
    for (Plan more = plan; more.yBuffers < kMaxYBuffers; plan = more) {
      ++more.yBuffers;
      if (PlanBytes(more, dataBytes, paramBytes) > ubUsable) break;
    }
  }
  // Mode 0 a group at a time: four group loads in flight, not two (the kernel's deep queue), where the UB
  // left over after the y buffers allows it and every block has at least four groups (the queue holds four
  // at once): a short group's compute is less than a load's latency (32x96x7x7 G32: 22 groups a block,
  // each about 0.3 us of vector work, waited about 0.2 us each for its load). The bits do not change.
  if (plan.mode == GNS_MODE_GROUP_RESIDENT && t.groupRows == 0 && plan.xBuffers == 3 &&
      t.tasksPerCore >= kDeepStreamLoads) {
    Plan deep = plan;
    deep.xBuffers = kDeepStreamLoads + 1;
    if (PlanBytes(deep, dataBytes, paramBytes) <= ubUsable) plan = deep;
  }
  t.yBuffers = plan.yBuffers;
  t.chunkElems = plan.K;
  t.xBuffers = plan.xBuffers;
  t.xBufferElems = plan.xElems > 0 ? plan.xElems : plan.K;
  t.coefElems = plan.coefElems;
  t.bcastElems = plan.bcastElems;
  t.partialElems = plan.partialElems;
  t.reduceWorkElems = plan.reduceWorkElems;
  t.ubBytes = PlanBytes(plan, dataBytes, paramBytes);
  *out = t;
  return kTilingOk;
}

}  // namespace ms_groupnorm::forward_tiling
