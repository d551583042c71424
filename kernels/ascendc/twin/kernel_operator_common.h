// CPU twin, part of kernel_operator.h: the API CANN's own 910B kernels use beyond ours (ops-nn
// norm/group_norm_grad and its kin; see docs/ascend.md, "CANN's kernels on the twin"). Each
// follows asc-devkit's interface and dav-c220 implementation, cited at the function:
//   * GetTPipePtr(): the TPipe the block constructed (kernel_tpipe_impl.h);
//   * ASSERT(x): the CPU-debug assert (impl/basic_api/kernel_macros.h); a failed one stops the launch;
//   * the explicit-template count forms Add<T>, Sub<T>, Mul<T>, Adds<T>, Muls<T>, Duplicate<T>;
//   * DataCopyParams and DataCopyPad(GM <- UB) with it (include/basic_api/kernel_struct_data_copy.h);
//   * InitOutput<T>(gm, size, value) (impl/basic_api/kernel_operator_common_intf_impl.h).
#ifndef GNMS_TWIN_KERNEL_OPERATOR_COMMON_H
#define GNMS_TWIN_KERNEL_OPERATOR_COMMON_H

// Included by kernel_operator.h (after the parts it builds on); not a standalone header.

// impl/basic_api/kernel_macros.h: assert(x) under ASCENDC_CPU_DEBUG, nothing on the device. The
// twin is the CPU run, so a false ASSERT is a fault of the launch (it names the expression).
#define ASSERT(x) ((x) ? (void)0 : ::twin::Fail("ASSERT(" #x ") failed"))

namespace AscendC {

// The TPipe the block constructed. asc-devkit asserts it is set (PopStackBuffer, and every
// FetchEventID through it would dereference null); so does the twin.
inline TPipe *GetTPipePtr() {
  TPipe *pipe = detail::CurrentPipe();
  if (pipe == nullptr) twin::Fail("GetTPipePtr(): no TPipe has been constructed in this block");
  return pipe;
}

// ---------------------------------------------------------------- explicit-template count forms
// include/basic_api/kernel_operator_vec_binary_intf.h declares the count forms as templates
// (template <typename T> Add(dst, src0, src1, const int32_t& count)), so Add<float>(...) names
// one; the twin's float forms are plain functions, which these forward to.
template <typename T>
inline void Add(const LocalTensor<T> &dst, const LocalTensor<T> &a, const LocalTensor<T> &b, const int32_t &count) {
  static_assert(std::is_same<T, float>::value, "the twin models fp32 vector arithmetic only");
  Add(dst, a, b, count);
}
template <typename T>
inline void Sub(const LocalTensor<T> &dst, const LocalTensor<T> &a, const LocalTensor<T> &b, const int32_t &count) {
  static_assert(std::is_same<T, float>::value, "the twin models fp32 vector arithmetic only");
  Sub(dst, a, b, count);
}
template <typename T>
inline void Mul(const LocalTensor<T> &dst, const LocalTensor<T> &a, const LocalTensor<T> &b, const int32_t &count) {
  static_assert(std::is_same<T, float>::value, "the twin models fp32 vector arithmetic only");
  Mul(dst, a, b, count);
}
template <typename T>
inline void Adds(const LocalTensor<T> &dst, const LocalTensor<T> &a, const T &s, const int32_t &count) {
  static_assert(std::is_same<T, float>::value, "the twin models fp32 vector arithmetic only");
  Adds(dst, a, s, count);
}
template <typename T>
inline void Muls(const LocalTensor<T> &dst, const LocalTensor<T> &a, const T &s, const int32_t &count) {
  static_assert(std::is_same<T, float>::value, "the twin models fp32 vector arithmetic only");
  Muls(dst, a, s, count);
}
template <typename T>
inline void Duplicate(const LocalTensor<T> &dst, const T &s, const int32_t &count) {
  static_assert(std::is_same<T, float>::value, "the twin models fp32 vector arithmetic only");
  Duplicate(dst, s, count);
}

// ---------------------------------------------------------------- DataCopyParams
// The older parameter struct: every field a uint16_t (blockLen in bytes for DataCopyPad), built
// with no argument or with all four (kernel_struct_data_copy.h). DataCopyPad UB -> GM with it is
// the DataCopyExtParams form with the same values (DataCopyPad（UBToGM非对齐数据搬运）.md lists both
// prototypes with one meaning).
struct DataCopyParams {
  DataCopyParams() {}
  DataCopyParams(const uint16_t count, const uint16_t len, const uint16_t srcStrideIn, const uint16_t dstStrideIn)
      : blockCount(count), blockLen(len), srcStride(srcStrideIn), dstStride(dstStrideIn) {}
  uint16_t blockCount = 1;
  uint16_t blockLen = 0;
  uint16_t srcStride = 0;
  uint16_t dstStride = 0;
};

template <typename T>
void DataCopyPad(const GlobalTensor<T> &dst, const LocalTensor<T> &src, const DataCopyParams &p) {
  DataCopyPad(dst, src, DataCopyExtParams(p.blockCount, p.blockLen, p.srcStride, p.dstStride, 0));
}

// ---------------------------------------------------------------- InitOutput
namespace detail {
// The UB that PopStackBuffer hands out on dav-c220 ends short of the top by sizeof(KfcMsg), the
// 128-byte message slot the cube/vector handshake keeps there (kernel_pop_stack_buffer.h
// GetEndAddress; dav_c220/kfc/kfc_comm.h: head, ubAddr and a 120-byte union).
constexpr int64_t kKfcMsgBytes = 128;

// Whether filling popBytes of UB at start with value leaves every byte as it is: in program order
// (immediate execution) UB holds the bytes; under deferred execution, the last fill still wrote
// them, with the same value, if no instruction has written any of them since.
template <typename T>
bool RefillUnchanged(int64_t start, uint32_t popBytes, const uint8_t *ub, T value) {
  if (twin::CurrentConfig().execution == twin::kImmediate) {
    for (uint32_t i = 0; i < popBytes; i += sizeof(T)) {
      if (std::memcmp(ub + i, &value, sizeof(T)) != 0) return false;
    }
    return true;
  }
  const twin::BlockState::Fill &last = twin::Block().initOutputFill;
  return last.start == start && last.bytes == popBytes && last.valueBytes == sizeof(T) &&
         std::memcmp(last.value, &value, sizeof(T)) == 0 &&
         twin::Block().pipes.LastWrittenBy(twin::UbRange{static_cast<uint32_t>(start), popBytes}, last.op);
}
}  // namespace detail

// InitOutput<T>(gm, size, value) (deprecated in asc-devkit in favour of Fill, still what CANN's
// kernels call): fills size elements of GM with value. As kernel_operator_common_intf_impl.h does
// it on arch 2201: it pops the UB above the TPipe's buffers (up to the KfcMsg slot), Duplicates
// value over at most 255 blocks of it on V, waits V -> MTE3 once (an id from FetchEventID), and
// stores it with DataCopyPad bursts on MTE3, the last one the tail. It does not wait for MTE3 at
// its end: UB that a later InitBuffer lays over the popped region is still being read until the
// kernel synchronises (the pipe model flags a V write there as a hazard). GM writes obey
// SetAtomicAdd like any store.
template <typename T>
void InitOutput(GlobalTensor<T> gm, uint32_t size, T value) {
  twin::Checkpoint();
  TPipe *pipe = GetTPipePtr();
  const int64_t start = pipe->UsedBytes();
  const int64_t end = twin::CurrentConfig().ubBytes - detail::kKfcMsgBytes;
  if (end <= start) {
    twin::Fail("InitOutput: PopStackBuffer failed, the TPipe's buffers use " + std::to_string(start) +
               " bytes of UB and leave none to pop");
  }
  const uint32_t maxBurst = 255 * kUbBlockBytes / sizeof(T);
  const uint32_t popSize = std::min<uint32_t>(static_cast<uint32_t>((end - start) / sizeof(T)), maxBurst);
  const uint32_t rounds = size / popSize;
  const uint32_t tail = size % popSize;
  twin::PipeModel &pipes = Pipes();
  uint8_t *ub = twin::Block().ub.data() + start;
  const uint32_t popBytes = popSize * sizeof(T);
  detail::MaskLanes() = detail::kMaskFull;  // DuplicateImpl is a count form
  // Under Config::cannCompat, a refill with the bytes the popped UB already holds (CANN's kernels
  // call InitOutput several times in a row with 0, and nothing orders the previous call's MTE3 read
  // before this fill) changes nothing a reader could see, so it is issued without a UB write.
  const bool unchanged = twin::CurrentConfig().cannCompat && detail::RefillUnchanged(start, popBytes, ub, value);
  const twin::UbRange fill{static_cast<uint32_t>(start), unchanged ? 0u : popBytes};
  pipes.Issue(twin::kPipeV, "InitOutput (Duplicate)", {}, {fill},
              [ub, popSize, value] {
                for (uint32_t i = 0; i < popSize; ++i) std::memcpy(ub + i * sizeof(T), &value, sizeof(T));
              },
              detail::VectorNs(popBytes));
  if (!unchanged) {
    twin::BlockState::Fill &last = twin::Block().initOutputFill;
    last = twin::BlockState::Fill{pipes.LastOp(), static_cast<uint32_t>(start), popBytes, {}, sizeof(T)};
    std::memcpy(last.value, &value, sizeof(T));
  }
  const int id = pipes.FetchEventId(twin::kPipeV, twin::kPipeMte3);
  pipes.SetFlag(twin::kPipeV, twin::kPipeMte3, id, twin::kFlagApi);
  pipes.WaitFlag(twin::kPipeV, twin::kPipeMte3, id, twin::kFlagApi);
  const bool atomic = twin::Block().atomicAdd;
  auto store = [&](uint64_t offset, uint32_t count) {
    const uint32_t bytes = count * sizeof(T);
    uint8_t *g = reinterpret_cast<uint8_t *>(gm.GetPhyAddr() + offset);
    twin::CheckGm(g, bytes, "InitOutput");
    pipes.stats().gmWriteBytes += bytes;
    pipes.Issue(twin::kPipeMte3, "InitOutput (DataCopyPad UB->GM)", {twin::UbRange{static_cast<uint32_t>(start), bytes}},
                {}, [g, ub, bytes, atomic] { detail::GmWrite(g, ub, bytes, sizeof(T), atomic); }, detail::DmaNs(bytes),
                detail::DmaLatencyNs());
  };
  for (uint32_t r = 0; r < rounds; ++r) store(static_cast<uint64_t>(r) * popSize, popSize);
  if (tail != 0) store(static_cast<uint64_t>(rounds) * popSize, tail);
}

}  // namespace AscendC

#endif  // GNMS_TWIN_KERNEL_OPERATOR_COMMON_H
