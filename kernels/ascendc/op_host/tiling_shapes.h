// What the two host tilings (group_norm_grad_ms_tiling.h for both backward operators,
// group_norm_silu_ms_tiling.h for the forward) share: the dtypes they take, one input's shape
// as the framework hands it to the host, and that shape's text and element count. Plain C++,
// no CANN header, like the tilings themselves.
#ifndef GROUP_NORM_MS_TILING_SHAPES_H
#define GROUP_NORM_MS_TILING_SHAPES_H

#include <cstdint>
#include <string>

namespace ms_groupnorm::tiling {

enum class ScalarType : int { kFloat32 = 0, kFloat16 = 1, kBFloat16 = 2 };

inline int64_t BytesOf(ScalarType t) { return t == ScalarType::kFloat32 ? 4 : 2; }

// One input's shape; present == false: the framework gave no descriptor or shape for it.
struct ShapeView {
  bool present = false;
  const int64_t *dims = nullptr;  // rank values
  int64_t rank = 0;
};

// "(2, 3)", "(5,)": how error messages show a shape.
inline std::string ShapeText(const ShapeView &s) {
  std::string text = "(";
  for (int64_t i = 0; i < s.rank; ++i) text += (i ? ", " : "") + std::to_string(s.dims[i]);
  return text + (s.rank == 1 ? ",)" : ")");
}

// The element count, or -1 when a dimension is negative.
inline int64_t NumElements(const ShapeView &s) {
  int64_t n = 1;
  for (int64_t i = 0; i < s.rank; ++i) {
    if (s.dims[i] < 0) return -1;
    n *= s.dims[i];
  }
  return n;
}

}  // namespace ms_groupnorm::tiling

#endif  // GROUP_NORM_MS_TILING_SHAPES_H
