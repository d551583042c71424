// Second-order gradients for the PyNative modules (CPU and Ascend): what an autograd node's
// C++ Backward does while it is itself differentiated (ms.grad(ms.grad(f))).
//
// The Backward runs the backward kernel, which records nothing, so a gradient taken of that
// gradient would silently be zero. While Backward runs under an outer gradient that records
// (MindSpore's grad state says so then, and only then), it calls the Python function set
// here instead: a backward op whose bprop (ms_groupnorm/ops/double_backward.py) the outer
// gradient differentiates. The function takes (operator name, [dy, x, mean, rstd, gamma(,
// beta)], (attributes...), (3 masks)) and returns (dx, dgamma, dbeta). Unset (a module used
// without ms_groupnorm's Python side): a clear error, never zeros.
#ifndef MS_GROUPNORM_NATIVE_SECOND_ORDER_H_
#define MS_GROUPNORM_NATIVE_SECOND_ORDER_H_

#include <utility>
#include <vector>

#include "pyboost_ordering.h"  // MindSpore's headers (ms_extension, pybind11)

// GradState: whether an (outer) gradient records now. MindSpore 2.8 and later ship it as
// ccsrc/include/utils/pynative/grad_state.h, 2.7 as ccsrc/include/common/pynative/grad_state.h
// (both on CustomOpBuilder's include path, see pyboost_ordering.h); the class is the same.
#if __has_include("utils/pynative/grad_state.h")
#include "utils/pynative/grad_state.h"
#elif __has_include("common/pynative/grad_state.h")
#include "common/pynative/grad_state.h"
#else
#error "ms_groupnorm: this MindSpore ships no pynative/grad_state.h"
#endif

namespace ms_groupnorm {

using TensorPtrFor = mindspore::tensor::TensorPtr;

inline py::object &DifferentiableBackward() {
  static py::object *function = new py::object();  // never destroyed: outlives interpreter teardown
  return *function;
}

inline void SetDifferentiableBackward(py::object function) { DifferentiableBackward() = std::move(function); }

inline bool RecordingHigherOrder() { return mindspore::pynative::GradState::Get().RequiresGrad(); }

// The gradients of a node's Backward through DifferentiableBackward(): one per output mask.
// ``attrs`` are numbers (group, swish_scale): Python objects may only be built once the GIL
// is held, and MindSpore runs the backward pass without it.
inline std::vector<TensorPtrFor> BackwardRecorded(const char *name, const std::vector<TensorPtrFor> &tensors,
                                                  const std::vector<double> &attrs, bool dx, bool dgamma,
                                                  bool dbeta) {
  py::gil_scoped_acquire gil;
  if (!DifferentiableBackward()) {
    MS_LOG(EXCEPTION) << "ms_groupnorm: a gradient of " << name << "'s gradient (second order) needs the Python "
                      << "package's differentiable backward, which was not registered";
  }
  py::list inputs;
  for (const auto &t : tensors) inputs.append(ms::Tensor(t));
  py::list attr_list;
  for (double a : attrs) attr_list.append(a);
  py::object outs = DifferentiableBackward()(name, inputs, py::tuple(attr_list), py::make_tuple(dx, dgamma, dbeta));
  std::vector<TensorPtrFor> result;
  for (size_t i = 0; i < 3; ++i) result.push_back(outs[py::int_(i)].cast<ms::Tensor>().tensor());
  return result;
}

}  // namespace ms_groupnorm

#endif  // MS_GROUPNORM_NATIVE_SECOND_ORDER_H_
