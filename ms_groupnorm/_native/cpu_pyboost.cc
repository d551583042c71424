// The CPU PyNative fast path: one CustomOpBuilder (pyboost) module for the whole operator
// family, built lazily by ms_groupnorm/backends/cpu_pyboost.py. One translation unit, so that
// MindSpore's headers are compiled once for all operators (each module compile is ~35 s of
// CPU, most of it those headers). Each operator's part (its C API call, extra checks and
// autograd Function) is a header with a Define that binds its functions; an operator added to
// the family adds one include and one Define line here.
#include "group_norm_pyboost.h"
#include "group_norm_silu_pyboost.h"

PYBIND11_MODULE(MS_EXTENSION_NAME, m) {
  group_norm_op::Define(m);
  group_norm_silu_op::Define(m);
  m.def("set_differentiable_backward", &ms_groupnorm::SetDifferentiableBackward,
        "sets the Python function that computes a node's gradient while it is itself differentiated");
}
