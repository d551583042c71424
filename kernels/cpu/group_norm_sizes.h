// The sizes and the backward's output mask that every GroupNorm kernel and entry point takes;
// a header of its own so that the aot ABI helpers (aot_abi.h) need no kernel header, and the
// AscendC twin's aot shims can share them.
#pragma once

#include <cstdint>

namespace ms_groupnorm {

struct GroupNormSizes {
  int64_t N = 0;
  int64_t C = 0;
  int64_t HxW = 0;
  int64_t G = 1;
  int64_t D() const { return C / G; }
};

struct OutputMask {
  bool dx = true;
  bool dgamma = true;
  bool dbeta = true;
};

}  // namespace ms_groupnorm
