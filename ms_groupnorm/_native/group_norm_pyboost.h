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
// GroupNorm's part of the one CPU fast-path module (cpu_pyboost.cc, which includes each
// operator's part once and binds it with its Define), built lazily by
// ms_groupnorm/backends/cpu_pyboost.py (ops.CustomOpBuilder, backend="CPU") and linked against
// libms_groupnorm_cpu.so with an rpath. Not part of setup.py's kernel library (kernels/cpu/*.cc):
// it needs MindSpore's headers, ninja and ~40 s of CPU.
//
// Contract (same as the aot ops, see ms_groupnorm/backends/cpu_aot.py):
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
#ifndef MS_GROUPNORM_NATIVE_GROUP_NORM_PYBOOST_H_
#define MS_GROUPNORM_NATIVE_GROUP_NORM_PYBOOST_H_

#include <string>
#include <vector>

#include "cpu_pyboost_common.h"  // shared with the fused op: checks, outputs, the kernel runner

// Defined in kernels/cpu/group_norm_aot.cc (there is no public header for the C API);
// these declarations must match that definition exactly.
extern "C" int MsGroupNormBackward(const void *dy, const void *x, const void *mean, const void *rstd,
                                   const void *gamma, void *dx, void *dgamma, void *dbeta, int64_t N, int64_t C,
                                   int64_t HxW, int64_t group, const char *data_dtype, const char *stat_dtype,
                                   int dx_is_require, int dgamma_is_require, int dbeta_is_require);
extern "C" int MsGroupNormForward(const void *x, const void *gamma, const void *beta, void *y, void *mean,
                                  void *rstd, int64_t N, int64_t C, int64_t HxW, int64_t group, float eps,
                                  const char *data_dtype, const char *stat_dtype);

namespace group_norm_op {
namespace {  // one translation unit (cpu_pyboost.cc) includes this file

using namespace ms_groupnorm;  // NOLINT: the shared helpers of cpu_pyboost_common.h

constexpr const char *kTag = "ms_groupnorm pyboost";

std::vector<ms::Tensor> ForwardImpl(const ms::Tensor &x, const ms::Tensor &gamma, const ms::Tensor &beta,
                                    int64_t group, double eps) {
  CheckGroupAndParams(kTag, x, group, gamma, beta);
  const float eps32 = static_cast<float>(eps);
  auto launch = [group, eps32](const std::vector<ms::Tensor> &in, const std::vector<ms::Tensor> &out) {
    const auto &shape = in[0].shape();
    return MsGroupNormForward(in[0].GetDataPtr(), OrNull(in[1]), OrNull(in[2]), out[0].GetDataPtr(),
                              out[1].GetDataPtr(), out[2].GetDataPtr(), shape[0], shape[1], ProductFrom(shape, 2),
                              group, eps32, DTypeName(in[0].data_type()), DTypeName(out[1].data_type()));
  };
  return RunKernel("GroupNormMsPyboost", "MsGroupNormForward", launch, {x, gamma, beta},
                   ForwardOutputs(x, gamma, group));
}

std::vector<ms::Tensor> BackwardImpl(const ms::Tensor &dy, const ms::Tensor &x, const ms::Tensor &mean,
                                     const ms::Tensor &rstd, const ms::Tensor &gamma, int64_t group, bool dx_mask,
                                     bool dgamma_mask, bool dbeta_mask) {
  CheckGroupAndParams(kTag, x, group, gamma, gamma);
  CheckStatistics(kTag, x, group, mean, rstd, dy);
  // The C API is told one data dtype (x's) and one stats dtype (mean's): every other
  // buffer must have the same element size, or the kernel would read past its end.
  if (dy.data_type() != x.data_type() || rstd.data_type() != mean.data_type() ||
      (gamma.numel() != 0 && gamma.data_type() != mean.data_type())) {
    MS_LOG(EXCEPTION) << kTag << ": dy must have x's dtype, rstd and gamma mean's dtype";
  }
  auto launch = [group, dx_mask, dgamma_mask, dbeta_mask](const std::vector<ms::Tensor> &in,
                                                          const std::vector<ms::Tensor> &out) {
    const auto &shape = in[1].shape();
    return MsGroupNormBackward(in[0].GetDataPtr(), in[1].GetDataPtr(), in[2].GetDataPtr(), in[3].GetDataPtr(),
                               OrNull(in[4]), dx_mask ? out[0].GetDataPtr() : nullptr,
                               dgamma_mask ? out[1].GetDataPtr() : nullptr, dbeta_mask ? out[2].GetDataPtr() : nullptr,
                               shape[0], shape[1], ProductFrom(shape, 2), group, DTypeName(in[1].data_type()),
                               DTypeName(in[2].data_type()), dx_mask, dgamma_mask, dbeta_mask);
  };
  return RunKernel("GroupNormGradMsPyboost", "MsGroupNormBackward", launch, {dy, x, mean, rstd, gamma},
                   BackwardOutputs(x, mean, dx_mask, dgamma_mask, dbeta_mask));
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
    if (RecordingHigherOrder()) {  // this gradient is itself differentiated: see cpu_pyboost_common.h
      auto outs = BackwardRecorded("group_norm", {grads[0], saved[0], saved[1], saved[2], gamma},
                                   {static_cast<double>(group)}, dx, dgamma, dbeta);
      return {dx ? outs[0] : nullptr, dgamma ? outs[1] : nullptr, dbeta ? outs[2] : nullptr, nullptr, nullptr};
    }
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

// Binds GroupNorm's functions into the module.
inline void Define(py::module_ &m) {
  m.def("group_norm", &GroupNormForward, "GroupNorm forward: (x, gamma, beta, group, eps) -> (y, mean, rstd)");
  m.def("group_norm_autograd", &GroupNormAutograd,
        "GroupNorm forward recorded for PyNative autograd: (x, gamma, beta, group, eps) -> (y, mean, rstd)");
  m.def("group_norm_grad", &GroupNormBackward,
        "GroupNorm backward: (dy, x, mean, rstd, gamma, group, dx, dgamma, dbeta masks) -> (dx, dgamma, dbeta)");
}

}  // namespace group_norm_op

#endif  // MS_GROUPNORM_NATIVE_GROUP_NORM_PYBOOST_H_
