// Double-precision loops over one contiguous row, for the groups the float32 row loops
// (row_kernels.h, silu_rows.h) cannot sum: a float32 square of |x - mean| > 1.8e19
// overflows and one of |x - mean| < 1e-19 underflows, a lane sum of dy or of x near the
// float32 maximum overflows although the channel's total does not, and the backward's
// coefficient b = -rstd^3 * T2 / M leaves the float32 range when rstd does (|b| ~ rstd^2 |dy|).
// In double every product of two float32 values, and every sum of such products over fewer
// than 2^900 elements, is finite and normal, so these loops need no scaling: they are the
// formulas of group_norm_cpu.h's header, evaluated in double in index order.
//
// They are scalar and several times slower than the row loops; the kernels choose them per
// group (statistics, dx) or per channel (the backward's sums) from values that do not depend
// on the schedule, only when the float32 result cannot be trusted, so ordinary data never
// pays for them and the outputs stay bit-identical for any thread count. The float64
// kernels use the same loops for every group.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

#include "half_types.h"

namespace ms_groupnorm {
namespace wide {

inline double ToDouble(double v) { return v; }
template <typename T>
inline double ToDouble(T v) {
  return static_cast<double>(ToFloat(v));
}

// Stores a double into storage type T (through float for the 16-bit types).
template <typename T>
inline T FromDouble(double v) {
  return FromFloat<T>(static_cast<float>(v));
}
template <>
inline double FromDouble<double>(double v) {
  return v;
}

// Mean and 1 / sqrt(variance + eps) of m contiguous elements (mean 0 and rstd NaN when m == 0,
// as the float32 statistics give).
template <typename T>
inline void Statistics(const T *x, int64_t m, double eps, double *mean, double *rstd) {
  double sum = 0.0;
  for (int64_t i = 0; i < m; ++i) sum += ToDouble(x[i]);
  const double mu = m > 0 ? sum / static_cast<double>(m) : 0.0;
  double squares = 0.0;
  for (int64_t i = 0; i < m; ++i) squares += (ToDouble(x[i]) - mu) * (ToDouble(x[i]) - mu);
  *mean = mu;
  *rstd = m > 0 ? 1.0 / std::sqrt(squares / static_cast<double>(m) + eps) : std::numeric_limits<double>::quiet_NaN();
}

// y = (x - mean) * scale + shift over n elements.
template <typename T>
inline void NormalizeRow(const T *x, T *y, int64_t n, double mean, double scale, double shift) {
  for (int64_t i = 0; i < n; ++i) y[i] = FromDouble<T>((ToDouble(x[i]) - mean) * scale + shift);
}

// sum_dy = sum dy, sum_dyxc = sum dy * (x - mean) (skipped when sum_dyxc is nullptr).
template <typename T>
inline void ReduceGradRow(const T *dy, const T *x, int64_t n, double mean, double *sum_dy, double *sum_dyxc) {
  double total_dy = 0.0, total_dyxc = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double d = ToDouble(dy[i]);
    total_dy += d;
    if (sum_dyxc != nullptr) total_dyxc += d * (ToDouble(x[i]) - mean);
  }
  *sum_dy = total_dy;
  if (sum_dyxc != nullptr) *sum_dyxc = total_dyxc;
}

// dx = a * dy + b * (x - mean) + c over n elements.
template <typename T>
inline void AffineGradRow(const T *dy, const T *x, T *dx, int64_t n, double a, double b, double mean, double c) {
  for (int64_t i = 0; i < n; ++i) dx[i] = FromDouble<T>(a * ToDouble(dy[i]) + b * (ToDouble(x[i]) - mean) + c);
}

// ---- the fused GroupNorm + swish (silu_rows.h): z = y * sigmoid(k y), y = (x - mean) * scale + shift
inline double Sigmoid(double t) { return 1.0 / (1.0 + std::exp(-t)); }

// dz * d(y sigmoid(k y))/dy = dz * s * (1 + t (1 - s)), t = k y, s = sigmoid(t).
inline double SwishGrad(double dz, double y, double k) {
  const double t = k * y, s = Sigmoid(t);
  return dz * (s * (1.0 + t * (1.0 - s)));
}

template <typename T>
inline void NormalizeSiluRow(const T *x, T *z, int64_t n, double mean, double scale, double shift, double k) {
  for (int64_t i = 0; i < n; ++i) {
    const double y = (ToDouble(x[i]) - mean) * scale + shift;
    z[i] = FromDouble<T>(y * Sigmoid(k * y));
  }
}

// sum_g = sum g, sum_gxc = sum g * (x - mean), g = dz * dz/dy.
template <typename T>
inline void ReduceSiluGradRow(const T *dz, const T *x, int64_t n, double mean, double scale, double shift, double k,
                              double *sum_g, double *sum_gxc) {
  double total_g = 0.0, total_gxc = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const double xc = ToDouble(x[i]) - mean;
    const double g = SwishGrad(ToDouble(dz[i]), xc * scale + shift, k);
    total_g += g;
    total_gxc += g * xc;
  }
  *sum_g = total_g;
  *sum_gxc = total_gxc;
}

// dx = scale * g + b * (x - mean) + c (a = rstd * gamma is the scale of y).
template <typename T>
inline void SiluInputGradRow(const T *dz, const T *x, T *dx, int64_t n, double mean, double scale, double shift,
                             double k, double b, double c) {
  for (int64_t i = 0; i < n; ++i) {
    const double xc = ToDouble(x[i]) - mean;
    dx[i] = FromDouble<T>(scale * SwishGrad(ToDouble(dz[i]), xc * scale + shift, k) + b * xc + c);
  }
}

// ---- when the float32 path cannot be trusted
// Whether every value is finite, as integer arithmetic on the bits that the compiler
// vectorises (a branch per value cost more than a channel of 8x8 elements): adding 1 to
// the exponent field carries into the sign bit only when the field is all ones (inf, NaN).
inline bool AllFinite(const double *v, int64_t n) {
  constexpr uint64_t kExponent = 0x7ff0000000000000u, kExponentOne = 0x0010000000000000u;
  constexpr uint64_t kSign = 0x8000000000000000u;
  uint64_t non_finite = 0;
  for (int64_t i = 0; i < n; ++i) {
    uint64_t bits;
    __builtin_memcpy(&bits, v + i, sizeof bits);
    non_finite |= ((bits & kExponent) + kExponentOne) & kSign;
  }
  return non_finite == 0;
}

// True when v is finite and nonzero and |v| lies outside [low, high] (positive bounds, given as
// their double bits). Compared on the bits of |v|, whose order is that of the magnitudes: two
// unsigned compares and no branch. The HxW = 1 backward checks every group (two elements a
// group at 8000 x 64, G = 32), where the fabs/isfinite form took ~20 instructions a check.
inline bool FiniteNonzeroOutside(double v, uint64_t low, uint64_t high) {
  constexpr uint64_t kInfinity = 0x7ff0000000000000u;
  uint64_t bits;
  __builtin_memcpy(&bits, &v, sizeof bits);
  const uint64_t magnitude = bits & ~0x8000000000000000u;
  return (magnitude - 1 < low - 1) | (magnitude - (high + 1) < kInfinity - (high + 1));
}

inline uint64_t DoubleBits(double v) {
  uint64_t bits;
  __builtin_memcpy(&bits, &v, sizeof bits);
  return bits;
}

// rstd outside [2^-32, 2^32] (a standard deviation beyond [2.3e-10, 4.3e9]): the backward's
// b ~ rstd^2 |dy| and the products dy * (x - mean) ~ |dy| / rstd would leave the float32
// range for moderate dy. A non-finite or zero rstd (inf/NaN data, empty groups) keeps the
// float32 path and gives what it always gave.
inline bool RstdOutsideFloatRange(double rstd) {
  return FiniteNonzeroOutside(rstd, DoubleBits(0x1p-32), DoubleBits(0x1p32));
}

// A finite coefficient that float32 would round to a subnormal, zero or infinity.
inline bool LostInFloat(double v) {
  return FiniteNonzeroOutside(v, DoubleBits(std::numeric_limits<float>::min()),
                              DoubleBits(std::numeric_limits<float>::max()));
}

}  // namespace wide
}  // namespace ms_groupnorm
