// Stand-in for ops-base's util/math_util.h (no public mirror): the integer helpers ops-nn's tiling
// calls, with their plain meanings (and 0 for a zero divisor, as the callers check first).
#ifndef GNMS_PEER_UTIL_MATH_UTIL_H
#define GNMS_PEER_UTIL_MATH_UTIL_H
namespace Ops {
namespace Base {
template <typename T, typename U>
inline T CeilDiv(T a, U b) { return b == 0 ? 0 : static_cast<T>((a + b - 1) / b); }
template <typename T, typename U>
inline T FloorDiv(T a, U b) { return b == 0 ? 0 : static_cast<T>(a / b); }
template <typename T, typename U>
inline T CeilAlign(T a, U b) { return b == 0 ? 0 : static_cast<T>((a + b - 1) / b * b); }
template <typename T, typename U>
inline T FloorAlign(T a, U b) { return b == 0 ? 0 : static_cast<T>(a / b * b); }
}  // namespace Base
}  // namespace Ops
#endif
