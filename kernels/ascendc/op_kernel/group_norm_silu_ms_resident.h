// Member definitions of KernelGroupNormSiluMs (group_norm_silu_ms.h) for mode 0
// (group_resident): the group loaded once, two-pass statistics and y from the resident copy.
// Included by group_norm_silu_ms.h after the class; not a header of its own.
#ifndef GROUP_NORM_SILU_MS_RESIDENT_H
#define GROUP_NORM_SILU_MS_RESIDENT_H

namespace GroupNormSiluMsKernel {

// ------------------------------------------------------------------ mode 0: group resident
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::IssueGroupLoad(int64_t task) {
  if (DeepResident()) {
    IssueRows(xDeepQue_, xGm_, task * groupElems_, t_->rows, t_->rowLen);
  } else {
    IssueRows(xAheadQue_, xGm_, task * groupElems_, t_->rows, t_->rowLen);
  }
}

// The oldest group load, once it has landed, and its buffer back to its queue. Each DeQue declares
// what its return reads, so the sync-mutation test's deletion of it does not build; a bare
// `return ...DeQue<T>();` deleted would fall through to the other queue, or off the function's end.
template <typename T, typename U>
__aicore__ inline LocalTensor<T> KernelGroupNormSiluMs<T, U>::TakeGroup() {
  if (DeepResident()) {
    LocalTensor<T> deep = xDeepQue_.template DeQue<T>();
    return deep;
  }
  LocalTensor<T> ahead = xAheadQue_.template DeQue<T>();
  return ahead;
}

template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::FreeGroup(LocalTensor<T> &staging) {
  if (DeepResident()) {
    xDeepQue_.FreeTensor(staging);
  } else {
    xAheadQue_.FreeTensor(staging);
  }
}

// XF() = x - shift - offset (x in src, fp32; offset = the mean of x - shift, returned) and
// Tmp() = XF()^2 for the resident group; *sum is the sum of x - shift.
template <typename T, typename U>
__aicore__ inline float KernelGroupNormSiluMs<T, U>::CentreAndSquare(const LocalTensor<float> &src, float shift,
                                                                  float *sum) {
  const int32_t span = static_cast<int32_t>(t_->rows * t_->rowPitch);
  LocalTensor<float> xF = XF();
  LocalTensor<float> tmp = Tmp();
  Adds(xF, src, -shift, span);
  *sum = SumRows(xF, t_->rows, t_->rowLen);
  const float offset = *sum * invM_;  // mean - shift
  Adds(xF, xF, -offset, span);  // x - mean, kept for y
  Mul(tmp, xF, xF, span);
  return offset;
}

// The statistics of a group whose mean is at most its spread, from x itself (no shift):
// mean = sum x / M and var = sum x^2 / M - mean^2 (Tmp() = x^2). Centring on a shift (the group's
// first element) would round x - shift for every x not near it, each x of one binade with the same
// signed error, and the mean shift + mean(x - shift) would cancel up to ulp(shift) / |mean| when
// the mean is near 0; x and x^2 round on their own. With mean^2 <= var the subtraction cancels at
// most a factor 2. False (nothing recorded) for any other group, or one whose sums are out of the
// safe range or whose variance is below 2^-100 (squares near fp32's underflow): those take the
// two-pass statistics of x - shift.
template <typename T, typename U>
__aicore__ inline bool KernelGroupNormSiluMs<T, U>::ZeroCentredStats(const LocalTensor<float> &src, float *mean,
                                                                   float *var) {
  const int32_t span = static_cast<int32_t>(t_->rows * t_->rowPitch);
  Mul(Tmp(), src, src, span);
  const float sum = SumRows(src, t_->rows, t_->rowLen);
  TakeBlockCoefs();  // the block's first group: its gamma/beta (issued after its x) have landed by now
  const float squares = SumRows(Tmp(), t_->rows, t_->rowLen);  // its V -> S wait also covers gamma/beta
  if (!InSafeRange(sum) || !InSafeRange(squares)) return false;
  *mean = sum * invM_;
  *var = squares * invM_ - *mean * *mean;
  return *mean * *mean <= *var && *var >= 0x1p-100f;  // false for NaN
}

template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::ResidentTask(int64_t task, int64_t end) {
  const int64_t ahead = GroupsAhead();
  const bool loadAhead = task + ahead < end;  // the load `ahead` groups ahead (the ones between are in flight)
  const int64_t g = task % t_->G;
  const int64_t rows = t_->rows;
  const int64_t len = t_->rowLen;
  const int32_t span = static_cast<int32_t>(rows * t_->rowPitch);
  LocalTensor<float> xF = XF();
  LocalTensor<float> tmp = Tmp();
  // x stays in its staging buffer until the statistics are known to be in range (fp32 x is
  // read there, 16-bit x is cast into XF())
  LocalTensor<T> staging = TakeGroup();
  const LocalTensor<float> src = AsFloat(staging, span);
  if (loadAhead && t_->xBuffers > 2) IssueGroupLoad(task + ahead);  // overlaps this group's compute
  const bool taskCoef = t_->coefPerBlock == 0;  // else the block's arrays hold every channel's
  if (taskCoef) {
    IssueRows(gammaQue_, gammaGm_, g * t_->D, 1, t_->D);
    IssueRows(betaQue_, betaGm_, g * t_->D, 1, t_->D);
  }
  float zeroMean = 0.0f;
  float zeroVar = 0.0f;
  const bool zeroCentred = t_->vectorCoef == 0 && ZeroCentredStats(src, &zeroMean, &zeroVar);
  if (taskCoef && t_->vectorCoef == 0) {  // ordered before the scalar reads by Rstd's (or the squares') V -> S
    TakeAsFloat<U>(gammaQue_, t_->coefElems, GammaF());
    TakeAsFloat<U>(betaQue_, t_->coefElems, BetaF());
  }
  if (zeroCentred) {
    // y = x * a_c + (beta_c - mean * a_c), a_c = rstd * gamma_c: two roundings, from x itself
    const float rstd = Rstd(zeroVar, t_->eps);
    RecordStats(task, zeroMean, rstd, false);
    const uint32_t c0 = static_cast<uint32_t>(taskCoef ? 0 : g * t_->D - coefBase_);
    if (t_->bcastElems > 0) {
      RowsScaleShift(xF, rstd, c0, src, zeroMean);
    } else {
      for (int64_t r = 0; r < rows; ++r) {
        Muls(xF[r * t_->rowPitch], src[r * t_->rowPitch], rstd * GammaF().GetValue(c0 + r),
             static_cast<int32_t>(t_->rowPitch));
      }
    }
    FreeGroup(staging);  // x is read (the Muls above): its buffer may take the next load
    if (loadAhead && t_->xBuffers == 2) IssueGroupLoad(task + ahead);
    if (t_->bcastElems == 0) {
      for (int64_t r = 0; r < rows; ++r) {
        const float a = rstd * GammaF().GetValue(c0 + r);
        Adds(xF[r * t_->rowPitch], xF[r * t_->rowPitch], BetaF().GetValue(c0 + r) - zeroMean * a,
             static_cast<int32_t>(t_->rowPitch));
      }
    }
    if (task + 1 == end) FlushStats();  // the block's last statistics ahead of its last y (see below)
    StoreRows(task * groupElems_, rows, len, span, xF);
    return;
  }
  const float shift = GroupShift(task);
  float sum = 0.0f;
  float offset = CentreAndSquare(src, shift, &sum);
  if (taskCoef && t_->vectorCoef != 0) {
    TakeAsFloat<U>(gammaQue_, t_->coefElems, GammaF());
    TakeAsFloat<U>(betaQue_, t_->coefElems, BetaF());
  }
  TakeBlockCoefs();  // the block's first group: its gamma/beta (issued after its x) have landed by now
  const float m2 = SumRows(tmp, rows, len);  // its V -> S wait also covers gamma/beta
  float rstd = 0.0f;
  if (InSafeRange(sum) && InSafeRange(m2)) {
    rstd = Rstd(m2 * invM_, t_->eps);
    RecordStats(task, shift + offset, rstd, false);
  } else {  // the rare path: the group again from x * SCALE_DOWN, y from the scaled copy
    StagingToFloat(staging, span, xF, SCALE_DOWN);
    const float shiftScaled = shift * SCALE_DOWN;
    offset = CentreAndSquare(xF, shiftScaled, &sum);
    rstd = Rstd(SumRows(tmp, rows, len) * invM_, EpsScaled());
    RecordStats(task, (shiftScaled + offset) * SCALE_UP, rstd * SCALE_DOWN, false);
  }
  FreeGroup(staging);
  if (loadAhead && t_->xBuffers == 2) IssueGroupLoad(task + ahead);
  if (t_->vectorCoef != 0) {
    Muls(xF, xF, rstd, span);
    Mul(xF, xF, GammaF(), span);
    Add(xF, xF, BetaF(), span);
  } else if (t_->bcastElems > 0) {
    RowsScaleShift(xF, rstd, static_cast<uint32_t>(taskCoef ? 0 : g * t_->D - coefBase_), xF, 0.0f);
  } else {
    const int32_t pitch = static_cast<int32_t>(t_->rowPitch);
    const uint32_t c0 = static_cast<uint32_t>(taskCoef ? 0 : g * t_->D - coefBase_);  // the group's first channel in the arrays
    // every row's Muls, then every row's Adds: an Adds depends only on its own row's Muls, so the
    // compiler's V barrier comes once, not once a row (a group of many short rows pays for it)
    for (int64_t r = 0; r < rows; ++r) {
      Muls(xF[r * t_->rowPitch], xF[r * t_->rowPitch], rstd * GammaF().GetValue(c0 + r), pitch);
    }
    for (int64_t r = 0; r < rows; ++r) {
      Adds(xF[r * t_->rowPitch], xF[r * t_->rowPitch], BetaF().GetValue(c0 + r), pitch);
    }
  }
  // The block's last mean/rstd leave before its last y, not after: they are known by now, and the
  // block ends a latency after its last store, so y going last keeps their transfers off the end.
  if (task + 1 == end) FlushStats();
  StoreRows(task * groupElems_, rows, len, span, xF);
}

// xF = xF * (rstd * gamma_c) + beta_c for every row c of a group of short rows (rowLen <= 64:
// one repeat a row; c0 = its first channel in the gamma/beta arrays, a multiple of 8): the rows'
// gamma and beta broadcast into one 32-byte block each (Brcb, asc-devkit docs .../数据填充/Brcb.md),
// the scales times rstd, then one Mul and one Add over all the rows, whose second source reads
// its row's block in every one of its 8 DataBlocks (block stride 0 reuses the first DataBlock,
// .../SIMD计算说明/高维切分.md) and the next row's block at the next repeat. Instead of a Muls and
// an Adds a row: the same products and sums, in 5 vector instructions a group.
// From ZeroCentredStats: src is x itself and the shifts are beta_c - mean * rstd * gamma_c (Tmp() holds
// the products); from the two-pass statistics src is x - mean in xF and `mean` is 0.
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::RowsScaleShift(const LocalTensor<float> &xF, float rstd,
                                                                uint32_t c0, const LocalTensor<float> &src,
                                                                float mean) {
  const int64_t rows = t_->rows;
  const int64_t rows8 = (rows + FLOATS_PER_BLOCK - 1) / FLOATS_PER_BLOCK * FLOATS_PER_BLOCK;
  LocalTensor<float> scale = bcastBuf_.Get<float>();
  LocalTensor<float> shift = bcastBuf_.Get<float>()[FLOATS_PER_BLOCK * rows8];
  const uint8_t brcbRepeats = RepeatTimes(rows8 / FLOATS_PER_BLOCK);
  Brcb(scale, GammaF()[c0], brcbRepeats, BrcbRepeatParams(1, 8));
  Brcb(shift, BetaF()[c0], brcbRepeats, BrcbRepeatParams(1, 8));
  Muls(scale, scale, rstd, static_cast<int32_t>(FLOATS_PER_BLOCK * rows));
  if (mean != 0.0f) {  // (a span of the group is at least 8 floats a row: Tmp() holds them)
    Muls(Tmp(), scale, mean, static_cast<int32_t>(FLOATS_PER_BLOCK * rows));
    Sub(shift, shift, Tmp(), static_cast<int32_t>(FLOATS_PER_BLOCK * rows));
  }
  const uint8_t pitch = BlockStride(t_->rowPitch / FLOATS_PER_BLOCK);  // blocks between rows (<= 8)
  const BinaryRepeatParams params(1, 1, 0, pitch, pitch, 1);
  Mul(xF, src, scale, static_cast<uint64_t>(t_->rowLen), RepeatTimes(rows), params);
  Add(xF, xF, shift, static_cast<uint64_t>(t_->rowLen), RepeatTimes(rows), params);
}

}  // namespace GroupNormSiluMsKernel

#endif  // GROUP_NORM_SILU_MS_RESIDENT_H
