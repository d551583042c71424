// The swish gradient of the fused GroupNormSiluGradMs backward, on the vector unit.
//
// The forward is z = y * sigmoid(t), t = k * y, y = gamma_c * xhat + beta_c (k = swish_scale;
// k = 1 is SiLU). Its backward is GroupNorm's with dy replaced by
//   g = dz * dz/dy = dz * s * (1 + t * (1 - s)),   s = sigmoid(t) = 1 / (1 + exp(-t)),
// the form of the CPU kernels (kernels/cpu/silu_rows.h). The kernel class computes -t from
// xhat (AffineT with -k) and g over dz (SwishGradFromNegT); everything is fp32 in UB.
//
// Overflow: exp(-t) overflows to inf for t < about -88.7; then s = 1 / inf = 0, 1 - s = 1 and
// g = (dz * 0) * (1 + t) = 0 with no inf / inf and no 0 * inf (1 - s is computed as 1 - s, not
// as exp(-t) * s). In the saturation mode inf becomes FLT_MAX, s = 1 / FLT_MAX, g is tiny
// and finite. t itself is finite for finite inputs (|k * y| is far below FLT_MAX).
//
// Vector instructions used (count forms, A2; asc-devkit include/basic_api
// kernel_operator_vec_binary_scalar_intf.h Muls/Adds, kernel_operator_vec_unary_intf.h Exp,
// kernel_operator_vec_binary_intf.h Mul/Sub/Div). Dependent V -> V ordering is inserted by
// --cce-auto-sync on 2201, as for the rest of the kernel.
#ifndef SWISH_GRAD_MATH_H
#define SWISH_GRAD_MATH_H

#include "kernel_operator.h"

namespace GroupNormGradMsKernel {
using namespace AscendC;

// k * (gamma_c * xhat + beta_c) for `rows` rows (t, or -t with -k) of `len` elements `stride` apart (one
// channel each, the row's UB padding included so that every element of the span is defined
// from xhat): gk = k * gamma_c and bk = k * beta_c, read by the scalar unit. Every row's Muls,
// then every row's Adds: each Adds depends on its row's Muls, so in row order the compiler puts
// a V barrier before every Adds; in this order one barrier serves them all (same values).
// shift: `xhat` holds xhat + shift (the backward's centring, group_norm_grad_ms_common.h
// CentringOf); t is then formed from xhat + shift - shift, one more instruction (none for 0).
__aicore__ inline void AffineT(const LocalTensor<float> &t, const LocalTensor<float> &xhat,
                               const LocalTensor<float> &gamma, const LocalTensor<float> &beta, int64_t index,
                               float k, int64_t rows, int64_t stride, int32_t len, float shift = 0.0f) {
  if (shift != 0.0f) Adds(t, xhat, -shift, static_cast<int32_t>((rows - 1) * stride + len));
  const LocalTensor<float> &from = shift != 0.0f ? t : xhat;
  for (int64_t r = 0; r < rows; ++r) {
    Muls(t[r * stride], from[r * stride], gamma.GetValue(index + r) * k,
         r + 1 < rows ? static_cast<int32_t>(stride) : len);
  }
  for (int64_t r = 0; r < rows; ++r) {
    Adds(t[r * stride], t[r * stride], beta.GetValue(index + r) * k, r + 1 < rows ? static_cast<int32_t>(stride) : len);
  }
}

// dz becomes g = dz * s * (1 + t (1 - s)), s = 1 / (1 + exp(-t)), from u = -t (the callers form
// u directly: AffineT with -k, or mode 3's Muls by -k; negating the scale negates each rounded
// product and sum exactly, so u is -t to the bit). `w` is scratch, `ones` holds 1.0 in at least
// `count` elements. u is left unchanged. 8 instructions: with t itself, exp(-t) took a Muls by -1
// first, and 1 + t (1 - s) is 1 - u (1 - s) with the same rounding (x - (-a) is x + a exactly).
__aicore__ inline void SwishGradFromNegT(const LocalTensor<float> &dz, const LocalTensor<float> &u,
                                         const LocalTensor<float> &w, const LocalTensor<float> &ones, int32_t count) {
  Exp(w, u, count);          // exp(-t), inf when -t > ~88.7
  Adds(w, w, 1.0f, count);
  Div(w, ones, w, count);    // s
  Mul(dz, dz, w, count);     // dz * s
  Sub(w, ones, w, count);    // 1 - s (exactly 1 when s = 0)
  Mul(w, w, u, count);       // -t (1 - s)
  Sub(w, ones, w, count);    // 1 + t (1 - s)
  Mul(dz, dz, w, count);     // g
}

}  // namespace GroupNormGradMsKernel

#endif  // SWISH_GRAD_MATH_H
