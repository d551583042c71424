// CANN's GroupNormGrad tiling, computed by CANN's own code on CPU: ops-nn's op_host tiling
// (norm/group_norm_grad/op_host/group_norm_grad_tiling.cpp, registered with IMPL_OP_OPTILING) run on
// a real gert::TilingContext that metadef's OpTilingContextBuilder builds, after its TilingParse ran
// on a real TilingParseContext (OpTilingParseContextBuilder) over a 910B platform table.
//
// Built by tests/cann_peer.py with the CANN checkouts of the environment and the stand-ins of
// host_stubs/ (see its README.md); this file is the only code of ours in that library.
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

#define GNMS_PEER_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

// GroupNormGradCompileInfo of ops-nn's group_norm_grad_tiling.h, which TilingParse fills; its
// layout is checked against ops-nn's by the field-by-field copy in the test (compile_info_fields).
struct CompileInfo {
  int32_t totalCoreNum = 0;
  uint32_t sysWorkspaceSize = 0;
  uint64_t ubSizePlatForm = 0;
  uint32_t vectorLen = 0;
  uint32_t blockSize = 0;
  bool isRegBase{false};
};

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

void Copy(const std::string &message, char *error, int errorLen) {
  if (error == nullptr || errorLen <= 0) return;
  std::strncpy(error, message.c_str(), static_cast<size_t>(errorLen) - 1);
  error[errorLen - 1] = '\0';
}

}  // namespace

// dtype: ge::DataType of x, dy, mean, rstd, gamma (0 DT_FLOAT, 1 DT_FLOAT16, 27 DT_BF16).
// out[0..5): tiling bytes, tiling key, block dim, workspace bytes (system + user), schedule mode;
// compileOut[0..4): the compile info TilingParse computed (cores, system workspace, UB, block).
// Returns 0, or 1 with the reason in `error`.
GNMS_PEER_EXPORT int GnmsPeerGroupNormGradTiling(int64_t N, int64_t C, int64_t HxW, int64_t G, int dtype,
                                                 int deterministic, int dxRequired, int dgammaRequired,
                                                 int dbetaRequired, int64_t vectorCores, int64_t ubBytes,
                                                 uint8_t *tiling, int64_t tilingCap, int64_t *out,
                                                 int64_t *compileOut, char *error, int errorLen) {
  const auto *impl = gert::OpImplRegistry::GetInstance().GetOpImpl("GroupNormGrad");
  if (impl == nullptr || impl->tiling == nullptr || impl->tiling_parse == nullptr) {
    Copy("GroupNormGrad's tiling is not registered (IMPL_OP_OPTILING did not run)", error, errorLen);
    return 1;
  }
  fe::PlatFormInfos platform = Platform910B(vectorCores, ubBytes);
  CompileInfo compile;
  auto parseHolder = gert::OpTilingParseContextBuilder()
                         .OpType("GroupNormGrad")
                         .OpName("group_norm_grad")
                         .IONum(5, 3)
                         .CompiledJson("{}")
                         .CompiledInfo(&compile)
                         .PlatformInfo(&platform)
                         .Build();
  if (parseHolder.GetContext() == nullptr || impl->tiling_parse(reinterpret_cast<gert::KernelContext *>(parseHolder.GetContext())) != ge::GRAPH_SUCCESS) {
    Copy("GroupNormGrad's TilingParse failed", error, errorLen);
    return 1;
  }
  const auto type = static_cast<ge::DataType>(dtype);
  const gert::StorageFormat nd{ge::FORMAT_ND, ge::FORMAT_ND, {}};
  gert::StorageShape data{{N, C, HxW}, {N, C, HxW}};
  gert::StorageShape stat{{N, G}, {N, G}};
  gert::StorageShape channel{{C}, {C}};
  gert::Tensor dy{data, nd, type}, mean{stat, nd, type}, rstd{stat, nd, type}, x{data, nd, type},
      gamma{channel, nd, type}, dx{data, nd, type}, dgamma{channel, nd, type}, dbeta{channel, nd, type};
  auto workspace = gert::ContinuousVector::Create<size_t>(8);
  auto holder = gert::OpTilingContextBuilder()
                    .OpType("GroupNormGrad")
                    .OpName("group_norm_grad")
                    .IONum(5, 3)
                    .InputTensors({&dy, &mean, &rstd, &x, &gamma})
                    .OutputTensors({&dx, &dgamma, &dbeta})
                    .AppendAttr(static_cast<int64_t>(G))
                    .AppendAttr(ge::AscendString("NCHW"))
                    .AppendAttr(dxRequired != 0)
                    .AppendAttr(dgammaRequired != 0)
                    .AppendAttr(dbetaRequired != 0)
                    .CompileInfo(&compile)
                    .PlatformInfo(&platform)
                    .Deterministic(deterministic)
                    .TilingDataSize(static_cast<size_t>(tilingCap))
                    .Workspace(reinterpret_cast<const gert::ContinuousVector *>(workspace.get()))
                    .Build();
  gert::TilingContext *context = holder.GetContext();
  if (context == nullptr) {
    Copy("OpTilingContextBuilder built no context", error, errorLen);
    return 1;
  }
  if (impl->tiling(context) != ge::GRAPH_SUCCESS) {
    Copy("CANN's TilingGroupNormGrad refused the shape (its reason is on stderr)", error, errorLen);
    return 1;
  }
  const gert::TilingData *data_ = context->GetRawTilingData();
  const size_t bytes = data_->GetDataSize();
  std::memcpy(tiling, data_->GetData(), bytes);
  const size_t *ws = context->GetWorkspaceSizes(1);
  out[0] = static_cast<int64_t>(bytes);
  out[1] = static_cast<int64_t>(context->GetTilingKey());
  out[2] = static_cast<int64_t>(context->GetBlockDim());
  out[3] = ws == nullptr ? -1 : static_cast<int64_t>(ws[0]);
  out[4] = static_cast<int64_t>(context->GetScheduleMode());
  compileOut[0] = compile.totalCoreNum;
  compileOut[1] = compile.sysWorkspaceSize;
  compileOut[2] = static_cast<int64_t>(compile.ubSizePlatForm);
  compileOut[3] = compile.blockSize;
  return 0;
}
