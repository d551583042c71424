// CPU twin, part of kernel_operator.h: the repeat-stride ("tensor 高维切分", level 0) forms the
// kernels use, fp32 only: Mul and Add in the mask continuous mode with BinaryRepeatParams, and
// Brcb (each of 8 source elements broadcast into one 32-byte block).
//
// Signatures: asc-devkit include/basic_api/kernel_operator_vec_binary_intf.h (Mul/Add,
// `template <typename T, bool isSetMask = true> (dst, src0, src1, uint64_t mask, const uint8_t
// repeatTime, const BinaryRepeatParams &)`), kernel_operator_vec_brcb_intf.h (Brcb), the structs in
// kernel_struct_binary.h / kernel_struct_brcb.h. Semantics, from docs/zh/api/SIMD-API/基础API/
// Memory矢量计算/SIMD计算说明/高维切分.md: repeat r reads the operand's DataBlock b (32 bytes) at
// (r * repStride + b * blkStride) blocks from its start; the continuous mask is the count of leading
// elements of each repeat that are computed (1..64 for 32-bit types); a source blkStride of 0 reuses
// the first DataBlock, a destination blkStride of 0 is undefined (refused here). Brcb.md: repeat r
// writes src[8r + j] into the whole DataBlock j of dst, and reads 8 source elements per repeat; its
// pseudo-code reads a dstBlkStride of 0 as 1, but its constraints say 0 is not supported and may be
// undefined, so it is refused here too; its constraints also forbid a source and destination in the
// same memory, so any overlap of the two spans is refused. repeatTime is 0..255 (a uint8_t; 0 is a NOP on A2/A3). Every UB operand
// starts 32-byte aligned and stays inside its buffer; the costs are one cycle per repeat plus the
// instruction's start, as for the count forms.
#ifndef GNMS_TWIN_KERNEL_OPERATOR_STRIDED_H
#define GNMS_TWIN_KERNEL_OPERATOR_STRIDED_H

// Included by kernel_operator.h (after kernel_operator_vector.h); not a standalone header.

namespace AscendC {

struct BinaryRepeatParams {
  BinaryRepeatParams() {}
  BinaryRepeatParams(const uint8_t dstBlkStrideIn, const uint8_t src0BlkStrideIn, const uint8_t src1BlkStrideIn,
                     const uint8_t dstRepStrideIn, const uint8_t src0RepStrideIn, const uint8_t src1RepStrideIn)
      : dstBlkStride(dstBlkStrideIn), src0BlkStride(src0BlkStrideIn), src1BlkStride(src1BlkStrideIn),
        dstRepStride(dstRepStrideIn), src0RepStride(src0RepStrideIn), src1RepStride(src1RepStrideIn) {}
  uint32_t blockNumber = 8;
  uint8_t dstBlkStride = 1;
  uint8_t src0BlkStride = 1;
  uint8_t src1BlkStride = 1;
  uint8_t dstRepStride = 8;
  uint8_t src0RepStride = 8;
  uint8_t src1RepStride = 8;
  bool repeatStrideMode = false;
  bool strideSizeMode = false;
};

struct BrcbRepeatParams {
  BrcbRepeatParams() {}
  BrcbRepeatParams(const uint16_t dstBlkStrideIn, const uint16_t dstRepStrideIn)
      : dstRepStride(dstRepStrideIn), dstBlkStride(dstBlkStrideIn) {}
  uint32_t blockNumber = 8;
  uint16_t dstRepStride = 8;
  uint16_t dstBlkStride = 1;
};

namespace detail {

// Element offset (in floats) of element e of repeat r of an operand with these strides.
inline int64_t StridedOffset(int64_t r, int64_t e, int64_t blkStride, int64_t repStride) {
  return (r * repStride + (e / 8) * blkStride) * 8 + e % 8;
}

// The elements [0, span) an operand's repeats reach (its last element + 1).
inline int64_t StridedSpan(int64_t repeats, int64_t mask, int64_t blkStride, int64_t repStride) {
  int64_t last = 0;
  for (int64_t b = 0; b * 8 < mask; ++b) {
    const int64_t lane = std::min<int64_t>(8, mask - b * 8) - 1;
    last = std::max(last, StridedOffset(repeats - 1, b * 8 + lane, blkStride, repStride));
  }
  return last + 1;
}

// The lanes a level-0 float instruction computes: with isSetMask its mask argument, which it
// writes to the mask register; without, the register as the last instruction left it (the
// argument is ignored, as AscendCUtils::SetMask<T, false> does).
inline int64_t LevelZeroLanes(const char *op, uint64_t mask, bool setMask) {
  if (!setMask) return std::min<int64_t>(MaskLanes(), 64);
  if (mask < 1 || mask > 64) twin::Fail(std::string(op) + ": a float mask (continuous mode) is 1..64 elements per repeat");
  MaskLanes() = static_cast<int64_t>(mask);
  return static_cast<int64_t>(mask);
}

template <typename F>
void StridedBinary(const char *op, const LocalTensor<float> &dst, const LocalTensor<float> &a,
                   const LocalTensor<float> &b, uint64_t mask, uint8_t repeatTime, const BinaryRepeatParams &p, F f,
                   bool setMask = true) {
  VectorOperands<float>(op);
  mask = static_cast<uint64_t>(LevelZeroLanes(op, mask, setMask));
  if (p.dstBlkStride == 0) twin::Fail(std::string(op) + ": dstBlkStride 0 is undefined (高维切分.md)");
  if (repeatTime == 0) return;
  const int64_t m = static_cast<int64_t>(mask);
  const int64_t dSpan = StridedSpan(repeatTime, m, p.dstBlkStride, p.dstRepStride);
  const int64_t aSpan = StridedSpan(repeatTime, m, p.src0BlkStride, p.src0RepStride);
  const int64_t bSpan = StridedSpan(repeatTime, m, p.src1BlkStride, p.src1RepStride);
  dst.Check(op, static_cast<uint64_t>(dSpan), true);
  a.Check(op, static_cast<uint64_t>(aSpan), true);
  b.Check(op, static_cast<uint64_t>(bSpan), true);
  float *out = dst.Data();
  const float *in0 = a.Data();
  const float *in1 = b.Data();
  const BinaryRepeatParams params = p;
  const uint8_t repeats = repeatTime;
  const bool saturate = Saturating();
  Pipes().Issue(twin::kPipeV, op, {a.Range(aSpan), b.Range(bSpan)}, {dst.Range(dSpan)},
                [out, in0, in1, params, repeats, m, f, saturate] {
                  // every operand is read before any result is written (they may overlap)
                  std::vector<std::pair<int64_t, float>> results;
                  for (int64_t r = 0; r < repeats; ++r) {
                    for (int64_t e = 0; e < m; ++e) {
                      const float v = f(in0[StridedOffset(r, e, params.src0BlkStride, params.src0RepStride)],
                                        in1[StridedOffset(r, e, params.src1BlkStride, params.src1RepStride)]);
                      results.emplace_back(StridedOffset(r, e, params.dstBlkStride, params.dstRepStride),
                                           saturate ? SaturateFloat(v) : v);
                    }
                  }
                  for (const auto &rv : results) out[rv.first] = rv.second;
                },
                VectorNs(static_cast<uint64_t>(repeatTime) * 256));
}

}  // namespace detail

template <typename T, bool isSetMask = true>
void Mul(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1, uint64_t mask,
         const uint8_t repeatTime, const BinaryRepeatParams &repeatParams) {
  static_assert(std::is_same<T, float>::value, "the twin models float Mul (repeat form) only");
  detail::StridedBinary("Mul (repeat form)", dst, src0, src1, mask, repeatTime, repeatParams,
                        [](float x, float y) { return x * y; }, isSetMask);
}

template <typename T, bool isSetMask = true>
void Add(const LocalTensor<T> &dst, const LocalTensor<T> &src0, const LocalTensor<T> &src1, uint64_t mask,
         const uint8_t repeatTime, const BinaryRepeatParams &repeatParams) {
  static_assert(std::is_same<T, float>::value, "the twin models float Add (repeat form) only");
  detail::StridedBinary("Add (repeat form)", dst, src0, src1, mask, repeatTime, repeatParams,
                        [](float x, float y) { return x + y; }, isSetMask);
}

// Copy (asc-devkit include/basic_api/kernel_operator_data_copy_intf.h, "Copy::Level 0 - mask count
// mode"; CopyRepeatParams in kernel_struct_data_copy.h; docs .../数据搬运/Copy.md): a V-pipe copy
// of `mask` leading elements of each of `repeatTime` repeats, UB to UB, with the block and repeat
// strides of 高维切分.md (dstStride/srcStride: blocks between DataBlocks; dstRepeatSize/
// srcRepeatSize: blocks between repeats). Float only here; the rules are those of Mul/Add above.
struct CopyRepeatParams {
  CopyRepeatParams() {}
  CopyRepeatParams(const uint16_t dstStrideIn, const uint16_t srcStrideIn, uint16_t dstRepeatSizeIn,
                   uint16_t srcRepeatSizeIn)
      : dstStride(dstStrideIn), srcStride(srcStrideIn), dstRepeatSize(dstRepeatSizeIn), srcRepeatSize(srcRepeatSizeIn) {}
  uint16_t dstStride = 1;
  uint16_t srcStride = 1;
  uint16_t dstRepeatSize = 8;
  uint16_t srcRepeatSize = 8;
};

template <typename T, bool isSetMask = true>
void Copy(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint64_t mask, const uint8_t repeatTime,
          const CopyRepeatParams &repeatParams) {
  static_assert(std::is_same<T, float>::value, "the twin models float Copy only");
  detail::VectorOperands<float>("Copy");
  const int64_t m = detail::LevelZeroLanes("Copy", mask, isSetMask);
  if (repeatParams.dstStride == 0) twin::Fail("Copy: dstStride 0 is undefined (高维切分.md)");
  if (repeatTime == 0) return;
  const int64_t dSpan = detail::StridedSpan(repeatTime, m, repeatParams.dstStride, repeatParams.dstRepeatSize);
  const int64_t sSpan = detail::StridedSpan(repeatTime, m, repeatParams.srcStride, repeatParams.srcRepeatSize);
  dst.Check("Copy dst", static_cast<uint64_t>(dSpan), true);
  src.Check("Copy src", static_cast<uint64_t>(sSpan), true);
  float *out = dst.Data();
  const float *in = src.Data();
  const CopyRepeatParams p = repeatParams;
  const uint8_t repeats = repeatTime;
  Pipes().Issue(twin::kPipeV, "Copy", {src.Range(sSpan)}, {dst.Range(dSpan)},
                [out, in, p, repeats, m] {
                  std::vector<std::pair<int64_t, float>> moved;  // read everything first (they may overlap)
                  for (int64_t r = 0; r < repeats; ++r) {
                    for (int64_t e = 0; e < m; ++e) {
                      moved.emplace_back(detail::StridedOffset(r, e, p.dstStride, p.dstRepeatSize),
                                         in[detail::StridedOffset(r, e, p.srcStride, p.srcRepeatSize)]);
                    }
                  }
                  for (const auto &v : moved) out[v.first] = v.second;
                },
                detail::VectorNs(static_cast<uint64_t>(repeatTime) * 256));
}

template <typename T>
void Brcb(const LocalTensor<T> &dst, const LocalTensor<T> &src, const uint8_t repeatTime,
          const BrcbRepeatParams &repeatParams) {
  static_assert(std::is_same<T, float>::value, "the twin models float Brcb only");
  detail::VectorOperands<float>("Brcb");
  if (repeatParams.dstBlkStride == 0) twin::Fail("Brcb: dstBlkStride 0 is undefined (Brcb.md, constraints)");
  if (repeatTime == 0) return;
  const int64_t blk = repeatParams.dstBlkStride;
  const int64_t rep = repeatParams.dstRepStride;
  const int64_t dSpan = detail::StridedSpan(repeatTime, 64, blk, rep);
  const int64_t sSpan = 8 * static_cast<int64_t>(repeatTime);
  dst.Check("Brcb dst", static_cast<uint64_t>(dSpan), true);
  src.Check("Brcb src", static_cast<uint64_t>(sSpan), true);
  const twin::UbRange d = dst.Range(dSpan);
  const twin::UbRange s = src.Range(sSpan);
  if (d.addr < s.addr + s.bytes && s.addr < d.addr + d.bytes) {
    twin::Fail("Brcb: source and destination overlap (Brcb.md, constraints: the source and the destination "
               "may not use the same memory)");
  }
  float *out = dst.Data();
  const float *in = src.Data();
  const uint8_t repeats = repeatTime;
  Pipes().Issue(twin::kPipeV, "Brcb", {src.Range(sSpan)}, {dst.Range(dSpan)},
                [out, in, repeats, blk, rep, sSpan] {
                  const std::vector<float> values(in, in + sSpan);
                  for (int64_t r = 0; r < repeats; ++r) {
                    for (int64_t j = 0; j < 8; ++j) {
                      for (int64_t lane = 0; lane < 8; ++lane) out[(r * rep + j * blk) * 8 + lane] = values[r * 8 + j];
                    }
                  }
                },
                detail::VectorNs(static_cast<uint64_t>(repeatTime) * 256));
}

}  // namespace AscendC

#endif  // GNMS_TWIN_KERNEL_OPERATOR_STRIDED_H
