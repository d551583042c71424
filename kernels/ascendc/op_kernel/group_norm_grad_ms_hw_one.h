// Member definitions of KernelGroupNormGradMs (group_norm_grad_ms.h) for mode 3 (HxW == 1):
// runs of whole groups as flat vectors, gamma (and with SILU beta) loaded as rows like the data
// (one sample's rows a batch of whole samples, copied in UB: HwOneTakeAffine).
// Included by group_norm_grad_ms.h after the class; not a header of its own.
#ifndef GROUP_NORM_GRAD_MS_HW_ONE_H
#define GROUP_NORM_GRAD_MS_HW_ONE_H

namespace GroupNormGradMsKernel {

// Mode 3 (HxW == 1): a run of whole groups of sample n. Each group's D channels sit in UB
// at a stride of P = D rounded up to 16 elements (DataCopyPad rows), so every per-group
// vector operand starts 32-byte aligned; the groups go through UB in batches of K / P.
// With hwOneSamples, a task is a run of that many whole samples in batches of whole samples:
// each sample's db (dy itself) and dg rows are added, in sample order, to the task's per-channel
// sums (hwAccBuf_), stored as workspace row `task` at its end; stage 2 adds the rows of the tasks.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::HwOneTask(int64_t task) {
  const int64_t perBatch = t_->chunkElems / AlignUp(t_->D, 16);  // >= 1: K >= D rounded up to 16
  if (t_->hwOneSamples > 0) {
    const int64_t width = t_->G * AlignUp(t_->D, 16);  // a sample's rows; perBatch is a multiple of G
    const int64_t taskRows = t_->hwOneSamples * t_->G;
    const int64_t q0 = task * taskRows;
    const int64_t groups = (t_->N * t_->G - q0 < taskRows) ? t_->N * t_->G - q0 : taskRows;
    LocalTensor<float> acc = hwAccBuf_.Get<float>();
    Duplicate(acc, 0.0f, static_cast<int32_t>(2 * width));
    for (int64_t j0 = 0; j0 < groups; j0 += perBatch) {
      HwOneBatch(q0 + j0, (groups - j0 < perBatch) ? groups - j0 : perBatch);
    }
    Sync<HardEvent::V_MTE3>();
    StorePaddedRows(wsDbGm_, task * t_->C, t_->G, acc, t_->D);
    StorePaddedRows(wsDgGm_, task * t_->C, t_->G, acc[width], t_->D);
    Sync<HardEvent::MTE3_V>();  // the next task's Duplicate rewrites the sums
    return;
  }
  const int64_t runsPerSample = (t_->G + t_->groupsPerTask - 1) / t_->groupsPerTask;
  const int64_t n = task / runsPerSample;
  const int64_t g0 = (task % runsPerSample) * t_->groupsPerTask;
  const int64_t groups = (t_->G - g0 < t_->groupsPerTask) ? t_->G - g0 : t_->groupsPerTask;
  for (int64_t j0 = 0; j0 < groups; j0 += perBatch) {
    HwOneBatch(n * t_->G + g0 + j0, (groups - j0 < perBatch) ? groups - j0 : perBatch);
  }
}

// gamma (or beta) rows of groups q0 .. q0 + rows - 1 (group q's row is g = q % G), P apart, into
// a buffer of `que`: one DMA a sample the rows touch (one for a run within a sample).
template <typename T, typename U, bool SILU>
template <typename Que>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::IssueAffineRows(Que &que, const GlobalTensor<U> &src,
                                                                          int64_t q0, int64_t rows) {
  const int64_t P = AlignUp(t_->D, 16);
  LocalTensor<U> staging = que.template AllocTensor<U>();
  for (int64_t j = 0; j < rows;) {
    const int64_t g = (q0 + j) % t_->G;
    const int64_t piece = (t_->G - g < rows - j) ? t_->G - g : rows - j;
    LoadPaddedRows(staging[j * P], src, g * t_->D, piece, t_->D);
    j += piece;
  }
  que.EnQue(staging);
}

// With hwOneSamples a batch is whole samples from a sample's first group and every sample's gamma
// (beta) rows are the same G rows: they are loaded once and copied sample to sample in UB, doubling
// the copied run each step (log2 of the batch's samples instructions). Muls by 1.0f is exact, so
// the values are those a per-sample load gives, bit for bit.
template <typename T, typename U, bool SILU>
template <typename Que>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::HwOneTakeAffine(Que &que, const LocalTensor<float> &dst,
                                                                          int64_t rows) {
  const int64_t P = AlignUp(t_->D, 16);
  const int64_t loaded = HwOneAffineRows(rows) * P;
  const int64_t span = rows * P;
  TakeAsFloat<U>(que, loaded, dst);
  for (int64_t have = loaded; have < span; have *= 2) {
    const int64_t n = (span - have < have) ? span - have : have;
    Muls(dst[have], dst, 1.0f, static_cast<int32_t>(n));
  }
}

template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::HwOneBatch(int64_t q0, int64_t rows) {
  const int64_t D = t_->D;
  const int64_t P = AlignUp(D, 16);
  const int32_t span = static_cast<int32_t>(rows * P);
  const int32_t d = static_cast<int32_t>(D);
  const int64_t base = q0 * D;  // HxW == 1: group q's elements start at q * D
  LocalTensor<float> xF = FloatBuf(0);
  LocalTensor<float> gF = FloatBuf(1);
  LocalTensor<float> gdy = FloatBuf(2);
  LocalTensor<float> sums = FloatBuf(3);                               // per-group sums of gamma*dy, gamma*dg
  LocalTensor<float> dyF = floatOutBuf_.Get<float>();                  // db rows of the workspace
  LocalTensor<float> dgF = floatOutBuf_.Get<float>()[t_->chunkElems];  // dg rows of the workspace
  IssuePaddedRows(rowDyQue_, dyGm_, base, rows, D);
  IssuePaddedRows(rowXQue_, xGm_, base, rows, D);
  // gamma (beta) rows: with whole samples a batch, one sample's G rows (G bursts a batch, not a
  // burst a group: 8000x64 G32 moved ~5,300 gamma bursts a core of its ~21,500), copied in UB
  if (SILU || t_->dxRequired != 0) IssueAffineRows(gammaQue_, gammaGm_, q0, HwOneAffineRows(rows));
  if constexpr (SILU) IssueAffineRows(betaQue_, betaGm_, q0, HwOneAffineRows(rows));
  TakeAsFloat<T>(rowDyQue_, span, dyF);
  TakeAsFloat<T>(rowXQue_, span, xF);
  const bool vectorCoefficients = HwOneVectorCoefficients(rows);
  const int64_t r8 = HwOneRows8(rows);
  if (vectorCoefficients) {  // xhat of every group at once, from the same products and sums
    Sync<HardEvent::V_S>();  // the previous batch's Brcb reads of the scalar arrays are done
    bool scaled = false;
    for (int64_t j = 0; j < rows; ++j) {
      const float mean = Stat(true, q0 + j);
      const float scale = CentringScale(mean);
      scaled = scaled || scale != 1.0f;
      sums.SetValue(2 * r8 + j, scale);
      sums.SetValue(3 * r8 + j, -mean * scale);
      sums.SetValue(4 * r8 + j, XhatFactor(mean, Stat(false, q0 + j)));
    }
    Sync<HardEvent::S_V>();  // Brcb reads the scalars
    if (scaled) HwOneApply(xF, 0, rows, false);  // the rare path (x * 1 is x for the other groups)
    HwOneApply(xF, 1, rows, true);
    HwOneApply(xF, 2, rows, false);
  } else {
    for (int64_t j = 0; j < rows; ++j) {  // xhat, one group at a time
      const int64_t group = q0 + j;
      const float mean = Stat(true, group);
      const float scale = CentringScale(mean);
      if (scale != 1.0f) Muls(xF[j * P], xF[j * P], scale, d);  // the rare path
      Adds(xF[j * P], xF[j * P], -mean * scale, d);
      Muls(xF[j * P], xF[j * P], XhatFactor(mean, Stat(false, group)), d);
    }
  }
  if constexpr (SILU) {  // dz -> g with gamma and beta rows as vectors: -t = -k * (gamma * xhat + beta)
    HwOneTakeAffine(gammaQue_, gF, rows);
    HwOneTakeAffine(betaQue_, sums, rows);  // beta, until t is formed
    Mul(gdy, gF, xF, span);
    Add(gdy, gdy, sums, span);
    Muls(gdy, gdy, -swishScale_, span);  // -t
    SwishGradFromNegT(dyF, gdy, sums, Ones(), span);
  }
  Mul(dgF, dyF, xF, span);  // per-channel dg (db is dy itself)
  if (t_->hwOneSamples > 0) {  // each sample's rows added to the task's sums at once, in sample order
    const int64_t width = t_->G * P;
    LocalTensor<float> acc = hwAccBuf_.Get<float>();
    for (int64_t s = 0; s < rows; s += t_->G) {
      Add(acc, acc, dyF[s * P], static_cast<int32_t>(width));
      Add(acc[width], acc[width], dgF[s * P], static_cast<int32_t>(width));
    }
  } else if (t_->needWorkspace != 0) {
    Sync<HardEvent::V_MTE3>();
    StorePaddedRows(wsDbGm_, base, rows, dyF, D);
    StorePaddedRows(wsDgGm_, base, rows, dgF, D);
    Sync<HardEvent::MTE3_V>();  // the vector unit rewrites dgF (and the next batch dyF)
  }
  if (t_->dxRequired == 0) return;
  if constexpr (!SILU) HwOneTakeAffine(gammaQue_, gF, rows);
  Mul(gdy, gF, dyF, span);  // gamma * dy
  Mul(dgF, gF, dgF, span);  // gamma * dy * xhat
  if (vectorCoefficients) {  // the sums by WholeReduceSum: ReduceSum's lanes and tree for D <= 64
    const RowSumOperands both[2] = {{sums, gdy, ReduceWork()}, {sums[r8], dgF, ReduceWork()}};
    RowSums(both, 2, rows, P, d, 0);
    // Only rstd goes through the scalar unit (a read and a write a group, not 6: 8000x64 G32 had
    // ~58,700 scalar UB accesses a core); c1 = sum * invM, rstd * c2 and -(rstd * c1) are formed by
    // the vector unit over the batch, each element the same fp32 products as the scalar forms
    // (-rstd * c1 is -(rstd * c1) exactly).
    Sync<HardEvent::V_S>();  // the first part's Brcb reads of the rstd slot are done
    for (int64_t j = 0; j < rows; ++j) sums.SetValue(3 * r8 + j, Stat(false, q0 + j));
    Sync<HardEvent::S_V>();  // the vector unit reads the rstd slot
    const int32_t n = static_cast<int32_t>(rows);
    Muls(sums[2 * r8], sums[r8], invM_, n);    // c2
    Mul(sums[2 * r8], sums[2 * r8], sums[3 * r8], n);  // rstd * c2
    Muls(sums[4 * r8], sums, invM_, n);        // c1
    Mul(sums[4 * r8], sums[4 * r8], sums[3 * r8], n);  // rstd * c1
    Muls(sums[4 * r8], sums[4 * r8], -1.0f, n);
    HwOneApply(xF, 0, rows, false);
    HwOneApply(gdy, 1, rows, false);
    HwOneApply(gdy, 2, rows, true);
  } else {
    for (int64_t j = 0; j < rows; ++j) {
      ReduceSum(sums[j], gdy[j * P], ReduceWork(), d);
      ReduceSum(sums[rows + j], dgF[j * P], ReduceWork(), d);
    }
    for (int64_t j = 0; j < rows; ++j) {  // dx = rstd * (gamma*dy - xhat*c2 - c1)
      const float rstd = Stat(false, q0 + j);
      const float c1 = sums.GetValue(j) * invM_;
      const float c2 = sums.GetValue(rows + j) * invM_;
      Muls(xF[j * P], xF[j * P], rstd * c2, d);
      Muls(gdy[j * P], gdy[j * P], rstd, d);
      Adds(gdy[j * P], gdy[j * P], -rstd * c1, d);
    }
  }
  Sub(gdy, gdy, xF, span);
  LocalTensor<T> staging = dxQue_.template AllocTensor<T>();
  if constexpr (IsSameType<T, float>::value) {
    Muls(staging, gdy, 1.0f, span);
  } else {
    Cast(staging, gdy, RoundMode::CAST_RINT, static_cast<uint32_t>(span));
  }
  dxQue_.EnQue(staging);
  staging = dxQue_.template DeQue<T>();
  StorePaddedRows(dxGm_, base, rows, staging, D);
  dxQue_.FreeTensor(staging);
}

// Coefficient k of the batch's groups (FloatBuf(3) from 2 * r8 + k * r8), each broadcast into a
// 32-byte block (Brcb: 8 groups a repeat), then one Mul (Add) over up to HW_ONE_PIECE groups, a
// repeat a group of D <= 64 elements (RowBlockParams): each element the fp32 product (sum) of the
// same two values as a per-group Muls (Adds), so the bits are those of the per-group path.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::HwOneApply(const LocalTensor<float> &dst, int64_t k,
                                                                     int64_t rows, bool add) {
  const int64_t P = AlignUp(t_->D, 16);
  const int64_t r8 = HwOneRows8(rows);
  LocalTensor<float> scalars = FloatBuf(3)[2 * r8 + k * r8];
  LocalTensor<float> blocks = FloatBuf(3)[5 * r8];
  const BrcbRepeatParams brcb(1, 8);  // 8 consecutive blocks a repeat
  const BinaryRepeatParams params = RowBlockParams(P);
  const uint64_t mask = static_cast<uint64_t>(t_->D);
  for (int64_t r0 = 0; r0 < rows; r0 += HW_ONE_PIECE) {
    const int64_t n = (rows - r0 < HW_ONE_PIECE) ? rows - r0 : HW_ONE_PIECE;
    Brcb(blocks, scalars[r0], static_cast<uint8_t>(HwOneRows8(n) / FLOATS_PER_BLOCK), brcb);
    if (add) {
      Add(dst[r0 * P], dst[r0 * P], blocks, mask, static_cast<uint8_t>(n), params);
    } else {
      Mul(dst[r0 * P], dst[r0 * P], blocks, mask, static_cast<uint8_t>(n), params);
    }
  }
}

}  // namespace GroupNormGradMsKernel

#endif  // GROUP_NORM_GRAD_MS_HW_ONE_H
