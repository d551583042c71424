// Stand-in for ops-base's op_common/op_host/util/platform_util.h (no public mirror): the two
// hardware constants GroupNormGrad's TilingParse asks for, with the 910B (dav-c220) values: a UB
// block is 32 bytes and a vector register 256 bytes (asc-devkit docs, 基本架构: one repeat is 256 bytes).
#ifndef GNMS_PEER_PLATFORM_UTIL_H
#define GNMS_PEER_PLATFORM_UTIL_H
#include <cstdint>
namespace Ops {
namespace Base {
template <typename Context>
inline uint32_t GetUbBlockSize(Context *) { return 32; }
template <typename Context>
inline uint32_t GetVRegSize(Context *) { return 256; }
}  // namespace Base
}  // namespace Ops
#endif
