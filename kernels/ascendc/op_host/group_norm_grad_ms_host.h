// The CANN side of the GroupNormGradMs tiling, shared by the two operators that run the
// GroupNormGradMs kernel class: GroupNormGradMs and GroupNormSiluGradMs (the same kernel
// with the swish gradient recomputed in front, tiling input silu = true). Both validate
// their inputs first, then fill the sizes, masks and swish fields of a ms_groupnorm::grad_tiling::TilingInput and
// call TileGradKernel, which adds the dtypes and the platform and writes the tiling.
#ifndef GNMS_GROUP_NORM_GRAD_MS_HOST_H
#define GNMS_GROUP_NORM_GRAD_MS_HOST_H

#include <string>

#include "group_norm_grad_ms_tiling.h"
#include "op_host_common.h"

namespace ms_groupnorm::op_host {

constexpr int64_t kScheduleModeBatch = 1;  // all blocks resident at once: SyncAll needs it

// N, C and HxW of an x shape of rank >= 2 (checked before).
inline void SetSizes(const ms_groupnorm::grad_tiling::ShapeView &x, ms_groupnorm::grad_tiling::TilingInput *in) {
  in->N = x.dims[0];
  in->C = x.dims[1];
  in->HxW = 1;
  for (int64_t i = 2; i < x.rank; ++i) in->HxW *= x.dims[i];
}

// Dtypes (dy: data, mean: statistics) and platform into `in`, then the tiling, key, block
// count, schedule mode and workspace size into the context. `op` names the operator in errors.
inline ge::graphStatus TileGradKernel(gert::TilingContext *context, const char *op,
                                      ms_groupnorm::grad_tiling::TilingInput in) {
  const std::string name(op);
  const gert::CompileTimeTensorDesc *dyDesc = context->GetInputDesc(ms_groupnorm::grad_tiling::kInputDy);
  const gert::CompileTimeTensorDesc *meanDesc = context->GetInputDesc(ms_groupnorm::grad_tiling::kInputMean);
  if (dyDesc == nullptr || meanDesc == nullptr) return Refuse(name + ": no tensor descriptor for 'dy' or 'mean'");
  if (!ToScalarType(dyDesc->GetDataType(), &in.dataType) || !ToScalarType(meanDesc->GetDataType(), &in.statType)) {
    return Refuse(name + ": 'dy' and 'mean' must be float32, float16 or bfloat16");
  }
  if (context->GetPlatformInfo() == nullptr) return Refuse(name + ": no platform info in the TilingContext");
  auto platform = platform_ascendc::PlatformAscendC(context->GetPlatformInfo());
  in.ubBytes = PlanningUbBytes(platform, ms_groupnorm::grad_tiling::kUbReserveBytes);
  in.coreNum = static_cast<int64_t>(platform.GetCoreNumAiv());

  GroupNormGradMsTilingData tiling;
  const int status = ms_groupnorm::grad_tiling::ComputeTiling(in, &tiling);
  if (status != ms_groupnorm::grad_tiling::kTilingOk) {
    return Refuse(name + ": tiling failed (status " + std::to_string(status) +
                  (status == ms_groupnorm::grad_tiling::kTilingNoFit ? ": C/num_groups too large for the unified buffer)"
                                                                     : ")"));
  }
  GroupNormGradMsTilingData *out = context->GetTilingData<GroupNormGradMsTilingData>();
  if (out == nullptr) return Refuse(name + ": no tiling data buffer");
  *out = tiling;
  context->SetTilingKey(static_cast<uint64_t>(ms_groupnorm::grad_tiling::TilingKeyFor(in.dataType, in.statType)));
  context->SetBlockDim(static_cast<uint32_t>(tiling.blockDim));
  context->SetScheduleMode(kScheduleModeBatch);
  size_t *workspaces = context->GetWorkspaceSizes(1);
  if (workspaces == nullptr) return Refuse(name + ": no workspace size slot");
  workspaces[0] = platform.GetLibApiWorkSpaceSize() +
                  static_cast<size_t>(ms_groupnorm::grad_tiling::UserWorkspaceBytes(tiling));
  return ge::GRAPH_SUCCESS;
}

// dx has x's shape; dgamma and dbeta have gamma's shape (C,).
inline ge::graphStatus InferGradShapes(gert::InferShapeContext *context, const char *op) {
  gert::Shape *dx = context->GetOutputShape(0);
  gert::Shape *dgamma = context->GetOutputShape(1);
  gert::Shape *dbeta = context->GetOutputShape(2);
  if (dx == nullptr || dgamma == nullptr || dbeta == nullptr) return Refuse(std::string(op) + ": null output shape");
  *dx = *context->GetInputShape(ms_groupnorm::grad_tiling::kInputX);
  *dgamma = *context->GetInputShape(ms_groupnorm::grad_tiling::kInputGamma);
  *dbeta = *context->GetInputShape(ms_groupnorm::grad_tiling::kInputGamma);
  return ge::GRAPH_SUCCESS;
}

// dx follows x; dgamma and dbeta follow the statistics (mean) dtype.
inline ge::graphStatus InferGradDataTypes(gert::InferDataTypeContext *context) {
  context->SetOutputDataType(0, context->GetInputDataType(ms_groupnorm::grad_tiling::kInputX));
  context->SetOutputDataType(1, context->GetInputDataType(ms_groupnorm::grad_tiling::kInputMean));
  context->SetOutputDataType(2, context->GetInputDataType(ms_groupnorm::grad_tiling::kInputMean));
  return ge::GRAPH_SUCCESS;
}

}  // namespace ms_groupnorm::op_host

#endif  // GNMS_GROUP_NORM_GRAD_MS_HOST_H
