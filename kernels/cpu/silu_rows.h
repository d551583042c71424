// The inner loops of the fused GroupNorm + SiLU kernels (group_norm_silu_cpu.h), one
// contiguous channel row at a time, behind a table of function pointers per ISA build,
// like row_kernels.h (whose statistics loops the fused forward reuses unchanged).
//
// swish_k is the swish scale k of z = y * sigmoid(k * y), y = (x - mu) * scale + shift
// (scale = rstd * gamma, shift = beta); k = 1 is SiLU. The backward recomputes y and
// sigmoid(k * y) from x instead of reading a stored y:
//   dz/dy = s + k*y * s * (1 - s) = s * (1 + t * (1 - s)),  s = sigmoid(t), t = k * y.
//
// Bit-identical for any thread count by construction (silu_rows_impl.h): every element,
// tails included, goes through the same lane-wise vector operations (a partial vector is
// padded, its extra lanes masked), sigmoid uses this project's own exp (no libm call,
// whose result could differ between platforms), fp-contract is off (a * b + c is fused
// only by MulAdd, in the FMA builds, so the builds differ by that rounding), and the sums follow
// row_kernels.h's discipline exactly: kLanes float lanes per kBlock block (tail to lanes
// 0, 1, ...), folded into double by FoldLanesViaFloat's tree, blocks added in order. Rows
// of 2..kShortSiluRowMax elements are summed in double in an order of their own
// (silu_short_rows_impl.h), in every schedule.
#pragma once

#include <cstdint>

#include "half_types.h"
#include "row_kernels.h"

namespace ms_groupnorm {

// ToBFloat16 on the float bits u of every lane, for the vector loops (any vector of
// uint32 lanes; VU(v) the bits of float lanes v): round to nearest even on bit 16, a NaN
// stays a quiet NaN. The result's top 16 bits are the bfloat16; the low bits are junk.
template <typename VU>
inline VU BFloat16Rounded(VU u, VU is_nan) {
  const VU rounded = u + (0x7fffu + ((u >> 16) & 1u));
  return is_nan ? (u | 0x400000u) : rounded;
}

template <typename T>
struct SiluRowKernels {
  // z[r][i] = y * sigmoid(k * y), y = (x[r][i] - mu) * scale[r] + shift[r]
  void (*normalize_silu)(const T *x, T *z, int64_t hxw, int64_t rows, float mu, const float *scale,
                         const float *shift, float swish_k);
  // HxW = 1: normalize_silu for `count` points with c (its mu), scale and shift per point, each
  // point with the bits of its one-element row
  void (*normalize_silu_points)(const T *x, T *z, int64_t count, const float *c, const float *scale,
                                const float *shift, float swish_k);
  // normalize_silu for `rows` rows (a sample's groups of a few short rows) with c, scale and shift
  // per row, each row with the bits normalize_silu gives it
  void (*normalize_silu_sample)(const T *x, T *z, int64_t hxw, int64_t rows, const float *c, const float *scale,
                                const float *shift, float swish_k);
  // g = dz * dz/dy (recomputed); sum_g[r] = sum_i g, sum_gxc[r] = sum_i g * (x - mu) in the
  // form CentredSums(mu, rstd) chooses (row_kernels.h);
  // g itself is stored into g_out[r * hxw + i] unless g_out is nullptr
  void (*reduce_grad)(const T *dz, const T *x, int64_t hxw, int64_t rows, float mu, float rstd, const float *scale,
                      const float *shift, float swish_k, double *sum_g, double *sum_gxc, float *g_out);
  // dx[r][i] = (scale[r] * g + b * (x - mu)) + c, g recomputed as in reduce_grad
  void (*input_grad)(const T *dz, const T *x, T *dx, int64_t hxw, int64_t rows, float mu, const float *scale,
                     const float *shift, float swish_k, float b, float c);
  // the same from the g that reduce_grad stored (the same floats, so the same bits)
  void (*input_grad_stored)(const float *g, const T *x, T *dx, int64_t hxw, int64_t rows, float mu,
                            const float *scale, float b, float c);
  // HxW = 1: reduce_grad and input_grad_stored for the `count` points of a sample, with mu,
  // centre (mu where the point's group sums centred, else 0; nullptr: none), scale, shift, b
  // and c per point; each point gets the bits of its one-element row
  void (*point_reduce_grad)(const T *dz, const T *x, int64_t count, const float *mu, const float *centre,
                            const float *scale, const float *shift, float swish_k, double *sum_g, double *sum_gxc,
                            float *g_out);
  void (*point_input_grad_stored)(const float *g, const T *x, T *dx, int64_t count, const float *mu,
                                  const float *scale, const float *b, const float *c);
  // Rows of 2..kShortSiluRowMax elements, in every schedule: reduce_grad's g, and its sums in
  // an order of their own (double, silu_short_rows_impl.h), row r with mu[r / group_rows]
  void (*short_reduce_grad)(const T *dz, const T *x, int64_t hxw, int64_t rows, int64_t group_rows, const float *mu,
                            const float *scale, const float *shift, float swish_k, double *sum_g, double *sum_gxc,
                            float *g_out);
  // input_grad_stored for a sample's `rows` rows of 2..kShortSiluRowMax elements, row r with mu, b
  // and c of its group r / group_rows, each row with the bits input_grad_stored gives it
  void (*sample_input_grad_stored)(const float *g, const T *x, T *dx, int64_t hxw, int64_t rows, int64_t group_rows,
                                   const float *mu, const float *scale, const float *b, const float *c);
};

// The longest row short_reduce_grad takes (at most silu_short_rows_impl.h's kShortChunk).
constexpr int64_t kShortSiluRowMax = 64;

using SiluRowKernelSet = KernelSet<SiluRowKernels>;

const SiluRowKernelSet &PortableSiluRowKernels();
const SiluRowKernelSet *Avx2SiluRowKernels();    // nullptr where not compiled in or unsupported
const SiluRowKernelSet *Avx512SiluRowKernels();  // nullptr where not compiled in or unsupported

// The build with the same ISA as ActiveRowKernels(), so MsGroupNormSelectIsa and
// $MS_GROUPNORM_CPU_ISA switch the fused loops too.
const SiluRowKernelSet &ActiveSiluRowKernels();

}  // namespace ms_groupnorm
