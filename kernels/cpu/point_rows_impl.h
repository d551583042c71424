// The row loops for HxW = 1 ("points": a 2-D (N, C) input, or any layout whose channel rows
// hold one element), included by row_kernels_impl.h inside each ISA build; like it, this file
// may include no header.
//
// A channel row of one element made every row loop pay a call, a block set-up and a lane
// fold per element (the backward of 4096 x 512 took 126 ns per element). Here one call
// handles the C points of a whole sample, a vector across channels; what varies per group
// (mean, coefficients) comes in per-point arrays that the caller fills once per sample.
//
// The arithmetic is that of the row loops on a one-element row, so a point gets the bits
// its row would get, in every build:
//  * a row's sum of one element is lane 0 = 0 + v, folded with zero lanes, i.e. the float
//    0.0f + v (which only turns -0 into +0) made double; the product sums are lane 0 =
//    MulAdd(dy, x, 0) or MulAdd(dy, x - mu, 0) and MulAdd(dy, e, 0), by the group's form;
//  * dx and y are the element-wise formulas of AffineGrad and Normalize.

// Half a vector's lanes as GCC vector types, for PointGradSumsIn's double step: written as
// vector arithmetic it is vector code in every build (plain loops over the lanes were not),
// and half a vector of doubles is one register of the build (a whole one was spilled).
constexpr int kPointHalf = V::kWidth / 2;
typedef float PointFloats __attribute__((vector_size(sizeof(float) * kPointHalf)));
typedef double PointDoubles __attribute__((vector_size(sizeof(double) * kPointHalf)));
typedef int64_t PointMask __attribute__((vector_size(sizeof(int64_t) * kPointHalf)));
// (by reference: a vector returned by value would pass differently between builds, -Wpsabi)
[[gnu::always_inline]] inline void Widen(const float *lanes, PointDoubles &out) {
  PointFloats f;
  __builtin_memcpy(&f, lanes, sizeof f);
  out = __builtin_convertvector(f, PointDoubles);
}

// db[i] = 0 + dy[i] and, unless ds is nullptr, ds[i] = the point's row sum of dy * (x - mu[i])
// in ReduceGrad's form for its group (CentredSums, row_kernels.h), in double; i < count:
//  * centre[i] = 0 (or centre == nullptr): p = MulAdd(dy, x, 0), ds = p - mu * db in double;
//  * centre[i] = mu[i] (never 0 there): d = x - mu, e its TwoSum error (CenteredError),
//    ds = p + q with p = MulAdd(dy, d, 0) and q = MulAdd(dy, e, 0).
// p and q are taken as 0 + p, 0 + q, as the lane folds give them (they turn -0 into +0).
// The products are formed a vector at a time for every point alike (x - 0 is x, bit for
// bit), and only the double step chooses per point.
// kForm: 0 db alone (ds is nullptr), 1 every point in the dy * x form, 2 some centred.
template <int kForm, typename T>
[[gnu::always_inline]] inline void PointGradSumsIn(const T *dy, const T *x, const float *mu, const float *centre,
                                                   int64_t count, double *db, double *ds) {
  int64_t i = 0;
  alignas(64) float lanes_db[V::kWidth], lanes_p[V::kWidth], lanes_q[V::kWidth], lanes_mu[V::kWidth],
      lanes_c[V::kWidth];
  double lanes_db_wide[V::kWidth], lanes_ds_wide[V::kWidth];  // a partial step's outputs
  const typename V::reg zero = V::Zero();
  auto finish = [&](int64_t at, float b, float p, float q) {
    db[at] = b;
    if constexpr (kForm == 2) {
      if (centre[at] != 0.0f) {
        ds[at] = static_cast<double>(p) + static_cast<double>(q);
        return;
      }
    }
    if constexpr (kForm != 0) ds[at] = static_cast<double>(p) - static_cast<double>(mu[at]) * static_cast<double>(b);
  };
  // kWidth points from i, or (partial) the `width` < kWidth points left, in the same steps.
  // Every lane's double step is formed over the whole vector, both forms where they mix and
  // a select between them, and only `width` stored. Scalar loops over the lanes, with a
  // branch per point on its group's form, were a third of the backward at 8000 x 64, G = 32
  // (two channels per group: about half the groups centred, so the branch was mispredicted
  // about every other point).
  // mu_at, centre_at: the step's kWidth means and centres (past the points: zeros)
  auto vector_step = [&](int64_t i, typename V::reg d, typename V::reg xv, const float *mu_at, const float *centre_at,
                         int width) __attribute__((always_inline)) {
    V::StoreLanes(lanes_db, V::Add(zero, d));
    if constexpr (kForm == 0) {
      for (int l = 0; l < width; ++l) db[i + l] = lanes_db[l];
      return;
    }
    if constexpr (kForm == 1) {  // every point in one form: plain loops the compiler vectorises
      V::StoreLanes(lanes_p, V::Add(zero, V::MulAdd(d, xv, zero)));
      for (int l = 0; l < width; ++l) db[i + l] = lanes_db[l];
      for (int l = 0; l < width; ++l) {
        ds[i + l] = static_cast<double>(lanes_p[l]) - static_cast<double>(mu_at[l]) * static_cast<double>(lanes_db[l]);
      }
      return;
    }
    const typename V::reg c = V::Load(centre_at), xc = V::Sub(xv, c);  // x - 0 is x: the dy * x form
    V::StoreLanes(lanes_p, V::Add(zero, V::MulAdd(d, xc, zero)));
    V::StoreLanes(lanes_q, V::Add(zero, V::MulAdd(d, CenteredError(xv, c, xc), zero)));
    // both forms for every point, in doubles half a vector at a time, and a select
    double *db_to = width == V::kWidth ? db + i : lanes_db_wide, *ds_to = width == V::kWidth ? ds + i : lanes_ds_wide;
#pragma GCC unroll 2
    for (int h = 0; h < V::kWidth; h += kPointHalf) {
      PointDoubles p, q, b, m;
      Widen(lanes_p + h, p);
      Widen(lanes_q + h, q);
      Widen(lanes_db + h, b);
      Widen(mu_at + h, m);
      PointFloats centres;
      __builtin_memcpy(&centres, centre_at + h, sizeof centres);
      const PointMask take = __builtin_convertvector(centres != 0.0f, PointMask);
      const PointDoubles centred = p + q, plain = p - m * b;
      // a select on the bits (a cast between vector types of one size keeps them); a vector
      // ?: was lowered lane by lane, with branches
      const PointDoubles out = (PointDoubles)(((PointMask)centred & take) | ((PointMask)plain & ~take));
      __builtin_memcpy(db_to + h, &b, sizeof b);
      __builtin_memcpy(ds_to + h, &out, sizeof out);
    }
    if (width < V::kWidth) {
      for (int l = 0; l < width; ++l) db[i + l] = lanes_db_wide[l];
      for (int l = 0; l < width; ++l) ds[i + l] = lanes_ds_wide[l];
    }
  };
  for (; i + V::kWidth <= count; i += V::kWidth) {
    vector_step(i, V::Load(dy + i), kForm == 0 ? zero : V::Load(x + i), kForm == 0 ? nullptr : mu + i,
                kForm == 2 ? centre + i : nullptr, V::kWidth);
  }
  if constexpr (V::template kPartial<T>) {
    if (i < count) {
      const int left = static_cast<int>(count - i);
      if constexpr (kForm != 0) V::StoreLanes(lanes_mu, V::LoadFirst(mu + i, left));
      if constexpr (kForm == 2) V::StoreLanes(lanes_c, V::LoadFirst(centre + i, left));
      vector_step(i, V::LoadFirst(dy + i, left), kForm == 0 ? zero : V::LoadFirst(x + i, left), lanes_mu, lanes_c,
                  left);
    }
    return;
  }
  for (; i < count; ++i) {
    const float d = ToFloat(dy[i]);
    float p = 0.0f, q = 0.0f;
    if constexpr (kForm == 2) {
      const float xv = ToFloat(x[i]), c = centre[i], xc = xv - c;
      p = 0.0f + V::MulAdd(d, xc, 0.0f);
      q = 0.0f + V::MulAdd(d, CenteredError(xv, c, xc), 0.0f);
    } else if constexpr (kForm == 1) {
      p = 0.0f + V::MulAdd(d, ToFloat(x[i]), 0.0f);
    }
    finish(i, 0.0f + d, p, q);
  }
}

template <typename T>
void PointGradSums(const T *dy, const T *x, const float *mu, const float *centre, int64_t count, double *db,
                   double *ds) {
  if (ds == nullptr) {
    PointGradSumsIn<0>(dy, x, mu, centre, count, db, ds);
  } else if (centre == nullptr) {
    PointGradSumsIn<1>(dy, x, mu, centre, count, db, ds);
  } else {
    PointGradSumsIn<2>(dy, x, mu, centre, count, db, ds);
  }
}

// Rows of n elements, 1 < n <= kShortRowMax (row_kernels.h: short_grad_sums and
// short_affine_grad), with what varies per group given per row: the backward's by-sample step
// for a few elements per channel, one call a sample instead of calls, block set-ups and folds
// per group. In ReduceGrad such a row is at most one whole vector into register 0 and one
// partial step into the next (or the lane-by-lane tail), on lanes that start at +0; here the
// same steps on registers that start at +0, folded by the same FoldRegsViaFloat, then the
// totals as ReduceGradRows forms them. So each row gets its bits. (ReduceGradBlock itself,
// inlined once a row, gives the same bits but was 5-20 % slower: 64x256x9 G16 fp32 0.19 ->
// 0.23 ms; its tail loop over the registers and its general block are not needed here.)
static_assert(!V::template kPartial<float> || (kShortRowMax < 2 * V::kWidth && kRegs >= 2),
              "a short row is at most a vector and a partial step");
// FoldLanesViaFloat of a row of kN elements in lanes 0..kN-1, the other lanes +0, without
// adding those zeros: a lane never holds -0 (each starts at +0), so an added +0 changes
// nothing, and leaving it out keeps the bits.
template <int kN>
[[gnu::always_inline]] inline double FoldShortRow(const float *lanes) {
  static_assert(kN > 1 && kN < 2 * kFoldWidth, "a short row fills at most two rows of lanes");
  double part[kFoldWidth];
  bool live[kFoldWidth];  // part[k] may be nonzero (known while compiling once unrolled)
#pragma GCC unroll 8
  for (int k = 0; k < kFoldWidth; ++k) {
    live[k] = k < kN;
    part[k] = k + kFoldWidth < kN ? static_cast<double>(lanes[k] + lanes[kFoldWidth + k])
                                  : static_cast<double>(k < kN ? lanes[k] : 0.0f);
  }
#pragma GCC unroll 4
  for (int width = kFoldWidth / 2; width > 0; width /= 2) {
#pragma GCC unroll 4
    for (int k = 0; k < width; ++k) {
      if (!live[k + width]) continue;
      part[k] = live[k] ? part[k] + part[k + width] : part[k + width];
      live[k] = true;
    }
  }
  return part[0];
}

// ShortGradSums for rows of kN elements, none centred: the lanes every row's steps would
// hold (0 + dy and MulAdd(dy, x, 0)) formed a vector at a time across rows, a chunk of rows
// at a time, then each row's fold from them. The per-row steps spent most of a row of 2-8
// elements on a vector's set-up and a fold of 32 lanes (16 x 512 x 2, G = 16: 61
// instructions a row for these sums).
template <typename T, int kN>
void ShortGradSumsAcross(const T *dy, const T *x, const float *mu, int64_t rows, double *db, double *ds) {
  constexpr int64_t kChunkRows = 64;
  alignas(64) float lanes_dy[kChunkRows * kN + V::kWidth], lanes_p[kChunkRows * kN + V::kWidth];
  const typename V::reg zero = V::Zero();
  for (int64_t first = 0; first < rows; first += kChunkRows) {
    const int64_t chunk = rows - first < kChunkRows ? rows - first : kChunkRows, count = chunk * kN;
    const T *dy_chunk = dy + first * kN, *x_chunk = x + first * kN;
    auto step = [&](int64_t i, typename V::reg d, typename V::reg xv) __attribute__((always_inline)) {
      V::Store(lanes_dy + i, V::Add(zero, d));
      V::Store(lanes_p + i, V::MulAdd(d, xv, zero));
    };
    int64_t i = 0;
    for (; i + V::kWidth <= count; i += V::kWidth) step(i, V::Load(dy_chunk + i), V::Load(x_chunk + i));
    if (i < count) {
      const int left = static_cast<int>(count - i);
      step(i, V::LoadFirst(dy_chunk + i, left), V::LoadFirst(x_chunk + i, left));
    }
    for (int64_t r = 0; r < chunk; ++r) {
      const double total_dy = FoldShortRow<kN>(lanes_dy + r * kN), total_p = FoldShortRow<kN>(lanes_p + r * kN);
      db[first + r] = total_dy;
      ds[first + r] = total_p - static_cast<double>(mu[first + r]) * total_dy;
    }
  }
}

template <typename T, int... kN>
[[gnu::always_inline]] inline bool ShortGradSumsAcrossOf(int64_t n, const T *dy, const T *x, const float *mu,
                                                         int64_t rows, double *db, double *ds) {
  return ((n == kN ? (ShortGradSumsAcross<T, kN>(dy, x, mu, rows, db, ds), true) : false) || ...);
}

// ShortGradSums for rows longer than a vector and a partial step (kShortRowMax < n <=
// kBlock): ReduceGradRows's one block a row, in the row's own form and with its own mean,
// so the same bits; the partial step loads whole vectors inside the rows given.
template <typename T>
void LongerRowGradSums(const T *dy, const T *x, const float *mu, const float *centre, int64_t n, int64_t rows,
                       double *db, double *ds) {
  const int64_t total = rows * n;
  for (int64_t r = 0; r < rows; ++r) {
    const T *dy_row = dy + r * n, *x_row = x + r * n;
    const bool centred = centre != nullptr && centre[r] != 0.0f;
    double block_dy, block_dyxc;
    if (centred) {
      ReduceGradBlock<true>(dy_row, x_row, V::Set1(centre[r]), centre[r], 0, n, total - r * n, block_dy, block_dyxc);
    } else {  // the dy * x form never reads its mean
      ReduceGradBlock<false>(dy_row, x_row, V::Zero(), 0.0f, 0, n, total - r * n, block_dy, block_dyxc);
    }
    const double total_dy = 0.0 + block_dy, total_dyxc = 0.0 + block_dyxc;
    db[r] = total_dy;
    ds[r] = centred ? total_dyxc : total_dyxc - static_cast<double>(mu[r]) * total_dy;
  }
}

template <typename T>
void ShortGradSums(const T *dy, const T *x, const float *mu, const float *centre, int64_t n, int64_t rows, double *db,
                   double *ds) {
  if (n > kShortRowMax) return LongerRowGradSums(dy, x, mu, centre, n, rows, db, ds);
  if constexpr (V::template kPartial<T>) {
    if (centre == nullptr &&
        ShortGradSumsAcrossOf<T, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15>(n, dy, x, mu, rows, db, ds)) {
      return;
    }
  }
  static_assert(kShortRowMax == 15, "ShortGradSumsAcrossOf lists every short row length");
  const int width = static_cast<int>(n);
  const int64_t total = rows * n;
  for (int64_t r = 0; r < rows; ++r) {
    const T *dy_row = dy + r * n, *x_row = x + r * n;
    const bool centred = centre != nullptr && centre[r] != 0.0f;
    double block_dy, block_dyxc;
    if constexpr (V::template kPartial<T>) {
      const typename V::reg zero = V::Zero(), vc = V::Set1(centred ? centre[r] : 0.0f);
      typename V::reg acc_dy[kRegs], acc_dyxc[kRegs], acc_err[kRegs];
      for (int k = 0; k < kRegs; ++k) acc_dy[k] = acc_dyxc[k] = acc_err[k] = zero;
      // register k from lanes that start at +0; `left` < kWidth: a partial step
      auto step = [&](int k, typename V::reg d, typename V::reg xv, int left) __attribute__((always_inline)) {
        const typename V::reg xc = V::Sub(xv, vc);  // x - 0 is x: the dy * x form
        acc_dy[k] = V::Add(zero, d);
        acc_dyxc[k] = V::MulAdd(d, xc, zero);
        if (centred) acc_err[k] = V::MulAdd(d, CenteredError(xv, vc, xc), zero);
        if (left < V::kWidth) {
          acc_dy[k] = V::Select(left, acc_dy[k], zero);
          acc_dyxc[k] = V::Select(left, acc_dyxc[k], zero);
          if (centred) acc_err[k] = V::Select(left, acc_err[k], zero);
        }
      };
      // A row's partial step loads a whole vector where that stays inside the rows given
      // (Select drops the next row's lanes): a masked load a row cost more than the row.
      const bool whole = r * n + (width < V::kWidth ? 1 : 2) * V::kWidth <= total;
      auto load = [&](const T *p, int k) { return whole ? V::Load(p) : V::LoadFirst(p, k); };
      if (width < V::kWidth) {
        step(0, load(dy_row, width), load(x_row, width), width);
      } else {
        step(0, V::Load(dy_row), V::Load(x_row), V::kWidth);
        const int left = width - V::kWidth;
        if (left > 0) step(1, load(dy_row + V::kWidth, left), load(x_row + V::kWidth, left), left);
      }
      block_dy = V::FoldRegsViaFloat(acc_dy);
      block_dyxc = V::FoldRegsViaFloat(acc_dyxc);
      if (centred) block_dyxc += V::FoldRegsViaFloat(acc_err);
    } else {
      float lanes_dy[kLanes] = {}, lanes_dyxc[kLanes] = {}, lanes_err[kLanes] = {};
      const float c = centred ? centre[r] : 0.0f;
      for (int i = 0; i < width; ++i) {
        const float d = ToFloat(dy_row[i]), xv = ToFloat(x_row[i]), xc = xv - c;
        lanes_dy[i] += d;
        lanes_dyxc[i] = V::MulAdd(d, xc, lanes_dyxc[i]);
        if (centred) lanes_err[i] = V::MulAdd(d, CenteredError(xv, c, xc), lanes_err[i]);
      }
      block_dy = FoldLanesViaFloat(lanes_dy);
      block_dyxc = FoldLanesViaFloat(lanes_dyxc);
      if (centred) block_dyxc += FoldLanesViaFloat(lanes_err);
    }
    const double total_dy = 0.0 + block_dy, total_dyxc = 0.0 + block_dyxc;
    db[r] = total_dy;
    ds[r] = centred ? total_dyxc : total_dyxc - static_cast<double>(mu[r]) * total_dy;
  }
}

// dx of rows of n > 1 elements, with per-row a, b, mu and c: AffineGrad's formula, whole
// vectors and a partial step a row.
template <typename T>
void ShortAffineGrad(const T *dy, const T *x, T *dx, int64_t n, int64_t rows, const float *a, const float *b,
                     const float *mu, const float *c) {
  const int64_t total = rows * n;
  // A row's partial step stores a whole vector where that stays inside the rows given: its
  // lanes past the row land on the next rows, which store their own values after it. A
  // masked store a row (vmaskmovps, or a store of the lanes one by one) cost more than the
  // row. Not where dx overlaps dy or x: the next row's inputs would be overwritten first.
  const bool may_spill = !Overlap(dx, dy, total) && !Overlap(dx, x, total);
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t first = r * n;
    if constexpr (V::template kPartial<T>) {
      const typename V::reg va = V::Set1(a[r]), vb = V::Set1(b[r]), vmu = V::Set1(mu[r]), vc = V::Set1(c[r]);
      auto op = [&](typename V::reg d, typename V::reg xv) {
        return V::MulAdd(vb, V::Sub(xv, vmu), V::MulAdd(va, d, vc));
      };
      int64_t at = first;
      for (; at + V::kWidth <= first + n; at += V::kWidth) V::Store(dx + at, op(V::Load(dy + at), V::Load(x + at)));
      const int left = static_cast<int>(first + n - at);
      if (left > 0 && may_spill && at + V::kWidth <= total) {
        V::Store(dx + at, op(V::Load(dy + at), V::Load(x + at)));
      } else if (left > 0) {
        V::StoreFirst(dx + at, op(V::LoadFirst(dy + at, left), V::LoadFirst(x + at, left)), left);
      }
    } else {
      for (int64_t i = first; i < first + n; ++i) {
        dx[i] = FromFloat<T>(V::MulAdd(b[r], ToFloat(x[i]) - mu[r], V::MulAdd(a[r], ToFloat(dy[i]), c[r])));
      }
    }
  }
}

// dx[i] = MulAdd(b[i], x[i] - mu[i], MulAdd(a[i], dy[i], c[i])), AffineGrad's formula.
template <typename T>
void PointAffineGrad(const T *dy, const T *x, T *dx, int64_t count, const float *a, const float *b, const float *mu,
                     const float *c) {
  int64_t i = 0;
  for (; i + V::kWidth <= count; i += V::kWidth) {
    const typename V::reg inner = V::MulAdd(V::Load(a + i), V::Load(dy + i), V::Load(c + i));
    V::Store(dx + i, V::MulAdd(V::Load(b + i), V::Sub(V::Load(x + i), V::Load(mu + i)), inner));
  }
  if constexpr (V::template kPartial<T>) {
    if (i < count) {
      const int k = static_cast<int>(count - i);
      const typename V::reg inner = V::MulAdd(V::LoadFirst(a + i, k), V::LoadFirst(dy + i, k), V::LoadFirst(c + i, k));
      V::StoreFirst(dx + i,
                    V::MulAdd(V::LoadFirst(b + i, k), V::Sub(V::LoadFirst(x + i, k), V::LoadFirst(mu + i, k)), inner),
                    k);
    }
    return;
  }
  for (; i < count; ++i) {
    dx[i] = FromFloat<T>(V::MulAdd(b[i], ToFloat(x[i]) - mu[i], V::MulAdd(a[i], ToFloat(dy[i]), c[i])));
  }
}

// out[i] = src[i] converted a vector at a time, as the row loops load and store: a float
// exactly (Widen), or rounded to T as FromFloat rounds, to nearest, ties to even (Narrow). For
// 16-bit data in bulk where a scalar conversion per use, with its branches, cost more: the
// saved statistics, short-row sums, and 16-bit samples of short rows (group_norm_cpu.h).
template <typename From, typename To>
void Convert(const From *src, int64_t count, To *out) {
  int64_t i = 0;
  for (; i + V::kWidth <= count; i += V::kWidth) V::Store(out + i, V::Load(src + i));
  if constexpr (V::template kPartial<From> && V::template kPartial<To>) {
    const int left = static_cast<int>(count - i);
    if (left > 0) V::StoreFirst(out + i, V::LoadFirst(src + i, left), left);
    return;
  }
  for (; i < count; ++i) out[i] = FromFloat<To>(ToFloat(src[i]));
}
template <typename T>
void Widen(const T *src, int64_t count, float *out) {
  Convert(src, count, out);
}
template <typename T>
void Narrow(const float *src, int64_t count, T *out) {
  Convert(src, count, out);
}

// y[i] = MulAdd(x[i] - mu[i], scale[i], shift[i]), Normalize's formula.
template <typename T>
void PointNormalize(const T *x, T *y, int64_t count, const float *mu, const float *scale, const float *shift) {
  int64_t i = 0;
  for (; i + V::kWidth <= count; i += V::kWidth) {
    V::Store(y + i, V::MulAdd(V::Sub(V::Load(x + i), V::Load(mu + i)), V::Load(scale + i), V::Load(shift + i)));
  }
  if constexpr (V::template kPartial<T>) {
    if (i < count) {
      const int k = static_cast<int>(count - i);
      V::StoreFirst(y + i,
                    V::MulAdd(V::Sub(V::LoadFirst(x + i, k), V::LoadFirst(mu + i, k)), V::LoadFirst(scale + i, k),
                              V::LoadFirst(shift + i, k)),
                    k);
    }
    return;
  }
  for (; i < count; ++i) y[i] = FromFloat<T>(V::MulAdd(ToFloat(x[i]) - mu[i], scale[i], shift[i]));
}
