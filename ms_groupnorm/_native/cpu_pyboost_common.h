// What the operators of the CPU PyNative fast-path module (group_norm_pyboost.h, group_norm_silu_pyboost.h)
// share: each operator only adds its C API call, its extra checks and its autograd
// Function. The kernels are NOT duplicated here: the functions allocate the outputs and hand
// raw pointers to the plain C API of libms_groupnorm_cpu.so, so the results are bitwise those
// of the aot ops.
#ifndef MS_GROUPNORM_NATIVE_CPU_PYBOOST_COMMON_H_
#define MS_GROUPNORM_NATIVE_CPU_PYBOOST_COMMON_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "pyboost_ordering.h"  // MindSpore's headers, in-order launch, autograd record before return

#include "second_order.h"  // a node's Backward while it is itself differentiated

namespace ms_groupnorm {

// The C API names dtypes the way the aot ABI does; anything else is rejected by the kernel
// (status 4), so an unsupported dtype cannot reach a kernel instantiation. float64 is passed
// on: each entry point decides whether it supports it (GroupNorm's does, the fused one not).
inline const char *DTypeName(mindspore::TypeId type) {
  switch (type) {
    case mindspore::TypeId::kNumberTypeFloat32:
      return "float32";
    case mindspore::TypeId::kNumberTypeFloat16:
      return "float16";
    case mindspore::TypeId::kNumberTypeBFloat16:
      return "bfloat16";
    case mindspore::TypeId::kNumberTypeFloat64:
      return "float64";
    default:
      return "unsupported";
  }
}

// pyboost hands views (transpose, slice, ...) over as they are; the kernels read dense
// row-major buffers, so a non-contiguous tensor is materialised first.
inline ms::Tensor Dense(const ms::Tensor &t) { return t.is_contiguous() ? t : t.contiguous(); }

inline int64_t ProductFrom(const ShapeVector &shape, size_t first) {
  int64_t product = 1;
  for (size_t i = first; i < shape.size(); ++i) product *= shape[i];
  return product;
}

// An optional parameter's pointer: nullptr for the empty (0,) "none" tensor.
inline void *OrNull(const ms::Tensor &t) { return t.numel() != 0 ? t.GetDataPtr() : nullptr; }

// The C kernels trust buffer sizes given N, C, HxW and group. The Python wrappers check
// arguments synchronously before calling (ms_groupnorm/ops/checks.py), but the module
// functions are also callable directly, so the sizes that decide how far the kernel reads
// are verified here before any kernel runs. These checks run in the *Impl functions, i.e.
// on MindSpore's asynchronous queue (the input tensors may still be pending outputs of
// earlier ops; realising them in the calling thread would stall it), so a failure
// surfaces as a RuntimeError at the next synchronisation, not at the call. ``tag`` names
// the module in the messages.
inline void CheckGroupAndParams(const char *tag, const ms::Tensor &x, int64_t group, const ms::Tensor &gamma,
                                const ms::Tensor &beta) {
  const auto &shape = x.shape();
  if (shape.size() < 2 || group <= 0 || shape[1] % group != 0) {
    MS_LOG(EXCEPTION) << tag << ": x must be (N, C, *) with C divisible by group " << group;
  }
  for (const ms::Tensor *param : {&gamma, &beta}) {
    const auto numel = static_cast<int64_t>(param->numel());
    if (numel != 0 && numel != shape[1]) {
      MS_LOG(EXCEPTION) << tag << ": gamma/beta must hold C = " << shape[1] << " elements or none";
    }
    // The kernel reads beta in the stats dtype (gamma's); a different one would be misread.
    if (numel != 0 && param->data_type() != gamma.data_type()) {
      MS_LOG(EXCEPTION) << tag << ": beta must have gamma's dtype";
    }
  }
}

// The statistics a backward reads: N*group of them, rstd as many as mean.
inline void CheckStatistics(const char *tag, const ms::Tensor &x, int64_t group, const ms::Tensor &mean,
                            const ms::Tensor &rstd, const ms::Tensor &dy) {
  const auto &shape = x.shape();
  if (static_cast<int64_t>(mean.numel()) != shape[0] * group || rstd.numel() != mean.numel() ||
      dy.numel() != x.numel()) {
    MS_LOG(EXCEPTION) << tag << ": mean/rstd must hold N*group elements, rstd match mean and dy match x";
  }
}

// (y, mean, rstd) of a forward: statistics take gamma's dtype, also for an empty "none"
// gamma: the caller passes the empty tensor in the stats dtype it wants, exactly as the aot
// op's InferType reads it.
inline std::vector<ms::Tensor> ForwardOutputs(const ms::Tensor &x, const ms::Tensor &gamma, int64_t group) {
  const auto &shape = x.shape();
  return {ms::Tensor(x.data_type(), shape), ms::Tensor(gamma.data_type(), ShapeVector{shape[0], group}),
          ms::Tensor(gamma.data_type(), ShapeVector{shape[0], group})};
}

// (dx, dgamma, dbeta) of a backward; masked-off outputs are empty (0,) tensors, as the aot op
// returns them.
inline std::vector<ms::Tensor> BackwardOutputs(const ms::Tensor &x, const ms::Tensor &mean, bool dx_mask,
                                               bool dgamma_mask, bool dbeta_mask) {
  const auto &shape = x.shape();
  const int64_t c = shape[1];
  return {ms::Tensor(x.data_type(), dx_mask ? shape : ShapeVector{0}),
          ms::Tensor(mean.data_type(), ShapeVector{dgamma_mask ? c : 0}),
          ms::Tensor(mean.data_type(), ShapeVector{dbeta_mask ? c : 0})};
}

// Runs ``launch`` (one C API call returning its status) on MindSpore's queue, in order with
// the other CPU ops. Errors raised here surface at the next synchronisation, not at the call.
class KernelRunner : public InlineLaunchRunner {
 public:
  using Launch = std::function<int(const std::vector<ms::Tensor> &in, const std::vector<ms::Tensor> &out)>;
  KernelRunner(const std::string &name, const char *entry, Launch launch)
      : InlineLaunchRunner(name), entry_(entry), launch_(std::move(launch)) {}

  void LaunchKernel() override {
    const int status = launch_(inputs(), outputs());
    if (status != 0) MS_LOG(EXCEPTION) << "ms_groupnorm: " << entry_ << " returned status " << status;
  }

 private:
  const char *entry_;
  Launch launch_;
};

// Runs ``launch`` on dense copies of ``inputs`` into ``outputs``; returns the outputs.
inline std::vector<ms::Tensor> RunKernel(const std::string &name, const char *entry, KernelRunner::Launch launch,
                                         const std::vector<ms::Tensor> &inputs, std::vector<ms::Tensor> outputs) {
  std::vector<ms::Tensor> dense;
  dense.reserve(inputs.size());
  for (const auto &t : inputs) dense.push_back(Dense(t));
  std::make_shared<KernelRunner>(name, entry, std::move(launch))->Run(dense, outputs);
  return outputs;
}

}  // namespace ms_groupnorm

#endif  // MS_GROUPNORM_NATIVE_CPU_PYBOOST_COMMON_H_
