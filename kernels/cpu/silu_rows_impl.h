// The row loops of silu_rows.h, written once over GCC/Clang vector extensions and
// compiled once per ISA: each silu_rows_<isa>.cc includes this file inside its own
// namespace after choosing the target ISA and defining
//   kW            float lanes of the native vector (divides kLanes),
//   VF, VI, VU    float / int32 / uint32 vectors of kW lanes, VH a uint16 vector of kW lanes,
//   MulAdd(a, b, c)  a * b + c: fused (one rounding) in the FMA builds, as the row
//                 kernels' V::MulAdd, so y is bitwise GroupNorm's output in each build,
//   Min, Max      lane-wise (a NaN first operand yields the second),
//   HalfIO        static VF Load(const Half *), static void Store(Half *, VF) (kW elements,
//                 rounding to nearest even like ToHalf / F16C),
//   BFloat16IO    the same for BFloat16 (silu_rows.h's BFloat16Rounded: ToBFloat16's bits),
//   VD            a vector of kW / 2 doubles, and LowAsDoubles / HighAsDoubles (VF -> VD, exact)
//                 for the double sums of short rows and points,
//   PartialIO     kMasked<T>: whether Load(const T *, n) / Store(T *, VF, n) move the first n < kW
//                 elements with masked moves (zero in the other lanes; nothing stored past n).
// Nothing here may include a header (see row_kernels_impl.h for why).
//
// Every lane computes the same IEEE operations in the same order (vector extension
// arithmetic is lane-wise; fp-contract is off; a * b + c is fused only where MulAdd says
// so), and there is no scalar tail loop: a partial vector is loaded padded with zeros and
// its extra lanes are masked. So within a build every element's result depends on its
// inputs only (any thread count, any position in a row gives the same bits); the builds
// differ by MulAdd's rounding only.

#include "lane_folds_impl.h"

constexpr int kSiluRegs = kLanes / kW;
static_assert(kSiluRegs * kW == kLanes, "a vector width must divide the lane count");

inline VF Splat(float s) { return VF{} + s; }

inline VI LaneIndex() {
  VI v{};
  for (int k = 0; k < kW; ++k) v[k] = k;
  return v;
}

// ---- loads and stores of kW elements (memory order) ----
inline VF Load(const float *p) {
  VF v;
  __builtin_memcpy(&v, p, sizeof v);
  return v;
}
inline VF Load(const BFloat16 *p) { return BFloat16IO::Load(p); }
inline VF Load(const Half *p) { return HalfIO::Load(p); }

inline void Store(float *p, VF v) { __builtin_memcpy(p, &v, sizeof v); }
inline void Store(BFloat16 *p, VF v) { BFloat16IO::Store(p, v); }
inline void Store(Half *p, VF v) { HalfIO::Store(p, v); }

// The first `count` (< kW) elements, the other lanes zero: the ISA's masked moves where it has
// them for T (PartialIO), else through a zeroed buffer. Row tails take these: through the
// buffer, each cost a scalar copy loop and a call of memcpy (14 x 14 rows: a vector in 13).
template <typename T>
inline VF LoadPartial(const T *p, int64_t count) {
  if constexpr (PartialIO::template kMasked<T>) {
    return PartialIO::Load(p, count);
  } else {
    T buffer[kW] = {};
    for (int64_t k = 0; k < count; ++k) buffer[k] = p[k];
    return Load(buffer);
  }
}
template <typename T>
inline void StorePartial(T *p, VF v, int64_t count) {
  if constexpr (PartialIO::template kMasked<T>) {
    PartialIO::Store(p, v, count);
  } else {
    T buffer[kW];
    Store(buffer, v);
    for (int64_t k = 0; k < count; ++k) p[k] = buffer[k];
  }
}

// out[i..] = op(load) over one row of n elements, kW at a time: op computes the vector from
// the inputs that load(p) reads at the current position (the last vector partial, padded
// with zeros, its extra lanes not stored). lookahead (an input lies just below out, see
// StoresAliasLoads): kAhead vectors, kLookaheadLoadBytes of the inputs (kInputBytes per
// element together), are computed before the previous kAhead are stored.
template <int kInputBytes, typename T, typename Op>
inline void MapVectors(T *out, int64_t n, bool lookahead, Op op) {
  int64_t i = 0;
  auto at = [&op](int64_t k) { return op([k](const auto *p) { return Load(p + k); }); };
  constexpr int64_t kFit = kLookaheadLoadBytes / (kW * kInputBytes);
  constexpr int kAhead = kFit < 1 ? 1 : kFit > 16 ? 16 : static_cast<int>(kFit);
  if (lookahead && kAhead * kW <= n) {
    VF ahead[kAhead];
#pragma GCC unroll 16
    for (int k = 0; k < kAhead; ++k) ahead[k] = at(k * kW);
    for (; i + 2 * kAhead * kW <= n; i += kAhead * kW) {
      VF next[kAhead];
#pragma GCC unroll 16
      for (int k = 0; k < kAhead; ++k) next[k] = at(i + (kAhead + k) * kW);
#pragma GCC unroll 16
      for (int k = 0; k < kAhead; ++k) {
        Store(out + i + k * kW, ahead[k]);
        ahead[k] = next[k];
      }
    }
#pragma GCC unroll 16
    for (int k = 0; k < kAhead; ++k) Store(out + i + k * kW, ahead[k]);
    i += kAhead * kW;
  }
  for (; i + kW <= n; i += kW) Store(out + i, at(i));
  if (i < n) {
    const int64_t count = n - i;
    StorePartial(out + i, op([i, count](const auto *p) { return LoadPartial(p + i, count); }), count);
  }
}

// ---- sigmoid(t) = 1 / (1 + exp(-t)) with this project's exp ----
// exp(u) = 2^k * p(r), u = k ln2 + r, |r| <= ln2 / 2: k by the round-to-nearest trick
// (adding 1.5 * 2^23), ln2 split in two (Cody and Waite; k * ln2_hi is exact), p(r) =
// 1 + r + r^2 q(r) of degree 6, fitted here for relative error on that range (float64
// error of the polynomial 3e-9; evaluated in float32 with FMA 7.0e-8, as Cephes' degree-7
// expf polynomial by S. Moshier, which this replaced to save one multiply-add per
// element: scripts/fit_exp_polynomial.py). u is clamped to [-87, 88] so that 2^k stays a
// normal float: beyond, sigmoid is 0 or 1 to float precision anyway (1 + e^-87 == 1;
// 1 / (1 + e^88) < 7e-39).
inline VF SigmoidDenominator(VF t) {  // 1 + exp(-t)
  VF u = Min(-t, Splat(88.0f));  // a NaN becomes 88 here, but y (NaN) still
  u = Max(u, Splat(-87.0f));      // reaches z and the gradient through y * s
  const VF shifter = Splat(12582912.0f);
  const VF kf = MulAdd(u, Splat(1.44269504088896341f), shifter) - shifter;
  const VF r = MulAdd(kf, Splat(2.12194440e-4f), MulAdd(kf, Splat(-0.693359375f), u));
  VF p = Splat(1.3814551057e-3f);
  p = MulAdd(p, r, Splat(8.3686932921e-3f));
  p = MulAdd(p, r, Splat(4.1668385267e-2f));
  p = MulAdd(p, r, Splat(1.6666521132e-1f));
  p = MulAdd(p, r, Splat(4.9999994040e-1f));
  p = MulAdd(p, r * r, r) + 1.0f;
  const VI k = __builtin_convertvector(kf, VI);
  const VF two_k = reinterpret_cast<VF>((k + 127) << 23);
  return MulAdd(p, two_k, Splat(1.0f));
}

[[gnu::always_inline]] inline VF Sigmoid(VF t) { return Splat(1.0f) / SigmoidDenominator(t); }

// The swish scale k as the loops apply it: t = k * y. SiLU (k = 1) skips the product,
// which is exact (1 * y == y), so both give the same bits; the loops are instantiated
// for each and the entry points pick one per call.
struct UnitScale {
  explicit UnitScale(float) {}
  VF operator()(VF y) const { return y; }
};
struct AnyScale {
  explicit AnyScale(float k) : k(Splat(k)) {}
  VF operator()(VF y) const { return k * y; }
  VF k;
};

template <typename Fn>
inline void WithScale(float swish_k, Fn &&fn) {
  if (swish_k == 1.0f) {
    fn(UnitScale(swish_k));
  } else {
    fn(AnyScale(swish_k));
  }
}

// y exactly as row_kernels' Normalize computes it: (x - mu) * scale + shift.
inline VF Affine(VF x, VF mu, VF scale, VF shift) { return MulAdd(x - mu, scale, shift); }

// y * sigmoid(k y) = y / (1 + exp(-k y)): one rounding fewer than y * (1 / (...)).
template <typename K>
inline VF Swish(VF y, K k) { return y / SigmoidDenominator(k(y)); }

// dz * d(y * sigmoid(k y))/dy = dz * s * (1 + t * (1 - s)), t = k y, s = sigmoid(t).
template <typename K>
[[gnu::always_inline]] inline VF SwishGrad(VF dz, VF y, K k) {
  const VF t = k(y);
  const VF s = Sigmoid(t);
  return dz * (s * MulAdd(t, Splat(1.0f) - s, Splat(1.0f)));
}

// Rows shorter than kFlatSiluRowMax whose length is not a multiple of kW: a chunk of whole rows
// (up to kFlatSiluChunk elements) as one run, each row's scale and shift spread over its
// elements (a vector store per kW of them), so that a vector covers the end of one row and the
// start of the next. Row by row, 7 x 7 maps paid four sigmoids for 49 elements, the last through
// a partial load and store; 2-element rows a partial load, sigmoid and store each (16 x 512 x 2,
// G = 16: 0.18x torch's group_norm and silu). Element by element the same operations, so the
// same bits.
constexpr int64_t kFlatSiluRowMax = 4 * kW, kFlatSiluChunk = 1024;
// kRowCentres: row r's centre is c[r] (a sample's rows), else c[0] for every row (one group's).
template <bool kRowCentres, typename T, typename K>
void NormalizeSiluFlat(const T *x, T *z, int64_t hxw, int64_t rows, const float *c, const float *scale,
                       const float *shift, K vk) {
  float centres[kRowCentres ? kFlatSiluChunk + kW : 1], scales[kFlatSiluChunk + kW], shifts[kFlatSiluChunk + kW];
  const VF vmu = Splat(c[0]);
  const int64_t per_chunk = kFlatSiluChunk / hxw;
  for (int64_t r0 = 0; r0 < rows; r0 += per_chunk) {
    const int64_t take = rows - r0 < per_chunk ? rows - r0 : per_chunk;
    for (int64_t r = 0; r < take; ++r) {  // in order: a row's spill (up to kW - 1) is overwritten by the next row
      const VF vs = Splat(scale[r0 + r]), vt = Splat(shift[r0 + r]);
      for (int64_t k = r * hxw; k < (r + 1) * hxw; k += kW) {
        if constexpr (kRowCentres) Store(centres + k, Splat(c[r0 + r]));
        Store(scales + k, vs);
        Store(shifts + k, vt);
      }
    }
    const T *x_chunk = x + r0 * hxw;
    T *z_chunk = z + r0 * hxw;
    MapVectors<sizeof(T) + (kRowCentres ? 3 : 2) * sizeof(float)>(
        z_chunk, take * hxw, StoresAliasLoads(z_chunk, x_chunk), [&](auto load) {
          if constexpr (kRowCentres) {
            return Swish(Affine(load(x_chunk), load(centres), load(scales), load(shifts)), vk);
          } else {
            return Swish(Affine(load(x_chunk), vmu, load(scales), load(shifts)), vk);
          }
        });
  }
}

template <typename T, typename K>
void NormalizeSiluRows(const T *x, T *z, int64_t hxw, int64_t rows, float mu, const float *scale, const float *shift,
                       K vk) {
  if (rows > 1 && hxw < kFlatSiluRowMax && hxw % kW != 0) {
    return NormalizeSiluFlat<false>(x, z, hxw, rows, &mu, scale, shift, vk);
  }
  const VF vmu = Splat(mu);
  const bool lookahead = StoresAliasLoads(z, x);
  for (int64_t r = 0; r < rows; ++r) {
    const T *x_row = x + r * hxw;
    T *z_row = z + r * hxw;
    const VF vs = Splat(scale[r]), vt = Splat(shift[r]);
    MapVectors<sizeof(T)>(z_row, hxw, lookahead, [&](auto load) { return Swish(Affine(load(x_row), vmu, vs, vt), vk); });
  }
}

// The points of a 2-D input's sample, a vector of points at a time. (As one-element rows, each
// point paid a whole vector's sigmoid and a partial store: 30 ns a point, 4096 x 512, G = 32.)
template <typename T, typename K>
void NormalizeSiluPointsK(const T *x, T *z, int64_t count, const float *c, const float *scale, const float *shift,
                          K vk) {
  MapVectors<sizeof(T) + 3 * sizeof(float)>(z, count, StoresAliasLoads(z, x), [&](auto load) {
    return Swish(Affine(load(x), load(c), load(scale), load(shift)), vk);
  });
}

template <typename T>
void NormalizeSiluPoints(const T *x, T *z, int64_t count, const float *c, const float *scale, const float *shift,
                         float swish_k) {
  WithScale(swish_k, [&](auto vk) { NormalizeSiluPointsK(x, z, count, c, scale, shift, vk); });
}

// FoldLanesViaFloat (lane_folds_impl.h, the row kernels' backward fold) of kSiluRegs vectors.
// Always inlined: GCC's own choice moved with the size of this file, and as a call it cost
// 7-12 % of the long rows' fused backward (64 x 320 x 14 x 14, G = 1).
[[gnu::always_inline]] inline double FoldViaFloat(const VF *acc) {
  float lanes[kLanes];
  for (int r = 0; r < kSiluRegs; ++r) __builtin_memcpy(lanes + r * kW, &acc[r], sizeof(VF));
  return FoldLanesViaFloat(lanes);
}

template <typename T>
void NormalizeSilu(const T *x, T *z, int64_t hxw, int64_t rows, float mu, const float *scale, const float *shift,
                   float swish_k) {
  WithScale(swish_k, [&](auto vk) { NormalizeSiluRows(x, z, hxw, rows, mu, scale, shift, vk); });
}

template <typename T>
void NormalizeSiluSample(const T *x, T *z, int64_t hxw, int64_t rows, const float *c, const float *scale,
                         const float *shift, float swish_k) {
  WithScale(swish_k, [&](auto vk) {
    if (hxw <= kFlatSiluChunk) return NormalizeSiluFlat<true>(x, z, hxw, rows, c, scale, shift, vk);
    for (int64_t r = 0; r < rows; ++r) {
      NormalizeSiluRows(x + r * hxw, z + r * hxw, hxw, 1, c[r], scale + r, shift + r, vk);
    }
  });
}

// TwoSum's error of d = fl(x - mu): (x - mu) - d exactly (row_kernels_impl.h's CenteredError).
inline VF CenteredError(VF x, VF mu, VF d) {
  const VF x_virtual = d + mu;
  const VF mu_virtual = x_virtual - d;
  return (x - x_virtual) + (mu_virtual - mu);
}

// kStoreG: g_out is not nullptr (a template argument, so the test is not in the loop).
// kCentred: the form of sum g * (x - mu) that CentredSums (row_kernels.h) chooses, as the
// row kernels' ReduceGrad: sum g * fl(x - mu) plus sum g * e in lanes of its own, or sum g * x
// minus mu * sum g in double.
template <bool kStoreG, bool kCentred, typename T, typename K>
void ReduceSiluGradRow(const T *dz, const T *x, int64_t n, VF vmu, VF vs, VF vt, K vk, double *sum_g,
                       double *sum_gxc, float *g_out) {
  double total_g = 0.0, total_gxc = 0.0;
  for (int64_t start = 0; start < n; start += kBlock) {
    const int64_t end = n - start < kBlock ? n : start + kBlock;
    VF acc_g[kSiluRegs], acc_gxc[kSiluRegs], acc_err[kSiluRegs];
    for (int r = 0; r < kSiluRegs; ++r) acc_g[r] = acc_gxc[r] = acc_err[r] = VF{};
    // valid: the lanes that hold elements (all but in a partial vector, whose padded lanes
    // must add nothing, whatever scale/shift hold)
    auto accumulate = [&](int r, VF xv, VF xc, VF g, auto valid) {
      acc_g[r] = acc_g[r] + g;
      if constexpr (kCentred) {
        acc_gxc[r] = MulAdd(g, valid(xc), acc_gxc[r]);
        acc_err[r] = MulAdd(g, valid(CenteredError(xv, vmu, xc)), acc_err[r]);
      } else {
        acc_gxc[r] = MulAdd(g, valid(xv), acc_gxc[r]);
      }
    };
    auto all = [](VF v) { return v; };
    auto add = [&](int r, int64_t at) {
      const VF xv = Load(x + at);
      const VF xc = xv - vmu;
      const VF g = SwishGrad(Load(dz + at), MulAdd(xc, vs, vt), vk);  // y as Affine
      if (kStoreG) Store(g_out + at, g);
      accumulate(r, xv, xc, g, all);
    };
    int64_t i = start;
    for (; i + kLanes <= end; i += kLanes) {
      for (int r = 0; r < kSiluRegs; ++r) add(r, i + r * kW);
    }
    int reg = 0;  // the block's tail goes to lanes 0, 1, ... as in row_kernels
    for (; i + kW <= end; i += kW, ++reg) add(reg, i);
    if (i < end) {
      const int64_t count = end - i;
      const VI valid = LaneIndex() < static_cast<int>(count);
      const VF xv = LoadPartial(x + i, count);
      const VF xc = xv - vmu;
      VF g = SwishGrad(LoadPartial(dz + i, count), MulAdd(xc, vs, vt), vk);
      g = valid ? g : VF{};  // padded lanes add nothing, whatever scale/shift hold
      if (kStoreG) StorePartial(g_out + i, g, count);
      accumulate(reg, xv, xc, g, [valid](VF v) { return valid ? v : VF{}; });
    }
    total_g += FoldViaFloat(acc_g);
    total_gxc += FoldViaFloat(acc_gxc);
    if constexpr (kCentred) total_gxc += FoldViaFloat(acc_err);
  }
  *sum_g = total_g;
  *sum_gxc = kCentred ? total_gxc : total_gxc - static_cast<double>(vmu[0]) * total_g;
}

template <bool kStoreG, typename T, typename K>
void ReduceSiluGradRowIn(bool centred, const T *dz, const T *x, int64_t n, VF vmu, VF vs, VF vt, K vk,
                         double *sum_g, double *sum_gxc, float *g_out) {
  if (centred) {
    ReduceSiluGradRow<kStoreG, true>(dz, x, n, vmu, vs, vt, vk, sum_g, sum_gxc, g_out);
  } else {
    ReduceSiluGradRow<kStoreG, false>(dz, x, n, vmu, vs, vt, vk, sum_g, sum_gxc, g_out);
  }
}

template <typename T>
void ReduceSiluGrad(const T *dz, const T *x, int64_t hxw, int64_t rows, float mu, float rstd, const float *scale,
                    const float *shift, float swish_k, double *sum_g, double *sum_gxc, float *g_out) {
  const VF vmu = Splat(mu);
  const bool centred = CentredSums(mu, rstd);
  WithScale(swish_k, [&](auto vk) {
    for (int64_t r = 0; r < rows; ++r) {
      if (g_out != nullptr) {
        ReduceSiluGradRowIn<true>(centred, dz + r * hxw, x + r * hxw, hxw, vmu, Splat(scale[r]), Splat(shift[r]),
                                  vk, sum_g + r, sum_gxc + r, g_out + r * hxw);
      } else {
        ReduceSiluGradRowIn<false>(centred, dz + r * hxw, x + r * hxw, hxw, vmu, Splat(scale[r]), Splat(shift[r]),
                                   vk, sum_g + r, sum_gxc + r, nullptr);
      }
    }
  });
}

#include "silu_short_rows_impl.h"  // short_reduce_grad, and the dx of short rows

template <typename T, typename K>
void SiluInputGradRows(const T *dz, const T *x, T *dx, int64_t hxw, int64_t rows, float mu, const float *scale,
                       const float *shift, K vk, float b, float c) {
  const VF vmu = Splat(mu), vb = Splat(b), vc = Splat(c);
  const bool lookahead = StoresAliasLoads(dx, dz) || StoresAliasLoads(dx, x);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t offset = r * hxw;
    const VF vs = Splat(scale[r]), vt = Splat(shift[r]);
    // dx = b * (x - mu) + (a * g + c) with a = rstd * gamma = scale, as row_kernels' AffineGrad
    auto op = [&](VF d, VF xv) {
      const VF xc = xv - vmu;
      return MulAdd(vb, xc, MulAdd(vs, SwishGrad(d, MulAdd(xc, vs, vt), vk), vc));
    };
    MapVectors<2 * sizeof(T)>(dx + offset, hxw, lookahead,
                              [&](auto load) { return op(load(dz + offset), load(x + offset)); });
  }
}

template <typename T>
void SiluInputGrad(const T *dz, const T *x, T *dx, int64_t hxw, int64_t rows, float mu, const float *scale,
                   const float *shift, float swish_k, float b, float c) {
  WithScale(swish_k, [&](auto vk) { SiluInputGradRows(dz, x, dx, hxw, rows, mu, scale, shift, vk, b, c); });
}

template <typename T>
void SiluInputGradStored(const float *g, const T *x, T *dx, int64_t hxw, int64_t rows, float mu, const float *scale,
                         float b, float c) {
  const VF vmu = Splat(mu), vb = Splat(b), vc = Splat(c);
  const bool lookahead = StoresAliasLoads(dx, g) || StoresAliasLoads(dx, x);
  // short rows as one run (silu_short_rows_impl.h; the same bits as the row loop below)
  if (hxw <= kShortSiluRowMax && rows > 1 && !lookahead) {
    return ShortSiluInputGradStored(g, x, dx, hxw, rows, vmu, scale, vb, vc);
  }
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t offset = r * hxw;
    const VF vs = Splat(scale[r]);
    auto op = [&](VF gv, VF xv) { return MulAdd(vb, xv - vmu, MulAdd(vs, gv, vc)); };  // as SiluInputGrad
    MapVectors<sizeof(float) + sizeof(T)>(dx + offset, hxw, lookahead,
                                          [&](auto load) { return op(load(g + offset), load(x + offset)); });
  }
}

// PointReduceSiluGrad's double steps, where some point is centred, for the low or high half
// of a vector of points: both forms and a select on the bits between them. A branch per
// point on its group's form was mispredicted about every other point where the forms mix
// (two channels per group). The lanes of half a vector as doubles are one register.
typedef int64_t VDMask __attribute__((vector_size(4 * kW)));
template <bool kHigh>
[[gnu::always_inline]] inline void PointSiluSumsHalf(VF lane_g, VF lane_p, VF lane_pc, VF lane_q, VF vmu, VF vcentre,
                                                     double *sum_g, double *sum_gxc) {
  constexpr int kOffset = kHigh ? kW / 2 : 0;
  const VD total_g = 0.0 + HalfAsDoubles<kHigh>(lane_g);
  const VD plain = (0.0 + HalfAsDoubles<kHigh>(lane_p)) - HalfAsDoubles<kHigh>(vmu) * total_g;
  const VD centred = (0.0 + HalfAsDoubles<kHigh>(lane_pc)) + HalfAsDoubles<kHigh>(lane_q);
  const VDMask take = HalfAsDoubles<kHigh>(vcentre) != 0.0;
  const VD out = (VD)(((VDMask)centred & take) | ((VDMask)plain & ~take));  // a cast between vectors keeps the bits
  __builtin_memcpy(sum_g + kOffset, &total_g, sizeof total_g);
  __builtin_memcpy(sum_gxc + kOffset, &out, sizeof out);
}

// HxW = 1 (a 2-D input): the C points of a sample in one call, a vector across channels,
// with the per-channel mu, scale and shift (centre[i] = mu[i] where the point's group sums
// centred, else 0; nullptr: none does). A point gets the bits of its one-element row in
// ReduceSiluGrad: g in lane 0, the sums its lanes fold to (0 + g, MulAdd(g, x, 0) or
// MulAdd(g, x - mu, 0) plus MulAdd(g, e, 0), each through the fold's 0 + v), the same
// double steps after. A row per point spent ~900 instructions a group of two points.
template <typename T>
void PointReduceSiluGrad(const T *dz, const T *x, int64_t count, const float *mu, const float *centre,
                         const float *scale, const float *shift, float swish_k, double *sum_g, double *sum_gxc,
                         float *g_out) {
  WithScale(swish_k, [&](auto vk) {
    for (int64_t i = 0; i < count; i += kW) {
      const int64_t width = count - i < kW ? count - i : kW;
      auto load = [&](const auto *p) { return width == kW ? Load(p + i) : LoadPartial(p + i, width); };
      // per-point values as Splat makes them: 0 + v (a -0 turns +0)
      auto splat = [&](const float *p) { return VF{} + load(p); };
      const VF xv = load(x), vmu = splat(mu);
      const VF xc = xv - vmu;
      const VF g = SwishGrad(load(dz), MulAdd(xc, splat(scale), splat(shift)), vk);
      if (g_out != nullptr && width == kW) {
        Store(g_out + i, g);
      } else if (g_out != nullptr) {
        StorePartial(g_out + i, g, width);
      }
      const VF lane_g = VF{} + g, lane_p = VF{} + MulAdd(g, xv, VF{});
      if (centre != nullptr) {  // the forms may mix: PointSiluSumsHalf
        const VF lane_pc = VF{} + MulAdd(g, xc, VF{}), lane_q = VF{} + MulAdd(g, CenteredError(xv, vmu, xc), VF{});
        double out_g[kW], out_gxc[kW];  // a partial step's sums
        double *to_g = width == kW ? sum_g + i : out_g, *to_gxc = width == kW ? sum_gxc + i : out_gxc;
        const VF vcentre = load(centre);
        PointSiluSumsHalf<false>(lane_g, lane_p, lane_pc, lane_q, vmu, vcentre, to_g, to_gxc);
        PointSiluSumsHalf<true>(lane_g, lane_p, lane_pc, lane_q, vmu, vcentre, to_g, to_gxc);
        for (int64_t l = 0; l < width && width < kW; ++l) {
          sum_g[i + l] = out_g[l];
          sum_gxc[i + l] = out_gxc[l];
        }
        continue;
      }
      for (int64_t l = 0; l < width; ++l) {
        const double total_g = 0.0 + static_cast<double>(lane_g[l]);
        sum_g[i + l] = total_g;
        sum_gxc[i + l] = (0.0 + static_cast<double>(lane_p[l])) - static_cast<double>(vmu[l]) * total_g;
      }
    }
  });
}

// dx of HxW = 1 points from the g PointReduceSiluGrad stored, with per-point mu, scale, b and
// c: SiluInputGradStored's formula, each value taken as Splat takes it.
template <typename T>
void PointSiluInputGradStored(const float *g, const T *x, T *dx, int64_t count, const float *mu, const float *scale,
                              const float *b, const float *c) {
  for (int64_t i = 0; i < count; i += kW) {
    const int64_t width = count - i < kW ? count - i : kW;
    auto load = [&](const auto *p) { return width == kW ? Load(p + i) : LoadPartial(p + i, width); };
    auto splat = [&](const float *p) { return VF{} + load(p); };  // as Splat
    const VF out = MulAdd(splat(b), load(x) - splat(mu), MulAdd(splat(scale), load(g), splat(c)));
    if (width == kW) {
      Store(dx + i, out);
    } else {
      StorePartial(dx + i, out, width);
    }
  }
}

template <typename T>
SiluRowKernels<T> MakeSiluRowKernels() {
  return SiluRowKernels<T>{&NormalizeSilu<T>,         &NormalizeSiluPoints<T>,       &NormalizeSiluSample<T>,
                           &ReduceSiluGrad<T>,        &SiluInputGrad<T>,             &SiluInputGradStored<T>,
                           &PointReduceSiluGrad<T>,   &PointSiluInputGradStored<T>,  &ShortReduceSiluGrad<T>,
                           &SampleSiluInputGradStored<T>};
}
