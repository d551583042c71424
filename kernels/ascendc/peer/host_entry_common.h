// What the C entries of the host harnesses (cann_tiling_host.cc, own_infer_host.cc) share: the
// error text they hand back, the tensors they build from the flat shape arrays the Python side
// passes, and the attributes they append to a context builder.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "exe_graph/runtime/storage_shape.h"
#include "exe_graph/runtime/tensor.h"
#include "graph/ascend_string.h"

namespace gnms_peer {

// The attribute kinds of the entries' attrKinds arrays, one per OpDef attribute.
enum AttrKind : int { kAttrInt = 0, kAttrFloat = 1, kAttrBool = 2, kAttrString = 3 };

inline void CopyError(const std::string &message, char *error, int errorLen) {
  if (error == nullptr || errorLen <= 0) return;
  std::strncpy(error, message.c_str(), static_cast<size_t>(errorLen) - 1);
  error[errorLen - 1] = '\0';
}

// `count` ND tensors: tensor i has ranks[i] dims, taken in turn from dims (origin and storage
// shape alike), and ge::DataType dtypes[i].
inline std::vector<gert::Tensor> HostTensors(int count, const int *ranks, const int64_t *dims, const int *dtypes) {
  const gert::StorageFormat nd{ge::FORMAT_ND, ge::FORMAT_ND, {}};
  std::vector<gert::Tensor> tensors(static_cast<size_t>(count));
  const int64_t *dim = dims;
  for (int i = 0; i < count; ++i) {
    gert::StorageShape shape;
    for (int d = 0; d < ranks[i]; ++d, ++dim) {
      shape.MutableOriginShape().AppendDim(*dim);
      shape.MutableStorageShape().AppendDim(*dim);
    }
    tensors[static_cast<size_t>(i)] = gert::Tensor{shape, nd, static_cast<ge::DataType>(dtypes[i])};
  }
  return tensors;
}

// Appends attribute i of kind attrKinds[i] with its value in ints[i], floats[i] or strings[i];
// false on an unknown kind.
template <typename Builder>
bool AppendAttrs(Builder &builder, int numAttrs, const int *attrKinds, const int64_t *ints, const double *floats,
                 const char *const *strings) {
  for (int i = 0; i < numAttrs; ++i) {
    switch (attrKinds[i]) {
      case kAttrInt: builder.AppendAttr(static_cast<int64_t>(ints[i])); break;
      case kAttrFloat: builder.AppendAttr(static_cast<float>(floats[i])); break;
      case kAttrBool: builder.AppendAttr(ints[i] != 0); break;
      case kAttrString: builder.AppendAttr(ge::AscendString(strings[i])); break;
      default: return false;
    }
  }
  return true;
}

}  // namespace gnms_peer
