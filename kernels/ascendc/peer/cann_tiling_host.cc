// A CANN operator's tiling, computed by CANN's own code on CPU: the operator's ops-nn op_host tiling
// (registered with IMPL_OP_OPTILING) run on a real gert::TilingContext that metadef's
// OpTilingContextBuilder builds, after its TilingParse ran on a real TilingParseContext
// (OpTilingParseContextBuilder) over a 910B platform table.
//
// One entry serves every operator: tests/cann_peer.py describes each (its tensors, their shapes and
// dtypes, its attributes in the order of its OpDef, the size of the compile info its TilingParse
// fills) and builds one host library per operator with that operator's op_host files, the CANN
// checkouts of the environment and the stand-ins of host_stubs/ (see its README.md); this file is
// the only code of ours in those libraries.
// The platform values are those of CANN's tiling unit tests for the 910B
// (ops-nn norm/group_norm_grad/tests/ut/op_host/test_group_norm_grad_tiling.cpp: CORE_NUM 48,
// UB_SIZE 196608), with the 910B's identity (Short_SoC_version Ascend910B, NpuArch 2201) and its
// split core list, through which asc-devkit's PlatformAscendC answers GetCoreNumAiv with the vector
// core count.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "base/context_builder/op_tiling_context_builder.h"
#include "base/context_builder/op_tiling_parse_context_builder.h"
#include "exe_graph/runtime/continuous_vector.h"
#include "exe_graph/runtime/storage_shape.h"
#include "exe_graph/runtime/tiling_context.h"
#include "exe_graph/runtime/tiling_parse_context.h"
#include "platform/platform_infos_def.h"
#include "register/op_impl_registry.h"
#include "register/op_impl_registry_base.h"

#include "host_entry_common.h"

#define GNMS_PEER_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using gnms_peer::CopyError;

fe::PlatFormInfos Platform910B(int64_t vectorCores, int64_t ubBytes) {
  fe::PlatFormInfos p;
  p.Init();
  p.Set("version", "Short_SoC_version", "Ascend910B");
  p.Set("version", "NpuArch", "2201");
  p.Set("SoCInfo", "core_type_list", "CubeCore,VectorCore");
  p.Set("SoCInfo", "vector_core_cnt", std::to_string(vectorCores));
  p.Set("SoCInfo", "cube_core_cnt", std::to_string(vectorCores / 2));
  p.Set("SoCInfo", "ai_core_cnt", std::to_string(vectorCores / 2));
  p.Set("AICoreSpec", "ub_size", std::to_string(ubBytes));
  p.Set("AICoreSpec", "vector_reg_width", "256");
  return p;
}

// The compile info TilingParse fills, as raw bytes: its layout is the operator's own struct
// (tests/cann_peer.py reads it back with the field list of the operator's description).
struct alignas(16) CompileInfoBytes {
  uint8_t bytes[256] = {};
};

}  // namespace

// tensors: numInputs + numOutputs, in the order of the OpDef; tensor i has ranks[i] dims, taken in turn
// from dims, and ge::DataType dtypes[i] (0 DT_FLOAT, 1 DT_FLOAT16, 27 DT_BF16).
// attrs: attrKinds[i] (gnms_peer::AttrKind) with its value in ints[i], floats[i] or strings[i].
// compileInfo: compileInfoBytes (at most 256) of what TilingParse filled.
// out[0..5): tiling bytes, tiling key, block dim, workspace bytes (system + user), schedule mode.
// Returns 0, or 1 with the reason in `error`.
GNMS_PEER_EXPORT int GnmsPeerTiling(const char *opType, int numInputs, int numOutputs, const int *ranks,
                                    const int64_t *dims, const int *dtypes, int numAttrs, const int *attrKinds,
                                    const int64_t *ints, const double *floats, const char *const *strings,
                                    int deterministic, int64_t vectorCores, int64_t ubBytes, uint8_t *compileInfo,
                                    int64_t compileInfoBytes, uint8_t *tiling, int64_t tilingCap, int64_t *out,
                                    char *error, int errorLen) {
  const std::string op(opType);
  const auto *impl = gert::OpImplRegistry::GetInstance().GetOpImpl(op.c_str());
  if (impl == nullptr || impl->tiling == nullptr || impl->tiling_parse == nullptr) {
    CopyError(op + "'s tiling is not registered (IMPL_OP_OPTILING did not run)", error, errorLen);
    return 1;
  }
  if (compileInfoBytes > static_cast<int64_t>(sizeof(CompileInfoBytes))) {
    CopyError("compile info larger than 256 bytes", error, errorLen);
    return 1;
  }
  fe::PlatFormInfos platform = Platform910B(vectorCores, ubBytes);
  CompileInfoBytes compile;
  auto parseHolder = gert::OpTilingParseContextBuilder()
                         .OpType(op.c_str())
                         .OpName(op.c_str())
                         .IONum(numInputs, numOutputs)
                         .CompiledJson("{}")
                         .CompiledInfo(&compile)
                         .PlatformInfo(&platform)
                         .Build();
  if (parseHolder.GetContext() == nullptr ||
      impl->tiling_parse(reinterpret_cast<gert::KernelContext *>(parseHolder.GetContext())) != ge::GRAPH_SUCCESS) {
    CopyError(op + "'s TilingParse failed", error, errorLen);
    return 1;
  }
  const int numTensors = numInputs + numOutputs;
  std::vector<gert::Tensor> tensors = gnms_peer::HostTensors(numTensors, ranks, dims, dtypes);
  std::vector<gert::Tensor *> inputs, outputs;
  for (int i = 0; i < numTensors; ++i) (i < numInputs ? inputs : outputs).push_back(&tensors[static_cast<size_t>(i)]);
  auto workspace = gert::ContinuousVector::Create<size_t>(8);
  gert::OpTilingContextBuilder builder;
  builder.OpType(op.c_str())
      .OpName(op.c_str())
      .IONum(static_cast<size_t>(numInputs), static_cast<size_t>(numOutputs))
      .InputTensors(inputs)
      .OutputTensors(outputs);
  if (!gnms_peer::AppendAttrs(builder, numAttrs, attrKinds, ints, floats, strings)) {
    CopyError("unknown attribute kind", error, errorLen);
    return 1;
  }
  auto holder = builder.CompileInfo(&compile)
                    .PlatformInfo(&platform)
                    .Deterministic(deterministic)
                    .TilingDataSize(static_cast<size_t>(tilingCap))
                    .Workspace(reinterpret_cast<const gert::ContinuousVector *>(workspace.get()))
                    .Build();
  gert::TilingContext *context = holder.GetContext();
  if (context == nullptr) {
    CopyError("OpTilingContextBuilder built no context", error, errorLen);
    return 1;
  }
  if (impl->tiling(context) != ge::GRAPH_SUCCESS) {
    CopyError("CANN's " + op + " tiling refused the shape (its reason is on stderr)", error, errorLen);
    return 1;
  }
  const gert::TilingData *data = context->GetRawTilingData();
  const size_t bytes = data->GetDataSize();
  std::memcpy(tiling, data->GetData(), bytes);
  const size_t *ws = context->GetWorkspaceSizes(1);
  out[0] = static_cast<int64_t>(bytes);
  out[1] = static_cast<int64_t>(context->GetTilingKey());
  out[2] = static_cast<int64_t>(context->GetBlockDim());
  out[3] = ws == nullptr ? -1 : static_cast<int64_t>(ws[0]);
  out[4] = static_cast<int64_t>(context->GetScheduleMode());
  std::memcpy(compileInfo, compile.bytes, static_cast<size_t>(compileInfoBytes));
  return 0;
}
