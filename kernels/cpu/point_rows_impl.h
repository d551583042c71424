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
//    0.0f + v (which only turns -0 into +0) made double; the product sum is lane 0 =
//    MulAdd(dy, x - mu, 0);
//  * dx and y are the element-wise formulas of AffineGrad and Normalize.

// db[i] = 0 + dy[i] and, unless ds is nullptr, ds[i] = MulAdd(dy[i], x[i] - mu[i], 0), in
// double; i < count.
template <typename T>
void PointGradSums(const T *dy, const T *x, const float *mu, int64_t count, double *db, double *ds) {
  int64_t i = 0;
  float lanes[V::kWidth];
  for (; i + V::kWidth <= count; i += V::kWidth) {
    const typename V::reg d = V::Load(dy + i);
    V::StoreLanes(lanes, V::Add(V::Zero(), d));
    for (int l = 0; l < V::kWidth; ++l) db[i + l] = lanes[l];
    if (ds != nullptr) {
      V::StoreLanes(lanes, V::MulAdd(d, V::Sub(V::Load(x + i), V::Load(mu + i)), V::Zero()));
      for (int l = 0; l < V::kWidth; ++l) ds[i + l] = lanes[l];
    }
  }
  for (; i < count; ++i) {
    const float d = ToFloat(dy[i]);
    db[i] = 0.0f + d;
    if (ds != nullptr) ds[i] = V::MulAdd(d, ToFloat(x[i]) - mu[i], 0.0f);
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
  for (; i < count; ++i) {
    dx[i] = FromFloat<T>(V::MulAdd(b[i], ToFloat(x[i]) - mu[i], V::MulAdd(a[i], ToFloat(dy[i]), c[i])));
  }
}

// y[i] = MulAdd(x[i] - mu[i], scale[i], shift[i]), Normalize's formula.
template <typename T>
void PointNormalize(const T *x, T *y, int64_t count, const float *mu, const float *scale, const float *shift) {
  int64_t i = 0;
  for (; i + V::kWidth <= count; i += V::kWidth) {
    V::Store(y + i, V::MulAdd(V::Sub(V::Load(x + i), V::Load(mu + i)), V::Load(scale + i), V::Load(shift + i)));
  }
  for (; i < count; ++i) y[i] = FromFloat<T>(V::MulAdd(ToFloat(x[i]) - mu[i], scale[i], shift[i]));
}
