// Member definitions of KernelGroupNormGradMs (group_norm_grad_ms.h) for modes 0-2: the
// per-channel sums db, dg of a task's channels and their dx, over the items of the load stream;
// with SILU the swish gradient g replaces dy right after xhat is formed (swish_grad_math.h).
// Included by group_norm_grad_ms.h after the class; not a header of its own.
#ifndef GROUP_NORM_GRAD_MS_CHANNELS_H
#define GROUP_NORM_GRAD_MS_CHANNELS_H

namespace GroupNormGradMsKernel {

// db and dg of `channels` channels into db[0..channels) and dg[0..channels) (V writes, or
// S writes when a channel has several chunks). Mode 0 keeps dy and x - mean resident.
// SILU: affineIndex is channel c0's index in the loaded gamma/beta arrays (LoadAffine).
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::ChannelSums(
    int64_t n, int64_t c0, int64_t channels, float mean, float rstd, const LocalTensor<float> &db,
    const LocalTensor<float> &dg, int64_t affineIndex) {
  const int64_t chunks = t_->chunksPerChannel;
  const bool resident = t_->mode == GNG_MODE_GROUP_RESIDENT;
  const int64_t cpi = resident ? t_->channelsPerItem : 1;  // channels per item (mode 0: one DMA)
  const int64_t items = (channels + cpi - 1) / cpi * chunks;
  const int64_t stride = t_->residentStride;
  LocalTensor<float> red = ReduceDst();
  CascadeSum dbSum;
  CascadeSum dgSum;
  dbSum.Reset();
  dgSum.Reset();
  for (int64_t item = 0; item < items; ++item) {
    const int64_t local = (item / chunks) * cpi;
    const int64_t chunk = item % chunks;
    const int32_t len = static_cast<int32_t>(ItemLen(chunk));
    const int64_t rows = (channels - local < cpi) ? channels - local : cpi;
    const int32_t span = static_cast<int32_t>((rows - 1) * stride + len);
    LocalTensor<float> dyF = resident ? ResidentDy(local) : FloatBuf(0);
    LocalTensor<float> xF = resident ? ResidentX(local) : FloatBuf(1);
    LocalTensor<float> tmp = FloatBuf(resident ? 0 : 2);
    TakeItem(span, mean, dyF, xF);
    Muls(xF, xF, XhatFactor(mean, rstd), span);  // xhat
    if constexpr (SILU) {  // dz -> g (mode 0: the resident dy, once for both passes); t in tmp
      AffineT(tmp, xF, StatArray(2), BetaArray(), affineIndex + local, swishScale_, rows, stride, len);
      SwishGradFromT(dyF, tmp, FloatBuf(resident ? 1 : 3), Ones(), span);
    }
    Mul(tmp, dyF, xF, span);
    if (chunks == 1) {
      RowSums(db[local], dyF, rows, stride, len, ReduceWork());
      RowSums(dg[local], tmp, rows, stride, len, ReduceWork());
      continue;
    }
    ReduceSum(red, dyF, ReduceWork(), len);  // each ends with its scalar store (V -> S inside)
    ReduceSum(red[1], tmp, ReduceWork(), len);
    dbSum.Add(red.GetValue(0));
    dgSum.Add(red.GetValue(1));
    if (chunk == chunks - 1) {
      db.SetValue(local, dbSum.Total());
      dg.SetValue(local, dgSum.Total());
      dbSum.Reset();
      dgSum.Reset();
    }
  }
  if (chunks > 1) Sync<HardEvent::S_V>();  // vector and MTE3 readers of db/dg follow the scalar writes
}

// dx of `channels` channels of sample n: dx = a_c * dy - b * xhat - e with a_c = rstd * gamma_c.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::ChannelDx(
    int64_t n, int64_t c0, int64_t channels, float mean, float rstd, const LocalTensor<float> &gamma,
    int64_t gammaIndex, float b, float e) {
  const bool aligned = t_->copyAligned != 0;
  if (t_->mode == GNG_MODE_GROUP_RESIDENT) {  // items of channelsPerItem channels, one store each
    const int32_t L = static_cast<int32_t>(t_->HxW);
    const int64_t cpi = t_->channelsPerItem;
    const int64_t stride = t_->residentStride;
    LocalTensor<float> tmp = FloatBuf(0);
    for (int64_t local = 0; local < channels; local += cpi) {
      const int64_t rows = (channels - local < cpi) ? channels - local : cpi;
      const int32_t span = static_cast<int32_t>((rows - 1) * stride + L);
      LocalTensor<float> dyRes = ResidentDy(local);
      for (int64_t r = 0; r < rows; ++r) {
        Muls(dyRes[r * stride], dyRes[r * stride], rstd * gamma.GetValue(gammaIndex + local + r), L);
      }
      Muls(tmp, ResidentX(local), b, span);
      Sub(dyRes, dyRes, tmp, span);
      StoreFromFloat(dxQue_, dxGm_, (n * t_->C + c0 + local) * t_->HxW, L, dyRes, -e, aligned, rows);
    }
    return;
  }
  const int64_t chunks = t_->chunksPerChannel;
  const int64_t items = channels * chunks;
  LocalTensor<float> dyF = FloatBuf(0);
  LocalTensor<float> xF = FloatBuf(1);
  for (int64_t item = 0; item < items; ++item) {
    const int64_t local = item / chunks;
    const int64_t chunk = item % chunks;
    const int32_t len = static_cast<int32_t>(ItemLen(chunk));
    TakeItem(len, mean, dyF, xF);
    if constexpr (SILU) {  // the dx pass recomputes g from xhat as the sums pass did
      Muls(xF, xF, XhatFactor(mean, rstd), len);  // xhat
      AffineT(FloatBuf(2), xF, gamma, BetaArray(), gammaIndex + local, swishScale_, 1, 0, len);
      SwishGradFromT(dyF, FloatBuf(2), FloatBuf(3), Ones(), len);
      Muls(xF, xF, b, len);
    } else {
      Muls(xF, xF, XhatFactor(mean, rstd) * b, len);  // rstd * (x - mean) * b = xhat * b
    }
    Muls(dyF, dyF, rstd * gamma.GetValue(gammaIndex + local), len);
    Sub(dyF, dyF, xF, len);
    StoreFromFloat(dxQue_, dxGm_, (n * t_->C + c0 + local) * t_->HxW + chunk * t_->chunkElems, len, dyF, -e,
                   aligned);
  }
}

}  // namespace GroupNormGradMsKernel

#endif  // GROUP_NORM_GRAD_MS_CHANNELS_H
