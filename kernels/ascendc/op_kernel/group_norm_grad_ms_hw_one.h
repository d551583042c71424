// Member definitions of KernelGroupNormGradMs (group_norm_grad_ms.h) for mode 3 (HxW == 1):
// runs of whole groups as flat vectors, gamma (and with SILU beta) loaded as rows like the data.
// Included by group_norm_grad_ms.h after the class; not a header of its own.
#ifndef GROUP_NORM_GRAD_MS_HW_ONE_H
#define GROUP_NORM_GRAD_MS_HW_ONE_H

namespace GroupNormGradMsKernel {

// Mode 3 (HxW == 1): a run of whole groups of sample n. Each group's D channels sit in UB
// at a stride of P = D rounded up to 16 elements (DataCopyPad rows), so every per-group
// vector operand starts 32-byte aligned; the groups go through UB in batches of K / P.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::HwOneTask(int64_t task) {
  const int64_t runsPerSample = (t_->G + t_->groupsPerTask - 1) / t_->groupsPerTask;
  const int64_t n = task / runsPerSample;
  const int64_t g0 = (task % runsPerSample) * t_->groupsPerTask;
  const int64_t groups = (t_->G - g0 < t_->groupsPerTask) ? t_->G - g0 : t_->groupsPerTask;
  const int64_t perBatch = t_->chunkElems / AlignUp(t_->D, 16);  // >= 1: K >= D rounded up to 16
  for (int64_t j0 = 0; j0 < groups; j0 += perBatch) {
    HwOneBatch(n, g0 + j0, (groups - j0 < perBatch) ? groups - j0 : perBatch);
  }
}

template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::HwOneBatch(int64_t n, int64_t g0, int64_t rows) {
  const int64_t D = t_->D;
  const int64_t P = AlignUp(D, 16);
  const int32_t span = static_cast<int32_t>(rows * P);
  const int32_t d = static_cast<int32_t>(D);
  const int64_t c0 = g0 * D;
  const int64_t base = n * t_->C + c0;  // HxW == 1: element offset == channel offset
  LocalTensor<float> xF = FloatBuf(0);
  LocalTensor<float> gF = FloatBuf(1);
  LocalTensor<float> gdy = FloatBuf(2);
  LocalTensor<float> sums = FloatBuf(3);                               // per-group sums of gamma*dy, gamma*dg
  LocalTensor<float> dyF = floatOutBuf_.Get<float>();                  // db rows of the workspace
  LocalTensor<float> dgF = floatOutBuf_.Get<float>()[t_->chunkElems];  // dg rows of the workspace
  IssuePaddedRows(rowDyQue_, dyGm_, base, rows, D);
  IssuePaddedRows(rowXQue_, xGm_, base, rows, D);
  if (SILU || t_->dxRequired != 0) IssuePaddedRows(gammaQue_, gammaGm_, c0, rows, D);
  if constexpr (SILU) IssuePaddedRows(betaQue_, betaGm_, c0, rows, D);
  TakeAsFloat<T>(rowDyQue_, span, dyF);
  TakeAsFloat<T>(rowXQue_, span, xF);
  for (int64_t j = 0; j < rows; ++j) {  // xhat, one group at a time
    const int64_t group = n * t_->G + g0 + j;
    const float mean = Stat(true, group);
    const float scale = CentringScale(mean);
    if (scale != 1.0f) Muls(xF[j * P], xF[j * P], scale, d);  // the rare path
    Adds(xF[j * P], xF[j * P], -mean * scale, d);
    Muls(xF[j * P], xF[j * P], XhatFactor(mean, Stat(false, group)), d);
  }
  if constexpr (SILU) {  // dz -> g with gamma and beta rows as vectors: -t = -k * (gamma * xhat + beta)
    TakeAsFloat<U>(gammaQue_, span, gF);
    TakeAsFloat<U>(betaQue_, span, sums);  // beta, until t is formed
    Mul(gdy, gF, xF, span);
    Add(gdy, gdy, sums, span);
    Muls(gdy, gdy, -swishScale_, span);  // -t
    SwishGradFromNegT(dyF, gdy, sums, Ones(), span);
  }
  Mul(dgF, dyF, xF, span);  // per-channel dg (db is dy itself)
  if (t_->needWorkspace != 0) {
    Sync<HardEvent::V_MTE3>();
    StorePaddedRows(wsDbGm_, base, rows, dyF, D);
    StorePaddedRows(wsDgGm_, base, rows, dgF, D);
    Sync<HardEvent::MTE3_V>();  // the vector unit rewrites dgF (and the next batch dyF)
  }
  if (t_->dxRequired == 0) return;
  if constexpr (!SILU) TakeAsFloat<U>(gammaQue_, span, gF);
  Mul(gdy, gF, dyF, span);  // gamma * dy
  Mul(dgF, gF, dgF, span);  // gamma * dy * xhat
  for (int64_t j = 0; j < rows; ++j) {
    ReduceSum(sums[j], gdy[j * P], ReduceWork(), d);
    ReduceSum(sums[rows + j], dgF[j * P], ReduceWork(), d);
  }
  for (int64_t j = 0; j < rows; ++j) {  // dx = rstd * (gamma*dy - xhat*c2 - c1)
    const float rstd = Stat(false, n * t_->G + g0 + j);
    const float c1 = sums.GetValue(j) * invM_;
    const float c2 = sums.GetValue(rows + j) * invM_;
    Muls(xF[j * P], xF[j * P], rstd * c2, d);
    Muls(gdy[j * P], gdy[j * P], rstd, d);
    Adds(gdy[j * P], gdy[j * P], -rstd * c1, d);
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

}  // namespace GroupNormGradMsKernel

#endif  // GROUP_NORM_GRAD_MS_HW_ONE_H
