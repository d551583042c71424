// CPU twin, part of kernel_operator.h: vector instructions. The Elementwise helper behind
// Add/Sub/Mul/Adds/Muls/Duplicate, ReduceSum and WholeReduceSum (reduction orders from
// asc-devkit's ReduceSum.md / WholeReduceSum sources, cited below), and Cast with its
// RoundMode; the device's float overflow mode (Saturating) applies to every result.
// The forward kernel's Exp, Sqrt and Div are in kernel_operator_forward_math.h.
#ifndef GNMS_TWIN_KERNEL_OPERATOR_VECTOR_H
#define GNMS_TWIN_KERNEL_OPERATOR_VECTOR_H

// Included by kernel_operator.h (after the parts it builds on); not a standalone header.

namespace AscendC {

// ---------------------------------------------------------------- vector instructions (fp32)
enum class RoundMode { CAST_NONE, CAST_RINT, CAST_ROUND, CAST_FLOOR, CAST_CEIL, CAST_TRUNC, CAST_ODD };

namespace detail {

template <typename T>
void VectorOperands(const char *op) {
  static_assert(std::is_same<T, float>::value, "the twin models fp32 vector arithmetic only");
  twin::Checkpoint();
  (void)op;
}

// The float overflow mode of the device (twin::Config::saturation). aclrtFloatOverflowMode
// (CANN runtime API docs): Atlas A2/A3 default to INF_NAN (IEEE results); in the
// saturation mode "the calculation result of Inf becomes a maximum value and NaN becomes 0".
// MindSpore 2.10 keeps INF_NAN on 910B unless MS_ASCEND_CHECK_OVERFLOW_MODE=SATURATION_MODE
// (mindspore/amp.py _all_finite, nn/wrap/loss_scale.py). In saturation mode the twin applies
// that rule to every vector result and to narrowing casts (asc-devkit
// docs/zh/api/.../precision_conversion.md: overflow saturates by default).
inline bool Saturating() { return twin::CurrentConfig().saturation; }
inline float SaturateFloat(float v) {
  if (std::isnan(v)) return 0.0f;
  if (std::isinf(v)) return v > 0 ? 3.4028234663852886e38f : -3.4028234663852886e38f;
  return v;
}

// The vector mask register of the block, in leading lanes (the twin models continuous masks
// only). A level-0 form with isSetMask = true writes it (AscendCUtils::SetMask); one with
// isSetMask = false computes under whatever it holds and ignores its own mask argument; every
// count form ("tensor 前n个数据计算") ends with set_mask_norm and an all-ones mask
// (asc-devkit impl/basic_api/dav_c220/kernel_operator_vec_binary_impl.h AddImpl, and the same in
// the reduce, duplicate and vconv impls), so after one the register is full. Blocks are threads.
constexpr int64_t kMaskFull = 128;  // all 128 bits set: every lane of any element type
inline int64_t &MaskLanes() {
  static thread_local int64_t lanes = kMaskFull;
  return lanes;
}

// An elementwise V instruction: dst[i] = f(in, i) over `count` elements.
template <typename F>
void Elementwise(const char *op, const LocalTensor<float> &dst, std::initializer_list<const LocalTensor<float> *> srcs,
                 int32_t count, F f) {
  VectorOperands<float>(op);
  MaskLanes() = kMaskFull;
  if (count < 0) twin::Fail(std::string(op) + ": negative count");
  dst.Check(op, count, true);
  std::vector<const float *> in;
  std::vector<twin::UbRange> reads;
  for (const LocalTensor<float> *s : srcs) {
    s->Check(op, count, true);
    in.push_back(s->Data());
    reads.push_back(s->Range(count));
  }
  float *out = dst.Data();
  const twin::UbRange r0 = reads.size() > 0 ? reads[0] : twin::UbRange{0, 0};
  const twin::UbRange r1 = reads.size() > 1 ? reads[1] : twin::UbRange{0, 0};
  const bool saturate = Saturating();
  Pipes().Issue(twin::kPipeV, op, {r0, r1}, {dst.Range(count)},
                [in, out, count, f, saturate] {
                  std::vector<float> result(static_cast<size_t>(count));  // operands may alias dst
                  for (int32_t i = 0; i < count; ++i) result[i] = saturate ? SaturateFloat(f(in, i)) : f(in, i);
                  std::memcpy(out, result.data(), result.size() * sizeof(float));
                },
                VectorNs(static_cast<uint64_t>(count) * sizeof(float)));
}

}  // namespace detail

inline void Add(const LocalTensor<float> &dst, const LocalTensor<float> &a, const LocalTensor<float> &b,
                const int32_t &count) {
  detail::Elementwise("Add", dst, {&a, &b}, count, [](const auto &in, int i) { return in[0][i] + in[1][i]; });
}
inline void Sub(const LocalTensor<float> &dst, const LocalTensor<float> &a, const LocalTensor<float> &b,
                const int32_t &count) {
  detail::Elementwise("Sub", dst, {&a, &b}, count, [](const auto &in, int i) { return in[0][i] - in[1][i]; });
}
inline void Mul(const LocalTensor<float> &dst, const LocalTensor<float> &a, const LocalTensor<float> &b,
                const int32_t &count) {
  detail::Elementwise("Mul", dst, {&a, &b}, count, [](const auto &in, int i) { return in[0][i] * in[1][i]; });
}
inline void Adds(const LocalTensor<float> &dst, const LocalTensor<float> &a, const float &s, const int32_t &count) {
  const float v = s;
  detail::Elementwise("Adds", dst, {&a}, count, [v](const auto &in, int i) { return in[0][i] + v; });
}
inline void Muls(const LocalTensor<float> &dst, const LocalTensor<float> &a, const float &s, const int32_t &count) {
  const float v = s;
  detail::Elementwise("Muls", dst, {&a}, count, [v](const auto &in, int i) { return in[0][i] * v; });
}
inline void Duplicate(const LocalTensor<float> &dst, const float &s, const int32_t &count) {
  const float v = s;
  detail::Elementwise("Duplicate", dst, {}, count, [v](const auto &, int) { return v; });
}

// dst[0] = sum of src[0..count), in the order asc-devkit documents for the count form on
// Atlas A2/A3 (docs/zh/api/SIMD-API/基础API/Memory矢量计算/归约计算/ReduceSum.md, 关键特性说明,
// "方式一"): inside each 256-byte repeat (64 floats) a binary tree of neighbour pairs
// (ReduceDataBlock.md: 1+2, 3+4, ..., then the pair sums, ...), and the repeat results
// added one after another in order. In that mode the shared tmp buffer is not used. The
// destination needs only 4-byte alignment (ReduceRepeat.md, 表3: SUM float).
// On its pipes it is what impl/basic_api/dav_c220/kernel_operator_vec_reduce_impl.h
// (ReduceSumImpl) does: vcadd accumulates on V; the scalar unit waits for V (V_S, id from
// FetchEventID), reads the accumulator and stores dst[0] itself; then S_V and S_MTE3 waits
// (ids from FetchEventID). Every call is a vector -> scalar -> vector round trip, and dst[0]
// is a scalar write.
template <typename T>
void ReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<T> &work, const int32_t &count) {
  detail::VectorOperands<T>("ReduceSum");
  detail::MaskLanes() = detail::kMaskFull;  // a count form (set_mask_norm, all-ones mask at its end)
  dst.Check("ReduceSum dst", 1, false);
  src.Check("ReduceSum src", count, true);
  work.Check("ReduceSum work", 0, true);
  if (count <= 0) return;  // a NOP on A2/A3 for count 0
  const float *s = src.Data();
  float *d = dst.Data();
  const int32_t n = count;
  const bool saturate = detail::Saturating();
  auto acc = std::make_shared<float>(0.0f);  // the accumulator register
  twin::PipeModel &pipes = Pipes();
  pipes.Issue(twin::kPipeV, "ReduceSum (vcadd)", {src.Range(count)}, {},
              [s, n, acc, saturate] {
                float total = 0.0f;
                for (int32_t r = 0; r * 64 < n; ++r) {
                  float lanes[64];
                  const int32_t len = std::min(64, n - r * 64);
                  for (int32_t i = 0; i < 64; ++i) lanes[i] = i < len ? s[r * 64 + i] : 0.0f;  // masked lanes add 0
                  for (int32_t width = 32; width >= 1; width /= 2) {
                    for (int32_t i = 0; i < width; ++i) lanes[i] = lanes[2 * i] + lanes[2 * i + 1];
                  }
                  total = r == 0 ? lanes[0] : total + lanes[0];
                }
                *acc = saturate ? detail::SaturateFloat(total) : total;
              },
              detail::VectorNs(static_cast<uint64_t>(count) * sizeof(float)));
  auto roundTrip = [&pipes](int src, int dst) {
    const int id = pipes.FetchEventId(src, dst);
    pipes.SetFlag(src, dst, id, twin::kFlagApi);
    pipes.WaitFlag(src, dst, id, twin::kFlagApi);
  };
  roundTrip(twin::kPipeV, twin::kPipeS);
  pipes.stats().scalarUb += 1;
  pipes.Issue(twin::kPipeS, "ReduceSum (scalar store of dst[0])", {}, {dst.Range(1)},
              [d, acc] { std::memcpy(d, acc.get(), sizeof(float)); }, pipes.Cycles(pipes.cost().scalarUbCycles));
  roundTrip(twin::kPipeS, twin::kPipeV);
  roundTrip(twin::kPipeS, twin::kPipeMte3);
}

// WholeReduceSum (mask count form; asc-devkit include/basic_api/kernel_operator_vec_reduce_intf.h at
// v8.5.0 and v9.0.1; at HEAD it lives on in impl/basic_api/kernel_operator_vec_reduce_intf_impl.h as
// the deprecated name of ReduceRepeat<ReduceType::SUM>, docs .../归约计算/ReduceRepeat.md):
// dst[r * dstRepStride] = the sum of the first `mask` elements of repeat r, repeat r starting
// srcRepStride 32-byte blocks after repeat r - 1; inside a repeat a binary tree of neighbour pairs
// (ReduceDataBlock.md). One vector instruction for all repeats, written by the vector unit (no
// scalar round trip, unlike count-form ReduceSum). The twin models float, contiguous blocks inside
// a repeat (srcBlkStride 1) only.
template <typename T, bool isSetMask = true>
void WholeReduceSum(const LocalTensor<T> &dst, const LocalTensor<T> &src, const int32_t mask, const int32_t repeatTime,
                    const int32_t dstRepStride, const int32_t srcBlkStride, const int32_t srcRepStride) {
  static_assert(std::is_same<T, float>::value, "the twin models float WholeReduceSum only");
  detail::VectorOperands<float>("WholeReduceSum");
  if (repeatTime < 0 || repeatTime > 255) twin::Fail("WholeReduceSum: repeatTime outside [0, 255]");
  if (isSetMask && (mask < 1 || mask > 64)) twin::Fail("WholeReduceSum: a float mask (count form) is 1..64 elements per repeat");
  if (isSetMask) detail::MaskLanes() = mask;
  const int32_t active = isSetMask ? mask : static_cast<int32_t>(std::min<int64_t>(detail::MaskLanes(), 64));
  if (srcBlkStride != 1) twin::Fail("WholeReduceSum: the twin models srcBlkStride 1 (contiguous repeats) only");
  if (dstRepStride < 0 || srcRepStride < 0) twin::Fail("WholeReduceSum: negative stride");
  if (repeatTime == 0) return;
  const int64_t srcSpan = static_cast<int64_t>(repeatTime - 1) * srcRepStride * 8 + active;
  const int64_t dstSpan = static_cast<int64_t>(repeatTime - 1) * dstRepStride + 1;
  src.Check("WholeReduceSum src", srcSpan, true);
  dst.Check("WholeReduceSum dst", dstSpan, false);  // 4-byte alignment for float SUM (ReduceRepeat.md 表3)
  const float *s = src.Data();
  float *d = dst.Data();
  const bool saturate = detail::Saturating();
  Pipes().Issue(twin::kPipeV, "WholeReduceSum", {src.Range(srcSpan)}, {dst.Range(dstSpan)},
                [s, d, active, repeatTime, dstRepStride, srcRepStride, saturate] {
                  std::vector<float> out(static_cast<size_t>(repeatTime));  // operands may overlap
                  for (int32_t r = 0; r < repeatTime; ++r) {
                    float lanes[64];
                    const float *row = s + static_cast<int64_t>(r) * srcRepStride * 8;
                    for (int32_t i = 0; i < 64; ++i) lanes[i] = i < active ? row[i] : 0.0f;
                    for (int32_t width = 32; width >= 1; width /= 2) {
                      for (int32_t i = 0; i < width; ++i) lanes[i] = lanes[2 * i] + lanes[2 * i + 1];
                    }
                    out[r] = saturate ? detail::SaturateFloat(lanes[0]) : lanes[0];
                  }
                  for (int32_t r = 0; r < repeatTime; ++r) d[static_cast<int64_t>(r) * dstRepStride] = out[r];
                },
                detail::VectorNs(static_cast<uint64_t>(repeatTime) * 256));
}

namespace detail {
inline float ToF32(half v) { return static_cast<float>(v); }
inline float ToF32(bfloat16_t v) { return ToFloat(v); }

// CAST_ROUND (Cast.md: "round，四舍五入舍入"): to nearest, ties away from zero. `r` is f rounded to
// nearest even; where f lies exactly halfway between r and its neighbour of larger magnitude, that
// neighbour. (Both neighbours of a finite f have f's sign, and the bit patterns of one sign grow with
// the magnitude, so the neighbour is r's bits + 1.)
template <typename D>
D TieAwayFromZero(D r, float f) {
  const float rf = ToF32(r);
  if (std::isnan(f) || std::isinf(rf) || rf == f || std::fabs(rf) > std::fabs(f)) return r;
  D up = r;
  up.bits = static_cast<uint16_t>(r.bits + 1);
  const double lower = std::fabs(static_cast<double>(rf)), upper = std::fabs(static_cast<double>(ToF32(up)));
  const double a = std::fabs(static_cast<double>(f));
  return (a - lower == upper - a) ? up : r;
}

// float -> float (Cast.md, A2 table: CAST_RINT/FLOOR/CEIL/ROUND/TRUNC): rounds to an integral value,
// dav_c220's vconv_f322f32r/f/c/a/z. CAST_NONE and CAST_ODD are not in that table, and the dav_c220
// implementation (impl/basic_api/dav_c220/kernel_operator_vec_vconv_impl.h, CastIntrinsicsImpl for
// float) issues no instruction for them: dst would keep whatever it held. The twin refuses them.
inline float RoundToIntegral(float v, RoundMode mode) {
  switch (mode) {
    case RoundMode::CAST_RINT: return std::nearbyint(v);  // the default FP environment: to nearest even
    case RoundMode::CAST_FLOOR: return std::floor(v);
    case RoundMode::CAST_CEIL: return std::ceil(v);
    case RoundMode::CAST_ROUND: return std::round(v);
    case RoundMode::CAST_TRUNC: return std::trunc(v);
    default: return v;
  }
}
}  // namespace detail

template <typename D, typename S>
void Cast(const LocalTensor<D> &dst, const LocalTensor<S> &src, const RoundMode &mode, const uint32_t &count) {
  twin::Checkpoint();
  detail::MaskLanes() = detail::kMaskFull;  // a count form
  dst.Check("Cast dst", count, true);
  src.Check("Cast src", count, true);
  constexpr bool widen = std::is_same<D, float>::value && !std::is_same<S, float>::value;
  constexpr bool narrow = std::is_same<S, float>::value && !std::is_same<D, float>::value;
  constexpr bool integral = std::is_same<S, float>::value && std::is_same<D, float>::value;
  static_assert(widen || narrow || integral, "the twin models half/bf16 <-> float and float -> float casts only");
  if (integral && (mode == RoundMode::CAST_NONE || mode == RoundMode::CAST_ODD)) {
    twin::Fail("Cast float -> float takes CAST_RINT/FLOOR/CEIL/ROUND/TRUNC on the A2 (Cast.md); with CAST_NONE or "
               "CAST_ODD dav_c220 issues no instruction and dst keeps its old bytes");
  }
  if (widen && mode != RoundMode::CAST_NONE) twin::Fail("Cast half/bf16 -> float must use CAST_NONE (it is exact)");
  if (narrow && mode != RoundMode::CAST_RINT && mode != RoundMode::CAST_NONE && mode != RoundMode::CAST_ROUND) {
    twin::Fail("Cast float -> half/bf16: the twin models CAST_RINT (round to nearest even) and CAST_ROUND (to "
               "nearest, ties away from zero) only");
  }
  const bool tiesAway = mode == RoundMode::CAST_ROUND;
  uint8_t *out = dst.Raw();
  const uint8_t *inRaw = src.Raw();
  const bool saturate = detail::Saturating();
  Pipes().Issue(twin::kPipeV, "Cast", {src.Range(count)}, {dst.Range(count)},
                [out, inRaw, count, saturate, tiesAway, mode] {
                  std::vector<D> result(count);
                  for (uint32_t i = 0; i < count; ++i) {
                    S v;
                    std::memcpy(&v, inRaw + i * sizeof(S), sizeof(S));
                    if constexpr (integral) {
                      result[i] = detail::RoundToIntegral(v, mode);
                    } else if constexpr (widen) {
                      float f;
                      if constexpr (std::is_same<S, half>::value) f = static_cast<float>(v); else f = ToFloat(v);
                      result[i] = saturate ? detail::SaturateFloat(f) : f;
                    } else {
                      // saturation: NaN -> 0, and a result beyond the narrow type's range
                      // (rounded to inf) -> its largest finite value of that sign
                      const float f = saturate && std::isnan(v) ? 0.0f : static_cast<float>(v);
                      D r;
                      if constexpr (std::is_same<D, half>::value) r = half(f); else r = ToBfloat16(f);
                      if (tiesAway) r = detail::TieAwayFromZero(r, f);
                      if (saturate && std::isinf(detail::ToF32(r))) {
                        if constexpr (std::is_same<D, half>::value) r.bits = f > 0 ? 0x7BFF : 0xFBFF;
                        else r.bits = f > 0 ? 0x7F7F : 0xFF7F;
                      }
                      result[i] = r;
                    }
                  }
                  std::memcpy(out, result.data(), count * sizeof(D));
                },
                detail::VectorNs(static_cast<uint64_t>(count) * std::max(sizeof(D), sizeof(S))));
}

}  // namespace AscendC

#endif  // GNMS_TWIN_KERNEL_OPERATOR_VECTOR_H
