// What every ms_groupnorm CustomOpBuilder module needs to stay in order with MindSpore's own
// PyNative ops, on every supported MindSpore (2.7.1 to 2.10): the MindSpore headers, found
// where the installed wheel ships them, an in-order kernel launch, and autograd calls that
// return only once their backward node is recorded.
#ifndef MS_GROUPNORM_NATIVE_PYBOOST_ORDERING_H_
#define MS_GROUPNORM_NATIVE_PYBOOST_ORDERING_H_

#include <utility>

#include "ms_extension/all.h"

// CustomOpBuilder puts both <wheel>/include/mindspore/ccsrc and .../ccsrc/include on the
// include path. MindSpore 2.7 ships these headers under ccsrc/, 2.8 and later under
// ccsrc/include/, so the spelling below resolves on either layout; a wheel that ships
// neither gets this message instead of a missing-file error.
#if __has_include("pynative/backward/function.h")
#include "pynative/backward/function.h"  // the C++ Function API (autograd nodes with a C++ Backward)
#else
#error "ms_groupnorm: this MindSpore ships no pynative/backward/function.h (C++ Function API)"
#endif
#if __has_include("runtime/pipeline/pipeline.h")
#include "runtime/pipeline/pipeline.h"  // MindSpore's PyNative task queues
#else
#error "ms_groupnorm: this MindSpore ships no runtime/pipeline/pipeline.h"
#endif

namespace ms_groupnorm {

// Runs the kernel in the task that MindSpore's queue is executing, instead of dispatching
// it to a separate launch queue (PyboostRunner's default). Measured on CPU (MindSpore
// 2.10): with the default, built-in ops that consume our outputs (an Add, the gradient
// accumulation of autograd) sometimes ran BEFORE our kernel had written them, and read
// stale memory; launching here keeps our kernel in order with the ops around it.
class InlineLaunchRunner : public ms::pynative::PyboostRunner {
 public:
  using PyboostRunner::PyboostRunner;

 protected:
  void _DispatchLaunchTask() override { LaunchKernel(); }
};

// PyboostRunner::Call for a function that records an autograd node (Function::Apply),
// returning only once that node is recorded. Why: Call runs the function later, on
// MindSpore's frontend queue, and hands back placeholder outputs at once. On MindSpore 2.8
// and 2.9 the next op on those outputs (the loss's Mul, say) decided whether they need a
// gradient before the queued Apply had attached our node to them: it saw no gradient edge
// and autograd silently returned zero gradients for x, gamma and beta (17 of 25 fresh
// layers in a row on 2.8.0; 0 with this wait). Waiting for the frontend queue (with the
// GIL released, as its tasks may need it) makes the record exist before Python goes on, on
// every version; the kernels themselves still run asynchronously.
template <int OUT_NUM, typename Func, typename... Args>
py::object CallRecordingAutograd(Func func, Args &&...args) {
  py::object outputs = ms::pynative::PyboostRunner::Call<OUT_NUM>(func, std::forward<Args>(args)...);
  {
    py::gil_scoped_release release;
    mindspore::runtime::Pipeline::Get().frontend_stage()->Wait();
  }
  return outputs;
}

}  // namespace ms_groupnorm

#endif  // MS_GROUPNORM_NATIVE_PYBOOST_ORDERING_H_
