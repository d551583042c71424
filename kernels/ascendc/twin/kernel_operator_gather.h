// CPU twin, part of kernel_operator.h: Gather (count form) on fp32, and Adds on int32 (how a
// kernel builds Gather's offset table).
//
// Gather: asc-devkit docs/zh/api/SIMD-API/基础API/Memory矢量计算/离散与聚合/Gather.md, the signature
// of include/basic_api/kernel_operator_vec_gather_intf.h (dst, src, LocalTensor<uint32_t> srcOffset,
// uint32_t srcBaseAddr, uint32_t count), and impl/basic_api/kernel_operator_vec_gather_intf_impl.h.
// dst[i] is the element at byte srcBaseAddr + srcOffset[i] from src's start. The rules kept:
//  * dst, src and srcOffset start 32-byte aligned (Gather.md, 参数说明);
//  * srcBaseAddr and every offset are multiples of the element size (约束说明: otherwise the data is
//    misplaced without an error);
//  * every element read lies inside src: the docs bound it by the UB, the twin by the tensor the
//    kernel passes as src (as every other operand stays inside its own);
//  * src and dst do not overlap (约束说明: not the same memory);
//  * on A2/A3 the count form issues count / 64 repeats of 32-bit elements as a uint8_t repeatTime
//    (gather_intf_impl.h), so count / 64 must be at most 255; count 0 is a NOP there.
// Supported on Atlas A2/A3 and Ascend 950, not on Atlas training (Gather.md, 产品支持情况).
// Cost: 5 elements a cycle (附录/Vector指令理论性能汇总.md, 表15), against 64 floats a cycle of an Add.
//
// Adds on int32: the count form of kernel_operator_vec_binary_scalar_intf.h, which dav_c220's
// AddsImpl takes for half, float, int16_t and int32_t; what an overflowing sum gives is not
// documented, so the twin refuses one.
#ifndef GNMS_TWIN_KERNEL_OPERATOR_GATHER_H
#define GNMS_TWIN_KERNEL_OPERATOR_GATHER_H

// Included by kernel_operator.h (after kernel_operator_vector.h); not a standalone header.

namespace AscendC {

constexpr uint32_t kGatherElemsPerCycle = 5;

template <typename T>
void Gather(const LocalTensor<T> &dst, const LocalTensor<T> &src, const LocalTensor<uint32_t> &srcOffset,
            const uint32_t srcBaseAddr, const uint32_t count) {
  static_assert(std::is_same<T, float>::value, "the twin models float Gather only");
  twin::Checkpoint();
  detail::MaskLanes() = detail::kMaskFull;
  if (count == 0) return;
  if (count / 64 > 255) {
    twin::Fail("Gather: count " + std::to_string(count) + " needs more than 255 repeats of 64 elements (the count "
               "form's repeatTime is a uint8_t on A2/A3)");
  }
  dst.Check("Gather dst", count, true);
  srcOffset.Check("Gather srcOffset", count, true);
  src.Check("Gather src", 0, true);
  if (srcBaseAddr % sizeof(T) != 0) {
    twin::Fail("Gather: srcBaseAddr " + std::to_string(srcBaseAddr) + " is not a multiple of the element size");
  }
  const uint64_t srcBytes = static_cast<uint64_t>(src.GetSize()) * sizeof(T);
  const twin::UbRange d = dst.Range(count);
  const twin::UbRange s = src.Range(src.GetSize());
  if (d.addr < s.addr + s.bytes && s.addr < d.addr + d.bytes) {
    twin::Fail("Gather: source and destination overlap (Gather.md: they may not share memory)");
  }
  T *out = dst.Data();
  const uint8_t *in = reinterpret_cast<const uint8_t *>(src.Data());
  const uint32_t *offsets = srcOffset.Data();
  const std::string where = src.slot()->owner;
  Pipes().Issue(twin::kPipeV, "Gather", {s, srcOffset.Range(count)}, {d},
                [out, in, offsets, count, srcBaseAddr, srcBytes, where] {
                  for (uint32_t i = 0; i < count; ++i) {
                    const uint64_t at = static_cast<uint64_t>(srcBaseAddr) + offsets[i];
                    if (at % sizeof(T) != 0) {
                      twin::Fail("Gather: offset " + std::to_string(offsets[i]) + " (element " + std::to_string(i) +
                                 ") is not a multiple of the element size");
                    }
                    if (at + sizeof(T) > srcBytes) {
                      twin::Fail("Gather: element " + std::to_string(i) + " reads byte " + std::to_string(at) +
                                 " of a source of " + std::to_string(srcBytes) + " bytes (" + where + ")");
                    }
                    std::memcpy(out + i, in + at, sizeof(T));
                  }
                },
                detail::VectorNs(static_cast<uint64_t>(count) * 256 / kGatherElemsPerCycle));
}

inline void Adds(const LocalTensor<int32_t> &dst, const LocalTensor<int32_t> &src, const int32_t &s,
                 const int32_t &count) {
  twin::Checkpoint();
  detail::MaskLanes() = detail::kMaskFull;
  if (count < 0) twin::Fail("Adds (int32): negative count");
  dst.Check("Adds (int32)", count, true);
  src.Check("Adds (int32)", count, true);
  int32_t *out = dst.Data();
  const int32_t *in = src.Data();
  const int32_t v = s;
  Pipes().Issue(twin::kPipeV, "Adds (int32)", {src.Range(count)}, {dst.Range(count)},
                [out, in, v, count] {
                  std::vector<int32_t> result(static_cast<size_t>(count));  // src may alias dst
                  for (int32_t i = 0; i < count; ++i) {
                    const int64_t sum = static_cast<int64_t>(in[i]) + v;
                    if (sum > INT32_MAX || sum < INT32_MIN) twin::Fail("Adds (int32): the sum overflows int32");
                    result[i] = static_cast<int32_t>(sum);
                  }
                  std::memcpy(out, result.data(), result.size() * sizeof(int32_t));
                },
                detail::VectorNs(static_cast<uint64_t>(count) * sizeof(int32_t)));
}

}  // namespace AscendC

#endif  // GNMS_TWIN_KERNEL_OPERATOR_GATHER_H
