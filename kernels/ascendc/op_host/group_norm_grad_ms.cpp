/*
 * CANN registration of GroupNormGradMs: operator definition, InferShape/InferDataType and
 * the tiling entry, which only translates the TilingContext into a gnms::TilingInput and
 * calls the plain tiling function (group_norm_grad_ms_tiling.cpp), the one the CPU twin
 * and the tests run.
 *
 * Built on an Ascend machine by build.sh (CANN >= 8.2 for the standard C++ tiling
 * struct: GetTilingData<T>() here, GET_TILING_DATA_WITH_STRUCT in the kernel).
 */
#include <cstdio>
#include <string>
#include <vector>

#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"

#include "group_norm_grad_ms_tiling.h"

namespace {
constexpr size_t kAttrNumGroups = 0;
constexpr size_t kAttrDxIsRequire = 1;
constexpr size_t kAttrDgammaIsRequire = 2;
constexpr size_t kAttrDbetaIsRequire = 3;
constexpr int64_t kScheduleModeBatch = 1;  // all blocks resident at once: SyncAll needs it

// The framework's log is not available to a plain custom-op project without extra
// headers; stderr reaches the user's console and the plog of the process.
ge::graphStatus Refuse(const std::string &message) {
  std::fprintf(stderr, "[ERROR] %s\n", message.c_str());
  return ge::GRAPH_FAILED;
}

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
  return value == nullptr ? true : *value;  // optional attributes default to true
}

// The five input shapes as plain dimension lists for gnms::CheckInputs; a null shape
// pointer stays "not present".
struct InputShapes {
  std::vector<int64_t> dims[gnms::kNumInputs];
  gnms::ShapeView views[gnms::kNumInputs];

  void Set(int index, const gert::Shape *shape) {
    if (shape == nullptr) return;
    for (size_t d = 0; d < shape->GetDimNum(); ++d) dims[index].push_back(shape->GetDim(d));
    views[index].present = true;
    views[index].dims = dims[index].data();
    views[index].rank = static_cast<int64_t>(dims[index].size());
  }
};

// Shared by InferShape and tiling: null attributes and every shape rule.
ge::graphStatus CheckInputs(const InputShapes &shapes, const gert::RuntimeAttrs *attrs) {
  const int64_t *numGroups = attrs == nullptr ? nullptr : attrs->GetAttrPointer<int64_t>(kAttrNumGroups);
  std::string message;
  if (gnms::CheckInputs(shapes.views, numGroups, &message) != gnms::kTilingOk) return Refuse(message);
  return ge::GRAPH_SUCCESS;
}
}  // namespace

namespace optiling {
static ge::graphStatus GroupNormGradMsTiling(gert::TilingContext *context) {
  if (context == nullptr) return Refuse("GroupNormGradMs tiling: null TilingContext");
  InputShapes shapes;
  for (int i = 0; i < gnms::kNumInputs; ++i) {
    const gert::StorageShape *storage = context->GetInputShape(i);
    shapes.Set(i, storage == nullptr ? nullptr : &storage->GetStorageShape());
  }
  const gert::RuntimeAttrs *attrs = context->GetAttrs();
  if (CheckInputs(shapes, attrs) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;

  const gnms::ShapeView &x = shapes.views[gnms::kInputX];
  gnms::TilingInput in;
  in.N = x.dims[0];
  in.C = x.dims[1];
  in.HxW = 1;
  for (int64_t i = 2; i < x.rank; ++i) in.HxW *= x.dims[i];
  in.G = *attrs->GetAttrPointer<int64_t>(kAttrNumGroups);
  in.dxRequired = ReadBoolAttr(attrs, kAttrDxIsRequire);
  in.dgammaRequired = ReadBoolAttr(attrs, kAttrDgammaIsRequire);
  in.dbetaRequired = ReadBoolAttr(attrs, kAttrDbetaIsRequire);
  const gert::CompileTimeTensorDesc *dyDesc = context->GetInputDesc(gnms::kInputDy);
  const gert::CompileTimeTensorDesc *meanDesc = context->GetInputDesc(gnms::kInputMean);
  if (dyDesc == nullptr || meanDesc == nullptr) return Refuse("GroupNormGradMs: no tensor descriptor for 'dy' or 'mean'");
  if (!ToScalarType(dyDesc->GetDataType(), &in.dataType) || !ToScalarType(meanDesc->GetDataType(), &in.statType)) {
    return Refuse("GroupNormGradMs: 'dy' and 'mean' must be float32, float16 or bfloat16");
  }
  if (context->GetPlatformInfo() == nullptr) return Refuse("GroupNormGradMs: no platform info in the TilingContext");
  auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
  uint64_t ubSize = 0;
  platform.GetCoreMemSize(platform_ascendc::CoreMemType::UB, ubSize);
  in.ubBytes = static_cast<int64_t>(ubSize);
  in.coreNum = static_cast<int64_t>(platform.GetCoreNumAiv());

  GroupNormGradMsTilingData tiling;
  const int status = gnms::ComputeTiling(in, &tiling);
  if (status != gnms::kTilingOk) {
    return Refuse("GroupNormGradMs: tiling failed (status " + std::to_string(status) +
                  (status == gnms::kTilingNoFit ? ": C/num_groups too large for the unified buffer)" : ")"));
  }
  GroupNormGradMsTilingData *out = context->GetTilingData<GroupNormGradMsTilingData>();
  if (out == nullptr) return Refuse("GroupNormGradMs: no tiling data buffer");
  *out = tiling;
  context->SetTilingKey(static_cast<uint64_t>(gnms::TilingKeyFor(in.dataType, in.statType)));
  context->SetBlockDim(static_cast<uint32_t>(tiling.blockDim));
  context->SetScheduleMode(kScheduleModeBatch);
  size_t *workspaces = context->GetWorkspaceSizes(1);
  if (workspaces == nullptr) return Refuse("GroupNormGradMs: no workspace size slot");
  workspaces[0] = platform.GetLibApiWorkSpaceSize() + static_cast<size_t>(gnms::UserWorkspaceBytes(tiling));
  return ge::GRAPH_SUCCESS;
}
}  // namespace optiling

namespace ge {
// dx has x's shape; dgamma and dbeta have gamma's shape (C,). The inputs are validated
// here too, so that graph compilation already reports a bad call.
static graphStatus GroupNormGradMsInferShape(gert::InferShapeContext *context) {
  if (context == nullptr) return Refuse("GroupNormGradMs InferShape: null context");
  InputShapes shapes;
  for (int i = 0; i < gnms::kNumInputs; ++i) shapes.Set(i, context->GetInputShape(i));
  if (CheckInputs(shapes, context->GetAttrs()) != GRAPH_SUCCESS) return GRAPH_FAILED;
  gert::Shape *dx = context->GetOutputShape(0);
  gert::Shape *dgamma = context->GetOutputShape(1);
  gert::Shape *dbeta = context->GetOutputShape(2);
  if (dx == nullptr || dgamma == nullptr || dbeta == nullptr) return Refuse("GroupNormGradMs: null output shape");
  *dx = *context->GetInputShape(gnms::kInputX);
  *dgamma = *context->GetInputShape(gnms::kInputGamma);
  *dbeta = *context->GetInputShape(gnms::kInputGamma);
  return GRAPH_SUCCESS;
}

// dx follows x; dgamma and dbeta follow the statistics (mean) dtype.
static graphStatus GroupNormGradMsInferDataType(gert::InferDataTypeContext *context) {
  if (context == nullptr) return Refuse("GroupNormGradMs InferDataType: null context");
  context->SetOutputDataType(0, context->GetInputDataType(gnms::kInputX));
  context->SetOutputDataType(1, context->GetInputDataType(gnms::kInputMean));
  context->SetOutputDataType(2, context->GetInputDataType(gnms::kInputMean));
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
    this->Input("dy").ParamType(REQUIRED).DataType(data).Format(nd).AutoContiguous();
    this->Input("mean").ParamType(REQUIRED).DataType(stat).Format(nd).AutoContiguous();
    this->Input("rstd").ParamType(REQUIRED).DataType(stat).Format(nd).AutoContiguous();
    this->Input("x").ParamType(REQUIRED).DataType(data).Format(nd).AutoContiguous();
    this->Input("gamma").ParamType(REQUIRED).DataType(stat).Format(nd).AutoContiguous();
    this->Output("dx").ParamType(REQUIRED).DataType(data).Format(nd);
    this->Output("dgamma").ParamType(REQUIRED).DataType(stat).Format(nd);
    this->Output("dbeta").ParamType(REQUIRED).DataType(stat).Format(nd);
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
