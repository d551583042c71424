// Member definitions of KernelGroupNormSiluMs (group_norm_silu_ms.h) for mode 0 with HxW == 1 and
// groupRows > 0: a block's groups in batches, each group one row of D elements at rowPitch (P, at
// most 255 blocks: a repeat stride), every per-group value one element of a vector over the batch.
// The arithmetic of each group is that of ResidentTask (group_norm_silu_ms_resident.h) for a
// one-row group: the same fp32 operations on the same values, so the bits are those of a group at
// a time.
// Included by group_norm_silu_ms.h after the class; not a header of its own.
#ifndef GROUP_NORM_SILU_MS_GROUP_ROWS_H
#define GROUP_NORM_SILU_MS_GROUP_ROWS_H

namespace GroupNormSiluMsKernel {

// The batch's per-group vectors in bcastBuf_ (GNS_ROWS_VECTORS arrays of R8 = groupRows rounded up
// to 8 floats, then the Brcb blocks); their mean and rstd leave from two slots of statBuf_.
enum GroupRowsVector : int64_t {
  ROWS_SHIFT = 0,    // the group's first element (x * scale)
  ROWS_SUM,          // sum of x - shift
  ROWS_OFFSET,       // mean - shift
  ROWS_M2,           // sum of (x - mean)^2, then var + eps, then sqrt
  ROWS_RSTD,
  ROWS_ONES,         // 1.0: the numerator of rstd
  ROWS_SCALE,        // the rescaled path's per-group factors: 1 or SCALE_DOWN,
  ROWS_EPS,          //   eps in the units of x * scale,
  ROWS_UP,           //   1 or SCALE_UP for the mean
  ROWS_NEG,          // a negated vector, the operand of a row-wise Add
  ROWS_PART,         // rows longer than 64: one 64-column part's sums (RowsSum)
};
static_assert(ROWS_PART + 1 == GNS_ROWS_VECTORS, "GNS_ROWS_VECTORS counts the vectors");

// gamma and beta as a table of groupRows + G rows at rowPitch, row j that of group j % G, built
// once a block: G padded rows loaded, then copied to the rows after them doubling the run (Muls by
// 1 is exact). A batch from group q0 reads rows q0 % G .. q0 % G + R - 1 in place.
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::GroupRowsTable() {
  const int64_t P = t_->rowPitch;
  const int64_t loaded = t_->G * P;
  const int64_t span = t_->coefElems;
  IssuePitchedRows(gammaQue_, gammaGm_, 0, t_->G, t_->D, P);
  IssuePitchedRows(betaQue_, betaGm_, 0, t_->G, t_->D, P);
  TakeAsFloat<U>(gammaQue_, loaded, GammaF());
  TakeAsFloat<U>(betaQue_, loaded, BetaF());
  for (int64_t have = loaded; have < span; have *= 2) {
    const int32_t n = static_cast<int32_t>((span - have < have) ? span - have : have);
    Muls(GammaF()[have], GammaF(), 1.0f, n);
    Muls(BetaF()[have], BetaF(), 1.0f, n);
  }
}

// A block's groups [first, end) in batches of up to groupRows; the next batch's x is loaded while
// a batch is computed (two x buffers).
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::GroupRowsRun(int64_t first, int64_t end) {
  if (first >= end) return;
  const int64_t R = t_->groupRows;
  const bool columns = t_->groupRowsGather == GNS_GATHER_COLUMNS;
  if (columns) {  // Gather's tables and the block's gamma/beta columns (group_norm_silu_ms_group_columns.h)
    IssueGroupRows(first, (end - first < R) ? end - first : R);
    GroupColumnsTables(first);
  } else if (t_->groupRowsGather != 0) {  // Gather's tables (group_norm_ms_gather.h) for batches of up to R rows
    LocalTensor<int32_t> spread = gatherBuf_.Get<int32_t>();
    LocalTensor<int32_t> pack = gatherBuf_.Get<int32_t>()[t_->chunkElems];
    GroupNormMsGather::WriteTableHeads(spread, pack, R * t_->D, t_->D, t_->rowPitch);
    Sync<HardEvent::S_V>();
    GroupNormMsGather::GrowTables(spread, R * t_->rowPitch, pack, R * t_->D, t_->D, t_->rowPitch);
  }
  if (!columns) {
    IssueGroupRows(first, (end - first < R) ? end - first : R);
    GroupRowsTable();
  }
  Duplicate(RowsVector(ROWS_ONES), 1.0f, static_cast<int32_t>(GnsRowsRound8(R)));
  for (int64_t q0 = first; q0 < end; q0 += R) {
    const int64_t rows = (end - q0 < R) ? end - q0 : R;
    if (q0 + R < end) {
      const int64_t next = (end - q0 - R < R) ? end - q0 - R : R;
      IssueGroupRows(q0 + R, next);
    }
    if (columns) {
      GroupColumnsBatch(q0, rows);
    } else {
      GroupRowsBatch(q0, rows);
    }
  }
  for (int64_t slot = 0; slot < 2; ++slot) {  // the last stores of the statistics
    if (rowsStatsPending_[slot]) {
      WaitFlag<HardEvent::MTE3_V>(rowsStatsEvent_[slot]);
      pipe_->ReleaseEventID<HardEvent::MTE3_V>(rowsStatsEvent_[slot]);
      rowsStatsPending_[slot] = false;
    }
  }
}

template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::IssueGroupRows(int64_t q0, int64_t rows) {
  if (t_->groupRowsGather != 0) {
    IssueRows(xAheadQue_, xGm_, q0 * t_->D, 1, rows * t_->D);
  } else {
    IssueRows(xAheadQue_, xGm_, q0 * t_->D, rows, t_->D);
  }
}

// The run of a batch's x as fp32 (the same Muls by 1 or Cast as a row at a time, into XF(), as a view of K
// elements: Gather's source may not overlap its destination), spread by Gather into rows at rowPitch in
// Tmp(): RowsCentre then writes XF() from it, and its squares replace it.
template <typename T, typename U>
__aicore__ inline LocalTensor<float> KernelGroupNormSiluMs<T, U>::SpreadRows(const LocalTensor<T> &staging,
                                                                             int64_t rows) {
  const LocalTensor<float> run = workBuf_.Get<float>(static_cast<uint32_t>(t_->chunkElems));  // XF(), K long
  StagingToFloat(staging, rows * t_->D, run, 1.0f);
  Gather(Tmp(), run, gatherBuf_.Get<uint32_t>(), 0, static_cast<uint32_t>(rows * t_->rowPitch));
  return Tmp();
}

// y of a batch (fp32 in XF(): rows at rowPitch, or the columns of group_norm_silu_ms_group_columns.h;
// `span` elements, activated in place as OutputY does it: the same operations on the same values)
// packed by Gather into a run in Tmp(), then in x's dtype to GM as one burst.
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::StorePackedRows(int64_t offset, int64_t rows, int32_t span) {
  const int64_t len = rows * t_->D;
  const LocalTensor<float> y = workBuf_.Get<float>(static_cast<uint32_t>(t_->chunkElems));  // XF(), K long
  LocalTensor<float> tmp = Tmp();
  if (t_->activateSilu != 0) Div(y, y, SiluDenominator(y, span), span);
  Gather(tmp, y, gatherBuf_.Get<uint32_t>()[t_->chunkElems], 0, static_cast<uint32_t>(len));
  LocalTensor<T> staging = yQue_.template AllocTensor<T>();
  PutY(staging, tmp, len);
  SendY(staging, offset, 1, len);
}

// dst rows (rowPitch apart, `cols` long) = src rows + (or *) vector v's element of their group: v
// broadcast into a 32-byte block a group (Brcb), then one Add (Mul) a piece of GNS_ROWS_PIECE
// groups and 64 columns, a repeat a group whose second source reads its group's block (block
// stride 0).
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::RowsApply(const LocalTensor<float> &dst,
                                                              const LocalTensor<float> &src,
                                                              const LocalTensor<float> &v, int64_t rows, bool add,
                                                              int64_t cols) {
  const int64_t P = t_->rowPitch;
  const uint8_t pitch = BlockStride(P / FLOATS_PER_BLOCK);
  const BinaryRepeatParams params(1, 1, 0, pitch, pitch, 1);
  LocalTensor<float> blocks = RowsVector(GNS_ROWS_VECTORS);
  for (int64_t r0 = 0; r0 < rows; r0 += GNS_ROWS_PIECE) {
    const int64_t n = (rows - r0 < GNS_ROWS_PIECE) ? rows - r0 : GNS_ROWS_PIECE;
    Brcb(blocks, v[r0], RepeatTimes(GnsRowsRound8(n) / FLOATS_PER_BLOCK), BrcbRepeatParams(1, 8));
    for (int64_t c = 0; c < cols; c += 64) {
      const uint64_t mask = static_cast<uint64_t>((cols - c < 64) ? cols - c : 64);
      if (add) {
        Add(dst[r0 * P + c], src[r0 * P + c], blocks, mask, RepeatTimes(n), params);
      } else {
        Mul(dst[r0 * P + c], src[r0 * P + c], blocks, mask, RepeatTimes(n), params);
      }
    }
  }
}

// dst[j] = the sum of the first `len` elements of src's row j, as count-form ReduceSum forms it: each
// 64-element part by a tree of neighbour pairs (WholeReduceSum, a repeat a row: its lanes and tree),
// the parts' sums added in order (a vector Add over the rows a part).
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::RowsSum(const LocalTensor<float> &dst,
                                                            const LocalTensor<float> &src, int64_t rows, int32_t len) {
  const int32_t repStride = static_cast<int32_t>(t_->rowPitch / FLOATS_PER_BLOCK);
  LocalTensor<float> part = RowsVector(ROWS_PART);
  for (int32_t c = 0; c < len; c += 64) {
    const int32_t mask = (len - c < 64) ? len - c : 64;
    for (int64_t r0 = 0; r0 < rows; r0 += 255) {
      const int32_t n = static_cast<int32_t>((rows - r0 < 255) ? rows - r0 : 255);
      WholeReduceSum<float>(c == 0 ? dst[r0] : part[r0], src[r0 * t_->rowPitch + c], mask, n, 1, 1, repStride);
    }
    if (c > 0) Add(dst, dst, part, static_cast<int32_t>(rows));
  }
}

// Whether every |v[j]| < SAFE_SUM (InSafeRange) for j < rows: the sum of (v * 2^-126)^2 is below 1
// only then (each term of such a v is below 1 and the sum of non-negative terms is at least each
// of them; NaN fails). A sum of 1 or more without such a v only sends the batch to the rescaled
// path, which is right for every group. One ReduceSum: a V -> S round trip.
template <typename T, typename U>
__aicore__ inline bool KernelGroupNormSiluMs<T, U>::RowsInSafeRange(const LocalTensor<float> &v, int64_t rows) {
  const int32_t n = static_cast<int32_t>(rows);
  LocalTensor<float> test = RowsVector(ROWS_NEG);
  Muls(test, v, 1.0f / SAFE_SUM, n);
  Mul(test, test, test, n);
  ReduceSum(Red(), test, ReduceWork(), n);
  return Red().GetValue(0) < 1.0f;
}

// The statistics of the batch's groups from x (fp32, rows at rowPitch) into ROWS_SHIFT .. ROWS_M2,
// and xF = x - mean (x * scale - mean in the rescaled path); Tmp() = xF^2. As CentreAndSquare:
// x - shift, its sum, offset = sum / M, x - shift - offset, the squares and their sum.
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::RowsCentre(const LocalTensor<float> &x, int64_t rows,
                                                               bool rescaled) {
  const int32_t span = static_cast<int32_t>(rows * t_->rowPitch);
  const int32_t n = static_cast<int32_t>(rows);
  const int32_t D = static_cast<int32_t>(t_->D);
  LocalTensor<float> xF = XF();
  LocalTensor<float> src = x;
  if (rescaled) {  // x * scale per group: exact (a power of two), x * 1 is x
    RowsApply(xF, x, RowsVector(ROWS_SCALE), rows, false, t_->D);
    src = xF;
  }
  RowsSum(RowsVector(ROWS_SHIFT), src, rows, 1);  // the first element: a sum of one
  Muls(RowsVector(ROWS_NEG), RowsVector(ROWS_SHIFT), -1.0f, n);
  RowsApply(xF, src, RowsVector(ROWS_NEG), rows, true, t_->D);  // x + (-shift) is x - shift
  RowsSum(RowsVector(ROWS_SUM), xF, rows, D);
  Muls(RowsVector(ROWS_OFFSET), RowsVector(ROWS_SUM), invM_, n);
  Muls(RowsVector(ROWS_NEG), RowsVector(ROWS_OFFSET), -1.0f, n);
  RowsApply(xF, xF, RowsVector(ROWS_NEG), rows, true, t_->D);
  Mul(Tmp(), xF, xF, span);
  RowsSum(RowsVector(ROWS_M2), Tmp(), rows, D);
}

// The rescaled path's per-group factors, on the scalar unit (a batch with a sum out of range: rare):
// a group whose sum of x - shift or of squares is out of range is taken again from x * SCALE_DOWN,
// as ResidentTask's rare path does; the others keep factor 1 and their bits.
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::RowsRescaleFactors(int64_t rows) {
  // (the sums are written: RowsInSafeRange's ReduceSum ends with a V -> S wait)
  for (int64_t j = 0; j < rows; ++j) {
    const bool safe = InSafeRange(RowsVector(ROWS_SUM).GetValue(j)) && InSafeRange(RowsVector(ROWS_M2).GetValue(j));
    RowsVector(ROWS_SCALE).SetValue(j, safe ? 1.0f : SCALE_DOWN);
    RowsVector(ROWS_EPS).SetValue(j, safe ? t_->eps : EpsScaled());
    RowsVector(ROWS_UP).SetValue(j, safe ? 1.0f : SCALE_UP);
  }
  Sync<HardEvent::S_V>();
}

// A batch's rstd and mean from ROWS_SHIFT .. ROWS_M2 (and the rescaled path's factors), stored to GM
// from one of the two slots of statBuf_; ROWS_RSTD keeps rstd for y.
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::RowsBatchStats(int64_t q0, int64_t rows, bool rescaled) {
  const int32_t n = static_cast<int32_t>(rows);
  // rstd = 1 / sqrt(m2 / M + eps), mean = shift + offset (as Rstd and RecordStats)
  LocalTensor<float> m2 = RowsVector(ROWS_M2);
  Muls(m2, m2, invM_, n);
  if (rescaled) {
    Add(m2, m2, RowsVector(ROWS_EPS), n);
  } else {
    Adds(m2, m2, t_->eps, n);
  }
  Sqrt(m2, m2, n);
  Div(RowsVector(ROWS_RSTD), RowsVector(ROWS_ONES), m2, n);
  const int64_t slot = rowsBatches_ % 2;
  ++rowsBatches_;
  if (rowsStatsPending_[slot]) {  // the store of this slot two batches back has read it
    WaitFlag<HardEvent::MTE3_V>(rowsStatsEvent_[slot]);
    pipe_->ReleaseEventID<HardEvent::MTE3_V>(rowsStatsEvent_[slot]);
    rowsStatsPending_[slot] = false;
  }
  // the statistics' two slots in statBuf_ (VECOUT: MTE3 reads it), statBatch = 2 x R8 floats each
  LocalTensor<float> meanOut = MeanOut()[slot * GnsRowsRound8(t_->groupRows)];
  LocalTensor<float> rstdOut = RstdOut()[slot * GnsRowsRound8(t_->groupRows)];
  Add(meanOut, RowsVector(ROWS_SHIFT), RowsVector(ROWS_OFFSET), n);
  if (rescaled) {
    Mul(meanOut, meanOut, RowsVector(ROWS_UP), n);
    Mul(rstdOut, RowsVector(ROWS_RSTD), RowsVector(ROWS_SCALE), n);
  } else {
    Muls(rstdOut, RowsVector(ROWS_RSTD), 1.0f, n);
  }
  Sync<HardEvent::V_MTE3>();
  DataCopyExtParams copy{1, static_cast<uint32_t>(rows * sizeof(float)), 0, 0, 0};
  DataCopyPad(meanGm_[q0], meanOut, copy);
  DataCopyPad(rstdGm_[q0], rstdOut, copy);
  rowsStatsEvent_[slot] = pipe_->AllocEventID<HardEvent::MTE3_V>();
  SetFlag<HardEvent::MTE3_V>(rowsStatsEvent_[slot]);
  rowsStatsPending_[slot] = true;
}

template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::GroupRowsBatch(int64_t q0, int64_t rows) {
  const int32_t span = static_cast<int32_t>(rows * t_->rowPitch);
  LocalTensor<T> staging = xAheadQue_.template DeQue<T>();
  // fp32 x is read in its staging buffer, 16-bit x cast into XF() (centred there in place); with
  // groupRowsGather both are spread into Tmp(). The rescaled path takes x again from the staging
  // buffer, held until then.
  const bool gather = t_->groupRowsGather != 0;
  const LocalTensor<float> x = gather ? SpreadRows(staging, rows) : AsFloat(staging, span);
  RowsCentre(x, rows, false);
  const bool rescaled = !(RowsInSafeRange(RowsVector(ROWS_SUM), rows) && RowsInSafeRange(RowsVector(ROWS_M2), rows));
  if (rescaled) {
    RowsRescaleFactors(rows);
    if (gather) {
      RowsCentre(SpreadRows(staging, rows), rows, true);
    } else {
      if constexpr (!IsSameType<T, float>::value) StagingToFloat(staging, span, Tmp(), 1.0f);
      RowsCentre(IsSameType<T, float>::value ? x : Tmp(), rows, true);
    }
  }
  xAheadQue_.FreeTensor(staging);
  RowsBatchStats(q0, rows, rescaled);
  // y = (x - mean) * rstd * gamma + beta (as ResidentTask's vector coefficients)
  LocalTensor<float> xF = XF();
  const int64_t row0 = (q0 % t_->G) * t_->rowPitch;
  RowsApply(xF, xF, RowsVector(ROWS_RSTD), rows, false, t_->D);
  Mul(xF, xF, GammaF()[row0], span);
  Add(xF, xF, BetaF()[row0], span);
  if (gather) {
    StorePackedRows(q0 * t_->D, rows, span);
  } else {
    StoreRows(q0 * t_->D, rows, t_->D, span, xF);
  }
}

}  // namespace GroupNormSiluMsKernel

#endif  // GROUP_NORM_SILU_MS_GROUP_ROWS_H
