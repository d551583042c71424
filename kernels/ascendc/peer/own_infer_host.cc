// Our operators' InferShape and InferDataType, run as CANN's graph compiler runs them, on CPU: the
// op_host sources are built with -DOP_PROTO_LIB, where OP_ADD (metadef
// inc/external/asc/register/op_def_registry.h) registers the OpDef's SetInferShape and
// SetInferDataType functions in gert's OpImplRegistry; this entry looks the operator up there and
// calls them on contexts that metadef's OpInferShapeContextBuilder and OpInferDataTypeContextBuilder
// build. tests/op_host_context.py builds the library and describes the calls.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "base/context_builder/op_infer_datatype_context_builder.h"
#include "base/context_builder/op_infer_shape_context_builder.h"
#include "exe_graph/runtime/infer_datatype_context.h"
#include "exe_graph/runtime/infer_shape_context.h"
#include "exe_graph/runtime/storage_shape.h"
#include "register/op_impl_registry.h"
#include "register/op_impl_registry_base.h"

#include "host_entry_common.h"

#define GNMS_PEER_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using gnms_peer::CopyError;
constexpr int kMaxRank = 8;

}  // namespace

// Inputs: numInputs tensors in OpDef order, tensor i with ranks[i] dims taken in turn from dims and
// ge::DataType dtypes[i]; attributes as GnmsPeerTiling takes them (a prefix of the OpDef's; no strings).
// Outputs: outRanks[j] and outDims[j * 8 ..] (InferShape), outDtypes[j] (InferDataType).
// Returns 0; 1 with the reason in `error` where an inference refused the call; 2 where this harness
// could not run it (the operator or its functions not registered, a context not built).
GNMS_PEER_EXPORT int GnmsOwnInfer(const char *opType, int numInputs, int numOutputs, const int *ranks,
                                  const int64_t *dims, const int *dtypes, int numAttrs, const int *attrKinds,
                                  const int64_t *ints, const double *floats, int *outRanks, int64_t *outDims,
                                  int *outDtypes, char *error, int errorLen) {
  const std::string op(opType);
  const auto *impl = gert::OpImplRegistry::GetInstance().GetOpImpl(op.c_str());
  if (impl == nullptr || impl->infer_shape == nullptr || impl->infer_datatype == nullptr) {
    CopyError(op + "'s InferShape/InferDataType are not registered (OP_ADD under OP_PROTO_LIB did not run)", error,
         errorLen);
    return 2;
  }
  std::vector<gert::Tensor> tensors = gnms_peer::HostTensors(numInputs, ranks, dims, dtypes);
  std::vector<gert::Tensor *> inputs;
  for (gert::Tensor &tensor : tensors) inputs.push_back(&tensor);

  gert::OpInferShapeContextBuilder shapeBuilder;
  shapeBuilder.OpType(op.c_str()).OpName(op.c_str()).IONum(static_cast<size_t>(numInputs),
                                                           static_cast<size_t>(numOutputs));
  shapeBuilder.InputTensors(inputs);
  for (int j = 0; j < numOutputs; ++j) {
    shapeBuilder.OutputTensorDesc(static_cast<size_t>(j), ge::DT_FLOAT, ge::FORMAT_ND, ge::FORMAT_ND);
  }
  if (!gnms_peer::AppendAttrs(shapeBuilder, numAttrs, attrKinds, ints, floats, nullptr)) {
    CopyError("unknown attribute kind", error, errorLen);
    return 2;
  }
  auto shapeHolder = shapeBuilder.Build();
  gert::InferShapeContext *shapeContext = shapeHolder.GetContext();
  if (shapeContext == nullptr) {
    CopyError("OpInferShapeContextBuilder built no context", error, errorLen);
    return 2;
  }
  if (impl->infer_shape(shapeContext) != ge::GRAPH_SUCCESS) {
    CopyError(op + "'s InferShape refused the call (its reason is on stderr)", error, errorLen);
    return 1;
  }
  for (int j = 0; j < numOutputs; ++j) {
    const gert::Shape *shape = shapeContext->GetOutputShape(static_cast<size_t>(j));
    if (shape == nullptr || shape->GetDimNum() > static_cast<size_t>(kMaxRank)) {
      CopyError(op + "'s InferShape left output " + std::to_string(j) + " without a shape of rank <= 8", error, errorLen);
      return 1;
    }
    outRanks[j] = static_cast<int>(shape->GetDimNum());
    for (size_t d = 0; d < shape->GetDimNum(); ++d) outDims[j * kMaxRank + static_cast<int>(d)] = shape->GetDim(d);
  }

  gert::OpInferDataTypeContextBuilder typeBuilder;
  typeBuilder.OpType(op.c_str()).OpName(op.c_str()).IONum(static_cast<size_t>(numInputs),
                                                          static_cast<size_t>(numOutputs));
  for (int i = 0; i < numInputs; ++i) {
    typeBuilder.InputTensorDesc(static_cast<size_t>(i), static_cast<ge::DataType>(dtypes[i]), ge::FORMAT_ND,
                                ge::FORMAT_ND);
  }
  for (int j = 0; j < numOutputs; ++j) typeBuilder.OutputTensorDesc(static_cast<size_t>(j), ge::FORMAT_ND, ge::FORMAT_ND);
  gnms_peer::AppendAttrs(typeBuilder, numAttrs, attrKinds, ints, floats, nullptr);
  auto typeHolder = typeBuilder.Build();
  gert::InferDataTypeContext *typeContext = typeHolder.GetContext();
  if (typeContext == nullptr) {
    CopyError("OpInferDataTypeContextBuilder built no context", error, errorLen);
    return 2;
  }
  if (impl->infer_datatype(typeContext) != ge::GRAPH_SUCCESS) {
    CopyError(op + "'s InferDataType refused the call", error, errorLen);
    return 1;
  }
  for (int j = 0; j < numOutputs; ++j) outDtypes[j] = static_cast<int>(typeContext->GetOutputDataType(static_cast<size_t>(j)));
  return 0;
}
