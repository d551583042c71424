// CPU twin, part of kernel_operator.h: data movement. DataCopy (GM <-> UB, UB -> UB) and
// DataCopyPad with their parameter structs (asc-devkit include/basic_api/kernel_struct_data_copy.h),
// the TPosition data paths each copy accepts (asc-devkit docs/zh/api/SIMD-API/基础API/
// Memory矢量计算/数据搬运/, see CheckPath), and the DMA / vector cost model the pipes use.
#ifndef GNMS_TWIN_KERNEL_OPERATOR_DATA_COPY_H
#define GNMS_TWIN_KERNEL_OPERATOR_DATA_COPY_H

// Included by kernel_operator.h (after the parts it builds on); not a standalone header.

namespace AscendC {

// ---------------------------------------------------------------- data movement
// Constructor classes, as in asc-devkit (include/basic_api/kernel_struct_data_copy.h, dav-c220
// branch): built with no argument or with all of them; a partial brace-init such as
// DataCopyExtParams{1, len} does not compile on the real headers, so it must not here either.
struct DataCopyExtParams {
  DataCopyExtParams() {}
  DataCopyExtParams(const uint16_t count, const uint32_t len, const uint32_t srcStrideIn, const uint32_t dstStrideIn,
                    const uint32_t rsvIn)
      : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn), rsv(rsvIn) {}

  uint16_t blockCount = 1;
  uint32_t blockLen = 0;   // bytes per row
  uint32_t srcStride = 0;  // GM->UB: bytes between GM rows; UB->GM: 32-byte blocks between UB rows
  uint32_t dstStride = 0;  // GM->UB: 32-byte blocks between UB rows; UB->GM: bytes between GM rows
  uint32_t rsv = 0;
};

template <typename T>
struct DataCopyPadExtParams {
  DataCopyPadExtParams() {}
  DataCopyPadExtParams(const bool isPadValue, const uint8_t leftPadValue, const uint8_t rightPadValue, T padValue)
      : isPad(isPadValue), leftPadding(leftPadValue), rightPadding(rightPadValue), paddingValue(padValue) {}

  bool isPad = false;
  uint8_t leftPadding = 0;
  uint8_t rightPadding = 0;
  T paddingValue{};
};

namespace detail {

template <typename T>
void CheckCopyLength(const char *op, uint32_t count) {
  if ((static_cast<uint64_t>(count) * sizeof(T)) % kUbBlockBytes != 0) {
    twin::Fail(std::string(op) + ": length of " + std::to_string(count * sizeof(T)) +
               " bytes is not a multiple of 32 bytes (unaligned transfers need DataCopyPad)");
  }
}

// The TPosition data paths each copy accepts, from asc-devkit
// docs/zh/api/SIMD-API/基础API/Memory矢量计算/数据搬运/:
//   DataCopy（GM与UB连续数据搬运）.md   GM -> VECIN, VECOUT -> GM
//   DataCopyPad（GMToUB非对齐数据搬运）.md  GM -> VECIN, GM -> VECOUT (VECCALC only on Ascend 950)
//   DataCopyPad（UBToGM非对齐数据搬运）.md  VECIN -> GM, VECOUT -> GM
//   DataCopy（UBToUB连续数据搬运）.md   VECIN -> VECCALC, VECCALC -> VECOUT
//
// Under twin::Config::cannCompat (CANN's own kernels only) a copy between the same physical
// memories is accepted whatever the UB positions: asc-devkit's implementation dispatches on
// GetPhyType(position) (impl/basic_api/kernel_event.h maps VECIN, VECOUT and VECCALC all to
// Hardware::UB; kernel_operator_data_copy_intf_impl.h DataCopyPad and DataCopy UB->UB branch on
// it), and the instruction takes a UB address only, so the position is not seen by the hardware.
inline void CheckPath(const char *op, QuePosition src, QuePosition dst, std::initializer_list<QuePosition> srcOk,
                      std::initializer_list<QuePosition> dstOk) {
  if (twin::CurrentConfig().cannCompat && (src == QuePosition::GM) == (*srcOk.begin() == QuePosition::GM) &&
      (dst == QuePosition::GM) == (*dstOk.begin() == QuePosition::GM)) {
    return;
  }
  bool ok = false;
  auto s = srcOk.begin();
  auto d = dstOk.begin();
  for (; s != srcOk.end(); ++s, ++d) ok = ok || (*s == src && *d == dst);
  if (!ok) {
    std::string paths;
    s = srcOk.begin();
    d = dstOk.begin();
    for (; s != srcOk.end(); ++s, ++d) paths += std::string(paths.empty() ? "" : ", ") + PositionName(*s) + " -> " + PositionName(*d);
    twin::Fail(std::string(op) + ": the data path " + PositionName(src) + " -> " + PositionName(dst) +
               " is not supported (the documented paths are " + paths + ")");
  }
}

inline void GmWrite(uint8_t *dst, const uint8_t *src, size_t bytes, size_t elemBytes, bool atomic) {
  if (!atomic) {
    std::memcpy(dst, src, bytes);
    return;
  }
  if (elemBytes != sizeof(float)) twin::Fail("atomic add is modelled for fp32 only");
  twin::LockAtomics();
  for (size_t i = 0; i < bytes; i += sizeof(float)) {
    float a, b;
    std::memcpy(&a, dst + i, sizeof a);
    std::memcpy(&b, src + i, sizeof b);
    a += b;
    std::memcpy(dst + i, &a, sizeof a);
  }
  twin::UnlockAtomics();
}

// How long a DMA of `bursts` rows of `rowBytes` each holds its MTE pipe (its latency comes on
// top, see DmaLatencyNs): a setup, then per burst its overhead and its bytes, every burst
// moving at least one 32-byte block (DataCopyPad pads each row to 32 bytes in UB; a row is
// a separate burst: DataCopyPad（GMToUB非对齐数据搬运）.md).
inline double DmaNs(uint64_t rowBytes, uint64_t bursts = 1) {
  twin::PipeModel &p = Pipes();
  p.stats().dmaBursts += static_cast<double>(bursts);
  const uint64_t moved = std::max<uint64_t>(rowBytes, kUbBlockBytes) * bursts;
  return p.Cycles(p.cost().dmaSetupCycles + p.cost().dmaBurstCycles * static_cast<double>(bursts)) +
         static_cast<double>(moved) / p.cost().gmBytesPerNs;
}
inline double DmaLatencyNs() { return Pipes().cost().dmaLatencyNs; }

// A vector instruction over `bytes` bytes of its widest operand: 256-byte repeats.
inline double VectorNs(uint64_t bytes) {
  twin::PipeModel &p = Pipes();
  const double repeats = static_cast<double>((bytes + 255) / 256);
  p.stats().vecCalls += 1;
  p.stats().vecRepeats += repeats;
  return p.Cycles(p.cost().vecStartCycles + repeats * p.cost().vecCyclesPerRepeat);
}

}  // namespace detail

template <typename T>
void DataCopy(const LocalTensor<T> &dst, const GlobalTensor<T> &src, uint32_t count) {
  twin::Checkpoint();
  detail::CheckCopyLength<T>("DataCopy GM->UB", count);
  detail::CheckPath("DataCopy GM->UB", QuePosition::GM, dst.pos(), {QuePosition::GM}, {QuePosition::VECIN});
  dst.Check("DataCopy GM->UB", count, true);
  twin::CheckGm(src.GetPhyAddr(), count * sizeof(T), "DataCopy GM->UB");
  const size_t bytes = count * sizeof(T);
  uint8_t *d = dst.Raw();
  const T *g = src.GetPhyAddr();
  Pipes().stats().gmReadBytes += bytes;
  Pipes().Issue(twin::kPipeMte2, "DataCopy GM->UB", {}, {dst.Range(count)}, [d, g, bytes] { std::memcpy(d, g, bytes); },
                detail::DmaNs(bytes), detail::DmaLatencyNs());
}

template <typename T>
void DataCopy(const GlobalTensor<T> &dst, const LocalTensor<T> &src, uint32_t count) {
  twin::Checkpoint();
  detail::CheckCopyLength<T>("DataCopy UB->GM", count);
  detail::CheckPath("DataCopy UB->GM", src.pos(), QuePosition::GM, {QuePosition::VECOUT}, {QuePosition::GM});
  src.Check("DataCopy UB->GM", count, true);
  twin::CheckGm(dst.GetPhyAddr(), count * sizeof(T), "DataCopy UB->GM");
  const size_t bytes = count * sizeof(T);
  uint8_t *g = reinterpret_cast<uint8_t *>(dst.GetPhyAddr());
  const uint8_t *u = src.Raw();
  const bool atomic = twin::Block().atomicAdd;
  Pipes().stats().gmWriteBytes += bytes;
  Pipes().Issue(twin::kPipeMte3, "DataCopy UB->GM", {src.Range(count)}, {},
                [g, u, bytes, atomic] { detail::GmWrite(g, u, bytes, sizeof(T), atomic); }, detail::DmaNs(bytes),
                detail::DmaLatencyNs());
}

template <typename T>
void DataCopy(const LocalTensor<T> &dst, const LocalTensor<T> &src, uint32_t count) {
  twin::Checkpoint();
  detail::CheckCopyLength<T>("DataCopy UB->UB", count);
  detail::CheckPath("DataCopy UB->UB", src.pos(), dst.pos(), {QuePosition::VECIN, QuePosition::VECCALC},
                    {QuePosition::VECCALC, QuePosition::VECOUT});
  dst.Check("DataCopy UB->UB", count, true);
  src.Check("DataCopy UB->UB", count, true);
  const size_t bytes = count * sizeof(T);
  uint8_t *d = dst.Raw();
  const uint8_t *u = src.Raw();
  Pipes().Issue(twin::kPipeV, "DataCopy UB->UB", {src.Range(count)}, {dst.Range(count)},
                [d, u, bytes] { std::memmove(d, u, bytes); }, detail::VectorNs(bytes));
}

namespace detail {
// DataCopyPad moves at most 4095 blocks per instruction: blockCount is a uint16_t whose range the
// asc-devkit docs give as [0, 4095] (DataCopyPad（GMToUB非对齐数据搬运）.md and
// DataCopyPad（UBToGM非对齐数据搬运）.md, parameter table); a larger count is not a valid instruction.
constexpr uint16_t kMaxCopyPadBlocks = 4095;
inline void CheckBlockCount(const char *what, uint16_t blockCount) {
  if (blockCount > kMaxCopyPadBlocks) {
    twin::Fail(std::string(what) + ": blockCount " + std::to_string(blockCount) + " is beyond 4095, the largest the "
               "instruction takes");
  }
}
}  // namespace detail

template <typename T>
void DataCopyPad(const LocalTensor<T> &dst, const GlobalTensor<T> &src, const DataCopyExtParams &p,
                 const DataCopyPadExtParams<T> &pad) {
  twin::Checkpoint();
  detail::CheckPath("DataCopyPad GM->UB", QuePosition::GM, dst.pos(), {QuePosition::GM, QuePosition::GM},
                    {QuePosition::VECIN, QuePosition::VECOUT});
  if (p.blockLen % sizeof(T) != 0) twin::Fail("DataCopyPad GM->UB: blockLen is not a whole number of elements");
  detail::CheckBlockCount("DataCopyPad GM->UB", p.blockCount);
  const uint64_t rowUb = (p.blockLen + kUbBlockBytes - 1) / kUbBlockBytes * kUbBlockBytes;
  const uint64_t pitchUb = rowUb + static_cast<uint64_t>(p.dstStride) * kUbBlockBytes;
  const uint64_t pitchGm = p.blockLen + static_cast<uint64_t>(p.srcStride);
  if (p.blockCount == 0) return;
  const uint64_t ubBytes = pitchUb * (p.blockCount - 1) + rowUb;
  if (twin::CurrentConfig().cannCompat) {
    // CANN's kernels take a view of `count` elements (TBuf::Get(count)) and load an unaligned row
    // into it: the rows' data must fit the view, their 32-byte padding only the buffer the view was
    // taken from (InitBuffer rounds every buffer up to 32 bytes; the DMA writes there and nowhere
    // else). By default the padding must fit the view too, as asc-devkit's own overflow check
    // (CheckDataCopyPadTensorSizeOverflow, against dst.GetSize()) demands.
    dst.Check("DataCopyPad GM->UB", (pitchUb * (p.blockCount - 1) + p.blockLen + sizeof(T) - 1) / sizeof(T), true);
    dst.CheckInBuffer("DataCopyPad GM->UB (padded rows)", ubBytes);
  } else {
    dst.Check("DataCopyPad GM->UB", (ubBytes + sizeof(T) - 1) / sizeof(T), true);
  }
  const uint8_t *gm = reinterpret_cast<const uint8_t *>(src.GetPhyAddr());
  for (uint16_t r = 0; r < p.blockCount; ++r) twin::CheckGm(gm + r * pitchGm, p.blockLen, "DataCopyPad GM->UB");
  uint8_t *ub = dst.Raw();
  const DataCopyExtParams params = p;
  const DataCopyPadExtParams<T> padding = pad;
  Pipes().stats().gmReadBytes += static_cast<double>(p.blockLen) * p.blockCount;
  Pipes().Issue(
      twin::kPipeMte2, "DataCopyPad GM->UB", {}, {twin::UbRange{dst.addr(), static_cast<uint32_t>(ubBytes)}},
      [ub, gm, params, padding, rowUb, pitchUb, pitchGm] {
        for (uint16_t r = 0; r < params.blockCount; ++r) {
          uint8_t *row = ub + r * pitchUb;
          std::memcpy(row, gm + r * pitchGm, params.blockLen);
          for (uint64_t b = params.blockLen; b < rowUb; b += sizeof(T)) {
            if (padding.isPad) std::memcpy(row + b, &padding.paddingValue, sizeof(T)); else std::memset(row + b, 0xFF, sizeof(T));
          }
        }
      },
      detail::DmaNs(p.blockLen, p.blockCount), detail::DmaLatencyNs());
}

template <typename T>
void DataCopyPad(const GlobalTensor<T> &dst, const LocalTensor<T> &src, const DataCopyExtParams &p) {
  twin::Checkpoint();
  detail::CheckPath("DataCopyPad UB->GM", src.pos(), QuePosition::GM, {QuePosition::VECIN, QuePosition::VECOUT},
                    {QuePosition::GM, QuePosition::GM});
  if (p.blockLen % sizeof(T) != 0) twin::Fail("DataCopyPad UB->GM: blockLen is not a whole number of elements");
  detail::CheckBlockCount("DataCopyPad UB->GM", p.blockCount);
  const uint64_t rowUb = (p.blockLen + kUbBlockBytes - 1) / kUbBlockBytes * kUbBlockBytes;
  const uint64_t pitchUb = rowUb + static_cast<uint64_t>(p.srcStride) * kUbBlockBytes;
  const uint64_t pitchGm = p.blockLen + static_cast<uint64_t>(p.dstStride);
  if (p.blockCount == 0) return;
  const uint64_t ubBytes = pitchUb * (p.blockCount - 1) + p.blockLen;
  src.Check("DataCopyPad UB->GM", (ubBytes + sizeof(T) - 1) / sizeof(T), true);
  uint8_t *gm = reinterpret_cast<uint8_t *>(dst.GetPhyAddr());
  for (uint16_t r = 0; r < p.blockCount; ++r) twin::CheckGm(gm + r * pitchGm, p.blockLen, "DataCopyPad UB->GM");
  const uint8_t *ub = src.Raw();
  const uint16_t rows = p.blockCount;
  const uint32_t len = p.blockLen;
  const bool atomic = twin::Block().atomicAdd;
  Pipes().stats().gmWriteBytes += static_cast<double>(len) * rows;
  Pipes().Issue(twin::kPipeMte3, "DataCopyPad UB->GM", {twin::UbRange{src.addr(), static_cast<uint32_t>(ubBytes)}}, {},
                [gm, ub, rows, len, pitchUb, pitchGm, atomic] {
                  for (uint16_t r = 0; r < rows; ++r) {
                    detail::GmWrite(gm + r * pitchGm, ub + r * pitchUb, len, sizeof(T), atomic);
                  }
                },
                detail::DmaNs(len, rows), detail::DmaLatencyNs());
}

}  // namespace AscendC

#endif  // GNMS_TWIN_KERNEL_OPERATOR_DATA_COPY_H
