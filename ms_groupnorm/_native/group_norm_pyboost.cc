// GroupNorm forward/backward for PyNative through MindSpore's CustomOpBuilder (pyboost) path.
//
// Why this file exists: in PYNATIVE_MODE an ops.Custom(func_type="aot") call goes through
// MindSpore's generic single-op path, which costs ~130-150 us of main-thread CPU per call
// (C++ infer looked up with dlopen/realpath each call, cache keys, Python attribute
// probing). A pyboost module function costs ~15-50 us for the same work. The kernels are
// NOT duplicated here: this file only allocates the output tensors and hands raw pointers
// to the plain C API of libms_groupnorm_cpu.so (kernels/cpu/group_norm_aot.cc), so the
// results are bitwise identical to the aot ops.
//
// Built lazily by ms_groupnorm/_pyboost.py (ops.CustomOpBuilder, backend="CPU"), which
// links this module against libms_groupnorm_cpu.so with an rpath. Not part of setup.py's
// kernel library (kernels/cpu/*.cc): it needs MindSpore's headers, ninja and ~35 s of CPU.
//
// Contract (same as the aot ops, see ms_groupnorm/_ops.py):
//   group_norm(x, gamma, beta, group, eps)                  -> (y, mean, rstd)
//   group_norm_grad(dy, x, mean, rstd, gamma, group, m0, m1, m2) -> (dx, dgamma, dbeta)
//   group_norm_autograd(x, gamma, beta, group, eps)         -> (y, mean, rstd), differentiable
// An empty (0,) gamma/beta means "none" (ones/zeros); masked-off outputs are empty (0,).
//
// group_norm_autograd records a node for PyNative autograd through MindSpore's C++
// Function API (pynative/backward/function.h), whose Backward runs the backward
// kernel: the gradient never goes through a Python bprop. Measured (tiny shapes, 8 layers,
// value_and_grad): ~0.95x the built-in GroupNorm's step, where the aot op with a Python
// bprop took ~2.2x.
#include <string>
#include <vector>

#include "pyboost_ordering.h"  // MindSpore's headers, in-order launch, autograd record before return

// Defined in kernels/cpu/group_norm_aot.cc (there is no public header for the C API);
// these declarations must match that definition exactly.
extern "C" int MsGroupNormBackward(const void *dy, const void *x, const void *mean, const void *rstd,
                                   const void *gamma, void *dx, void *dgamma, void *dbeta, int64_t N, int64_t C,
                                   int64_t HxW, int64_t group, const char *data_dtype, const char *stat_dtype,
                                   int dx_is_require, int dgamma_is_require, int dbeta_is_require);
extern "C" int MsGroupNormForward(const void *x, const void *gamma, const void *beta, void *y, void *mean,
                                  void *rstd, int64_t N, int64_t C, int64_t HxW, int64_t group, float eps,
                                  const char *data_dtype, const char *stat_dtype);

namespace {

// The C API names dtypes the way the aot ABI does; anything else is rejected by the kernel
// (status 4), so an unsupported dtype cannot reach a kernel instantiation.
const char *DTypeName(mindspore::TypeId type) {
  switch (type) {
    case mindspore::TypeId::kNumberTypeFloat32:
      return "float32";
    case mindspore::TypeId::kNumberTypeFloat16:
      return "float16";
    case mindspore::TypeId::kNumberTypeBFloat16:
      return "bfloat16";
    case mindspore::TypeId::kNumberTypeFloat64:  // passed on; the kernel library decides whether it supports it
      return "float64";
    default:
      return "unsupported";
  }
}

// pyboost hands views (transpose, slice, ...) over as they are; the kernels read dense
// row-major buffers, so a non-contiguous tensor is materialised first.
ms::Tensor Dense(const ms::Tensor &t) { return t.is_contiguous() ? t : t.contiguous(); }

int64_t ProductFrom(const ShapeVector &shape, size_t first) {
  int64_t product = 1;
  for (size_t i = first; i < shape.size(); ++i) product *= shape[i];
  return product;
}

// The C kernels trust buffer sizes given N, C, HxW and group. The Python wrappers check
// arguments synchronously before calling (ms_groupnorm/_checks.py), but the module
// functions are also callable directly, so the sizes that decide how far the kernel reads
// are verified here before any kernel runs. These checks run in the *Impl functions, i.e.
// on MindSpore's asynchronous queue (the input tensors may still be pending outputs of
// earlier ops; realising them in the calling thread would stall it), so a failure
// surfaces as a RuntimeError at the next synchronisation, not at the call.
void CheckSizes(const ms::Tensor &x, int64_t group, const ms::Tensor &stat_like, int64_t stat_numel,
                const ms::Tensor &gamma, const ms::Tensor &beta) {
  const auto &shape = x.shape();
  if (shape.size() < 2 || group <= 0 || shape[1] % group != 0) {
    MS_LOG(EXCEPTION) << "ms_groupnorm pyboost: x must be (N, C, *) with C divisible by group " << group;
  }
  const int64_t c = shape[1];
  if (stat_numel >= 0 && (static_cast<int64_t>(stat_like.numel()) != stat_numel)) {
    MS_LOG(EXCEPTION) << "ms_groupnorm pyboost: mean/rstd must hold N*group = " << stat_numel << " elements";
  }
  for (const ms::Tensor *param : {&gamma, &beta}) {
    const auto numel = static_cast<int64_t>(param->numel());
    if (numel != 0 && numel != c) {
      MS_LOG(EXCEPTION) << "ms_groupnorm pyboost: gamma/beta must hold C = " << c << " elements or none";
    }
  }
}

using ms_groupnorm::InlineLaunchRunner;

class GroupNormForwardRunner : public InlineLaunchRunner {
 public:
  GroupNormForwardRunner(int64_t group, float eps) : InlineLaunchRunner("GroupNormMsPyboost"), group_(group), eps_(eps) {}

  // Errors raised here surface at the next synchronisation, not at the call.
  void LaunchKernel() override {
    const auto &in = inputs();
    const auto &out = outputs();
    const auto &shape = in[0].shape();
    const int status = MsGroupNormForward(
        in[0].GetDataPtr(), in[1].numel() ? in[1].GetDataPtr() : nullptr, in[2].numel() ? in[2].GetDataPtr() : nullptr,
        out[0].GetDataPtr(), out[1].GetDataPtr(), out[2].GetDataPtr(), shape[0], shape[1], ProductFrom(shape, 2),
        group_, eps_, DTypeName(in[0].data_type()), DTypeName(out[1].data_type()));
    if (status != 0) MS_LOG(EXCEPTION) << "ms_groupnorm: MsGroupNormForward returned status " << status;
  }

 private:
  int64_t group_;
  float eps_;
};

class GroupNormBackwardRunner : public InlineLaunchRunner {
 public:
  GroupNormBackwardRunner(int64_t group, bool dx, bool dgamma, bool dbeta)
      : InlineLaunchRunner("GroupNormGradMsPyboost"), group_(group), mask_{dx, dgamma, dbeta} {}

  void LaunchKernel() override {
    const auto &in = inputs();
    const auto &out = outputs();
    const auto &shape = in[1].shape();
    const bool has_gamma = in[4].numel() != 0;
    const int status = MsGroupNormBackward(
        in[0].GetDataPtr(), in[1].GetDataPtr(), in[2].GetDataPtr(), in[3].GetDataPtr(),
        has_gamma ? in[4].GetDataPtr() : nullptr, mask_[0] ? out[0].GetDataPtr() : nullptr,
        mask_[1] ? out[1].GetDataPtr() : nullptr, mask_[2] ? out[2].GetDataPtr() : nullptr, shape[0], shape[1],
        ProductFrom(shape, 2), group_, DTypeName(in[1].data_type()), DTypeName(in[2].data_type()), mask_[0],
        mask_[1], mask_[2]);
    if (status != 0) MS_LOG(EXCEPTION) << "ms_groupnorm: MsGroupNormBackward returned status " << status;
  }

 private:
  int64_t group_;
  bool mask_[3];
};

std::vector<ms::Tensor> ForwardImpl(const ms::Tensor &x, const ms::Tensor &gamma, const ms::Tensor &beta,
                                    int64_t group, double eps) {
  CheckSizes(x, group, x, -1, gamma, beta);
  // The kernel reads beta in the stats dtype (gamma's); a different one would be misread.
  if (beta.numel() != 0 && beta.data_type() != gamma.data_type()) {
    MS_LOG(EXCEPTION) << "ms_groupnorm pyboost: beta must have gamma's dtype";
  }
  const auto &shape = x.shape();
  // Statistics take gamma's dtype, also for an empty "none" gamma: the caller passes the
  // empty tensor in the stats dtype it wants, exactly as the aot op's InferType reads it.
  const auto stat_type = gamma.data_type();
  ms::Tensor y(x.data_type(), shape);
  ms::Tensor mean(stat_type, ShapeVector{shape[0], group});
  ms::Tensor rstd(stat_type, ShapeVector{shape[0], group});
  auto runner = std::make_shared<GroupNormForwardRunner>(group, static_cast<float>(eps));
  runner->Run({Dense(x), Dense(gamma), Dense(beta)}, {y, mean, rstd});
  return {y, mean, rstd};
}

std::vector<ms::Tensor> BackwardImpl(const ms::Tensor &dy, const ms::Tensor &x, const ms::Tensor &mean,
                                     const ms::Tensor &rstd, const ms::Tensor &gamma, int64_t group, bool dx_mask,
                                     bool dgamma_mask, bool dbeta_mask) {
  const auto &shape = x.shape();
  CheckSizes(x, group, mean, shape.empty() ? 0 : shape[0] * group, gamma, gamma);
  if (rstd.numel() != mean.numel() || dy.numel() != x.numel()) {
    MS_LOG(EXCEPTION) << "ms_groupnorm pyboost: rstd must match mean and dy must match x in size";
  }
  // The C API is told one data dtype (x's) and one stats dtype (mean's): every other
  // buffer must have the same element size, or the kernel would read past its end.
  if (dy.data_type() != x.data_type() || rstd.data_type() != mean.data_type() ||
      (gamma.numel() != 0 && gamma.data_type() != mean.data_type())) {
    MS_LOG(EXCEPTION) << "ms_groupnorm pyboost: dy must have x's dtype, rstd and gamma mean's dtype";
  }
  const int64_t c = shape[1];
  // Masked-off outputs are empty (0,) tensors, as the aot op returns them.
  ms::Tensor dx(x.data_type(), dx_mask ? shape : ShapeVector{0});
  ms::Tensor dgamma(mean.data_type(), ShapeVector{dgamma_mask ? c : 0});
  ms::Tensor dbeta(mean.data_type(), ShapeVector{dbeta_mask ? c : 0});
  auto runner = std::make_shared<GroupNormBackwardRunner>(group, dx_mask, dgamma_mask, dbeta_mask);
  runner->Run({Dense(dy), Dense(x), Dense(mean), Dense(rstd), Dense(gamma)}, {dx, dgamma, dbeta});
  return {dx, dgamma, dbeta};
}

py::object GroupNormForward(const ms::Tensor &x, const ms::Tensor &gamma, const ms::Tensor &beta, int64_t group,
                            double eps) {
  return ms::pynative::PyboostRunner::Call<3>(ForwardImpl, x, gamma, beta, group, eps);
}

py::object GroupNormBackward(const ms::Tensor &dy, const ms::Tensor &x, const ms::Tensor &mean,
                             const ms::Tensor &rstd, const ms::Tensor &gamma, int64_t group, bool dx_mask,
                             bool dgamma_mask, bool dbeta_mask) {
  return ms::pynative::PyboostRunner::Call<3>(BackwardImpl, dy, x, mean, rstd, gamma, group, dx_mask, dgamma_mask,
                                              dbeta_mask);
}


namespace autograd = mindspore::pynative::autograd;
using mindspore::tensor::TensorPtr;

// Forward: runs ForwardImpl and saves what the backward reads (x, mean, rstd, gamma), so
// nothing is recomputed. Backward: dy -> (dx, dgamma, dbeta) for the inputs that need a
// gradient (none for an empty "none" gamma/beta), then nothing for group and eps.
struct GroupNormFunction : public autograd::Function<GroupNormFunction> {
  static autograd::TensorPtrList Forward(autograd::AutogradContext *ctx, const TensorPtr &x, const TensorPtr &gamma,
                                         const TensorPtr &beta, int64_t group, double eps) {
    auto outs = ForwardImpl(ms::Tensor(x), ms::Tensor(gamma), ms::Tensor(beta), group, eps);
    const TensorPtr &mean = outs[1].tensor();
    const TensorPtr &rstd = outs[2].tensor();
    ctx->SaveForBackward({x, mean, rstd, gamma});
    ctx->saved_data["group"] = mindspore::MakeValue(group);
    ctx->saved_data["has_beta"] = mindspore::MakeValue(beta->DataSize() != 0);
    ctx->MarkNonDifferentiable({mean, rstd});  // saved statistics, as in the aot op's bprop
    return {outs[0].tensor(), mean, rstd};
  }

  static autograd::TensorPtrList Backward(autograd::AutogradContext *ctx, autograd::TensorPtrList grads) {
    const auto saved = ctx->GetSavedTensors();
    const auto &gamma = saved[3];
    const int64_t group = mindspore::GetValue<int64_t>(ctx->saved_data["group"]);
    const bool has_beta = mindspore::GetValue<bool>(ctx->saved_data["has_beta"]);
    const bool dx = ctx->NeedsInputGrad(0);
    const bool dgamma = ctx->NeedsInputGrad(1) && gamma->DataSize() != 0;
    const bool dbeta = ctx->NeedsInputGrad(2) && has_beta;
    auto outs = BackwardImpl(ms::Tensor(grads[0]), ms::Tensor(saved[0]), ms::Tensor(saved[1]), ms::Tensor(saved[2]),
                             ms::Tensor(gamma), group, dx, dgamma, dbeta);
    // One entry per input, the non-tensor ones (group, eps) included; none where no
    // gradient is needed.
    return {dx ? outs[0].tensor() : nullptr, dgamma ? outs[1].tensor() : nullptr,
            dbeta ? outs[2].tensor() : nullptr, nullptr, nullptr};
  }
};

std::vector<ms::Tensor> AutogradImpl(const ms::Tensor &x, const ms::Tensor &gamma, const ms::Tensor &beta,
                                     int64_t group, double eps) {
  auto outs = GroupNormFunction::Apply(x.tensor(), gamma.tensor(), beta.tensor(), group, eps);
  return {ms::Tensor(outs[0]), ms::Tensor(outs[1]), ms::Tensor(outs[2])};
}

py::object GroupNormAutograd(const ms::Tensor &x, const ms::Tensor &gamma, const ms::Tensor &beta, int64_t group,
                             double eps) {
  return ms_groupnorm::CallRecordingAutograd<3>(AutogradImpl, x, gamma, beta, group, eps);
}

}  // namespace

PYBIND11_MODULE(MS_EXTENSION_NAME, m) {
  m.def("group_norm", &GroupNormForward, "GroupNorm forward: (x, gamma, beta, group, eps) -> (y, mean, rstd)");
  m.def("group_norm_autograd", &GroupNormAutograd,
        "GroupNorm forward recorded for PyNative autograd: (x, gamma, beta, group, eps) -> (y, mean, rstd)");
  m.def("group_norm_grad", &GroupNormBackward,
        "GroupNorm backward: (dy, x, mean, rstd, gamma, group, dx, dgamma, dbeta masks) -> (dx, dgamma, dbeta)");
}
