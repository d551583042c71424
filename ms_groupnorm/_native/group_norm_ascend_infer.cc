// C++ shape/dtype inference of the AscendC GroupNormGradMs operator, and of the fused
// backward GroupNormSiluGradMs, for GRAPH_MODE on Ascend.
//
// Why: MindSpore infers a custom op's outputs in Python only for static shapes; with
// dynamic shapes (set_inputs with None dims, or an unknown rank) the infer must be on the
// C++ side (docs r2.10 op_custom_ascendc, "func=<infer>.cc:OpName"). ms_groupnorm/backends/ascend.py
// passes func="<this file>:aclnnGroupNormGradMs" with out_shape/out_dtype None; MindSpore
// compiles this file with g++ (custom_ops.py _compile_aot) and looks up
// "<func name>InferShape"/"<func name>InferType" in it, with the name after ':' exactly as
// given (aclnn prefix included; custom_ops.py drops the prefix only to generate a reg_info,
// which ours is not), so those are the only hooks exported.
//
// Inputs arrive in CANN's order: dy, mean, rstd, x, gamma, then the scalar attributes
// (num_groups and the three output flags, which carry no shape). An unknown dimension is
// -1 and an unknown rank is the single dimension -2; both pass through unchanged.
//
// GroupNormSiluGradMs (func="<this file>:aclnnGroupNormSiluGradMs") takes the same first
// five inputs in the same order, then beta, and has the same outputs: the same infer.
#include <cstdint>
#include <vector>

namespace mindspore {
class AotExtra;       // not read: the outputs depend on no attribute
enum TypeId : int;    // MindSpore's dtype enum; only copied from input to output here
}  // namespace mindspore

namespace {
enum Input { kDy, kMean, kRstd, kX, kGamma };

std::vector<std::vector<int64_t>> InferShape(const int *ndims, int64_t *const *shapes) {
  const std::vector<int64_t> x(shapes[kX], shapes[kX] + ndims[kX]);
  const std::vector<int64_t> gamma(shapes[kGamma], shapes[kGamma] + ndims[kGamma]);
  return {x, gamma, gamma};  // dx like x; dgamma and dbeta like gamma, (C,)
}

std::vector<mindspore::TypeId> InferType(const std::vector<mindspore::TypeId> &types) {
  return {types[kX], types[kMean], types[kMean]};  // dx: x's dtype; dgamma/dbeta: the statistics'
}
}  // namespace

#define GNMS_EXPORT_GRAD_INFER(name)                                                                        \
  __attribute__((visibility("default"))) std::vector<std::vector<int64_t>> name##InferShape(                  \
      int *ndims, int64_t **shapes, mindspore::AotExtra * /*extra*/) {                                       \
    return InferShape(ndims, shapes);                                                                        \
  }                                                                                                          \
  __attribute__((visibility("default"))) std::vector<mindspore::TypeId> name##InferType(                      \
      std::vector<mindspore::TypeId> types, mindspore::AotExtra * /*extra*/) {                               \
    return InferType(types);                                                                                 \
  }

extern "C" {
GNMS_EXPORT_GRAD_INFER(aclnnGroupNormGradMs)
GNMS_EXPORT_GRAD_INFER(aclnnGroupNormSiluGradMs)
}
