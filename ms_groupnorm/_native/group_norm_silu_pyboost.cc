// Fused GroupNorm + SiLU for PyNative through MindSpore's CustomOpBuilder (pyboost): the
// fast path of ms_groupnorm/_silu_ops.py, built lazily by ms_groupnorm/_silu_pyboost.py as
// a module of its own (group_norm_pyboost.cc is GroupNorm's; see there for why pyboost,
// the asynchronous error reporting; pyboost_ordering.h for the launch and autograd ordering). The kernels are not duplicated:
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
#include <string>
#include <vector>

#include "pyboost_ordering.h"  // MindSpore's headers, in-order launch, autograd record before return

// Defined in kernels/cpu/group_norm_silu_aot.cc; these declarations must match it exactly.
extern "C" int MsGroupNormSiluForward(const void *x, const void *gamma, const void *beta, void *z, void *mean,
                                      void *rstd, int64_t N, int64_t C, int64_t HxW, int64_t group, float eps,
                                      float swish_scale, const char *data_dtype, const char *stat_dtype);
extern "C" int MsGroupNormSiluBackward(const void *dz, const void *x, const void *mean, const void *rstd,
                                       const void *gamma, const void *beta, void *dx, void *dgamma, void *dbeta,
                                       int64_t N, int64_t C, int64_t HxW, int64_t group, float swish_scale,
                                       const char *data_dtype, const char *stat_dtype, int dx_is_require,
                                       int dgamma_is_require, int dbeta_is_require);

namespace {

const char *DTypeName(mindspore::TypeId type) {
  switch (type) {
    case mindspore::TypeId::kNumberTypeFloat32:
      return "float32";
    case mindspore::TypeId::kNumberTypeFloat16:
      return "float16";
    case mindspore::TypeId::kNumberTypeBFloat16:
      return "bfloat16";
    default:
      return "unsupported";  // the kernel library rejects it (status 4)
  }
}

ms::Tensor Dense(const ms::Tensor &t) { return t.is_contiguous() ? t : t.contiguous(); }

int64_t ProductFrom(const ShapeVector &shape, size_t first) {
  int64_t product = 1;
  for (size_t i = first; i < shape.size(); ++i) product *= shape[i];
  return product;
}

// The sizes that decide how far the kernel reads, verified before it runs (the module
// functions are callable directly, without the Python checks).
void CheckSizes(const ms::Tensor &x, int64_t group, const ms::Tensor &gamma, const ms::Tensor &beta) {
  const auto &shape = x.shape();
  if (shape.size() < 2 || group <= 0 || shape[1] % group != 0) {
    MS_LOG(EXCEPTION) << "ms_groupnorm silu pyboost: x must be (N, C, *) with C divisible by group " << group;
  }
  for (const ms::Tensor *param : {&gamma, &beta}) {
    const auto numel = static_cast<int64_t>(param->numel());
    if (numel != 0 && numel != shape[1]) {
      MS_LOG(EXCEPTION) << "ms_groupnorm silu pyboost: gamma/beta must hold C = " << shape[1] << " elements or none";
    }
    if (numel != 0 && param->data_type() != gamma.data_type()) {
      MS_LOG(EXCEPTION) << "ms_groupnorm silu pyboost: beta must have gamma's dtype";
    }
  }
}

using ms_groupnorm::InlineLaunchRunner;

class ForwardRunner : public InlineLaunchRunner {
 public:
  ForwardRunner(int64_t group, float eps, float swish_scale)
      : InlineLaunchRunner("GroupNormSiluMsPyboost"), group_(group), eps_(eps), swish_scale_(swish_scale) {}

  void LaunchKernel() override {
    const auto &in = inputs();
    const auto &out = outputs();
    const auto &shape = in[0].shape();
    const int status = MsGroupNormSiluForward(
        in[0].GetDataPtr(), in[1].numel() ? in[1].GetDataPtr() : nullptr, in[2].numel() ? in[2].GetDataPtr() : nullptr,
        out[0].GetDataPtr(), out[1].GetDataPtr(), out[2].GetDataPtr(), shape[0], shape[1], ProductFrom(shape, 2),
        group_, eps_, swish_scale_, DTypeName(in[0].data_type()), DTypeName(out[1].data_type()));
    if (status != 0) MS_LOG(EXCEPTION) << "ms_groupnorm: MsGroupNormSiluForward returned status " << status;
  }

 private:
  int64_t group_;
  float eps_;
  float swish_scale_;
};

class BackwardRunner : public InlineLaunchRunner {
 public:
  BackwardRunner(int64_t group, float swish_scale, bool dx, bool dgamma, bool dbeta)
      : InlineLaunchRunner("GroupNormSiluGradMsPyboost"), group_(group), swish_scale_(swish_scale),
        mask_{dx, dgamma, dbeta} {}

  void LaunchKernel() override {
    const auto &in = inputs();
    const auto &out = outputs();
    const auto &shape = in[1].shape();
    const int status = MsGroupNormSiluBackward(
        in[0].GetDataPtr(), in[1].GetDataPtr(), in[2].GetDataPtr(), in[3].GetDataPtr(),
        in[4].numel() ? in[4].GetDataPtr() : nullptr, in[5].numel() ? in[5].GetDataPtr() : nullptr,
        mask_[0] ? out[0].GetDataPtr() : nullptr, mask_[1] ? out[1].GetDataPtr() : nullptr,
        mask_[2] ? out[2].GetDataPtr() : nullptr, shape[0], shape[1], ProductFrom(shape, 2), group_, swish_scale_,
        DTypeName(in[1].data_type()), DTypeName(in[2].data_type()), mask_[0], mask_[1], mask_[2]);
    if (status != 0) MS_LOG(EXCEPTION) << "ms_groupnorm: MsGroupNormSiluBackward returned status " << status;
  }

 private:
  int64_t group_;
  float swish_scale_;
  bool mask_[3];
};

std::vector<ms::Tensor> ForwardImpl(const ms::Tensor &x, const ms::Tensor &gamma, const ms::Tensor &beta,
                                    int64_t group, double eps, double swish_scale) {
  CheckSizes(x, group, gamma, beta);
  const auto &shape = x.shape();
  const auto stat_type = gamma.data_type();  // as the aot op's InferType: statistics follow gamma
  ms::Tensor z(x.data_type(), shape);
  ms::Tensor mean(stat_type, ShapeVector{shape[0], group});
  ms::Tensor rstd(stat_type, ShapeVector{shape[0], group});
  auto runner = std::make_shared<ForwardRunner>(group, static_cast<float>(eps), static_cast<float>(swish_scale));
  runner->Run({Dense(x), Dense(gamma), Dense(beta)}, {z, mean, rstd});
  return {z, mean, rstd};
}

std::vector<ms::Tensor> BackwardImpl(const ms::Tensor &dz, const ms::Tensor &x, const ms::Tensor &mean,
                                     const ms::Tensor &rstd, const ms::Tensor &gamma, const ms::Tensor &beta,
                                     int64_t group, double swish_scale, bool dx_mask, bool dgamma_mask,
                                     bool dbeta_mask) {
  CheckSizes(x, group, gamma, beta);
  const auto &shape = x.shape();
  if (static_cast<int64_t>(mean.numel()) != shape[0] * group || rstd.numel() != mean.numel() ||
      dz.numel() != x.numel()) {
    MS_LOG(EXCEPTION) << "ms_groupnorm silu pyboost: mean/rstd must hold N*group elements and dz match x";
  }
  if (dz.data_type() != x.data_type() || rstd.data_type() != mean.data_type() ||
      (gamma.numel() != 0 && gamma.data_type() != mean.data_type()) ||
      (beta.numel() != 0 && beta.data_type() != mean.data_type())) {
    MS_LOG(EXCEPTION) << "ms_groupnorm silu pyboost: dz must have x's dtype, rstd, gamma and beta mean's dtype";
  }
  const int64_t c = shape[1];
  ms::Tensor dx(x.data_type(), dx_mask ? shape : ShapeVector{0});
  ms::Tensor dgamma(mean.data_type(), ShapeVector{dgamma_mask ? c : 0});
  ms::Tensor dbeta(mean.data_type(), ShapeVector{dbeta_mask ? c : 0});
  auto runner = std::make_shared<BackwardRunner>(group, static_cast<float>(swish_scale), dx_mask, dgamma_mask,
                                                 dbeta_mask);
  runner->Run({Dense(dz), Dense(x), Dense(mean), Dense(rstd), Dense(gamma), Dense(beta)}, {dx, dgamma, dbeta});
  return {dx, dgamma, dbeta};
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

PYBIND11_MODULE(MS_EXTENSION_NAME, m) {
  m.def("group_norm_silu", &SiluForward,
        "fused GroupNorm + swish forward: (x, gamma, beta, group, eps, swish_scale) -> (z, mean, rstd)");
  m.def("group_norm_silu_autograd", &SiluAutograd,
        "the same, recorded for PyNative autograd (the backward recomputes y from x)");
  m.def("group_norm_silu_grad", &SiluBackward,
        "fused backward: (dz, x, mean, rstd, gamma, beta, group, swish_scale, dx, dgamma, dbeta masks) -> grads");
}
