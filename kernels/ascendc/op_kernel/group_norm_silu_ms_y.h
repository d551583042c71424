// Member definitions of KernelGroupNormSiluMs (group_norm_silu_ms.h) for y on its way out, in
// every mode: x as fp32 for the vector unit, the activation, the y staging buffers and their
// stores. Included by group_norm_silu_ms.h after the class; not a header of its own.
#ifndef GROUP_NORM_SILU_MS_Y_H
#define GROUP_NORM_SILU_MS_Y_H

namespace GroupNormSiluMsKernel {

// y (fp32 in src before the activation, `count` elements at the UB pitch) to GM as `rows` rows
// of `len` elements; Tmp() is scratch.
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::StoreRows(int64_t offset, int64_t rows, int64_t len,
                                                           int64_t count, const LocalTensor<float> &src) {
  LocalTensor<T> staging = yQue_.template AllocTensor<T>();
  OutputY(src, static_cast<int32_t>(count), staging);
  SendY(staging, offset, rows, len);
}

// The activation of `count` elements of y (fp32 in y, overwritten) into a y staging buffer in x's
// dtype: y * sigmoid(s * y) = y / (1 + exp(-s * y)), with Tmp() as the denominator (exp overflow
// gives y / inf = 0, the limit). In fp32 the last instruction writes the staging buffer itself (no
// copy); 16-bit data is rounded to nearest even by one Cast.
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::OutputY(const LocalTensor<float> &y, int32_t count,
                                                         const LocalTensor<T> &staging) {
  if (t_->activateSilu == 0) {
    PutY(staging, y, count);
    return;
  }
  const LocalTensor<float> tmp = SiluDenominator(y, count);
  if constexpr (IsSameType<T, float>::value) {
    Div(staging, y, tmp, count);
  } else {
    Div(y, y, tmp, count);
    PutY(staging, y, count);
  }
}

// Tmp() = 1 + exp(-s * y) over `count` elements of y: the denominator of the activation.
template <typename T, typename U>
__aicore__ inline LocalTensor<float> KernelGroupNormSiluMs<T, U>::SiluDenominator(const LocalTensor<float> &y,
                                                                                 int32_t count) {
  LocalTensor<float> tmp = Tmp();
  Muls(tmp, y, -t_->swishScale, count);
  Exp(tmp, tmp, count);
  Adds(tmp, tmp, 1.0f, count);
  return tmp;
}

// x (a staging view, `len` elements) as fp32 for the vector unit: the view itself in fp32, else
// its Cast into XF().
template <typename T, typename U>
__aicore__ inline LocalTensor<float> KernelGroupNormSiluMs<T, U>::AsFloat(const LocalTensor<T> &x, int64_t len) {
  if constexpr (IsSameType<T, float>::value) {
    return x;
  } else {
    StagingToFloat(x, len, XF(), 1.0f);
    return XF();
  }
}

// `count` elements of y (fp32 in src) into a y staging buffer, in x's dtype.
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::PutY(const LocalTensor<T> &staging, const LocalTensor<float> &src,
                                                      int64_t count) {
  if constexpr (IsSameType<T, float>::value) {
    Muls(staging, src, 1.0f, static_cast<int32_t>(count));
  } else {
    Cast(staging, src, RoundMode::CAST_RINT, static_cast<uint32_t>(count));
  }
}

// A filled y staging buffer to GM as `rows` rows of `len` elements (at the UB pitch), and back to
// the queue.
template <typename T, typename U>
__aicore__ inline void KernelGroupNormSiluMs<T, U>::SendY(LocalTensor<T> &staging, int64_t offset, int64_t rows,
                                                       int64_t len) {
  yQue_.EnQue(staging);
  staging = yQue_.template DeQue<T>();
  DataCopyPad(yGm_[offset], staging, RowsCopy<T>(rows, len));
  yQue_.FreeTensor(staging);
}

}  // namespace GroupNormSiluMsKernel

#endif  // GROUP_NORM_SILU_MS_Y_H
