// Stand-in for CANN <cann>/include/graph/tensor.h (metadef inc/external/graph/tensor.h;
// declarations only, see ../README.md).
#ifndef MS_GROUPNORM_STUB_GRAPH_TENSOR_H_
#define MS_GROUPNORM_STUB_GRAPH_TENSOR_H_
#include "graph/types.h"

namespace ge {
class Shape {
 public:
  Shape();
  explicit Shape(const std::vector<int64_t> &dims);
  std::vector<int64_t> GetDims() const;
  size_t GetDimNum() const;
};

class TensorDesc {
 public:
  TensorDesc();
  TensorDesc(Shape shape, Format format = FORMAT_ND, DataType dt = DT_FLOAT);
  Shape GetShape() const;
  void SetShape(const Shape &shape);
  Format GetFormat() const;
  void SetFormat(Format format);
  DataType GetDataType() const;
  void SetDataType(DataType dt);
};

class Tensor {
 public:
  Tensor();
  explicit Tensor(const TensorDesc &desc);
  TensorDesc GetTensorDesc() const;
  const uint8_t *GetData() const;
  size_t GetSize() const;
};
}  // namespace ge
#endif
