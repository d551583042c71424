// CPU twin of the subset of the AscendC API that the GroupNormGradMs kernel uses.
//
// The op_kernel sources compile unmodified against this header with g++. Semantics
// follow the AscendC documentation; where real hardware would fail or silently
// misbehave, the twin stops the launch with a message instead (twin::Fail):
//   * UB: the InitBuffer total of a block may not exceed the configured UB size; UB
//     operand addresses of vector ops and DataCopy must be 32-byte aligned; DataCopy
//     lengths must be 32-byte multiples (unaligned transfers need DataCopyPad);
//     operands must stay inside the buffer they were taken from.
//   * Queues: DeQue on an empty queue, EnQue beyond the depth, more tensors allocated
//     than the queue has buffers, double FreeTensor, use of a freed or enqueued tensor,
//     and use of any tensor after TPipe::Reset.
//   * GM: every read and write must fall inside a buffer the launch was given.
//   * Launch: blockDim <= core count; SyncAll is a real barrier of all blocks.
// The UB starts filled with 0xFF bytes (NaN as fp32), and DataCopyPad fills the padding
// of each row with the same garbage unless padding is requested, so a kernel that
// reads data it never wrote produces NaNs instead of passing by luck.
//
// Every call is issued on the pipe the hardware runs it on (MTE2: GM -> UB copies; MTE3:
// UB -> GM copies; V: vector instructions and UB -> UB copies; S: GetValue/SetValue on UB
// or GM); twin_pipes.h checks the synchronisation between pipes (UB hazards, SetFlag /
// WaitFlag pairing), can defer each pipe's work until a synchronisation forces it, and
// counts what the launch would cost. Copies are checked against the TPosition data paths
// of asc-devkit docs/zh/api/SIMD-API/基础API/Memory矢量计算/数据搬运/ (see CheckPath).
#ifndef GNMS_TWIN_KERNEL_OPERATOR_H
#define GNMS_TWIN_KERNEL_OPERATOR_H

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "../../cpu/half_types.h"
#include "build_rules.h"  // TILING_KEY_IS, KERNEL_TASK_TYPE_DEFAULT: CANN build rules
#include "twin_runtime.h"

// Flowing off the end of a value-returning function is undefined behaviour (C++17 [stmt.return]
// p2): on the device it hands back whatever a register holds, and in the twin's process it can
// crash the launcher (SIGSEGV) instead of failing the launch. So every translation unit that
// includes the twin refuses it at build, whatever flags it is built with (a mutant that deletes a
// `return ...DeQue<T>();` line is then "does not build", never a crash or a lucky pass).
#pragma GCC diagnostic error "-Wreturn-type"

#define __aicore__
#define __global__
#define __gm__
using GM_ADDR = uint8_t *;

// ---------------------------------------------------------------- scalar types
struct half {
  uint16_t bits = 0;
  half() = default;
  half(float f) : bits(ms_groupnorm::ToHalf(f).bits) {}  // NOLINT: implicit like the device type
  operator float() const { return ms_groupnorm::ToFloat(ms_groupnorm::Half{bits}); }
};

// No implicit conversion to float: device code converts bf16 with ToFloat / ToBfloat16. Built
// from a number it rounds to nearest even, as the device type does from a literal (CANN's kernels
// write DataCopyPadExtParams<bfloat16_t>{false, 0, 0, 0}).
struct bfloat16_t {
  uint16_t bits = 0;
  bfloat16_t() = default;
  bfloat16_t(float f) : bits(ms_groupnorm::ToBFloat16(f).bits) {}  // NOLINT: implicit like the device type
  static bfloat16_t FromBits(uint16_t b) {
    bfloat16_t v;
    v.bits = b;
    return v;
  }
};

enum pipe_t { PIPE_S, PIPE_V, PIPE_M, PIPE_MTE1, PIPE_MTE2, PIPE_MTE3, PIPE_ALL };

// ---------------------------------------------------------------- kernel-entry macros
#define REGISTER_TILING_DEFAULT(type) \
  static_assert(std::is_trivially_copyable<type>::value, "tiling data must be a plain struct")
#define GET_TILING_DATA_WITH_STRUCT(type, var, tilingPtr) \
  type var;                                               \
  ::twin::api::ReadTiling(&(var), (tilingPtr), sizeof(type))

namespace twin::api {
inline void ReadTiling(void *dst, const uint8_t *tiling, size_t bytes) {
  twin::CheckGm(tiling, bytes, "GET_TILING_DATA");
  std::memcpy(dst, tiling, bytes);
}
}  // namespace twin::api

namespace AscendC {

inline float ToFloat(bfloat16_t v) { return ms_groupnorm::ToFloat(ms_groupnorm::BFloat16{v.bits}); }
inline bfloat16_t ToBfloat16(float f) { return bfloat16_t::FromBits(ms_groupnorm::ToBFloat16(f).bits); }

template <typename A, typename B>
struct IsSameType {
  static constexpr bool value = std::is_same<A, B>::value;
};

constexpr int64_t kUbBlockBytes = 32;

inline int64_t GetBlockIdx() { return twin::Block().blockIdx; }
inline int64_t GetBlockNum() { return twin::Block().blockNum; }
inline GM_ADDR GetUserWorkspace(GM_ADDR workspace) { return workspace; }

inline twin::PipeModel &Pipes() { return twin::Block().pipes; }

}  // namespace AscendC

// The API by job; each header continues namespace AscendC and builds on the ones before it.
#include "kernel_operator_sync.h"       // PipeBarrier, SyncAll, SetFlag/WaitFlag, atomic add
#include "kernel_operator_buffers.h"    // TPosition, LocalTensor/GlobalTensor, TQue, TBuf, TPipe
#include "kernel_operator_data_copy.h"  // DataCopy, DataCopyPad and their params
#include "kernel_operator_vector.h"     // Elementwise ops, ReduceSum, WholeReduceSum, Cast
#include "kernel_operator_strided.h"    // Mul/Add with BinaryRepeatParams, Brcb (repeat-stride forms)
#include "kernel_operator_gather.h"     // Gather, and Adds on int32 for its offset tables

// ---- API CANN's own kernels use beyond ours (GetTPipePtr, ASSERT, InitOutput, DataCopyParams, ...)
#include "kernel_operator_common.h"

// ---- forward-kernel vector math (Exp, Sqrt, Div): a separate header, see its comment
#include "kernel_operator_forward_math.h"

#endif  // GNMS_TWIN_KERNEL_OPERATOR_H
