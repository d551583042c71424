// Stand-in for CANN <cann>/include/graph/operator.h (metadef inc/external/graph/operator.h;
// declarations only, see ../README.md).
#ifndef MS_GROUPNORM_STUB_GRAPH_OPERATOR_H_
#define MS_GROUPNORM_STUB_GRAPH_OPERATOR_H_
#include <functional>
#include "graph/tensor.h"

namespace ge {
class Operator {
 public:
  Operator();
  explicit Operator(const std::string &type);
  Operator(const std::string &name, const std::string &type);
  virtual ~Operator();
  std::string GetName() const;

 protected:
  void InputRegister(const std::string &name);
  void OptionalInputRegister(const std::string &name);
  void OutputRegister(const std::string &name);
  void RequiredAttrRegister(const std::string &name);
  void InferFuncRegister(const std::function<graphStatus(Operator &)> &func);
};

class OperatorFactory {
 public:
  static Operator CreateOperator(const std::string &name, const std::string &type);
  static bool IsExistOp(const std::string &type);
};

class Graph {
 public:
  explicit Graph(const std::string &name);
};
}  // namespace ge
#endif
