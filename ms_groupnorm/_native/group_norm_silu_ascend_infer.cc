// C++ shape/dtype inference of our AscendC forward, GroupNormSiluMs, for GRAPH_MODE on Ascend
// (dynamic shapes and ranks need a C++ infer: see group_norm_ascend_infer.cc).
//
// mean/rstd are (N, num_groups), and num_groups reaches MindSpore's infer only as a scalar
// input without its value; so this file is compiled once per num_groups: ms_groupnorm/backends/ascend.py
// writes a two-line source that defines GNMS_NUM_GROUPS and includes this file, and passes
// func="<that source>:aclnnGroupNormSiluMs".
//
// Inputs in CANN's order: x, gamma, beta, then num_groups, eps, activate_silu, swish_scale.
// y has x's shape and dtype; mean/rstd are float32. An unknown dimension is -1, an
// unknown rank the single dimension -2 (then N is unknown too).
#include <cstdint>
#include <vector>

#ifndef GNMS_NUM_GROUPS
#error "define GNMS_NUM_GROUPS (ms_groupnorm/backends/ascend.py compiles this file once per num_groups)"
#endif

namespace mindspore {
class AotExtra;
enum TypeId : int { kNumberTypeFloat32 = 43 };  // mindapi/base/type_id.h, the same in MindSpore 2.7.1 to 2.10
}  // namespace mindspore

namespace {
std::vector<std::vector<int64_t>> InferShape(const int *ndims, int64_t *const *shapes) {
  const std::vector<int64_t> x(shapes[0], shapes[0] + ndims[0]);
  const bool known_rank = !(ndims[0] == 1 && shapes[0][0] == -2);
  const std::vector<int64_t> stats{known_rank && ndims[0] >= 1 ? shapes[0][0] : -1, GNMS_NUM_GROUPS};
  return {x, stats, stats};
}

std::vector<mindspore::TypeId> InferType(const std::vector<mindspore::TypeId> &types) {
  return {types[0], mindspore::kNumberTypeFloat32, mindspore::kNumberTypeFloat32};
}
}  // namespace

extern "C" {
__attribute__((visibility("default"))) std::vector<std::vector<int64_t>> aclnnGroupNormSiluMsInferShape(
    int *ndims, int64_t **shapes, mindspore::AotExtra * /*extra*/) {
  return InferShape(ndims, shapes);
}
__attribute__((visibility("default"))) std::vector<mindspore::TypeId> aclnnGroupNormSiluMsInferType(
    std::vector<mindspore::TypeId> types, mindspore::AotExtra * /*extra*/) {
  return InferType(types);
}
}
