// The fused backward's loops for rows of 2..kShortSiluRowMax elements (silu_rows.h), part
// of silu_rows_impl.h (included there, inside the ISA's namespace, after SwishGrad; like it,
// this file includes no header). Short rows spend more on a row's set-up, partial vector
// and lane folds than on its elements, so these loops take a chunk of rows as one run.

// short_reduce_grad (silu_rows.h), taken for such rows in every schedule so that the bits
// do not depend on the schedule. reduce_grad's row steps cost a block set-up, a partial
// vector and three lane folds a row (58 ns an element at HxW = 2). Here, kShortChunk
// elements at a time:
//   y row by row, with Affine's operations (a row's vector may run into the next row, whose
//     own y overwrites those lanes; only the call's last row loads partially);
//   g over the chunk as one run: SwishGrad is element-wise, so g has reduce_grad's bits;
//   each row's sums in double: db = sum g, ds = sum g * (x - mu), x - mu formed in double
//     (exact unless x and mu are 2^29 apart in scale), so neither of CentredSums' forms is
//     needed and rounding x - mu adds no bias (ShortRowGradSums gives the order).
// The rooms have a vector of slack past the chunk, zeroed, so that a row's last vector may
// be loaded whole and masked.
constexpr int64_t kShortChunk = 1024;
// The low or high kW / 2 lanes of v as doubles: LowAsDoubles / HighAsDoubles of the ISA's file
// (one conversion each with intrinsics; the generic shuffle-and-convert became four).
template <bool kHigh>
inline VD HalfAsDoubles(VF v) {
  return kHigh ? HighAsDoubles(v) : LowAsDoubles(v);
}
inline double LanesInOrder(VD v) {
  double total = v[0];
  for (int k = 1; k < kW / 2; ++k) total += v[k];
  return total;
}

// One row's sums from its g and x (floats, in the rooms). A row shorter than a vector:
// element j into partial sum j % 4, added as (s0 + s1) + (s2 + s3). A longer one: a vector at
// a time (the lanes past the row masked to 0), each half as doubles into its own lanes; the
// halves are added lane by lane, then the lanes in order. kN > 0 is the row's length known at
// compile time, so the loops unroll (a row of 2 took ~100 instructions through the general
// loop).
template <int kN>
[[gnu::always_inline]] inline void ShortRowGradSums(const float *g, const float *x, int64_t n, double mu, double *sum_g,
                                                    double *sum_gxc) {
  if constexpr (kN > 0) n = kN;
  if (n < kW) {
    double s[4] = {0.0, 0.0, 0.0, 0.0}, p[4] = {0.0, 0.0, 0.0, 0.0};
    for (int64_t j = 0; j < n; ++j) {
      const double gd = g[j];
      s[j % 4] += gd;
      p[j % 4] += gd * (static_cast<double>(x[j]) - mu);
    }
    *sum_g = (s[0] + s[1]) + (s[2] + s[3]);
    *sum_gxc = (p[0] + p[1]) + (p[2] + p[3]);
    return;
  }
  const VD vmu = VD{} + mu;
  VD s_low{}, s_high{}, p_low{}, p_high{};
  for (int64_t j = 0; j < n; j += kW) {
    const VI valid = LaneIndex() < static_cast<int>(n - j);
    const VF gv = valid ? Load(g + j) : VF{}, xv = valid ? Load(x + j) : VF{};
    const VD g_low = HalfAsDoubles<false>(gv), g_high = HalfAsDoubles<true>(gv);
    s_low += g_low;
    s_high += g_high;
    p_low += g_low * (HalfAsDoubles<false>(xv) - vmu);
    p_high += g_high * (HalfAsDoubles<true>(xv) - vmu);
  }
  *sum_g = LanesInOrder(s_low + s_high);
  *sum_gxc = LanesInOrder(p_low + p_high);
}

// The chunk's rows of n elements each, row r's mean mu[r / group_rows] (the division once
// per group, not per row).
template <int kN>
void ShortRowsGradSums(const float *g, const float *x, int64_t n, int64_t r0, int64_t r1, int64_t group_rows,
                       const float *mu, double *sum_g, double *sum_gxc) {
  int64_t group = r0 / group_rows, group_end = (group + 1) * group_rows;
  for (int64_t r = r0; r < r1; ++r) {
    if (r == group_end) ++group, group_end += group_rows;
    const int64_t at = (r - r0) * n;
    ShortRowGradSums<kN>(g + at, x + at, n, mu[group], sum_g + r, sum_gxc + r);
  }
}

// ShortRowsGradSums with the row length as a constant where it is one of kN (maps of 2x2
// to 8x8, and rows below a vector), else at run time (8x8 rows that way: 22 % of 2x2560x8x8).
template <int... kN>
void ShortRowsGradSumsOf(const float *g, const float *x, int64_t n, int64_t r0, int64_t r1, int64_t group_rows,
                         const float *mu, double *sum_g, double *sum_gxc) {
  if (!((n == kN ? (ShortRowsGradSums<kN>(g, x, n, r0, r1, group_rows, mu, sum_g, sum_gxc), true) : false) || ...)) {
    ShortRowsGradSums<0>(g, x, n, r0, r1, group_rows, mu, sum_g, sum_gxc);
  }
}

template <typename T, typename K>
void ShortReduceSiluGradRows(const T *dz, const T *x, int64_t hxw, int64_t rows, int64_t group_rows,
                             const float *mu, const float *scale, const float *shift, K vk, double *sum_g,
                             double *sum_gxc, float *g_out) {
  float y_room[kShortChunk + kW], x_room[kShortChunk + kW], g_room[kShortChunk + kW];
  const int64_t rows_per_chunk = kShortChunk / hxw;
  for (int64_t r0 = 0; r0 < rows; r0 += rows_per_chunk) {
    const int64_t r1 = rows - r0 < rows_per_chunk ? rows : r0 + rows_per_chunk, count = (r1 - r0) * hxw;
    const T *x0 = x + r0 * hxw, *dz0 = dz + r0 * hxw;
    int64_t group = r0 / group_rows, group_end = (group + 1) * group_rows;
    for (int64_t r = r0; r < r1; ++r) {
      if (r == group_end) ++group, group_end += group_rows;
      const VF vmu = Splat(mu[group]), vs = Splat(scale[r]), vt = Splat(shift[r]);
      const int64_t at = (r - r0) * hxw;
      for (int64_t j = 0; j < hxw; j += kW) {
        const int64_t left = (rows - r) * hxw - j;  // elements of the call from here on
        const VF xv = left >= kW ? Load(x0 + at + j) : LoadPartial(x0 + at + j, left);
        Store(x_room + at + j, xv);
        Store(y_room + at + j, MulAdd(xv - vmu, vs, vt));  // y as Affine
      }
    }
    Store(y_room + count, VF{});
    Store(x_room + count, VF{});
    Store(g_room + count, VF{});
    for (int64_t i = 0; i < count; i += kW) {
      const int64_t left = count - i;
      const VF dzv = left >= kW ? Load(dz0 + i) : LoadPartial(dz0 + i, left);
      const VF g = SwishGrad(dzv, Load(y_room + i), vk);
      if (left >= kW) {
        Store(g_room + i, g);
      } else {
        StorePartial(g_room + i, g, left);
      }
    }
    if (g_out != nullptr) __builtin_memcpy(g_out + r0 * hxw, g_room, count * sizeof(float));
    ShortRowsGradSumsOf<2, 3, 4, 5, 6, 7, 8, 9, 14, 16, 25, 36, 49, 64>(g_room, x_room, hxw, r0, r1, group_rows, mu,
                                                                         sum_g, sum_gxc);
  }
}

template <typename T>
void ShortReduceSiluGrad(const T *dz, const T *x, int64_t hxw, int64_t rows, int64_t group_rows, const float *mu,
                         const float *scale, const float *shift, float swish_k, double *sum_g, double *sum_gxc,
                         float *g_out) {
  WithScale(swish_k, [&](auto vk) {
    ShortReduceSiluGradRows(dz, x, hxw, rows, group_rows, mu, scale, shift, vk, sum_g, sum_gxc, g_out);
  });
}

// SiluInputGradStored for rows of up to kShortSiluRowMax elements: the rows' scale spread per
// element (Splat's values; a row's vector may run into the next row, whose own values
// overwrite those lanes), then one run over the call's elements, kShortChunk at a time: the
// same operations on the same values, so the same bits, without a partial vector a row.
template <typename T>
void ShortSiluInputGradStored(const float *g, const T *x, T *dx, int64_t hxw, int64_t rows, VF vmu,
                              const float *scale, VF vb, VF vc) {
  float scale_room[kShortChunk + kW];
  const int64_t rows_per_chunk = kShortChunk / hxw;
  for (int64_t r0 = 0; r0 < rows; r0 += rows_per_chunk) {
    const int64_t r1 = rows - r0 < rows_per_chunk ? rows : r0 + rows_per_chunk, count = (r1 - r0) * hxw;
    for (int64_t r = r0; r < r1; ++r) {
      const VF vs = Splat(scale[r]);
      for (int64_t j = 0; j < hxw; j += kW) Store(scale_room + (r - r0) * hxw + j, vs);
    }
    Store(scale_room + count, VF{});  // the lanes past the chunk that its last vector reads
    const float *g0 = g + r0 * hxw;
    const T *x0 = x + r0 * hxw;
    T *dx0 = dx + r0 * hxw;
    for (int64_t i = 0; i < count; i += kW) {
      if (count - i >= kW) {
        Store(dx0 + i, MulAdd(vb, Load(x0 + i) - vmu, MulAdd(Load(scale_room + i), Load(g0 + i), vc)));
      } else {
        const int64_t left = count - i;
        const VF out = MulAdd(vb, LoadPartial(x0 + i, left) - vmu,
                              MulAdd(Load(scale_room + i), LoadPartial(g0 + i, left), vc));
        StorePartial(dx0 + i, out, left);
      }
    }
  }
}

// sample_input_grad_stored (silu_rows.h): a sample's groups one after the other through
// ShortSiluInputGradStored, whose element-wise formula is input_grad_stored's for any row count.
template <typename T>
void SampleSiluInputGradStored(const float *g, const T *x, T *dx, int64_t hxw, int64_t rows, int64_t group_rows,
                               const float *mu, const float *scale, const float *b, const float *c) {
  for (int64_t r0 = 0, group = 0; r0 < rows; r0 += group_rows, ++group) {
    const int64_t at = r0 * hxw;
    ShortSiluInputGradStored(g + at, x + at, dx + at, hxw, group_rows, Splat(mu[group]), scale + r0, Splat(b[group]),
                             Splat(c[group]));
  }
}
