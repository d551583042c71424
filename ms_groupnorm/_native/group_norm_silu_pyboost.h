// Fused GroupNorm + SiLU for PyNative through MindSpore's CustomOpBuilder (pyboost): its part
// of the one CPU fast-path module (cpu_pyboost.cc; group_norm_pyboost.h is GroupNorm's part,
// see there for why pyboost; pyboost_ordering.h for the launch and autograd ordering). The kernels are not duplicated:
// this file allocates outputs and calls the plain C API of libms_groupnorm_cpu.so
// (kernels/cpu/group_norm_silu_aot.cc), so results are bitwise those of the aot ops.
//
// Contract (as the aot ops GroupNormSilu / GroupNormSiluGrad):
//   group_norm_silu(x, gamma, beta, group, eps, swish_scale)          -> (z, mean, rstd)
//   group_norm_silu_grad(dz, x, mean, rstd, gamma, beta, group, swish_scale, m0, m1, m2)
//                                                                      -> (dx, dgamma, dbeta)
//   group_norm_silu_autograd(x, gamma, beta, group, eps, swish_scale) -> (z, mean, rstd), differentiable
// An empty (0,) gamma/beta means ones/zeros; masked-off outputs are empty (0,).
// The autograd node saves x, mean, rstd, gamma, beta (not z, nothing else full-size).
#ifndef MS_GROUPNORM_NATIVE_GROUP_NORM_SILU_PYBOOST_H_
#define MS_GROUPNORM_NATIVE_GROUP_NORM_SILU_PYBOOST_H_

#include <string>
#include <vector>

#include "cpu_pyboost_common.h"  // shared with GroupNorm: checks, outputs, the kernel runner

// Defined in kernels/cpu/group_norm_silu_aot.cc; these declarations must match it exactly.
extern "C" int MsGroupNormSiluForward(const void *x, const void *gamma, const void *beta, void *z, void *mean,
                                      void *rstd, int64_t N, int64_t C, int64_t HxW, int64_t group, float eps,
                                      float swish_scale, const char *data_dtype, const char *stat_dtype);
extern "C" int MsGroupNormSiluBackward(const void *dz, const void *x, const void *mean, const void *rstd,
                                       const void *gamma, const void *beta, void *dx, void *dgamma, void *dbeta,
                                       int64_t N, int64_t C, int64_t HxW, int64_t group, float swish_scale,
                                       const char *data_dtype, const char *stat_dtype, int dx_is_require,
                                       int dgamma_is_require, int dbeta_is_require);

namespace group_norm_silu_op {
namespace {  // one translation unit (cpu_pyboost.cc) includes this file

using namespace ms_groupnorm;  // NOLINT: the shared helpers of cpu_pyboost_common.h

constexpr const char *kTag = "ms_groupnorm silu pyboost";

std::vector<ms::Tensor> ForwardImpl(const ms::Tensor &x, const ms::Tensor &gamma, const ms::Tensor &beta,
                                    int64_t group, double eps, double swish_scale) {
  CheckGroupAndParams(kTag, x, group, gamma, beta);
  const float eps32 = static_cast<float>(eps), scale32 = static_cast<float>(swish_scale);
  auto launch = [group, eps32, scale32](const std::vector<ms::Tensor> &in, const std::vector<ms::Tensor> &out) {
    const auto &shape = in[0].shape();
    return MsGroupNormSiluForward(in[0].GetDataPtr(), OrNull(in[1]), OrNull(in[2]), out[0].GetDataPtr(),
                                  out[1].GetDataPtr(), out[2].GetDataPtr(), shape[0], shape[1], ProductFrom(shape, 2),
                                  group, eps32, scale32, DTypeName(in[0].data_type()), DTypeName(out[1].data_type()));
  };
  return RunKernel("GroupNormSiluMsPyboost", "MsGroupNormSiluForward", launch, {x, gamma, beta},
                   ForwardOutputs(x, gamma, group));
}

std::vector<ms::Tensor> BackwardImpl(const ms::Tensor &dz, const ms::Tensor &x, const ms::Tensor &mean,
                                     const ms::Tensor &rstd, const ms::Tensor &gamma, const ms::Tensor &beta,
                                     int64_t group, double swish_scale, bool dx_mask, bool dgamma_mask,
                                     bool dbeta_mask) {
  CheckGroupAndParams(kTag, x, group, gamma, beta);
  CheckStatistics(kTag, x, group, mean, rstd, dz);
  if (dz.data_type() != x.data_type() || rstd.data_type() != mean.data_type() ||
      (gamma.numel() != 0 && gamma.data_type() != mean.data_type()) ||
      (beta.numel() != 0 && beta.data_type() != mean.data_type())) {
    MS_LOG(EXCEPTION) << kTag << ": dz must have x's dtype, rstd, gamma and beta mean's dtype";
  }
  const float scale32 = static_cast<float>(swish_scale);
  auto launch = [group, scale32, dx_mask, dgamma_mask, dbeta_mask](const std::vector<ms::Tensor> &in,
                                                                   const std::vector<ms::Tensor> &out) {
    const auto &shape = in[1].shape();
    return MsGroupNormSiluBackward(
        in[0].GetDataPtr(), in[1].GetDataPtr(), in[2].GetDataPtr(), in[3].GetDataPtr(), OrNull(in[4]), OrNull(in[5]),
        dx_mask ? out[0].GetDataPtr() : nullptr, dgamma_mask ? out[1].GetDataPtr() : nullptr,
        dbeta_mask ? out[2].GetDataPtr() : nullptr, shape[0], shape[1], ProductFrom(shape, 2), group, scale32,
        DTypeName(in[1].data_type()), DTypeName(in[2].data_type()), dx_mask, dgamma_mask, dbeta_mask);
  };
  return RunKernel("GroupNormSiluGradMsPyboost", "MsGroupNormSiluBackward", launch, {dz, x, mean, rstd, gamma, beta},
                   BackwardOutputs(x, mean, dx_mask, dgamma_mask, dbeta_mask));
}

py::object SiluForward(const ms::Tensor &x, const ms::Tensor &gamma, const ms::Tensor &beta, int64_t group,
                       double eps, double swish_scale) {
  return ms::pynative::PyboostRunner::Call<3>(ForwardImpl, x, gamma, beta, group, eps, swish_scale);
}

py::object SiluBackward(const ms::Tensor &dz, const ms::Tensor &x, const ms::Tensor &mean, const ms::Tensor &rstd,
                        const ms::Tensor &gamma, const ms::Tensor &beta, int64_t group, double swish_scale,
                        bool dx_mask, bool dgamma_mask, bool dbeta_mask) {
  return ms::pynative::PyboostRunner::Call<3>(BackwardImpl, dz, x, mean, rstd, gamma, beta, group, swish_scale,
                                              dx_mask, dgamma_mask, dbeta_mask);
}

namespace autograd = mindspore::pynative::autograd;
using mindspore::tensor::TensorPtr;

// Saves x, mean, rstd, gamma, beta: the backward recomputes y and sigmoid from them.
struct GroupNormSiluFunction : public autograd::Function<GroupNormSiluFunction> {
  static autograd::TensorPtrList Forward(autograd::AutogradContext *ctx, const TensorPtr &x, const TensorPtr &gamma,
                                         const TensorPtr &beta, int64_t group, double eps, double swish_scale) {
    auto outs = ForwardImpl(ms::Tensor(x), ms::Tensor(gamma), ms::Tensor(beta), group, eps, swish_scale);
    const TensorPtr &mean = outs[1].tensor();
    const TensorPtr &rstd = outs[2].tensor();
    ctx->SaveForBackward({x, mean, rstd, gamma, beta});
    ctx->saved_data["group"] = mindspore::MakeValue(group);
    ctx->saved_data["swish_scale"] = mindspore::MakeValue(swish_scale);
    ctx->MarkNonDifferentiable({mean, rstd});
    return {outs[0].tensor(), mean, rstd};
  }

  static autograd::TensorPtrList Backward(autograd::AutogradContext *ctx, autograd::TensorPtrList grads) {
    const auto saved = ctx->GetSavedTensors();
    const auto &gamma = saved[3];
    const auto &beta = saved[4];
    const int64_t group = mindspore::GetValue<int64_t>(ctx->saved_data["group"]);
    const double swish_scale = mindspore::GetValue<double>(ctx->saved_data["swish_scale"]);
    const bool dx = ctx->NeedsInputGrad(0);
    const bool dgamma = ctx->NeedsInputGrad(1) && gamma->DataSize() != 0;
    const bool dbeta = ctx->NeedsInputGrad(2) && beta->DataSize() != 0;
    if (RecordingHigherOrder()) {  // this gradient is itself differentiated: see cpu_pyboost_common.h
      auto outs = BackwardRecorded("group_norm_silu", {grads[0], saved[0], saved[1], saved[2], gamma, beta},
                                   {static_cast<double>(group), swish_scale}, dx, dgamma, dbeta);
      return {dx ? outs[0] : nullptr, dgamma ? outs[1] : nullptr, dbeta ? outs[2] : nullptr, nullptr, nullptr,
              nullptr};
    }
    auto outs = BackwardImpl(ms::Tensor(grads[0]), ms::Tensor(saved[0]), ms::Tensor(saved[1]), ms::Tensor(saved[2]),
                             ms::Tensor(gamma), ms::Tensor(beta), group, swish_scale, dx, dgamma, dbeta);
    return {dx ? outs[0].tensor() : nullptr, dgamma ? outs[1].tensor() : nullptr,
            dbeta ? outs[2].tensor() : nullptr, nullptr, nullptr, nullptr};
  }
};

std::vector<ms::Tensor> AutogradImpl(const ms::Tensor &x, const ms::Tensor &gamma, const ms::Tensor &beta,
                                     int64_t group, double eps, double swish_scale) {
  auto outs = GroupNormSiluFunction::Apply(x.tensor(), gamma.tensor(), beta.tensor(), group, eps, swish_scale);
  return {ms::Tensor(outs[0]), ms::Tensor(outs[1]), ms::Tensor(outs[2])};
}

py::object SiluAutograd(const ms::Tensor &x, const ms::Tensor &gamma, const ms::Tensor &beta, int64_t group,
                        double eps, double swish_scale) {
  return ms_groupnorm::CallRecordingAutograd<3>(AutogradImpl, x, gamma, beta, group, eps, swish_scale);
}

}  // namespace

// Binds the fused op's functions into the module.
inline void Define(py::module_ &m) {
  m.def("group_norm_silu", &SiluForward,
        "fused GroupNorm + swish forward: (x, gamma, beta, group, eps, swish_scale) -> (z, mean, rstd)");
  m.def("group_norm_silu_autograd", &SiluAutograd,
        "the same, recorded for PyNative autograd (the backward recomputes y from x)");
  m.def("group_norm_silu_grad", &SiluBackward,
        "fused backward: (dz, x, mean, rstd, gamma, beta, group, swish_scale, dx, dgamma, dbeta masks) -> grads");
}

}  // namespace group_norm_silu_op

#endif  // MS_GROUPNORM_NATIVE_GROUP_NORM_SILU_PYBOOST_H_
