/*
 * CANN registration of GroupNormGradMs: operator definition, InferShape/InferDataType and
 * the tiling entry, which only translates the TilingContext into a gnms::TilingInput and
 * calls the plain tiling function (group_norm_grad_ms_tiling.cpp), the one the CPU twin
 * and the tests run.
 *
 * Built on an Ascend machine by build.sh (CANN >= 8.2 for the standard C++ tiling
 * struct: GetTilingData<T>() here, GET_TILING_DATA_WITH_STRUCT in the kernel).
 */
#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"

#include "group_norm_grad_ms_tiling.h"

namespace {
// Positions in the operator definition (CANN's GroupNormGrad order).
constexpr size_t kInputDy = 0;
constexpr size_t kInputMean = 1;
constexpr size_t kInputX = 3;
constexpr size_t kInputGamma = 4;
constexpr size_t kAttrNumGroups = 0;
constexpr size_t kAttrDxIsRequire = 1;
constexpr size_t kAttrDgammaIsRequire = 2;
constexpr size_t kAttrDbetaIsRequire = 3;
constexpr int64_t kScheduleModeBatch = 1;  // all blocks resident at once: SyncAll needs it

bool ToScalarType(ge::DataType dtype, gnms::ScalarType *out) {
  switch (dtype) {
    case ge::DT_FLOAT: *out = gnms::ScalarType::kFloat32; return true;
    case ge::DT_FLOAT16: *out = gnms::ScalarType::kFloat16; return true;
    case ge::DT_BF16: *out = gnms::ScalarType::kBFloat16; return true;
    default: return false;
  }
}

bool ReadBoolAttr(const gert::RuntimeAttrs *attrs, size_t index) {
  const bool *value = attrs->GetAttrPointer<bool>(index);
  return value == nullptr ? true : *value;
}
}  // namespace

namespace optiling {
static ge::graphStatus GroupNormGradMsTiling(gert::TilingContext *context) {
  const gert::StorageShape *xShape = context->GetInputShape(kInputX);
  const gert::RuntimeAttrs *attrs = context->GetAttrs();
  if (xShape == nullptr || attrs == nullptr) return ge::GRAPH_FAILED;
  const gert::Shape &shape = xShape->GetStorageShape();
  if (shape.GetDimNum() < 2) return ge::GRAPH_FAILED;
  const int64_t *numGroups = attrs->GetAttrPointer<int64_t>(kAttrNumGroups);
  if (numGroups == nullptr) return ge::GRAPH_FAILED;

  gnms::TilingInput in;
  in.N = shape.GetDim(0);
  in.C = shape.GetDim(1);
  in.HxW = 1;
  for (size_t i = 2; i < shape.GetDimNum(); ++i) in.HxW *= shape.GetDim(i);
  in.G = *numGroups;
  in.dxRequired = ReadBoolAttr(attrs, kAttrDxIsRequire);
  in.dgammaRequired = ReadBoolAttr(attrs, kAttrDgammaIsRequire);
  in.dbetaRequired = ReadBoolAttr(attrs, kAttrDbetaIsRequire);
  if (!ToScalarType(context->GetInputDesc(kInputDy)->GetDataType(), &in.dataType) ||
      !ToScalarType(context->GetInputDesc(kInputMean)->GetDataType(), &in.statType)) {
    return ge::GRAPH_FAILED;
  }
  auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
  uint64_t ubSize = 0;
  platform.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ubSize);
  in.ubBytes = static_cast<int64_t>(ubSize);
  in.coreNum = static_cast<int64_t>(platform.GetCoreNumAiv());

  GroupNormGradMsTilingData tiling;
  if (gnms::ComputeTiling(in, &tiling) != gnms::kTilingOk) return ge::GRAPH_FAILED;
  GroupNormGradMsTilingData *out = context->GetTilingData<GroupNormGradMsTilingData>();
  if (out == nullptr) return ge::GRAPH_FAILED;
  *out = tiling;
  context->SetTilingKey(static_cast<uint64_t>(gnms::TilingKeyFor(in.dataType, in.statType)));
  context->SetBlockDim(static_cast<uint32_t>(tiling.blockDim));
  context->SetScheduleMode(kScheduleModeBatch);
  size_t *workspaces = context->GetWorkspaceSizes(1);
  workspaces[0] = platform.GetLibApiWorkSpaceSize() + static_cast<size_t>(gnms::UserWorkspaceBytes(tiling));
  return ge::GRAPH_SUCCESS;
}
}  // namespace optiling

namespace ge {
// dx has x's shape; dgamma and dbeta have gamma's shape (C,).
static graphStatus GroupNormGradMsInferShape(gert::InferShapeContext *context) {
  const gert::Shape *xShape = context->GetInputShape(kInputX);
  const gert::Shape *gammaShape = context->GetInputShape(kInputGamma);
  if (xShape == nullptr || gammaShape == nullptr) return GRAPH_FAILED;
  *context->GetOutputShape(0) = *xShape;
  *context->GetOutputShape(1) = *gammaShape;
  *context->GetOutputShape(2) = *gammaShape;
  return GRAPH_SUCCESS;
}

// dx follows x; dgamma and dbeta follow the statistics (mean) dtype.
static graphStatus GroupNormGradMsInferDataType(gert::InferDataTypeContext *context) {
  context->SetOutputDataType(0, context->GetInputDataType(kInputX));
  context->SetOutputDataType(1, context->GetInputDataType(kInputMean));
  context->SetOutputDataType(2, context->GetInputDataType(kInputMean));
  return GRAPH_SUCCESS;
}
}  // namespace ge

namespace ops {
class GroupNormGradMs : public OpDef {
 public:
  explicit GroupNormGradMs(const char *name) : OpDef(name) {
    // Five dtype combinations, one per column: (data, statistics) =
    // (fp32, fp32), (fp16, fp16), (bf16, bf16), (fp16, fp32), (bf16, fp32).
    const std::vector<ge::DataType> data = {ge::DT_FLOAT, ge::DT_FLOAT16, ge::DT_BF16, ge::DT_FLOAT16, ge::DT_BF16};
    const std::vector<ge::DataType> stat = {ge::DT_FLOAT, ge::DT_FLOAT16, ge::DT_BF16, ge::DT_FLOAT, ge::DT_FLOAT};
    const std::vector<ge::Format> nd(data.size(), ge::FORMAT_ND);
    this->Input("dy").ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd).AutoContiguous();
    this->Input("mean").ParamType(REQUIRED).DataType(stat).Format(nd).UnknownShapeFormat(nd).AutoContiguous();
    this->Input("rstd").ParamType(REQUIRED).DataType(stat).Format(nd).UnknownShapeFormat(nd).AutoContiguous();
    this->Input("x").ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd).AutoContiguous();
    this->Input("gamma").ParamType(REQUIRED).DataType(stat).Format(nd).UnknownShapeFormat(nd).AutoContiguous();
    this->Output("dx").ParamType(REQUIRED).DataType(data).Format(nd).UnknownShapeFormat(nd);
    this->Output("dgamma").ParamType(REQUIRED).DataType(stat).Format(nd).UnknownShapeFormat(nd);
    this->Output("dbeta").ParamType(REQUIRED).DataType(stat).Format(nd).UnknownShapeFormat(nd);
    this->Attr("num_groups").AttrType(REQUIRED).Int();
    this->Attr("dx_is_require").AttrType(OPTIONAL).Bool(true);
    this->Attr("dgamma_is_require").AttrType(OPTIONAL).Bool(true);
    this->Attr("dbeta_is_require").AttrType(OPTIONAL).Bool(true);

    this->SetInferShape(ge::GroupNormGradMsInferShape).SetInferDataType(ge::GroupNormGradMsInferDataType);
    this->AICore().SetTiling(optiling::GroupNormGradMsTiling);
    this->AICore().AddConfig("ascend910b");
    this->AICore().AddConfig("ascend910_93");
  }
};

OP_ADD(GroupNormGradMs);
}  // namespace ops
