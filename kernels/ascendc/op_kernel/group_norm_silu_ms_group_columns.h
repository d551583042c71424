// Member definitions of KernelGroupNormSiluMs (group_norm_silu_ms.h) for mode 0's batches of groups
// (HxW == 1, groupRows > 0) with groupRowsGather == GNS_GATHER_COLUMNS: groups of 2..8 elements.
//
// As rows (group_norm_silu_ms_group_rows.h) a group of D elements takes a row of its own at rowPitch
// (8 or 16 floats), and each row-wise step (the sums, the centring, the scale by rstd) is a vector
// repeat a group: 8000x64 G32 (D = 2) spent about 12 repeats a group, 48 us of vector time a core
// against a bound of 5.6. Here Gather spreads the batch's run of x into D columns of the batch (column
// j holds element j of every group, R8 = groupRows rounded up to 8 floats apart), so that every step
// is one instruction over whole columns, 64 groups a repeat:
//   x - shift and x - mean are a vector Add a column (the group's value is the column's lane);
//   a group's sum is an Add tree over its columns in WholeReduceSum's order (neighbour pairs, a lone
//   element plus 0, the result plus 0 for the repeat's idle lanes), so every sum has the bits of
//   RowsSum's;
//   gamma and beta are columns as well, built once a block (groupRows is a multiple of G, so every
//   batch of a block sees the same channels in each lane).
// Each group's arithmetic is that of the rows (the same fp32 operations on the same values), so the
// bits are those of a group at a time. Gather packs y back into a run (StorePackedRows).
// Included by group_norm_silu_ms.h after the class; not a header of its own.
#ifndef GROUP_NORM_SILU_MS_GROUP_COLUMNS_H
#define GROUP_NORM_SILU_MS_GROUP_COLUMNS_H

namespace GroupNormSiluMsKernel {

// Gather's three tables in gatherBuf_ (byte offsets of fp32 elements, K = chunkElems entries each):
//   spread[j R8 + r] = 4 (r D + j)            the batch's run into columns;
//   pack[r D + j]    = 4 (j R8 + r)            the columns back into a run;
//   coef[j R8 + r]   = 4 (((first + r) % G) D + j)  gamma (beta) of the C channels into columns.
// The scalar unit writes the heads (8 entries of spread's column 0, 8 groups of pack, one period of
// coef's column 0 that is a multiple of 8 entries), int32 Adds grow them (doubling runs, then a column
// from column 0 plus 4 j). Then the block's gamma and beta, as fp32, are gathered into their columns.
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::GroupColumnsTables(int64_t first) {
  const int64_t R8 = GnsRowsRound8(t_->groupRows);
  const int64_t D = t_->D;
  const int64_t K = t_->chunkElems;
  IssueRows(gammaQue_, gammaGm_, 0, 1, t_->C);
  IssueRows(betaQue_, betaGm_, 0, 1, t_->C);
  LocalTensor<int32_t> spread = gatherBuf_.Get<int32_t>();
  LocalTensor<int32_t> pack = spread[K];
  LocalTensor<int32_t> coef = spread[2 * K];
  for (int64_t r = 0; r < FLOATS_PER_BLOCK; ++r) spread.SetValue(r, static_cast<int32_t>(4 * D * r));
  for (int64_t p = 0; p < FLOATS_PER_BLOCK * D; ++p) pack.SetValue(p, static_cast<int32_t>(4 * ((p % D) * R8 + p / D)));
  int64_t period = t_->G;  // coef's column 0 repeats every G entries: a run of lcm(G, 8) is copied whole
  while (period % FLOATS_PER_BLOCK != 0) period += t_->G;
  if (period > R8) period = R8;
  const int64_t phase = first % t_->G;
  for (int64_t r = 0; r < period; ++r) coef.SetValue(r, static_cast<int32_t>(4 * D * ((phase + r) % t_->G)));
  Sync<HardEvent::S_V>();  // the heads are in UB before the vector unit grows them
  for (int64_t have = FLOATS_PER_BLOCK; have < R8; have *= 2) {
    Adds(spread[have], spread, static_cast<int32_t>(4 * D * have), static_cast<int32_t>(have < R8 - have ? have : R8 - have));
  }
  for (int64_t have = period; have < R8; have *= 2) {
    Adds(coef[have], coef, 0, static_cast<int32_t>(have < R8 - have ? have : R8 - have));
  }
  for (int64_t j = 1; j < D; ++j) {
    Adds(spread[j * R8], spread, static_cast<int32_t>(4 * j), static_cast<int32_t>(R8));
    Adds(coef[j * R8], coef, static_cast<int32_t>(4 * j), static_cast<int32_t>(R8));
  }
  for (int64_t have = FLOATS_PER_BLOCK * D; have < D * R8; have *= 2) {
    Adds(pack[have], pack, static_cast<int32_t>(4 * (have / D)),
         static_cast<int32_t>(have < D * R8 - have ? have : D * R8 - have));
  }
  const uint32_t span = static_cast<uint32_t>(D * R8);
  TakeAsFloat<U>(gammaQue_, t_->C, Tmp());
  Gather(GammaF(), Tmp(), gatherBuf_.Get<uint32_t>()[2 * K], 0, span);
  TakeAsFloat<U>(betaQue_, t_->C, XF());
  Gather(BetaF(), XF(), gatherBuf_.Get<uint32_t>()[2 * K], 0, span);
}

// dst = each group's sum of the D columns of src, in WholeReduceSum's tree of neighbour pairs over 64
// lanes (a pair with an idle lane adds 0, which only turns -0 into +0; the levels above D's add 0 to
// the sum). The first level writes scratch's columns (src's stay as they are unless scratch is src),
// the later ones work in scratch in place: a pair's columns are read before a lower pair writes them.
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::ColumnsSum(const LocalTensor<float> &dst,
                                                               const LocalTensor<float> &src,
                                                               const LocalTensor<float> &scratch) {
  const int32_t n = static_cast<int32_t>(GnsRowsRound8(t_->groupRows));
  LocalTensor<float> from = src;
  for (int64_t live = t_->D; live > 1; live = (live + 1) / 2) {
    for (int64_t i = 0; i < live / 2; ++i) Add(ColumnOf(scratch, i), ColumnOf(from, 2 * i), ColumnOf(from, 2 * i + 1), n);
    if (live % 2 != 0) Adds(ColumnOf(scratch, live / 2), ColumnOf(from, live - 1), 0.0f, n);
    from = scratch;
  }
  Adds(dst, from, 0.0f, n);
}

// The statistics of the batch's groups from x's columns (fp32 in x, Tmp()) into ROWS_SHIFT .. ROWS_M2,
// and XF()'s columns = x - mean (x * scale - mean in the rescaled path), as RowsCentre: the shift (a sum
// of one: x_0 + 0), x - shift, its sum, offset = sum / M, x - shift - offset, the squares (in Tmp()) and
// their sum. x's columns are scratch once x - shift is formed.
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::ColumnsCentre(const LocalTensor<float> &x, bool rescaled) {
  const int32_t n = static_cast<int32_t>(GnsRowsRound8(t_->groupRows));
  LocalTensor<float> xF = XF();
  LocalTensor<float> src = x;
  if (rescaled) {  // x * scale per group: exact (a power of two), x * 1 is x
    for (int64_t j = 0; j < t_->D; ++j) Mul(ColumnOf(xF, j), ColumnOf(x, j), RowsVector(ROWS_SCALE), n);
    src = xF;
  }
  Adds(RowsVector(ROWS_SHIFT), src, 0.0f, n);
  Muls(RowsVector(ROWS_NEG), RowsVector(ROWS_SHIFT), -1.0f, n);
  for (int64_t j = 0; j < t_->D; ++j) Add(ColumnOf(xF, j), ColumnOf(src, j), RowsVector(ROWS_NEG), n);
  ColumnsSum(RowsVector(ROWS_SUM), xF, x);
  Muls(RowsVector(ROWS_OFFSET), RowsVector(ROWS_SUM), invM_, n);
  Muls(RowsVector(ROWS_NEG), RowsVector(ROWS_OFFSET), -1.0f, n);
  for (int64_t j = 0; j < t_->D; ++j) Add(ColumnOf(xF, j), ColumnOf(xF, j), RowsVector(ROWS_NEG), n);
  Mul(Tmp(), xF, xF, static_cast<int32_t>(t_->D * n));
  ColumnsSum(RowsVector(ROWS_M2), Tmp(), Tmp());
}

template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::GroupColumnsBatch(int64_t q0, int64_t rows) {
  const int32_t n = static_cast<int32_t>(GnsRowsRound8(t_->groupRows));
  const int32_t span = static_cast<int32_t>(t_->D * n);
  const LocalTensor<float> run = workBuf_.Get<float>(static_cast<uint32_t>(t_->chunkElems));  // XF(), K long
  const LocalTensor<uint32_t> spread = gatherBuf_.Get<uint32_t>();
  LocalTensor<T> staging = xAheadQue_.template DeQue<T>();
  // the run as fp32 (the Muls by 1 or Cast of the rows path) in XF(), spread into Tmp()'s columns; the
  // rescaled path takes x again from the staging buffer, held until then. The lanes of the columns past
  // `rows` (a short last batch) hold values of no group, and nothing of them is stored.
  StagingToFloat(staging, rows * t_->D, run, 1.0f);
  Gather(Tmp(), run, spread, 0, static_cast<uint32_t>(span));
  ColumnsCentre(Tmp(), false);
  const bool rescaled = !(RowsInSafeRange(RowsVector(ROWS_SUM), rows) && RowsInSafeRange(RowsVector(ROWS_M2), rows));
  if (rescaled) {
    RowsRescaleFactors(rows);
    StagingToFloat(staging, rows * t_->D, run, 1.0f);
    Gather(Tmp(), run, spread, 0, static_cast<uint32_t>(span));
    ColumnsCentre(Tmp(), true);
  }
  xAheadQue_.FreeTensor(staging);
  RowsBatchStats(q0, rows, rescaled);
  // y = (x - mean) * rstd * gamma + beta (as the rows: the scale by rstd, then gamma's and beta's columns)
  LocalTensor<float> xF = XF();
  for (int64_t j = 0; j < t_->D; ++j) Mul(ColumnOf(xF, j), ColumnOf(xF, j), RowsVector(ROWS_RSTD), n);
  Mul(xF, xF, GammaF(), span);
  Add(xF, xF, BetaF(), span);
  StorePackedRows(q0 * t_->D, rows, span);
}

}  // namespace GroupNormSiluMsKernel

#endif  // GROUP_NORM_SILU_MS_GROUP_COLUMNS_H
