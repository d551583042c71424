// Member definitions of KernelGroupNormSiluMs (group_norm_silu_ms.h) for the part ring's batches of
// rows (RingRows: the ring with bcastElems > 0, chunks of one whole row, a row a channel): a part's
// rows are one batch for the vector unit, as mode 0's batches of groups (group_norm_silu_ms_group_rows.h)
// are. With short rows (7x7: 49 elements) a row at a time paid per row two ReduceSum round trips
// between the vector and scalar units and a dozen vector instruction starts for a few repeats of
// work, and per row one store; here a part pays a few of each.
//
// The chunks are still the rows and each row's arithmetic is that of ChunkMoments and ItemAffine
// (group_norm_silu_ms_chunked.h) on the same fp32 values: RowsSum forms each row's sum as the
// count-form ReduceSum does, x + (-m) is x - m, the row's mean m = sum / n and its coefficients are
// the scalar unit's (or the same IEEE products and difference on the vector unit), and the rows'
// statistics enter the cascade in row order. So the bits are those of a row at a time.
//
// Per-row vectors in bcastBuf_ (RowsVector, partItems rounded up to 8 floats each):
//   ROWS_SUM, ROWS_M2: sums of x and of x^2 (shift 0: the moments from x itself);
//   ROWS_OFFSET, ROWS_RSTD: sums of x - shift and of (x - shift - m)^2 (the two passes);
//   ROWS_NEG: -m, broadcast per row; ROWS_PART: RowsSum's partial sums of rows over 64.
// After them the Brcb blocks, then the group's a and b per channel (RowsTable).
// Included by group_norm_silu_ms.h after the class; not a header of its own.
#ifndef GROUP_NORM_SILU_MS_RING_ROWS_H
#define GROUP_NORM_SILU_MS_RING_ROWS_H

namespace GroupNormSiluMsKernel {

// Pass 1 of a part of `rows` rows (fp32 in src at rowPitch): every row's (count, mean, M2) added
// to the cascade in order. A row whose sums leave the safe range is taken again on its own
// (ItemStats: its scaled path), the rare path.
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::RowsPartStats(const LocalTensor<float> &src, int64_t rows,
                                                                 float shift, ChanCascade *stats) {
  const int32_t len = static_cast<int32_t>(t_->rowLen);
  const int32_t span = static_cast<int32_t>(rows * t_->rowPitch);
  const float nb = static_cast<float>(len);
  LocalTensor<float> tmp = Tmp();
  int64_t done = 0;  // rows whose statistics are in the cascade
  if (shift == 0.0f) {
    Mul(tmp, src, src, span);
    RowsSum(RowsVector(ROWS_SUM), src, rows, len);
    RowsSum(RowsVector(ROWS_M2), tmp, rows, len);
    TakeBlockCoefs();  // the block's first part: its gamma/beta have landed by now
    Sync<HardEvent::V_S>();  // the sums are written before the scalar unit reads them
    // each row's moments from x itself enter the cascade as they are read (two scalar reads a row, not
    // a check of every row and a second read); at the first row that needs them the two passes follow
    for (; done < rows; ++done) {
      ChunkStats s;
      if (!MomentsFromSums(RowsVector(ROWS_SUM).GetValue(done), RowsVector(ROWS_M2).GetValue(done), nb, false, &s)) {
        break;
      }
      stats->Add(s);
    }
    if (done == rows) return;
  }
  // the two passes of x - shift for every row (row `done` and some after it, or all, need them)
  Adds(tmp, src, -shift, span);
  RowsSum(RowsVector(ROWS_OFFSET), tmp, rows, len);
  TakeBlockCoefs();
  Sync<HardEvent::V_S>();  // the sums are written before the scalar unit reads them
  for (int64_t j = 0; j < rows; ++j) {
    RowsVector(ROWS_NEG).SetValue(j, -(RowsVector(ROWS_OFFSET).GetValue(j) / nb));
  }
  Sync<HardEvent::S_V>();  // -m of every row is in UB before Brcb reads it
  RowsApply(tmp, tmp, RowsVector(ROWS_NEG), rows, true, len);
  Mul(tmp, tmp, tmp, span);
  RowsSum(RowsVector(ROWS_RSTD), tmp, rows, len);
  Sync<HardEvent::V_S>();  // the sums of squares are written before the scalar unit reads them
  for (int64_t j = done; j < rows; ++j) {
    ChunkStats s;
    if (shift == 0.0f && j > done &&
        MomentsFromSums(RowsVector(ROWS_SUM).GetValue(j), RowsVector(ROWS_M2).GetValue(j), nb, false, &s)) {
      stats->Add(s);
      continue;
    }
    const float sum = RowsVector(ROWS_OFFSET).GetValue(j);
    const float m2b = RowsVector(ROWS_RSTD).GetValue(j);
    if (InSafeRange(sum) && InSafeRange(m2b)) {
      stats->Add(ChunkStats{nb, sum / nb, m2b, false});
    } else {  // (a 16-bit part is in XF(): the scaled copy overwrites row 0 only, taken before)
      ItemStats(src[j * t_->rowPitch], len, shift, stats);
    }
  }
}

// The group's a_c = rstd * gamma_c and b_c = beta_c - centre * a_c (ItemAffine's) of its D channels
// in RowsTable(0) and RowsTable(1): on the vector unit where the block's gamma/beta arrays hold
// them 32-byte aligned, else on the scalar unit. The previous group's reads of the tables came
// before GroupRstd's V -> S wait, so the scalar unit may rewrite them.
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::RowsCoefTable(int64_t group, const ItemCoefs &k) {
  const int64_t c0 = (group % t_->G) * t_->D;
  const int32_t d = static_cast<int32_t>(t_->D);
  LocalTensor<float> a = RowsTable(0);
  LocalTensor<float> b = RowsTable(1);
  if (t_->coefPerBlock != 0 && (c0 - coefBase_) % FLOATS_PER_BLOCK == 0) {
    Muls(a, GammaF()[c0 - coefBase_], k.rstd, d);
    Muls(b, a, k.centre, d);
    Sub(b, BetaF()[c0 - coefBase_], b, d);
    return;
  }
  for (int64_t j = 0; j < t_->D; ++j) {
    const float aj = k.rstd * ChannelGamma(c0 + j);
    a.SetValue(static_cast<uint32_t>(j), aj);
    b.SetValue(static_cast<uint32_t>(j), ChannelBeta(c0 + j) - k.centre * aj);
  }
  Sync<HardEvent::S_V>();  // the tables are in UB before Brcb reads them
}

// Pass 2 of a part: y of its rows (channels firstRow.. of the group, fp32 in src), its activation and
// one store of all its rows.
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::RowsPartOutput(int64_t group, int64_t firstRow,
                                                                  const LocalTensor<float> &src, int64_t rows,
                                                                  const ItemCoefs &k) {
  const int32_t span = static_cast<int32_t>(rows * t_->rowPitch);
  LocalTensor<float> xF = XF();
  if (k.scaled) {  // the rare path
    Muls(xF, src, SCALE_DOWN, span);
    Adds(xF, xF, -k.shiftIn, span);
  } else {
    Adds(xF, src, -k.shiftIn, span);
  }
  RowsApply(xF, xF, RowsTable(0)[firstRow], rows, false, t_->rowLen);
  RowsApply(xF, xF, RowsTable(1)[firstRow], rows, true, t_->rowLen);
  StoreRows(group * groupElems_ + firstRow * t_->rowLen, rows, t_->rowLen, span, xF);
}

}  // namespace GroupNormSiluMsKernel

#endif  // GROUP_NORM_SILU_MS_RING_ROWS_H
