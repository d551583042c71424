// Member definitions of KernelGroupNormSiluMs (group_norm_silu_ms.h) for mode 0 with groups of one
// channel (D == 1, HxW > 1; tiling groupRows > 0 with vectorCoef == 0): a block's groups in batches of
// groupRows, each group one row of HxW elements at rowPitch, every per-group value one element of a
// vector over the batch (the vectors of group_norm_silu_ms_group_rows.h).
//
// A group at a time paid, for a few hundred elements, a dozen vector instruction starts, three V -> S
// round trips (two ReduceSums and rstd) and a load and a store: 456x698x444 G698 (6,631 groups a core)
// was vector-bound at 4x its bound. Here a batch pays a few of each. Each group's arithmetic is that of
// ResidentTask (group_norm_silu_ms_resident.h) for a one-row group, so the bits are those of a group at
// a time:
//   the sums of x and x^2 (RowsSum forms them as count-form ReduceSum does), then on the scalar unit
//   ZeroCentredStats's test, mean and var for each group;
//   the groups that fail it (any of the batch) take the two passes of x - shift (shift = the group's
//   first element) for the whole batch, and those whose sums leave the safe range take them again from
//   x * SCALE_DOWN (the rare path), with its eps and the scaling of the recorded mean and rstd;
//   rstd = 1 / sqrt(var + eps) on the vector unit for the batch (var + eps formed on the scalar unit,
//   as Rstd's Duplicate takes it), a = rstd * gamma_c and b on the scalar unit, then one Mul and one Add
//   for all rows (Brcb of a and b) and one store.
// Vectors: ROWS_SUM, ROWS_M2 the sums; ROWS_SHIFT, ROWS_OFFSET, ROWS_NEG the two passes' shift, mean -
// shift and the negated operand; ROWS_SCALE the group's kind (0: from x itself, 1: two passes,
// SCALE_DOWN: the rare path, also its factor); ROWS_UP the recorded mean; ROWS_EPS var + eps, then
// its square root; ROWS_RSTD rstd, then a; ROWS_NEG b at the end.
// Included by group_norm_silu_ms.h after the class; not a header of its own.
#ifndef GROUP_NORM_SILU_MS_CHANNEL_ROWS_H
#define GROUP_NORM_SILU_MS_CHANNEL_ROWS_H

namespace GroupNormSiluMsKernel {

template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::ChannelRowsRun(int64_t first, int64_t end) {
  if (first >= end) return;
  const int64_t R = t_->groupRows;
  IssueRows(xAheadQue_, xGm_, first * groupElems_, (end - first < R) ? end - first : R, t_->rowLen);
  IssueBlockCoefs(first, end);
  Duplicate(RowsVector(ROWS_ONES), 1.0f, static_cast<int32_t>(GnsRowsRound8(R)));
  for (int64_t q0 = first; q0 < end; q0 += R) {
    const int64_t rows = (end - q0 < R) ? end - q0 : R;
    if (q0 + R < end) {
      const int64_t next = (end - q0 - R < R) ? end - q0 - R : R;
      IssueRows(xAheadQue_, xGm_, (q0 + R) * groupElems_, next, t_->rowLen);
    }
    ChannelRowsBatch(q0, rows);
  }
}

// The two passes of x - shift for every row of the batch (x, fp32 rows at rowPitch, in src; -shift in
// ROWS_NEG): XF() = x - shift - offset, ROWS_SUM the sums of x - shift, ROWS_OFFSET = sum / M and its
// negation formed on the scalar unit (as CentreAndSquare forms them: the same bits, NaN's sign
// included), ROWS_M2 the sums of squares (Tmp()), as CentreAndSquare and the SumRows after it.
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::ChannelTwoPasses(const LocalTensor<float> &src, int64_t rows) {
  const int32_t len = static_cast<int32_t>(t_->rowLen);
  LocalTensor<float> xF = XF();
  RowsApply(xF, src, RowsVector(ROWS_NEG), rows, true, t_->rowLen);
  RowsSum(RowsVector(ROWS_SUM), xF, rows, len);
  Sync<HardEvent::V_S>();  // the sums are written before the scalar unit reads them
  for (int64_t j = 0; j < rows; ++j) {
    const float offset = RowsVector(ROWS_SUM).GetValue(j) * invM_;  // mean - shift
    RowsVector(ROWS_OFFSET).SetValue(j, offset);
    RowsVector(ROWS_NEG).SetValue(j, -offset);
  }
  Sync<HardEvent::S_V>();  // -offset is in UB before Brcb reads it
  RowsApply(xF, xF, RowsVector(ROWS_NEG), rows, true, t_->rowLen);
  Mul(Tmp(), xF, xF, static_cast<int32_t>(rows * t_->rowPitch));
  RowsSum(RowsVector(ROWS_M2), Tmp(), rows, len);
}

template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::ChannelRowsBatch(int64_t q0, int64_t rows) {
  const int64_t P = t_->rowPitch;
  const int32_t span = static_cast<int32_t>(rows * P);
  const int32_t n = static_cast<int32_t>(rows);
  const int32_t len = static_cast<int32_t>(t_->rowLen);
  LocalTensor<float> xF = XF();
  LocalTensor<T> staging = xAheadQue_.template DeQue<T>();
  const LocalTensor<float> src = AsFloat(staging, span);  // fp32: the staging buffer; 16-bit: XF()
  Mul(Tmp(), src, src, span);
  RowsSum(RowsVector(ROWS_SUM), src, rows, len);
  RowsSum(RowsVector(ROWS_M2), Tmp(), rows, len);
  TakeBlockCoefs();  // the block's first batch: its gamma/beta (issued after its x) have landed by now
  Sync<HardEvent::V_S>();  // the sums are written before the scalar unit reads them
  bool twoPasses = false;  // ZeroCentredStats's test for each group
  for (int64_t j = 0; j < rows; ++j) {
    const float sum = RowsVector(ROWS_SUM).GetValue(j);
    const float squares = RowsVector(ROWS_M2).GetValue(j);
    bool zero = InSafeRange(sum) && InSafeRange(squares);
    float mean = 0.0f;
    float var = 0.0f;
    if (zero) {
      mean = sum * invM_;
      var = squares * invM_ - mean * mean;
      zero = mean * mean <= var && var >= 0x1p-100f;  // false for NaN
    }
    RowsVector(ROWS_SCALE).SetValue(j, zero ? 0.0f : 1.0f);
    if (zero) {
      RowsVector(ROWS_UP).SetValue(j, mean);
      RowsVector(ROWS_EPS).SetValue(j, var + t_->eps);
    }
    twoPasses = twoPasses || !zero;
  }
  if (twoPasses) {
    if constexpr (IsSameType<T, float>::value) {  // x where the scalar unit reads it, after the copy
      Muls(xF, src, 1.0f, span);
      Sync<HardEvent::V_S>();
    }  // (16-bit: XF() holds the Cast's x, ordered before the scalar unit by the V -> S wait above)
    for (int64_t j = 0; j < rows; ++j) {
      const float shift = xF.GetValue(static_cast<uint32_t>(j * P));  // GroupShift: the first element
      RowsVector(ROWS_SHIFT).SetValue(j, shift);
      RowsVector(ROWS_NEG).SetValue(j, -shift);
    }
    Sync<HardEvent::S_V>();  // -shift is in UB before Brcb reads it
    ChannelTwoPasses(xF, rows);
    Sync<HardEvent::V_S>();  // the sums are written before the scalar unit reads them
    bool rare = false;
    for (int64_t j = 0; j < rows; ++j) {
      if (RowsVector(ROWS_SCALE).GetValue(j) == 0.0f) continue;
      const float sum = RowsVector(ROWS_SUM).GetValue(j);
      const float m2 = RowsVector(ROWS_M2).GetValue(j);
      if (InSafeRange(sum) && InSafeRange(m2)) {
        RowsVector(ROWS_UP).SetValue(j, RowsVector(ROWS_SHIFT).GetValue(j) + RowsVector(ROWS_OFFSET).GetValue(j));
        RowsVector(ROWS_EPS).SetValue(j, m2 * invM_ + t_->eps);
      } else {
        RowsVector(ROWS_SCALE).SetValue(j, SCALE_DOWN);
        rare = true;
      }
    }
    if (rare) {  // the batch again from x * scale (1 for the groups in range: the same values)
      for (int64_t j = 0; j < rows; ++j) {
        RowsVector(ROWS_NEG).SetValue(j, -(RowsVector(ROWS_SHIFT).GetValue(j) * RowsVector(ROWS_SCALE).GetValue(j)));
      }
      Sync<HardEvent::S_V>();  // the factors and -shift are in UB before the vector unit reads them
      StagingToFloat(staging, span, xF, 1.0f);
      RowsApply(xF, xF, RowsVector(ROWS_SCALE), rows, false, t_->rowLen);
      ChannelTwoPasses(xF, rows);
      Sync<HardEvent::V_S>();  // the sums are written before the scalar unit reads them
      for (int64_t j = 0; j < rows; ++j) {
        if (RowsVector(ROWS_SCALE).GetValue(j) != SCALE_DOWN) continue;
        const float shiftScaled = RowsVector(ROWS_SHIFT).GetValue(j) * SCALE_DOWN;
        RowsVector(ROWS_UP).SetValue(j, (shiftScaled + RowsVector(ROWS_OFFSET).GetValue(j)) * SCALE_UP);
        RowsVector(ROWS_EPS).SetValue(j, RowsVector(ROWS_M2).GetValue(j) * invM_ + EpsScaled());
      }
    }
  }
  Sync<HardEvent::S_V>();  // var + eps is in UB before the vector unit reads it
  Sqrt(RowsVector(ROWS_EPS), RowsVector(ROWS_EPS), n);
  Div(RowsVector(ROWS_RSTD), RowsVector(ROWS_ONES), RowsVector(ROWS_EPS), n);
  if (twoPasses) {  // the groups from x itself take y from x again (XF() holds x - mean of the batch)
    for (int64_t j = 0; j < rows; ++j) {
      if (RowsVector(ROWS_SCALE).GetValue(j) == 0.0f) StagingToFloat(staging[j * P], t_->rowLen, xF[j * P], 1.0f);
    }
  }
  Sync<HardEvent::V_S>();  // rstd is written before the scalar unit reads it
  for (int64_t j = 0; j < rows; ++j) {
    const float kind = RowsVector(ROWS_SCALE).GetValue(j);
    const float rstd = RowsVector(ROWS_RSTD).GetValue(j);
    const int64_t c = (q0 + j) % t_->G;  // D == 1: the group's channel
    const float a = rstd * ChannelGamma(c);
    const float mean = RowsVector(ROWS_UP).GetValue(j);
    RowsVector(ROWS_RSTD).SetValue(j, a);
    RowsVector(ROWS_NEG).SetValue(j, kind == 0.0f ? ChannelBeta(c) - mean * a : ChannelBeta(c));
    RecordStats(q0 + j, mean, kind == SCALE_DOWN ? rstd * SCALE_DOWN : rstd, false);
  }
  Sync<HardEvent::S_V>();  // a and b are in UB before Brcb reads them
  RowsApply(xF, twoPasses ? xF : src, RowsVector(ROWS_RSTD), rows, false, t_->rowLen);
  xAheadQue_.FreeTensor(staging);  // x is read: its buffer may take the load after the next
  RowsApply(xF, xF, RowsVector(ROWS_NEG), rows, true, t_->rowLen);
  if (q0 + rows == blockEnd_) FlushStats();  // the block's last mean/rstd ahead of its y (ResidentTask's why)
  StoreRows(q0 * groupElems_, rows, t_->rowLen, span, xF);
}

}  // namespace GroupNormSiluMsKernel

#endif  // GROUP_NORM_SILU_MS_CHANNEL_ROWS_H
