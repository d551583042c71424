// The backward's per-group loops over channels, in the baseline build's vector width.
//
// S1 = sum_c gamma_c db[n, c] and T2 = sum_c gamma_c ds[n, c] over a group's D channels add in
// kChainsOverChannels interleaved chains (channel d in chain d % 4) folded as (0 + 1) + (2 + 3): one
// serial chain of double adds was a tenth of the whole backward for 40 channels of 8x8. Here the
// four chains are the lanes of two vectors of two doubles (GCC vector extensions: SSE2 registers in
// the baseline x86-64 build, NEON ones on aarch64), so each step is a multiply and an add of the
// lanes: the same operations in the same order as four scalar chains, so the same bits, in fewer
// instructions; gamma comes as double, converted once a call (4096 x 512, G = 32, backward: the
// per-sample step took 15 % fewer instructions than with scalar chains over a float gamma). fp-contract
// is off in ISO C++ (-std=c++17), so nothing is fused.
#pragma once

#include <cstdint>
#include <cstring>

namespace ms_groupnorm {
namespace detail {

constexpr int kChainsOverChannels = 4;
// Two chains per vector: 16 bytes, one SSE2 (or NEON) register in the baseline build. (A vector of
// all four lanes did not fit one register there, and GCC kept it on the stack: 12 instructions a step.)
typedef double ChainPair __attribute__((vector_size(2 * sizeof(double))));
typedef float FloatPair __attribute__((vector_size(2 * sizeof(float))));
typedef float FloatQuad __attribute__((vector_size(4 * sizeof(float))));

[[gnu::always_inline]] inline ChainPair LoadPair(const double *p) {
  ChainPair v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

// S1 and (kWithDs) T2 of one group: gamma (as double), db and ds point at its first channel.
template <bool kWithDs>
[[gnu::always_inline]] inline void ChannelChainSums(const double *gamma, const double *db, const double *ds,
                                                    int64_t D, double *s1, double *t2) {
  ChainPair s01 = {0.0, 0.0}, s23 = {0.0, 0.0}, t01 = {0.0, 0.0}, t23 = {0.0, 0.0};
  int64_t d = 0;
  for (; d + kChainsOverChannels <= D; d += kChainsOverChannels) {
    const ChainPair g01 = LoadPair(gamma + d), g23 = LoadPair(gamma + d + 2);
    s01 += g01 * LoadPair(db + d);
    s23 += g23 * LoadPair(db + d + 2);
    if constexpr (kWithDs) {
      t01 += g01 * LoadPair(ds + d);
      t23 += g23 * LoadPair(ds + d + 2);
    }
  }
  double s_chain[kChainsOverChannels] = {s01[0], s01[1], s23[0], s23[1]};
  double t_chain[kChainsOverChannels] = {t01[0], t01[1], t23[0], t23[1]};
  for (int k = 0; d < D; ++d, ++k) {  // the last channels go to chains 0, 1, ... (d % 4 = k)
    s_chain[k] += gamma[d] * db[d];
    if constexpr (kWithDs) t_chain[k] += gamma[d] * ds[d];
  }
  *s1 = (s_chain[0] + s_chain[1]) + (s_chain[2] + s_chain[3]);
  *t2 = (t_chain[0] + t_chain[1]) + (t_chain[2] + t_chain[3]);
}

[[gnu::always_inline]] inline void ChannelChainSums(bool with_ds, const double *gamma, const double *db,
                                                    const double *ds, int64_t D, double *s1, double *t2) {
  if (with_ds) {
    ChannelChainSums<true>(gamma, db, ds, D, s1, t2);
  } else {
    ChannelChainSums<false>(gamma, db, ds, D, s1, t2);
  }
}

// a[d] = float(r * gamma[d]) for D channels: the double product rounded once, four lanes a step.
[[gnu::always_inline]] inline void ScaledGammas(double r, const double *gamma, int64_t D, float *a) {
  const ChainPair rv = {r, r};
  int64_t d = 0;
  for (; d + 4 <= D; d += 4) {
    const FloatPair low = __builtin_convertvector(rv * LoadPair(gamma + d), FloatPair);
    const FloatPair high = __builtin_convertvector(rv * LoadPair(gamma + d + 2), FloatPair);
    const FloatQuad scaled = __builtin_shufflevector(low, high, 0, 1, 2, 3);
    std::memcpy(a + d, &scaled, sizeof(scaled));
  }
  for (; d < D; ++d) a[d] = static_cast<float>(r * gamma[d]);
}

}  // namespace detail
}  // namespace ms_groupnorm
