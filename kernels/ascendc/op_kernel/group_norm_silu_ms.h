/*
 * GroupNormSiluMs kernel: GroupNorm forward with float32 statistics, optionally followed by
 * SiLU/Swish (CANN's GroupNormSilu/GroupNormSwish contract, our own operator).
 *
 * For a group (n, g) of M = D * HxW elements (contiguous in GM):
 *   mean = sum(x) / M,  var = sum((x - mean)^2) / M (biased),  rstd = 1 / sqrt(var + eps)
 *   y = (x - mean) * rstd * gamma_c + beta_c;   with activate_silu: y = y * sigmoid(s * y)
 * computed as y / (1 + exp(-s * y)) (s = swish_scale; exp overflow gives y / inf = 0, the
 * limit). mean and rstd are written as float32, y in x's dtype (rounded to nearest even).
 *
 * Work split (host tiling): tasks are (n, g) groups, consecutive ones per block, each
 * computed by one block from its own data in a fixed order (no atomics). When N * G is below
 * the core count and a group does not fit in UB (mode 1), a task is a slice of 2^k chunks
 * of a group: the slices' (count, mean, M2) go through the workspace, and after SyncAll
 * every block of the group combines them in slice order, which is the same pairwise tree
 * one block builds (ChanCascade). So the results depend neither on the core count nor on
 * the order in which the blocks run.
 *
 * A group is `rows` rows of `rowLen` elements: its D channels (HxW > 1; gamma/beta are a
 * scalar per row) or one row of D elements (HxW == 1; gamma/beta are vectors along the
 * row). In UB rows sit at rowPitch, rowLen rounded up to 32 bytes of x's dtype, so every
 * row starts 32-byte aligned in the x staging buffers and in the fp32 work buffers.
 *
 * Statistics, deterministic and numerically safe:
 *   mode 0 (group_resident): the group is loaded once (one DataCopyPad of its rows) and
 *     stays in UB: exact two-pass statistics (the ReduceSum of x - shift, then that of
 *     (x - mean)^2; over the whole group when its rows are contiguous in UB, else per row
 *     and then over the row sums), then y from the resident copy. GM traffic: x read once.
 *   mode 1 (chunked): the group does not fit. Pass 1 streams chunks of a row; each chunk
 *     gets its own two-pass (count, mean, M2) in UB, combined into the group's in chunk
 *     order with Chan et al.'s update (delta = m_b - m_a; m = m_a + delta * n_b / n;
 *     M2 = M2_a + M2_b + delta^2 n_a n_b / n) in a pairwise cascade (ChanCascade), which
 *     never subtracts two large sums (the sum/sum-of-squares formula loses every digit
 *     when |mean| >> std). Pass 2 takes the chunks again for y: from UB where the group (or
 *     a split group's slice) is staged or its parts stay resident in the part ring, else
 *     streamed from GM once more.
 *   Both modes take the statistics of x - shift, shift = the group's first element, so
 *   that a mean far larger than the spread costs no digits either (x - shift is exact for
 *   x near the shift); mean = shift + mean(x - shift). Mode 0 centres y as
 *   (x - shift) - mean(x - shift); mode 1 as (x - shift) * a_c + b_c with a_c = rstd * gamma_c
 *   and b_c = beta_c - mean(x - shift) * a_c (one Muls and one Adds per channel), neither
 *   with the rounding of the stored mean.
 *   Mode 0 with HxW > 1 first tries x itself (ZeroCentredStats): mean = sum x / M and
 *   var = sum x^2 / M - mean^2, kept when mean^2 <= var, and y = x * a_c + (beta_c - mean * a_c)
 *   in two roundings; the shift's x - shift rounds every x far from it (one signed error per
 *   binade) and its mean cancels to ulp(shift) when the mean is near 0. Other groups take the
 *   two-pass statistics above. Mode 1 takes shift 0 for a group whose first 32 bytes hold both
 *   signs (ChunkedShift, alike on every block of a split group), and a chunk of it its sums of
 *   x and x^2 where its mean^2 <= its var (ChunkMoments).
 *   mode 2 (empty_groups, D * HxW == 0): mean = 0 and rstd = NaN (no variance), y empty.
 * rstd is computed on the vector unit (Duplicate, Sqrt, Div): the AscendC API documents no
 * scalar square root.
 *
 * Files: this header holds the class (buffers, statistics helpers, the chunk indexing);
 * group_norm_silu_ms_copies.h the GM -> UB loads (free functions); members defined out of the
 * class, included at the end: y on its way out (group_norm_silu_ms_y.h), mode 0
 * (group_norm_silu_ms_resident.h), mode 1 (group_norm_silu_ms_chunked.h), its part ring
 * (group_norm_silu_ms_ring.h) and the ring's batches of rows (group_norm_silu_ms_ring_rows.h).
 */
#ifndef GROUP_NORM_SILU_MS_H
#define GROUP_NORM_SILU_MS_H

#include "kernel_operator.h"
#include "group_norm_silu_ms_copies.h"
#include "group_norm_ms_gather.h"
#include "group_norm_silu_ms_stats.h"
#include "group_norm_silu_ms_tiling_data.h"

namespace GroupNormSiluMsKernel {
using namespace AscendC;

constexpr int32_t FLOATS_PER_BLOCK = 8;
constexpr uint32_t FLOAT_QNAN_BITS = 0x7FC00000U;
constexpr int64_t MAX_SLICES = 64;  // ms_groupnorm::forward_tiling::kMaxSlices
// a split group's slice in the workspace: count (negative when the slice's statistics are in the
// units of x * SCALE_DOWN: a slice has at least one element), mean, M2
constexpr int64_t SLICE_ENTRY_FLOATS = 3;
constexpr int64_t MAX_RING_SLOTS = 8;  // ms_groupnorm::forward_tiling::kMaxRingSlots
// A staged slice's load in at most this many pieces, each holding an MTE2 -> V event id of the 8
// (TQue简介.md, "TQue Buffer限制") beside the two of the block's gamma/beta queues.
constexpr int64_t MAX_STAGE_PIECES = 4;
// Loads in flight in mode 1's deep stream (ms_groupnorm::forward_tiling::kDeepStreamLoads): their
// MTE2 -> V events and the block's gamma/beta queues' two, within the 8.
constexpr int32_t DEEP_STREAM_LOADS = 4;

// pass 2 of an item: the group's centring and coefficients (a = rstd * gamma_c and
// b = beta_c - centre * a per channel: y = (x - shift) * a + b, one Muls and one Adds a row)
struct ItemCoefs {
  float shiftIn;  // the shift in the units of the statistics
  float centre;   // mean - shift, same units
  float rstd;
  bool scaled;
};
template <typename T, typename U>
class KernelGroupNormSiluMs {
 public:
  __aicore__ inline KernelGroupNormSiluMs() {}

  __aicore__ inline void Init(GM_ADDR x, GM_ADDR gamma, GM_ADDR beta, GM_ADDR y, GM_ADDR mean, GM_ADDR rstd,
                              GM_ADDR workspace, const GroupNormSiluMsTilingData *tiling, TPipe *pipe) {
    t_ = tiling;
    pipe_ = pipe;
    const uint64_t numel = static_cast<uint64_t>(t_->N * t_->C * t_->HxW);
    xGm_.SetGlobalBuffer((__gm__ T *)x, numel);
    yGm_.SetGlobalBuffer((__gm__ T *)y, numel);
    gammaGm_.SetGlobalBuffer((__gm__ U *)gamma, t_->C);
    betaGm_.SetGlobalBuffer((__gm__ U *)beta, t_->C);
    meanGm_.SetGlobalBuffer((__gm__ float *)mean, t_->N * t_->G);
    rstdGm_.SetGlobalBuffer((__gm__ float *)rstd, t_->N * t_->G);
    if (t_->sliceCount > 1) wsGm_.SetGlobalBuffer((__gm__ float *)workspace, t_->numTasks * FLOATS_PER_BLOCK);
    groupElems_ = t_->D * t_->HxW;
    invM_ = groupElems_ > 0 ? 1.0f / static_cast<float>(groupElems_) : 0.0f;
  }

  __aicore__ inline void Process() {
    const int64_t block = GetBlockIdx();
    if (block >= t_->usedCores) return;  // blockDim == usedCores: every launched block works
    const int64_t first = block * t_->tasksPerCore + (block < t_->tailCores ? block : t_->tailCores);
    const int64_t end = first + t_->tasksPerCore + (block < t_->tailCores ? 1 : 0);
    InitBuffers();
    blockFirst_ = first;
    blockEnd_ = end;
    // gamma/beta of the block (coefPerBlock) are loaded right after the block's first x load
    // (MTE2 runs in order: the x the compute waits for first goes first) and taken before the
    // first scalar read of them (TakeBlockCoefs)
    coefsPending_ = t_->coefPerBlock != 0 && first < end;
    if (t_->mode == GNS_MODE_EMPTY_GROUPS) {
      for (int64_t task = first; task < end; ++task) RecordStats(task, 0.0f, 0.0f, true);
    } else if (t_->mode == GNS_MODE_GROUP_RESIDENT && t_->groupRows > 0 && t_->vectorCoef == 0) {
      ChannelRowsRun(first, end);
    } else if (t_->mode == GNS_MODE_GROUP_RESIDENT && t_->groupRows > 0) {
      GroupRowsRun(first, end);
    } else if (t_->mode == GNS_MODE_GROUP_RESIDENT) {
      // two group loads in flight ahead of the compute (with three x buffers, while one group
      // is computed; with two, until the first is taken), four with the deep queue
      IssueGroupLoad(first);
      IssueBlockCoefs(first, end);
      for (int64_t k = 1; k < GroupsAhead() && first + k < end; ++k) IssueGroupLoad(first + k);
      for (int64_t task = first; task < end; ++task) ResidentTask(task, end);
    } else if (t_->ringParts != 0) {
      if (first < end) IssueHead(first);  // ahead of the parts: the first group's shift waits on it alone
      RingBegin(first, end);
      for (int64_t task = first; task < end; ++task) RingTask(task);
    } else if (t_->sliceCount == 1 && t_->staged != 0) {
      if (first < end) IssueHead(first);
      IssueStage(first);
      IssueBlockCoefs(first, end);
      for (int64_t task = first; task < end; ++task) StagedTask(task, task + 1 < end);
    } else if (t_->sliceCount == 1) {
      if (first < end) IssueHead(first);
      StreamBegin(first, end, 0, 1);
      IssueBlockCoefs(first, end);
      for (int64_t task = first; task < end; ++task) ChunkedTask(task);
    } else {
      // Staged slices: a block with one slice (every host plan) keeps its x in UB across
      // SyncAll; with several (the kernel takes any run of tasks) it stages each slice again
      // after SyncAll.
      staged_ = t_->staged != 0;
      if (first < end) IssueHead(TaskGroup(first));  // ahead of x: the first shift waits on it alone
      for (int64_t task = first; task < end; ++task) {
        if (staged_ && end - first == 1 && StagedRowBatches()) {
          IssueStagePieces(task, end);  // the vector unit starts on the first rows while the rest load
        } else if (staged_) {
          IssueStage(task);
          if (task == first) IssueBlockCoefs(first, end);
          stage_ = xQue_.template DeQue<T>();
        } else if (task == first) {
          StreamBegin(first, end, 0, 1, true);
          IssueBlockCoefs(first, end);
        }
        SliceStatsTask(task);
        if (staged_ && end - first > 1) xQue_.FreeTensor(stage_);
      }
    }
    if (t_->mode == GNS_MODE_CHUNKED && t_->sliceCount > 1) {
      SyncAll();  // every slice's statistics are in the workspace
      for (int64_t task = first; task < end; ++task) {
        if (staged_ && end - first > 1) TakeStage(task);
        SliceOutputTask(task);
        if (staged_) xQue_.FreeTensor(stage_);
      }
    }
    FlushStats();
  }

 private:
  // ------------------------------------------------------------------ buffers
  __aicore__ inline void InitBuffers() {
    pipe_->InitBuffer(statBuf_, 2 * t_->statBatch * sizeof(float));
    if (t_->mode == GNS_MODE_EMPTY_GROUPS) return;
    const int64_t K = t_->chunkElems;
    if (t_->ringParts != 0) {
      pipe_->InitBuffer(ringBuf_, t_->xBuffers * t_->xBufferElems * sizeof(T));
    } else if (t_->staged != 0) {
      pipe_->InitBuffer(xQue_, t_->xBuffers, t_->xBufferElems * sizeof(T));
    } else if (DeepStream() || DeepResident()) {
      pipe_->InitBuffer(xDeepQue_, t_->xBuffers, t_->xBufferElems * sizeof(T));
    } else {
      pipe_->InitBuffer(xAheadQue_, t_->xBuffers, t_->xBufferElems * sizeof(T));
    }
    pipe_->InitBuffer(yQue_, t_->yBuffers, (t_->yRows > 1 ? t_->yRows * t_->rowPitch : K) * sizeof(T));
    pipe_->InitBuffer(workBuf_, 2 * K * sizeof(float));
    pipe_->InitBuffer(scratchBuf_, (2 * FLOATS_PER_BLOCK + t_->partialElems + t_->reduceWorkElems) * sizeof(float));
    if (t_->coefElems > 0) {
      pipe_->InitBuffer(gammaQue_, 1, t_->coefElems * sizeof(U));
      pipe_->InitBuffer(betaQue_, 1, t_->coefElems * sizeof(U));
      pipe_->InitBuffer(coefBuf_, 2 * t_->coefElems * sizeof(float));
    }
    if (t_->bcastElems > 0) pipe_->InitBuffer(bcastBuf_, t_->bcastElems * sizeof(float));
    if (t_->groupRowsGather != 0) {  // spread and pack tables (and the columns' gamma/beta table)
      pipe_->InitBuffer(gatherBuf_, (t_->groupRowsGather == GNS_GATHER_COLUMNS ? 3 : 2) * K * sizeof(int32_t));
    }
    if (t_->mode == GNS_MODE_CHUNKED) {  // the host plans these in every chunked layout
      pipe_->InitBuffer(slicesInBuf_, MAX_SLICES * FLOATS_PER_BLOCK * sizeof(float));
      pipe_->InitBuffer(sliceOutBuf_, FLOATS_PER_BLOCK * sizeof(float));
    }
    Duplicate(One(), 1.0f, FLOATS_PER_BLOCK);  // the numerator of rstd = 1 / sqrt(var + eps)
  }

  __aicore__ inline LocalTensor<float> XF() { return workBuf_.Get<float>(); }
  __aicore__ inline LocalTensor<float> Tmp() { return workBuf_.Get<float>()[t_->chunkElems]; }
  __aicore__ inline LocalTensor<float> Red() { return scratchBuf_.Get<float>(); }
  __aicore__ inline LocalTensor<float> One() { return scratchBuf_.Get<float>()[FLOATS_PER_BLOCK]; }
  __aicore__ inline LocalTensor<float> Partials() { return scratchBuf_.Get<float>()[2 * FLOATS_PER_BLOCK]; }
  __aicore__ inline LocalTensor<float> ReduceWork() {
    return scratchBuf_.Get<float>()[2 * FLOATS_PER_BLOCK + t_->partialElems];
  }
  __aicore__ inline LocalTensor<float> GammaF() { return coefBuf_.Get<float>(); }
  __aicore__ inline LocalTensor<float> BetaF() { return coefBuf_.Get<float>()[t_->coefElems]; }
  __aicore__ inline LocalTensor<float> MeanOut() { return statBuf_.Get<float>(); }
  __aicore__ inline LocalTensor<float> RstdOut() { return statBuf_.Get<float>()[t_->statBatch]; }

  // One producer -> consumer ordering between two pipes (a SetFlag/WaitFlag pair).
  template <HardEvent E>
  __aicore__ inline void Sync() {
    event_t id = static_cast<event_t>(pipe_->FetchEventID(E));
    SetFlag<E>(id);
    WaitFlag<E>(id);
  }

  // ------------------------------------------------------------------ GM <-> UB
  // (the loads: group_norm_silu_ms_copies.h; y out: group_norm_silu_ms_y.h)
  __aicore__ inline void StoreRows(int64_t offset, int64_t rows, int64_t len, int64_t count,
                                   const LocalTensor<float> &src);
  __aicore__ inline void OutputY(const LocalTensor<float> &y, int32_t count, const LocalTensor<T> &staging);
  __aicore__ inline LocalTensor<float> SiluDenominator(const LocalTensor<float> &y, int32_t count);
  __aicore__ inline LocalTensor<float> AsFloat(const LocalTensor<T> &x, int64_t len);
  __aicore__ inline void PutY(const LocalTensor<T> &staging, const LocalTensor<float> &src, int64_t count);
  __aicore__ inline void SendY(LocalTensor<T> &staging, int64_t offset, int64_t rows, int64_t len);
  __aicore__ inline float Param(const GlobalTensor<U> &gm, int64_t c) { return ToF32(gm.GetValue(c)); }

  // gamma/beta of the block's channels, once per block (coefPerBlock), as fp32 in
  // GammaF()/BetaF() from channel coefBase_: the channels of its consecutive groups [first, end),
  // or all C when they wrap into the next sample. Issued here, converted by TakeBlockCoefs.
  __aicore__ inline void IssueBlockCoefs(int64_t first, int64_t end) {
    if (!coefsPending_) return;
    const int64_t first0 = TaskGroupOf(first);
    const int64_t last = TaskGroupOf(end - 1);
    const int64_t g0 = first0 % t_->G;
    const int64_t g1 = last % t_->G;
    const bool wraps = last / t_->G != first0 / t_->G;  // the groups span two samples
    coefBase_ = wraps ? 0 : g0 * t_->D;
    const int64_t count = wraps ? t_->C : (g1 + 1 - g0) * t_->D;
    coefCount_ = count;
    IssueRows(gammaQue_, gammaGm_, coefBase_, 1, count);
    IssueRows(betaQue_, betaGm_, coefBase_, 1, count);
  }
  // The block's gamma/beta as fp32, once, on the vector unit ahead of the block's first ReduceSum
  // of squares (every block computes one before it reads them), whose own V -> S wait orders
  // these casts before the scalar unit's reads.
  __aicore__ inline void TakeBlockCoefs() {
    if (!coefsPending_) return;
    coefsPending_ = false;
    TakeAsFloat<U>(gammaQue_, coefCount_, GammaF());
    TakeAsFloat<U>(betaQue_, coefCount_, BetaF());
    if (t_->ringParts != 0) RingFill();  // their event ids are free again
  }
  // gamma_c / beta_c of channel c for the scalar unit: from the block's arrays, else a scalar
  // GM read of the input.
  __aicore__ inline float ChannelGamma(int64_t c) {
    return t_->coefPerBlock != 0 ? GammaF().GetValue(static_cast<uint32_t>(c - coefBase_)) : Param(gammaGm_, c);
  }
  __aicore__ inline float ChannelBeta(int64_t c) {
    return t_->coefPerBlock != 0 ? BetaF().GetValue(static_cast<uint32_t>(c - coefBase_)) : Param(betaGm_, c);
  }
  // The group of a task in any mode (mode 1's tasks may be slices of a group).
  __aicore__ inline int64_t TaskGroupOf(int64_t task) const {
    return t_->mode == GNS_MODE_CHUNKED ? task / t_->sliceCount : task;
  }

  // ------------------------------------------------------------------ statistics
  // rstd = 1 / sqrt(var + eps) on the vector unit, read back by the scalar unit.
  // `eps` is t_->eps in x's units, EpsScaled() in those of x * SCALE_DOWN.
  __aicore__ inline float Rstd(float var, float eps) {
    LocalTensor<float> red = Red();
    Duplicate(red, var + eps, FLOATS_PER_BLOCK);
    Sqrt(red, red, FLOATS_PER_BLOCK);
    Div(red, One(), red, FLOATS_PER_BLOCK);
    Sync<HardEvent::V_S>();
    return red.GetValue(0);
  }

  __aicore__ inline float EpsScaled() const { return (t_->eps * SCALE_DOWN) * SCALE_DOWN; }

  // Sum of `rows` rows of `len` elements at the UB pitch: one ReduceSum when the rows are
  // contiguous (no padding between them), else per-row ReduceSums into the partial array and
  // their ReduceSum (each ReduceSum is a vector -> scalar -> vector round trip on A2, so the
  // rows are not summed one by one when they need not be). A fixed order either way.
  // Returns the sum on the scalar unit.
  __aicore__ inline float SumRows(const LocalTensor<float> &src, int64_t rows, int64_t len) {
    LocalTensor<float> red = Red();
    if (rows == 1 || len == t_->rowPitch) {
      ReduceSum(red, src, ReduceWork(), static_cast<int32_t>(rows * len));
    } else if (len <= 64) {
      // rows of one repeat: every row's sum by one WholeReduceSum (a repeat a row, the tree of
      // count-form ReduceSum's one repeat: the same bits), then their ReduceSum: one V -> S round
      // trip a sum instead of one a row (rowPitch <= 64 floats: a repeat stride of at most 8 blocks)
      LocalTensor<float> partials = Partials();
      const int32_t stride = static_cast<int32_t>(t_->rowPitch / FLOATS_PER_BLOCK);
      for (int64_t r0 = 0; r0 < rows; r0 += 255) {
        const int32_t n = static_cast<int32_t>((rows - r0 < 255) ? rows - r0 : 255);
        WholeReduceSum<float>(partials[r0], src[r0 * t_->rowPitch], static_cast<int32_t>(len), n, 1, 1, stride);
      }
      ReduceSum(red, partials, ReduceWork(), static_cast<int32_t>(rows));
    } else {
      LocalTensor<float> partials = Partials();
      for (int64_t r = 0; r < rows; ++r) {
        ReduceSum(partials[r], src[r * t_->rowPitch], ReduceWork(), static_cast<int32_t>(len));
      }
      ReduceSum(red, partials, ReduceWork(), static_cast<int32_t>(rows));
    }
    // no V_S wait: ReduceSum ends with its own (asc-devkit impl/basic_api/dav_c220/kernel_operator_vec_reduce_impl.h)
    return red.GetValue(0);
  }

  // The first element of the group (a scalar read of the input): the statistics are taken of
  // x - shift, which is exact for x within a factor 2 of the shift (Sterbenz), so a mean far
  // larger than the spread costs the sums no digits.
  __aicore__ inline float GroupShift(int64_t group) { return ToF32(xGm_.GetValue(group * groupElems_)); }

  // The shift of a chunked group (mode 1, every task of it alike): 0 when the group's first 32
  // bytes hold both signs (or a 0), else GroupShift. Values of both signs are taken as the mark of
  // a mean within the spread (a heuristic: a group of large mean whose first values straddle 0 has
  // its statistics in x's units, as torch's are, instead of exact). There the shift's x - shift
  // rounds every x far from it with one signed error per binade, and shift + mean(x - shift)
  // cancels to ulp(shift) when the mean is near 0; from x itself (shift 0) both are gone. A group
  // whose first values have one sign keeps the first element, whose x - shift is exact near it
  // (a mean far above the spread). The bytes come
  // in by one DMA into slicesInBuf_ (free before SyncAll, and after it once its entries are read:
  // scalar reads, done before the scalar unit issues the next DMA, as the backward's stat window).
  // A block's whole groups (sliceCount 1) have the next group's bytes issued as a group starts
  // (IssueHead), so that its wait is not one DMA latency a group; split groups load and wait at once.
  __aicore__ inline int64_t HeadElems() const {
    return groupElems_ < 32 / static_cast<int64_t>(sizeof(T)) ? groupElems_ : 32 / static_cast<int64_t>(sizeof(T));
  }
  __aicore__ inline void IssueHead(int64_t group) {
    LocalTensor<T> head = slicesInBuf_.Get<float>().template ReinterpretCast<T>();
    DataCopyExtParams copy{1, static_cast<uint32_t>(HeadElems() * sizeof(T)), 0, 0, 0};
    DataCopyPadExtParams<T> pad{false, 0, 0, T{}};
    DataCopyPad(head, xGm_[group * groupElems_], copy, pad);
    headEvent_ = pipe_->AllocEventID<HardEvent::MTE2_S>();  // reserved until TakeHead has waited
    SetFlag<HardEvent::MTE2_S>(headEvent_);
  }
  __aicore__ inline float ChunkedShift(int64_t group) {
    IssueHead(group);
    return TakeHead();
  }
  __aicore__ inline float TakeHead() {
    WaitFlag<HardEvent::MTE2_S>(headEvent_);
    pipe_->ReleaseEventID<HardEvent::MTE2_S>(headEvent_);
    const int64_t n = HeadElems();
    LocalTensor<T> head = slicesInBuf_.Get<float>().template ReinterpretCast<T>();
    float low = ToF32(head.GetValue(0));
    float high = low;
    for (int64_t i = 1; i < n; ++i) {
      const float v = ToF32(head.GetValue(static_cast<uint32_t>(i)));
      low = v < low ? v : low;
      high = v > high ? v : high;
    }
    const float first = ToF32(head.GetValue(0));
    return (low <= 0.0f && high >= 0.0f) ? 0.0f : first;  // NaN: false, the first element
  }

  // Keeps the mean and rstd of group (n * G + g) for the block's next store of statistics
  // (a block records consecutive groups).
  __aicore__ inline void RecordStats(int64_t group, float mean, float rstd, bool noVariance) {
    if (statCount_ == 0) {
      statStart_ = group;
      if (statsInFlight_) {  // the previous batch must have left UB before the scalar unit rewrites it
        Sync<HardEvent::MTE3_S>();
        statsInFlight_ = false;
      }
    }
    MeanOut().SetValue(static_cast<uint32_t>(statCount_), mean);
    if (noVariance) {
      RstdOut().template ReinterpretCast<uint32_t>().SetValue(static_cast<uint32_t>(statCount_), FLOAT_QNAN_BITS);
    } else {
      RstdOut().SetValue(static_cast<uint32_t>(statCount_), rstd);
    }
    ++statCount_;
    if (statCount_ == t_->statBatch) FlushStats();
  }

  __aicore__ inline void FlushStats() {
    if (statCount_ == 0) return;
    Sync<HardEvent::S_MTE3>();  // the scalar writes are in UB before MTE3 reads them
    DataCopyExtParams copy{1, static_cast<uint32_t>(statCount_ * sizeof(float)), 0, 0, 0};
    DataCopyPad(meanGm_[statStart_], MeanOut(), copy);
    DataCopyPad(rstdGm_[statStart_], RstdOut(), copy);
    statsInFlight_ = true;
    statCount_ = 0;
  }

  // ------------------------------------------------------------------ mode 0: group resident
  // (defined in group_norm_silu_ms_resident.h)
  __aicore__ inline void IssueGroupLoad(int64_t task);
  __aicore__ inline float CentreAndSquare(const LocalTensor<float> &src, float shift, float *sum);
  __aicore__ inline void ResidentTask(int64_t task, int64_t end);
  __aicore__ inline bool ZeroCentredStats(const LocalTensor<float> &src, float *mean, float *var);
  __aicore__ inline void RowsScaleShift(const LocalTensor<float> &xF, float rstd, uint32_t c0,
                                        const LocalTensor<float> &src, float mean);

  // ------------------------------------------------------------------ mode 0, batches of groups
  // (HxW == 1, groupRows > 0; defined in group_norm_silu_ms_group_rows.h)
  __aicore__ inline LocalTensor<float> RowsVector(int64_t k) {
    return bcastBuf_.Get<float>()[k * GnsRowsRound8(RowsBatch())];
  }
  // the rows of a batch: groups (groupRows), or the rows of a ring part (RingRows)
  __aicore__ inline int64_t RowsBatch() const { return t_->groupRows > 0 ? t_->groupRows : t_->partItems; }
  __aicore__ inline void GroupRowsTable();
  __aicore__ inline void GroupRowsRun(int64_t first, int64_t end);
  __aicore__ inline void GroupRowsBatch(int64_t q0, int64_t rows);
  // x of groups [q0, q0 + rows) into xAheadQue_: rows of D (a burst each), or with groupRowsGather one run.
  __aicore__ inline void IssueGroupRows(int64_t q0, int64_t rows);
  // groupRowsGather: the staging run as fp32 rows at rowPitch in Tmp() (through XF()); y's rows (in XF())
  // back to GM as a run.
  __aicore__ inline LocalTensor<float> SpreadRows(const LocalTensor<T> &staging, int64_t rows);
  __aicore__ inline void StorePackedRows(int64_t offset, int64_t rows, int32_t span);
  __aicore__ inline void RowsBatchStats(int64_t q0, int64_t rows, bool rescaled);
  // groupRowsGather == GNS_GATHER_COLUMNS (defined in group_norm_silu_ms_group_columns.h): a batch's groups of
  // D <= 8 elements as D columns of the batch, every per-element step one instruction over the columns.
  __aicore__ inline LocalTensor<float> ColumnOf(const LocalTensor<float> &base, int64_t j) {
    return base[j * GnsRowsRound8(t_->groupRows)];
  }
  __aicore__ inline void GroupColumnsTables(int64_t first);
  __aicore__ inline void ColumnsSum(const LocalTensor<float> &dst, const LocalTensor<float> &src,
                                    const LocalTensor<float> &scratch);
  __aicore__ inline void ColumnsCentre(const LocalTensor<float> &x, bool rescaled);
  __aicore__ inline void GroupColumnsBatch(int64_t q0, int64_t rows);
  // groups of one channel (D == 1, HxW > 1) in batches of groupRows rows (group_norm_silu_ms_channel_rows.h)
  __aicore__ inline void ChannelRowsRun(int64_t first, int64_t end);
  __aicore__ inline void ChannelTwoPasses(const LocalTensor<float> &src, int64_t rows);
  __aicore__ inline void ChannelRowsBatch(int64_t q0, int64_t rows);
  __aicore__ inline void RowsApply(const LocalTensor<float> &dst, const LocalTensor<float> &src,
                                   const LocalTensor<float> &v, int64_t rows, bool add, int64_t cols);
  __aicore__ inline void RowsSum(const LocalTensor<float> &dst, const LocalTensor<float> &src, int64_t rows,
                                 int32_t len);
  __aicore__ inline bool RowsInSafeRange(const LocalTensor<float> &v, int64_t rows);
  __aicore__ inline void RowsCentre(const LocalTensor<float> &x, int64_t rows, bool rescaled);
  __aicore__ inline void RowsRescaleFactors(int64_t rows);

  // ------------------------------------------------------------------ mode 1: chunked
  // A group's items are its rows' chunks in order (row r, chunk k: K elements from column
  // k * K); a task covers items [first, end) of its group (all of them when sliceCount == 1).
  // With chunks of whole rows (chunksPerRow == 1) an item is rowsPerItem consecutive rows
  // (contiguous in UB when rowsPerItem > 1: the tiling then has rowPitch == rowLen).
  __aicore__ inline int64_t ItemsPerGroup() const {
    return t_->chunksPerRow == 1 ? (t_->rows + t_->rowsPerItem - 1) / t_->rowsPerItem : t_->rows * t_->chunksPerRow;
  }
  __aicore__ inline int64_t TaskGroup(int64_t task) const { return task / t_->sliceCount; }
  __aicore__ inline int64_t TaskFirstItem(int64_t task) const { return (task % t_->sliceCount) * t_->sliceItems; }
  __aicore__ inline int64_t TaskEndItem(int64_t task) const {
    const int64_t end = TaskFirstItem(task) + t_->sliceItems;
    return end < ItemsPerGroup() ? end : ItemsPerGroup();
  }
  __aicore__ inline int64_t ItemRows(int64_t item) const {
    if (t_->chunksPerRow != 1) return 1;
    const int64_t left = t_->rows - item * t_->rowsPerItem;
    return left < t_->rowsPerItem ? left : t_->rowsPerItem;
  }

  __aicore__ inline int64_t ItemLen(int64_t item) const {
    if (t_->chunksPerRow == 1) return ItemRows(item) * t_->rowLen;
    const int64_t start = (item % t_->chunksPerRow) * t_->chunkElems;
    return (t_->rowLen - start < t_->chunkElems) ? t_->rowLen - start : t_->chunkElems;
  }

  __aicore__ inline int64_t ItemOffset(int64_t group, int64_t item) const {
    if (t_->chunksPerRow == 1) return group * groupElems_ + item * t_->rowsPerItem * t_->rowLen;
    const int64_t r = item / t_->chunksPerRow;
    const int64_t chunk = item % t_->chunksPerRow;
    return group * groupElems_ + r * t_->rowLen + chunk * t_->chunkElems;
  }

  // the chunk stream and the tasks (defined in group_norm_silu_ms_chunked.h)
  __aicore__ inline void StreamBegin(int64_t first, int64_t end, int64_t firstPass, int64_t lastPass,
                                     bool passMajor = false);
  __aicore__ inline void StreamIssue();
  __aicore__ inline bool DeepStream() const {
    return t_->mode == GNS_MODE_CHUNKED && t_->staged == 0 && t_->ringParts == 0 && t_->xBuffers > 2;
  }
  __aicore__ inline void TakeChunk(int64_t len);
  // Mode 0 a group at a time with four group loads in flight (xDeepQue_): the tiling's choice for short
  // groups, whose compute takes less than a load's latency (defined in group_norm_silu_ms_resident.h)
  __aicore__ inline bool DeepResident() const {
    return t_->mode == GNS_MODE_GROUP_RESIDENT && t_->groupRows == 0 && t_->xBuffers > 3;
  }
  __aicore__ inline int64_t GroupsAhead() const { return t_->xBuffers > 2 ? t_->xBuffers - 1 : 2; }
  __aicore__ inline LocalTensor<T> TakeGroup();
  __aicore__ inline void FreeGroup(LocalTensor<T> &staging);
  // Staged tasks: where item `item` of task `task` sits in its x buffer, the load of that
  // buffer, and one whole-group task.
  __aicore__ inline int64_t StageOffset(int64_t task, int64_t item) const {
    if (t_->sliceCount == 1) {  // the group's rows at rowPitch, as one copy of its rows lands them
      if (t_->chunksPerRow == 1) return item * t_->rowsPerItem * t_->rowPitch;
      return (item / t_->chunksPerRow) * t_->rowPitch + (item % t_->chunksPerRow) * t_->chunkElems;
    }
    if (StagedRows()) return (item - TaskFirstItem(task)) * t_->rowPitch;  // a slice's rows, one copy
    return (item - TaskFirstItem(task)) * t_->chunkElems;  // a slice's chunks, one copy each
  }
  // Staged slices of one-row chunks whose rows land at rowPitch by one copy (partItems > 0 without the
  // ring), and taken by the vector unit in batches of partItems rows (bcastElems > 0: RowsPartStats and
  // RowsPartOutput, the ring's batches; else a row at a time, the same bits).
  __aicore__ inline bool StagedRows() const { return t_->staged != 0 && t_->partItems > 0 && t_->ringParts == 0; }
  __aicore__ inline bool StagedRowBatches() const { return StagedRows() && t_->bcastElems > 0; }
  __aicore__ inline void IssueStage(int64_t task);
  __aicore__ inline void IssueStagePieces(int64_t task, int64_t end);
  __aicore__ inline void TakeStage(int64_t task) {  // loads a task's x and waits for it
    IssueStage(task);
    stage_ = xQue_.template DeQue<T>();
  }
  __aicore__ inline LocalTensor<float> TakeItem(int64_t task, int64_t item, int64_t len);
  __aicore__ inline void StagedTask(int64_t task, bool hasNext);
  __aicore__ inline ChunkStats ChunkMoments(const LocalTensor<float> &src, int64_t len, float shift, bool scaled,
                                               bool *inRange);
  __aicore__ inline void ItemStats(const LocalTensor<float> &src, int64_t len, float shift, ChanCascade *stats);
  __aicore__ inline void SliceStats(int64_t task, float shift, ChanCascade *stats);
  __aicore__ inline float GroupRstd(int64_t group, float shift, const ChunkStats &total, bool record);
  __aicore__ inline void ItemOutput(int64_t group, int64_t item, const LocalTensor<float> &src, int64_t len,
                                    const ItemCoefs &k, int64_t taskEnd);
  __aicore__ inline void ItemAffine(int64_t channel, const ItemCoefs &k, const LocalTensor<float> &xF, int32_t n);
  __aicore__ inline void SliceOutput(int64_t task, float shift, const ChunkStats &total, float rstd);
  __aicore__ inline void ChunkedTask(int64_t task);
  __aicore__ inline void SliceStatsTask(int64_t task);
  __aicore__ inline void SliceOutputTask(int64_t task);

  // ------------------------------------------------------------------ mode 1: the part ring
  // (defined in group_norm_silu_ms_ring.h) Whole groups whose rows fit parts of partItems items:
  // the block's part loads form one stream (each task's parts 0..P-1, then its parts R..P-1 again
  // for pass 2) into the ring's xBuffers slots, issued whenever a slot is free; the first R parts
  // of a group stay in their slots between the passes (R == P: x read once).
  __aicore__ inline void RingBegin(int64_t first, int64_t end);
  __aicore__ inline void RingFill();
  __aicore__ inline int64_t RingTake();
  __aicore__ inline void RingRelease(int64_t slot);
  __aicore__ inline LocalTensor<float> RingItem(int64_t slot, int64_t part, int64_t item, int64_t len);
  __aicore__ inline void RingTask(int64_t task);
  // Parts in batches of rows (RingRows: the part ring with bcastElems > 0): each part's vector work
  // is a few instructions over all its rows, not a few a row (group_norm_silu_ms_ring_rows.h).
  __aicore__ inline bool RingRows() const { return t_->ringParts != 0 && t_->bcastElems > 0; }
  __aicore__ inline LocalTensor<float> RowsTable(int64_t k) {  // a group's per-channel a (k 0) and b (k 1)
    const int64_t r8 = GnsRowsRound8(t_->partItems);
    const int64_t blocks = 8 * (r8 < GNS_ROWS_PIECE ? r8 : GNS_ROWS_PIECE);
    return bcastBuf_.Get<float>()[GNS_ROWS_VECTORS * r8 + blocks + k * GnsRowsRound8(t_->rows)];
  }
  __aicore__ inline void RowsPartStats(const LocalTensor<float> &src, int64_t rows, float shift, ChanCascade *stats);
  __aicore__ inline void RowsCoefTable(int64_t group, const ItemCoefs &k);
  __aicore__ inline void RowsPartOutput(int64_t group, int64_t firstRow, const LocalTensor<float> &src, int64_t rows,
                                        const ItemCoefs &k);
  __aicore__ inline int64_t PartItemEnd(int64_t part) const {
    const int64_t end = (part + 1) * t_->partItems;
    return end < ItemsPerGroup() ? end : ItemsPerGroup();
  }

  const GroupNormSiluMsTilingData *t_ = nullptr;
  TPipe *pipe_ = nullptr;
  int64_t groupElems_ = 0;
  float invM_ = 0.0f;
  // the chunk stream (mode 1)
  int64_t streamFirst_ = 0;
  int64_t streamTask_ = 0;
  int64_t streamEnd_ = 0;
  int64_t streamItem_ = 0;
  int64_t streamPass_ = 0;
  int64_t streamFirstPass_ = 0;
  int64_t streamLastPass_ = 0;
  bool streamPassMajor_ = false;
  // split groups: the end of the block's tasks, and the shift of its last slice task, read in pass 0
  float sliceShift_ = 0.0f;
  int64_t blockFirst_ = 0;
  int64_t blockEnd_ = 0;
  bool xfShifted_ = false;  // XF() holds a split block's one chunk as x - shift (SliceStatsTask)
  bool entryInFlight_ = false;  // a slice entry's copy to the workspace may still be running
  int32_t headEvent_ = 0;  // the MTE2 -> S event of the head load in flight (IssueHead)
  // staged chunks: the task's x buffer (taken from the x queue) and whether items come from it
  bool staged_ = false;
  LocalTensor<T> stage_;
  // pass 2: the y run being filled (yRows > 1; first item, or -1), and the coefficients of the
  // last channel (a long row's chunks share them: no scalar reads per chunk)
  LocalTensor<T> yRun_;
  int64_t yRunFirst_ = -1;
  int64_t coefChannel_ = -1;
  float coefA_ = 0.0f;
  float coefB_ = 0.0f;
  // mean/rstd staging
  int64_t statStart_ = 0;
  int64_t statCount_ = 0;
  bool statsInFlight_ = false;
  int64_t rowsBatches_ = 0;  // batches of groups so far (groupRows): their statistics' slot alternates
  int32_t rowsStatsEvent_[2] = {};
  bool rowsStatsPending_[2] = {false, false};  // the slot's store is issued, its MTE3 -> V not waited for
  int64_t coefBase_ = 0;  // coefPerBlock: the channel of GammaF()[0] / BetaF()[0]
  int64_t coefCount_ = 0;  // and how many channels the arrays hold
  bool coefsPending_ = false;  // their loads are issued, not yet converted
  // the part ring: the next load of the stream (task, pass, part), the issued loads not yet taken
  // (their slots in order), each slot's MTE2 -> V event, the free slots, the resident parts' slots
  int64_t ringTask_ = 0;
  int64_t ringPass_ = 0;
  int64_t ringPart_ = 0;
  int64_t ringEnd_ = 0;
  int64_t ringQueue_[MAX_RING_SLOTS] = {};
  int64_t ringHead_ = 0;
  int64_t ringQueued_ = 0;
  int32_t ringEvent_[MAX_RING_SLOTS] = {};
  uint32_t ringFree_ = 0;
  uint32_t ringUsed_ = 0;  // slots loaded before: a new load waits for the vector reads of the old
  int64_t ringResident_[MAX_RING_SLOTS] = {};
  // a block's one staged slice of row batches, loaded in pieces of stagePieceBatches_ batches: each
  // piece's MTE2 -> V event, waited for before its first batch's statistics (stagePieces_ 0: none)
  int64_t stagePieces_ = 0;
  int64_t stagePieceBatches_ = 1;
  int32_t stageEvent_[MAX_STAGE_PIECES] = {};

  TQue<QuePosition::VECIN, 1> xQue_;  // staged tasks: one task's x per buffer
  // mode 0 and streamed chunks: two loads queued at once ahead of the compute
  TQue<QuePosition::VECIN, 2> xAheadQue_;
  // streamed chunks short enough that four loads fit: a DMA's latency over four in flight, not two
  TQue<QuePosition::VECIN, DEEP_STREAM_LOADS> xDeepQue_;
  TQue<QuePosition::VECOUT, 1> yQue_;
  TBuf<QuePosition::VECIN> ringBuf_;  // the part ring: xBuffers slots of xBufferElems
  TQue<QuePosition::VECIN, 1> gammaQue_;
  TQue<QuePosition::VECIN, 1> betaQue_;
  TBuf<QuePosition::VECCALC> workBuf_;
  TBuf<QuePosition::VECCALC> scratchBuf_;
  TBuf<QuePosition::VECCALC> coefBuf_;
  TBuf<QuePosition::VECCALC> bcastBuf_;  // mode 0, short rows: each row's scale, then shift, in a 32-byte block
  TBuf<QuePosition::VECCALC> gatherBuf_;  // groupRowsGather: Gather's spread and pack tables
  TBuf<QuePosition::VECOUT> statBuf_;  // mean and rstd, stored to GM by MTE3
  TBuf<QuePosition::VECIN> slicesInBuf_;  // a split group's slice statistics, loaded by MTE2
  TBuf<QuePosition::VECOUT> sliceOutBuf_;  // this slice's statistics, stored by MTE3

  GlobalTensor<T> xGm_;
  GlobalTensor<T> yGm_;
  GlobalTensor<U> gammaGm_;
  GlobalTensor<U> betaGm_;
  GlobalTensor<float> meanGm_;
  GlobalTensor<float> rstdGm_;
  GlobalTensor<float> wsGm_;  // split groups: one 8-float entry per task
};

}  // namespace GroupNormSiluMsKernel

// The members of modes 0 and 1, defined out of the class.
#include "group_norm_silu_ms_y.h"
#include "group_norm_silu_ms_resident.h"
#include "group_norm_silu_ms_group_rows.h"
#include "group_norm_silu_ms_group_columns.h"
#include "group_norm_silu_ms_channel_rows.h"
#include "group_norm_silu_ms_chunked.h"
#include "group_norm_silu_ms_ring.h"
#include "group_norm_silu_ms_ring_rows.h"

#endif  // GROUP_NORM_SILU_MS_H
