// 16-bit floating-point storage types and their conversions to and from float.
//
// The kernels keep fp16/bf16 tensors as raw 16-bit patterns and convert on
// load (exactly) and on store (round to nearest, ties to even, like the
// hardware CAST_RINT / F16C conversions), so every computation runs in float.
#pragma once

#include <cstdint>
#include <cstring>

namespace ms_groupnorm {

struct Half {
  uint16_t bits;
};
struct BFloat16 {
  uint16_t bits;
};

inline uint32_t FloatBits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

inline float BitsToFloat(uint32_t u) {
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

// ---- bfloat16: the upper half of a float32 ----
inline float ToFloat(BFloat16 v) { return BitsToFloat(static_cast<uint32_t>(v.bits) << 16); }

inline BFloat16 ToBFloat16(float f) {
  uint32_t u = FloatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) {  // NaN: keep it a (quiet) NaN after truncation
    return BFloat16{static_cast<uint16_t>((u >> 16) | 0x40u)};
  }
  u += 0x7fffu + ((u >> 16) & 1u);  // round to nearest even on bit 16
  return BFloat16{static_cast<uint16_t>(u >> 16)};
}

// ---- IEEE half precision ----
inline float ToFloat(Half v) {
  const uint32_t sign = static_cast<uint32_t>(v.bits & 0x8000u) << 16;
  const uint32_t exponent = (v.bits >> 10) & 0x1fu;
  const uint32_t mantissa = v.bits & 0x3ffu;
  if (exponent == 0x1f) return BitsToFloat(sign | 0x7f800000u | (mantissa << 13));  // inf / NaN
  if (exponent == 0) {                                                                // zero / subnormal
    const float magnitude = static_cast<float>(mantissa) * (1.0f / 16777216.0f);  // mantissa * 2^-24, exact
    return sign ? -magnitude : magnitude;
  }
  return BitsToFloat(sign | ((exponent + 112u) << 23) | (mantissa << 13));  // rebias 15 -> 127
}

inline Half ToHalf(float f) {
  const uint32_t u = FloatBits(f);
  const uint16_t sign = static_cast<uint16_t>((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  // NaN: quieted, payload truncated to its top 10 bits, exactly as the F16C
  // instructions do, so the scalar and vector paths give the same bits.
  if (a > 0x7f800000u) return Half{static_cast<uint16_t>(sign | 0x7e00u | ((a >> 13) & 0x3ffu))};
  if (a >= 0x47800000u) return Half{static_cast<uint16_t>(sign | 0x7c00u)};  // >= 65536 (or inf): inf
  if (a >= 0x38800000u) {  // a normal half (>= 2^-14); a carry out of the mantissa correctly bumps the exponent
    const uint32_t rounded = a + 0xfffu + ((a >> 13) & 1u);
    return Half{static_cast<uint16_t>(sign | ((rounded - 0x38000000u) >> 13))};
  }
  if (a < 0x33000000u) return Half{sign};  // below 2^-25: rounds to zero (2^-25 itself ties to even zero)
  // A half subnormal: the value in units of 2^-24, rounded to nearest even.
  const uint32_t exponent = a >> 23;  // 102..112
  const uint32_t mantissa = (a & 0x7fffffu) | 0x800000u;
  const uint32_t shift = 126u - exponent;  // 14..24
  uint32_t result = mantissa >> shift;
  const uint32_t remainder = mantissa & ((1u << shift) - 1u);
  const uint32_t halfway = 1u << (shift - 1u);
  if (remainder > halfway || (remainder == halfway && (result & 1u))) ++result;
  return Half{static_cast<uint16_t>(sign | result)};
}

inline float ToFloat(float v) { return v; }

// Classification from the bits alone (an all-ones exponent is inf or NaN; a nonzero mantissa
// with it, NaN), for loops over 16-bit data that would otherwise convert every element.
inline bool IsFinite(Half v) { return (v.bits & 0x7c00u) != 0x7c00u; }
inline bool IsFinite(BFloat16 v) { return (v.bits & 0x7f80u) != 0x7f80u; }
inline bool IsNaN(Half v) { return (v.bits & 0x7fffu) > 0x7c00u; }
inline bool IsNaN(BFloat16 v) { return (v.bits & 0x7fffu) > 0x7f80u; }
// a == b as values: the same bits, unless NaN, or two zeros of any signs.
template <typename H>
inline bool EqualValues(H a, H b) {
  return ((a.bits | b.bits) & 0x7fffu) == 0 || (a.bits == b.bits && !IsNaN(a));
}

// Store a float into storage type T.
template <typename T>
inline T FromFloat(float f);
template <>
inline float FromFloat<float>(float f) {
  return f;
}
template <>
inline Half FromFloat<Half>(float f) {
  return ToHalf(f);
}
template <>
inline BFloat16 FromFloat<BFloat16>(float f) {
  return ToBFloat16(f);
}

}  // namespace ms_groupnorm
