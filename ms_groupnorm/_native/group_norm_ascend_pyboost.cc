// GroupNorm backward (and, when installed, forward) and the fused GroupNorm + swish (SiLU)
// forward/backward for PYNATIVE_MODE on Ascend, the way
// MindSpore 2.10 documents for Ascend C operators in PyNative: a CustomOpBuilder module
// (backend="Ascend") whose functions allocate their outputs and launch the installed
// aclnn operator through ms::pynative::AclnnOpRunner / LAUNCH_ACLNN_FUNC (docs r2.10
// "CustomOpBuilder Integrates ACLNN Operators via AclnnOpRunner").
//
// Why not ops.Custom in PyNative: on Ascend, Custom.__call__ runs pyboost_custom_ext,
// which takes tensors only, and our operator takes num_groups and the output mask as
// scalars (MindSpore custom_ops.py, Custom.__call__; note ascend-first-run.md B.1).
//
// Built lazily by ms_groupnorm/backends/ascend_pyboost.py. LAUNCH_ACLNN looks the aclnn API up by
// name (dlsym in the op-api libraries MindSpore loaded from $ASCEND_CUSTOM_OPP_PATH) and
// calls it through a function-pointer type made from the argument types passed here, so
// those types must be exactly CANN's: tensors, then attributes (Int -> int64_t,
// Bool -> bool, Float -> double, from CANN's aclnn generator), then outputs. The loader
// puts the aclnn headers CANN generated from op_host's OpDef (<vendor>/op_api/include) on
// the include path, and the static_asserts below compare our arguments with them.
//
// Functions (same contracts as the CPU module, cpu_pyboost.cc):
//   group_norm_grad(dy, x, mean, rstd, gamma, group, m0, m1, m2) -> (dx, dgamma, dbeta)
//       gamma must be real ((C,), mean's dtype; the caller passes ones for "none"); the
//       operator always writes all three outputs: the caller empties the masked-off ones.
//   group_norm(x, gamma, beta, group, eps) -> (y, mean, rstd)        [GroupNormSiluMs]
//   group_norm_autograd(x, gamma, beta, group, eps, gamma_grad, beta_grad)
//       -> (y, mean, rstd), recorded for PyNative autograd with the C++ Function API; its
//       backward launches GroupNormGradMs. mean/rstd are float32 for every input dtype.
//   group_norm_silu(x, gamma, beta, group, eps, swish_scale) -> (z, mean, rstd)
//       [GroupNormSiluMs with SiLU on: z = y * sigmoid(swish_scale * y); mean/rstd float32]
//   group_norm_silu_autograd(x, gamma, beta, group, eps, swish_scale, gamma_grad, beta_grad)
//       -> (z, mean, rstd), recorded for autograd; its backward launches GroupNormSiluGradMs,
//       which recomputes y and sigmoid from the saved x, mean, rstd, gamma, beta.
//   group_norm_silu_grad(dz, x, mean, rstd, gamma, beta, group, swish_scale, m0, m1, m2)
//       -> (dx, dgamma, dbeta)   [GroupNormSiluGradMs; gamma/beta real, mean's dtype]
// The forward functions need the GroupNormSiluMs operator to be installed as well, the
// fused backward GroupNormSiluGradMs (ms_groupnorm/ops/routing.py only calls them then).
#include <cstdint>
#include <tuple>
#include <type_traits>
#include <vector>

#include "pyboost_ordering.h"  // MindSpore's headers, autograd record before return
#include "second_order.h"      // a node's Backward while it is itself differentiated

#if __has_include("aclnn_group_norm_grad_ms.h")
#include "aclnn_group_norm_grad_ms.h"
#define MS_GROUPNORM_HAVE_GRAD_HEADER 1
#endif
#if __has_include("aclnn_group_norm_silu_ms.h")
#include "aclnn_group_norm_silu_ms.h"
#define MS_GROUPNORM_HAVE_FORWARD_HEADER 1
#endif
#if __has_include("aclnn_group_norm_silu_grad_ms.h")
#include "aclnn_group_norm_silu_grad_ms.h"
#define MS_GROUPNORM_HAVE_SILU_GRAD_HEADER 1
#endif

namespace {

#if defined(MS_GROUPNORM_HAVE_GRAD_HEADER) || defined(MS_GROUPNORM_HAVE_FORWARD_HEADER) || \
    defined(MS_GROUPNORM_HAVE_SILU_GRAD_HEADER)
// ---- the argument types CANN's generated aclnn headers declare, checked at compile time
// An argument as the aclnn function receives it: LAUNCH_ACLNN converts a tensor to an
// aclTensor* and passes scalars unchanged.
template <typename T>
struct AclnnParam {
  using type = T;
};
template <>
struct AclnnParam<ms::Tensor> {
  using type = const aclTensor *;
};

template <typename Declared, typename... Passed>
struct MatchesAclnn : std::false_type {};
template <typename... Declared, typename... Passed>
struct MatchesAclnn<aclnnStatus (*)(Declared...), Passed...>
    : std::is_same<std::tuple<Declared...>,
                   std::tuple<typename AclnnParam<std::decay_t<Passed>>::type..., uint64_t *, aclOpExecutor **>> {};
#endif

// ---- launches
ms::Tensor Dense(const ms::Tensor &t) { return t.is_contiguous() ? t : t.contiguous(); }

// The backward operators always write all three outputs, full size.
std::vector<ms::Tensor> FullGradients(const ms::Tensor &x, const ms::Tensor &mean) {
  const auto &shape = x.shape();
  if (shape.size() < 2) MS_LOG(EXCEPTION) << "ms_groupnorm: x must be (N, C, *)";
  const ShapeVector channels{shape[1]};
  return {ms::Tensor(x.data_type(), shape), ms::Tensor(mean.data_type(), channels),
          ms::Tensor(mean.data_type(), channels)};
}

std::vector<ms::Tensor> GradImpl(const ms::Tensor &dy, const ms::Tensor &x, const ms::Tensor &mean,
                                 const ms::Tensor &rstd, const ms::Tensor &gamma, int64_t group, bool dx_mask,
                                 bool dgamma_mask, bool dbeta_mask) {
  const auto grads = FullGradients(x, mean);
  const ms::Tensor dx = grads[0], dgamma = grads[1], dbeta = grads[2];
  // CANN's order (op_host OpDef): dy, mean, rstd, x, gamma | num_groups, dx_is_require,
  // dgamma_is_require, dbeta_is_require | dx, dgamma, dbeta.
  const ms::Tensor in_dy = Dense(dy), in_mean = Dense(mean), in_rstd = Dense(rstd), in_x = Dense(x),
                   in_gamma = Dense(gamma);
  const int64_t num_groups = group;
#ifdef MS_GROUPNORM_HAVE_GRAD_HEADER
  static_assert(MatchesAclnn<decltype(&aclnnGroupNormGradMsGetWorkspaceSize), ms::Tensor, ms::Tensor, ms::Tensor,
                             ms::Tensor, ms::Tensor, decltype(num_groups), decltype(dx_mask), decltype(dgamma_mask),
                             decltype(dbeta_mask), ms::Tensor, ms::Tensor, ms::Tensor>::value,
                "aclnnGroupNormGradMs: the arguments below differ from its generated aclnn header");
#endif
  auto runner = std::make_shared<ms::pynative::AclnnOpRunner>("GroupNormGradMs");
  runner->SetLaunchFunc(LAUNCH_ACLNN_FUNC(aclnnGroupNormGradMs, in_dy, in_mean, in_rstd, in_x, in_gamma, num_groups,
                                          dx_mask, dgamma_mask, dbeta_mask, dx, dgamma, dbeta));
  runner->Run({in_dy, in_mean, in_rstd, in_x, in_gamma}, {dx, dgamma, dbeta});
  return {dx, dgamma, dbeta};
}

// GroupNormSiluMs: y (activate_silu false: plain GroupNorm) or z = y * sigmoid(swish_scale * y),
// in x's dtype; mean/rstd float32 (N, group).
std::vector<ms::Tensor> ForwardImpl(const ms::Tensor &x, const ms::Tensor &gamma, const ms::Tensor &beta,
                                    int64_t group, double eps, bool activate_silu, double swish_scale) {
  const auto &shape = x.shape();
  if (shape.size() < 2) MS_LOG(EXCEPTION) << "ms_groupnorm: x must be (N, C, *)";
  ms::Tensor y(x.data_type(), shape);
  ms::Tensor mean(mindspore::TypeId::kNumberTypeFloat32, ShapeVector{shape[0], group});
  ms::Tensor rstd(mindspore::TypeId::kNumberTypeFloat32, ShapeVector{shape[0], group});
  const ms::Tensor in_x = Dense(x), in_gamma = Dense(gamma), in_beta = Dense(beta);
  // CANN's order: x, gamma, beta | num_groups, eps, activate_silu, swish_scale | y, mean, rstd.
  const int64_t num_groups = group;
  const double epsilon = eps;  // a Float attribute is a double in the aclnn API
#ifdef MS_GROUPNORM_HAVE_FORWARD_HEADER
  static_assert(MatchesAclnn<decltype(&aclnnGroupNormSiluMsGetWorkspaceSize), ms::Tensor, ms::Tensor, ms::Tensor,
                             decltype(num_groups), decltype(epsilon), decltype(activate_silu), decltype(swish_scale),
                             ms::Tensor, ms::Tensor, ms::Tensor>::value,
                "aclnnGroupNormSiluMs: the arguments below differ from its generated aclnn header");
#endif
  auto runner = std::make_shared<ms::pynative::AclnnOpRunner>("GroupNormSiluMs");
  runner->SetLaunchFunc(LAUNCH_ACLNN_FUNC(aclnnGroupNormSiluMs, in_x, in_gamma, in_beta, num_groups, epsilon,
                                          activate_silu, swish_scale, y, mean, rstd));
  runner->Run({in_x, in_gamma, in_beta}, {y, mean, rstd});
  return {y, mean, rstd};
}

// GroupNormSiluGradMs: the gradients of z = y * sigmoid(swish_scale * y), y and sigmoid
// recomputed by the operator from x, mean, rstd, gamma, beta (all real; gamma, beta, mean,
// rstd in one statistics dtype). Always writes all three outputs, like GroupNormGradMs.
std::vector<ms::Tensor> SiluGradImpl(const ms::Tensor &dz, const ms::Tensor &x, const ms::Tensor &mean,
                                     const ms::Tensor &rstd, const ms::Tensor &gamma, const ms::Tensor &beta,
                                     int64_t group, double swish_scale, bool dx_mask, bool dgamma_mask,
                                     bool dbeta_mask) {
  const auto grads = FullGradients(x, mean);
  const ms::Tensor dx = grads[0], dgamma = grads[1], dbeta = grads[2];
  // CANN's order (op_host OpDef): dy, mean, rstd, x, gamma, beta | num_groups, swish_scale,
  // dx_is_require, dgamma_is_require, dbeta_is_require | dx, dgamma, dbeta.
  const ms::Tensor in_dz = Dense(dz), in_mean = Dense(mean), in_rstd = Dense(rstd), in_x = Dense(x),
                   in_gamma = Dense(gamma), in_beta = Dense(beta);
  const int64_t num_groups = group;
#ifdef MS_GROUPNORM_HAVE_SILU_GRAD_HEADER
  static_assert(MatchesAclnn<decltype(&aclnnGroupNormSiluGradMsGetWorkspaceSize), ms::Tensor, ms::Tensor, ms::Tensor,
                             ms::Tensor, ms::Tensor, ms::Tensor, decltype(num_groups), decltype(swish_scale),
                             decltype(dx_mask), decltype(dgamma_mask), decltype(dbeta_mask), ms::Tensor, ms::Tensor,
                             ms::Tensor>::value,
                "aclnnGroupNormSiluGradMs: the arguments below differ from its generated aclnn header");
#endif
  auto runner = std::make_shared<ms::pynative::AclnnOpRunner>("GroupNormSiluGradMs");
  runner->SetLaunchFunc(LAUNCH_ACLNN_FUNC(aclnnGroupNormSiluGradMs, in_dz, in_mean, in_rstd, in_x, in_gamma, in_beta,
                                          num_groups, swish_scale, dx_mask, dgamma_mask, dbeta_mask, dx, dgamma,
                                          dbeta));
  runner->Run({in_dz, in_mean, in_rstd, in_x, in_gamma, in_beta}, {dx, dgamma, dbeta});
  return {dx, dgamma, dbeta};
}

py::object GroupNormGrad(const ms::Tensor &dy, const ms::Tensor &x, const ms::Tensor &mean, const ms::Tensor &rstd,
                         const ms::Tensor &gamma, int64_t group, bool dx_mask, bool dgamma_mask, bool dbeta_mask) {
  return ms::pynative::PyboostRunner::Call<3>(GradImpl, dy, x, mean, rstd, gamma, group, dx_mask, dgamma_mask,
                                              dbeta_mask);
}

py::object GroupNormForward(const ms::Tensor &x, const ms::Tensor &gamma, const ms::Tensor &beta, int64_t group,
                            double eps) {
  return ms::pynative::PyboostRunner::Call<3>(ForwardImpl, x, gamma, beta, group, eps, false, 1.0);
}

py::object GroupNormSilu(const ms::Tensor &x, const ms::Tensor &gamma, const ms::Tensor &beta, int64_t group,
                         double eps, double swish_scale) {
  return ms::pynative::PyboostRunner::Call<3>(ForwardImpl, x, gamma, beta, group, eps, true, swish_scale);
}

py::object GroupNormSiluGrad(const ms::Tensor &dz, const ms::Tensor &x, const ms::Tensor &mean,
                             const ms::Tensor &rstd, const ms::Tensor &gamma, const ms::Tensor &beta, int64_t group,
                             double swish_scale, bool dx_mask, bool dgamma_mask, bool dbeta_mask) {
  return ms::pynative::PyboostRunner::Call<3>(SiluGradImpl, dz, x, mean, rstd, gamma, beta, group, swish_scale,
                                              dx_mask, dgamma_mask, dbeta_mask);
}

// ---- autograd: forward GroupNormSiluMs, backward GroupNormGradMs, nothing recomputed
namespace autograd = mindspore::pynative::autograd;
using mindspore::tensor::TensorPtr;

// What both Functions record: x, the statistics (marked non-differentiable: saved
// statistics) and the parameters ``params`` for the backward, the group and whether
// gamma/beta want a gradient (a ones/zeros stand-in for a "none" one gets none).
autograd::TensorPtrList Record(autograd::AutogradContext *ctx, const std::vector<ms::Tensor> &outs,
                               const TensorPtr &x, const autograd::TensorPtrList &params, int64_t group,
                               bool gamma_grad, bool beta_grad) {
  const TensorPtr &mean = outs[1].tensor();
  const TensorPtr &rstd = outs[2].tensor();
  autograd::TensorPtrList saved{x, mean, rstd};
  saved.insert(saved.end(), params.begin(), params.end());
  ctx->SaveForBackward(saved);
  ctx->saved_data["group"] = mindspore::MakeValue(group);
  ctx->saved_data["gamma_grad"] = mindspore::MakeValue(gamma_grad);
  ctx->saved_data["beta_grad"] = mindspore::MakeValue(beta_grad);
  ctx->MarkNonDifferentiable({mean, rstd});
  return {outs[0].tensor(), mean, rstd};
}

struct Wanted {
  int64_t group;
  bool dx, dgamma, dbeta;
};

Wanted WantedGradients(autograd::AutogradContext *ctx) {
  return {mindspore::GetValue<int64_t>(ctx->saved_data["group"]), ctx->NeedsInputGrad(0),
          ctx->NeedsInputGrad(1) && mindspore::GetValue<bool>(ctx->saved_data["gamma_grad"]),
          ctx->NeedsInputGrad(2) && mindspore::GetValue<bool>(ctx->saved_data["beta_grad"])};
}

// One entry per input: x, gamma, beta, then nullptr for each of the ``scalars`` non-tensor
// inputs; none where no gradient is wanted.
autograd::TensorPtrList Gradients(const std::vector<ms::Tensor> &outs, const Wanted &w, size_t scalars) {
  autograd::TensorPtrList grads{w.dx ? outs[0].tensor() : nullptr, w.dgamma ? outs[1].tensor() : nullptr,
                                w.dbeta ? outs[2].tensor() : nullptr};
  grads.resize(grads.size() + scalars, nullptr);
  return grads;
}

// The same from BackwardRecorded's tensors.
autograd::TensorPtrList RecordedGradients(const std::vector<ms_groupnorm::TensorPtrFor> &outs, const Wanted &w,
                                          size_t scalars) {
  autograd::TensorPtrList grads{w.dx ? outs[0] : nullptr, w.dgamma ? outs[1] : nullptr, w.dbeta ? outs[2] : nullptr};
  grads.resize(grads.size() + scalars, nullptr);
  return grads;
}

struct GroupNormFunction : public autograd::Function<GroupNormFunction> {
  static autograd::TensorPtrList Forward(autograd::AutogradContext *ctx, const TensorPtr &x, const TensorPtr &gamma,
                                         const TensorPtr &beta, int64_t group, double eps, bool gamma_grad,
                                         bool beta_grad) {
    auto outs = ForwardImpl(ms::Tensor(x), ms::Tensor(gamma), ms::Tensor(beta), group, eps, false, 1.0);
    return Record(ctx, outs, x, {gamma}, group, gamma_grad, beta_grad);
  }

  static autograd::TensorPtrList Backward(autograd::AutogradContext *ctx, autograd::TensorPtrList grads) {
    const auto saved = ctx->GetSavedTensors();
    const Wanted w = WantedGradients(ctx);
    if (ms_groupnorm::RecordingHigherOrder()) {  // this gradient is itself differentiated: second_order.h
      auto outs = ms_groupnorm::BackwardRecorded("group_norm", {grads[0], saved[0], saved[1], saved[2], saved[3]},
                                                 {static_cast<double>(w.group)}, w.dx, w.dgamma, w.dbeta);
      return RecordedGradients(outs, w, 4);
    }
    auto outs = GradImpl(ms::Tensor(grads[0]), ms::Tensor(saved[0]), ms::Tensor(saved[1]), ms::Tensor(saved[2]),
                         ms::Tensor(saved[3]), w.group, w.dx, w.dgamma, w.dbeta);
    return Gradients(outs, w, 4);  // then nothing for group, eps and the two flags
  }
};

std::vector<ms::Tensor> AutogradImpl(const ms::Tensor &x, const ms::Tensor &gamma, const ms::Tensor &beta,
                                     int64_t group, double eps, bool gamma_grad, bool beta_grad) {
  auto outs = GroupNormFunction::Apply(x.tensor(), gamma.tensor(), beta.tensor(), group, eps, gamma_grad, beta_grad);
  return {ms::Tensor(outs[0]), ms::Tensor(outs[1]), ms::Tensor(outs[2])};
}

py::object GroupNormAutograd(const ms::Tensor &x, const ms::Tensor &gamma, const ms::Tensor &beta, int64_t group,
                             double eps, bool gamma_grad, bool beta_grad) {
  return ms_groupnorm::CallRecordingAutograd<3>(AutogradImpl, x, gamma, beta, group, eps, gamma_grad, beta_grad);
}

// ---- autograd of the fused op: forward GroupNormSiluMs (SiLU on), backward
// GroupNormSiluGradMs from the saved x, mean, rstd, gamma, beta (nothing full-size but x)
struct GroupNormSiluFunction : public autograd::Function<GroupNormSiluFunction> {
  static autograd::TensorPtrList Forward(autograd::AutogradContext *ctx, const TensorPtr &x, const TensorPtr &gamma,
                                         const TensorPtr &beta, int64_t group, double eps, double swish_scale,
                                         bool gamma_grad, bool beta_grad) {
    auto outs = ForwardImpl(ms::Tensor(x), ms::Tensor(gamma), ms::Tensor(beta), group, eps, true, swish_scale);
    ctx->saved_data["swish_scale"] = mindspore::MakeValue(swish_scale);
    return Record(ctx, outs, x, {gamma, beta}, group, gamma_grad, beta_grad);
  }

  static autograd::TensorPtrList Backward(autograd::AutogradContext *ctx, autograd::TensorPtrList grads) {
    const auto saved = ctx->GetSavedTensors();
    const double swish_scale = mindspore::GetValue<double>(ctx->saved_data["swish_scale"]);
    const Wanted w = WantedGradients(ctx);
    if (ms_groupnorm::RecordingHigherOrder()) {  // this gradient is itself differentiated: second_order.h
      auto outs = ms_groupnorm::BackwardRecorded(
          "group_norm_silu", {grads[0], saved[0], saved[1], saved[2], saved[3], saved[4]},
          {static_cast<double>(w.group), swish_scale}, w.dx, w.dgamma, w.dbeta);
      return RecordedGradients(outs, w, 5);
    }
    auto outs = SiluGradImpl(ms::Tensor(grads[0]), ms::Tensor(saved[0]), ms::Tensor(saved[1]), ms::Tensor(saved[2]),
                             ms::Tensor(saved[3]), ms::Tensor(saved[4]), w.group, swish_scale, w.dx, w.dgamma, w.dbeta);
    return Gradients(outs, w, 5);  // then nothing for group, eps, swish_scale and the two flags
  }
};

std::vector<ms::Tensor> SiluAutogradImpl(const ms::Tensor &x, const ms::Tensor &gamma, const ms::Tensor &beta,
                                         int64_t group, double eps, double swish_scale, bool gamma_grad,
                                         bool beta_grad) {
  auto outs = GroupNormSiluFunction::Apply(x.tensor(), gamma.tensor(), beta.tensor(), group, eps, swish_scale,
                                           gamma_grad, beta_grad);
  return {ms::Tensor(outs[0]), ms::Tensor(outs[1]), ms::Tensor(outs[2])};
}

py::object GroupNormSiluAutograd(const ms::Tensor &x, const ms::Tensor &gamma, const ms::Tensor &beta, int64_t group,
                                 double eps, double swish_scale, bool gamma_grad, bool beta_grad) {
  return ms_groupnorm::CallRecordingAutograd<3>(SiluAutogradImpl, x, gamma, beta, group, eps, swish_scale, gamma_grad,
                                              beta_grad);
}

}  // namespace

PYBIND11_MODULE(MS_EXTENSION_NAME, m) {
  m.def("group_norm_grad", &GroupNormGrad,
        "GroupNormGradMs: (dy, x, mean, rstd, gamma, group, dx, dgamma, dbeta masks) -> (dx, dgamma, dbeta)");
  m.def("group_norm", &GroupNormForward, "GroupNormSiluMs without SiLU: (x, gamma, beta, group, eps) -> (y, mean, rstd)");
  m.def("group_norm_autograd", &GroupNormAutograd,
        "GroupNorm recorded for PyNative autograd: (x, gamma, beta, group, eps, gamma_grad, beta_grad) -> "
        "(y, mean, rstd)");
  m.def("group_norm_silu", &GroupNormSilu,
        "GroupNormSiluMs with SiLU on: (x, gamma, beta, group, eps, swish_scale) -> (z, mean, rstd)");
  m.def("group_norm_silu_autograd", &GroupNormSiluAutograd,
        "fused GroupNorm + swish recorded for PyNative autograd (backward GroupNormSiluGradMs): (x, gamma, beta, "
        "group, eps, swish_scale, gamma_grad, beta_grad) -> (z, mean, rstd)");
  m.def("set_differentiable_backward", &ms_groupnorm::SetDifferentiableBackward,
        "sets the Python function that computes a node's gradient while it is itself differentiated");
  m.def("group_norm_silu_grad", &GroupNormSiluGrad,
        "GroupNormSiluGradMs: (dz, x, mean, rstd, gamma, beta, group, swish_scale, dx, dgamma, dbeta masks) -> "
        "(dx, dgamma, dbeta)");
}
