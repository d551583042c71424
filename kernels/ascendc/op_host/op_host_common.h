// Helpers shared by the CANN registrations of our operators (op_host/*.cpp): reading the
// TilingContext/InferShapeContext into the plain structures of the tiling functions, and
// refusing a call with a message. Header-only, CANN types only (metadef's gert/ge headers,
// included by register/op_def_registry.h before this file).
#ifndef GNMS_OP_HOST_COMMON_H
#define GNMS_OP_HOST_COMMON_H

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "tiling/platform/platform_ascendc.h"
#include "tiling_shapes.h"

namespace ms_groupnorm::op_host {

// The framework's log is not available to a plain custom-op project without extra
// headers; stderr reaches the user's console and the plog of the process.
inline ge::graphStatus Refuse(const std::string &message) {
  std::fprintf(stderr, "[ERROR] %s\n", message.c_str());
  return ge::GRAPH_FAILED;
}

// ge's float dtypes as the tilings' ScalarType; false for any other dtype.
inline bool ToScalarType(ge::DataType dtype, ms_groupnorm::tiling::ScalarType *out) {
  using ms_groupnorm::tiling::ScalarType;
  switch (dtype) {
    case ge::DT_FLOAT: *out = ScalarType::kFloat32; return true;
    case ge::DT_FLOAT16: *out = ScalarType::kFloat16; return true;
    case ge::DT_BF16: *out = ScalarType::kBFloat16; return true;
    default: return false;
  }
}

// An OPTIONAL attribute's value, or `fallback` when the framework passes none.
inline bool ReadBoolAttr(const gert::RuntimeAttrs *attrs, size_t index, bool fallback) {
  const bool *value = attrs->GetAttrPointer<bool>(index);
  return value == nullptr ? fallback : *value;
}
inline float ReadFloatAttr(const gert::RuntimeAttrs *attrs, size_t index, float fallback) {
  const float *value = attrs->GetAttrPointer<float>(index);
  return value == nullptr ? fallback : *value;
}

// The UB size a tiling plans for: the vector core's whole UB, as the CPU twin plans it, so that the
// tiling the device runs is the one the twin tests. PlatformAscendC::GetCoreMemSize(UB) answers the
// 910B's (A2's and A3's: both are SocVersion::ASCEND910B) 256 bytes short, which it keeps for KFC
// (LOCAL_RESERV_SIZE, asc-devkit impl/utils/tiling/platform/platform_ascendc.cpp); a plan never touches
// its last `planReserve` bytes, so where that reserve covers the 256 the plan still fits in the answer.
constexpr int64_t kPlatformKfcReserveBytes = 256;
inline int64_t PlanningUbBytes(const platform_ascendc::PlatformAscendC &platform, int64_t planReserve) {
  uint64_t answer = 0;
  platform.GetCoreMemSize(platform_ascendc::CoreMemType::UB, answer);
  const bool heldBack = platform.GetSocVersion() == platform_ascendc::SocVersion::ASCEND910B;
  const int64_t ub = static_cast<int64_t>(answer);
  return heldBack && planReserve >= kPlatformKfcReserveBytes ? ub + kPlatformKfcReserveBytes : ub;
}

// The input shapes as plain dimension lists for a tiling function's CheckInputs
// (ShapeView: its {present, dims, rank}); a null shape pointer stays "not present".
template <typename ShapeView, int kCount>
struct InputShapes {
  std::vector<int64_t> dims[kCount];
  ShapeView views[kCount];

  void Set(int index, const gert::Shape *shape) {
    if (shape == nullptr) return;
    for (size_t d = 0; d < shape->GetDimNum(); ++d) dims[index].push_back(shape->GetDim(d));
    views[index].present = true;
    views[index].dims = dims[index].data();
    views[index].rank = static_cast<int64_t>(dims[index].size());
  }

  // From a TilingContext (storage shapes) or an InferShapeContext (shapes).
  void FromTiling(gert::TilingContext *context) {
    for (int i = 0; i < kCount; ++i) {
      const gert::StorageShape *storage = context->GetInputShape(i);
      Set(i, storage == nullptr ? nullptr : &storage->GetStorageShape());
    }
  }
  void FromInferShape(gert::InferShapeContext *context) {
    for (int i = 0; i < kCount; ++i) Set(i, context->GetInputShape(i));
  }
};

}  // namespace ms_groupnorm::op_host

#endif  // GNMS_OP_HOST_COMMON_H
