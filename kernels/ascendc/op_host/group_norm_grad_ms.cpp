/*
 * CANN registration of GroupNormGradMs: operator definition, InferShape/InferDataType and
 * the tiling entry, which only translates the TilingContext into a ms_groupnorm::grad_tiling::TilingInput and
 * calls the plain tiling function (group_norm_grad_ms_tiling.cpp), the one the CPU twin
 * and the tests run (through group_norm_grad_ms_host.h, shared with GroupNormSiluGradMs).
 *
 * Built on an Ascend machine by build.sh (CANN >= 8.2 for the standard C++ tiling
 * struct: GetTilingData<T>() here, GET_TILING_DATA_WITH_STRUCT in the kernel).
 */
#include <string>
#include <vector>

#include "register/op_def_registry.h"
#include "tiling/platform/platform_ascendc.h"

#include "group_norm_grad_ms_host.h"

namespace grad_tiling = ms_groupnorm::grad_tiling;  // the tiling this file calls, by its short name

namespace {
using ms_groupnorm::op_host::ReadBoolAttr;
using ms_groupnorm::op_host::Refuse;
using InputShapes = ms_groupnorm::op_host::InputShapes<grad_tiling::ShapeView, grad_tiling::kNumInputs>;

constexpr const char *kOpName = "GroupNormGradMs";
constexpr size_t kAttrNumGroups = 0;
constexpr size_t kAttrDxIsRequire = 1;
constexpr size_t kAttrDgammaIsRequire = 2;
constexpr size_t kAttrDbetaIsRequire = 3;

// Shared by InferShape and tiling: null attributes and every shape rule.
ge::graphStatus CheckInputs(const InputShapes &shapes, const gert::RuntimeAttrs *attrs) {
  const int64_t *numGroups = attrs == nullptr ? nullptr : attrs->GetAttrPointer<int64_t>(kAttrNumGroups);
  std::string message;
  if (grad_tiling::CheckInputs(shapes.views, numGroups, &message) != grad_tiling::kTilingOk) return Refuse(message);
  return ge::GRAPH_SUCCESS;
}
}  // namespace

namespace optiling {
static ge::graphStatus GroupNormGradMsTiling(gert::TilingContext *context) {
  if (context == nullptr) return Refuse("GroupNormGradMs tiling: null TilingContext");
  InputShapes shapes;
  shapes.FromTiling(context);
  const gert::RuntimeAttrs *attrs = context->GetAttrs();
  if (CheckInputs(shapes, attrs) != ge::GRAPH_SUCCESS) return ge::GRAPH_FAILED;
  grad_tiling::TilingInput in;
  ms_groupnorm::op_host::SetSizes(shapes.views[grad_tiling::kInputX], &in);
  in.G = *attrs->GetAttrPointer<int64_t>(kAttrNumGroups);
  in.dxRequired = ReadBoolAttr(attrs, kAttrDxIsRequire, true);  // optional attributes default to true
  in.dgammaRequired = ReadBoolAttr(attrs, kAttrDgammaIsRequire, true);
  in.dbetaRequired = ReadBoolAttr(attrs, kAttrDbetaIsRequire, true);
  return ms_groupnorm::op_host::TileGradKernel(context, kOpName, in);
}
}  // namespace optiling

namespace ge {
// The inputs are validated here too, so that graph compilation already reports a bad call.
static graphStatus GroupNormGradMsInferShape(gert::InferShapeContext *context) {
  if (context == nullptr) return Refuse("GroupNormGradMs InferShape: null context");
  InputShapes shapes;
  shapes.FromInferShape(context);
  if (CheckInputs(shapes, context->GetAttrs()) != GRAPH_SUCCESS) return GRAPH_FAILED;
  return ms_groupnorm::op_host::InferGradShapes(context, kOpName);
}

static graphStatus GroupNormGradMsInferDataType(gert::InferDataTypeContext *context) {
  if (context == nullptr) return Refuse("GroupNormGradMs InferDataType: null context");
  return ms_groupnorm::op_host::InferGradDataTypes(context);
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
    // Ascend 950 (arch 3510): built where the CANN knows it (build.sh); checked in the CPU twin at its
    // sizes, never compiled with bisheng nor run here.
    this->AICore().AddConfig("ascend950");
  }
};

OP_ADD(GroupNormGradMs);
}  // namespace ops
