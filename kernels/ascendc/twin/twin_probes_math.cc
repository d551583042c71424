// Probes of the forward's vector math (kernel_operator_forward_math.h: Exp, Sqrt, Div). The
// launch's GM holds 160 floats: inputs a = out[0..32), b = out[32..64); "math_values" writes
// exp(a), sqrt(a), a / b to out[64..96), out[96..128), out[128..160). The other probes break one
// rule each. See twin_probes.h.
#include <map>
#include <string>

#include "kernel_operator.h"
#include "twin_probes.h"

using namespace AscendC;
using twin::probes::ProbeArgs;

namespace {

enum class Math { kValues, kExpMisaligned, kSqrtOverrun, kDivNegativeCount };

void MathProbe(const ProbeArgs &args, Math probe) {
  if (args.outLen < 160) twin::Fail("the math probes need 160 floats of GM");
  TPipe pipe;
  TQue<QuePosition::VECIN, 1> in;
  TQue<QuePosition::VECOUT, 1> out;
  pipe.InitBuffer(in, 1, 64 * sizeof(float));
  pipe.InitBuffer(out, 1, 96 * sizeof(float));
  GlobalTensor<float> g;
  g.SetGlobalBuffer(args.out, 160);
  LocalTensor<float> src = in.AllocTensor<float>();
  DataCopy(src, g, 64);
  in.EnQue(src);
  src = in.DeQue<float>();
  LocalTensor<float> dst = out.AllocTensor<float>();
  LocalTensor<float> a = src;
  LocalTensor<float> b = src[32];
  switch (probe) {
    case Math::kValues:
      Exp(dst, a, 32);
      Sqrt(dst[32], a, 32);
      Div(dst[64], a, b, 32);
      break;
    case Math::kExpMisaligned:
      Exp(dst[1], a, 8);  // dst 4 bytes past a 32-byte boundary
      break;
    case Math::kSqrtOverrun:
      Sqrt(dst, src[32], 40);  // only 32 floats are left in the input buffer from b
      break;
    case Math::kDivNegativeCount:
      Div(dst, a, b, -1);
      break;
  }
  in.FreeTensor(src);
  out.EnQue(dst);
  dst = out.DeQue<float>();
  DataCopy(g[64], dst, 96);
  out.FreeTensor(dst);
}

}  // namespace

namespace twin::probes {

void AddMathProbes(ProbeMap *probes) {
  probes->insert({
      {"math_values", [](const ProbeArgs &a) { MathProbe(a, Math::kValues); }},
      {"exp_misaligned", [](const ProbeArgs &a) { MathProbe(a, Math::kExpMisaligned); }},
      {"sqrt_overrun", [](const ProbeArgs &a) { MathProbe(a, Math::kSqrtOverrun); }},
      {"div_negative_count", [](const ProbeArgs &a) { MathProbe(a, Math::kDivNegativeCount); }},
  });
}

}  // namespace twin::probes
