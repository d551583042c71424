// The forward statistics' row sums (row_kernels.h: sum, centered_sum, centered_squares,
// centered_moments, and the per-row forms): kSums sums of a row in the float lanes, and the
// batched form for rows shorter than a vector. Part of row_kernels_impl.h (included there,
// inside each ISA build's namespace, after its vector type V); like it, it may include no
// header.

// kSums sums of terms of x[i] over one row, each in the kLanes float lanes (element i in
// lane i % kLanes), folded into a double per kBlock-element block, blocks added in order:
// totals[s]. `vector_add(acc, r, v)` adds the terms of v to register r of every sum
// (acc[s][r]); `scalar_add(lanes, l, v)` does the same for one element in lane l
// (lanes[s][l]), computing what the vector step computes. A sum's bits depend only on its
// own term: moments computed together are each the sum computed alone.
// Always inlined into the loop over rows, as ReduceGradBlock is.
template <int kSums, typename T, typename VectorAdd, typename ScalarAdd>
[[gnu::always_inline]] inline void SumsOfRow(const T *x, int64_t n, VectorAdd vector_add, ScalarAdd scalar_add,
                                             double *totals) {
  for (int s = 0; s < kSums; ++s) totals[s] = 0.0;
  for (int64_t start = 0; start < n; start += kBlock) {
    const int64_t end = n - start < kBlock ? n : start + kBlock;
    typename V::reg acc[kSums][kRegs];
    for (int s = 0; s < kSums; ++s) {
      for (int r = 0; r < kRegs; ++r) acc[s][r] = V::Zero();
    }
    int64_t i = start;
    for (; i + kLanes <= end; i += kLanes) {
      for (int r = 0; r < kRegs; ++r) vector_add(acc, r, V::Load(x + i + r * V::kWidth));
    }
    int tail_regs = 0;  // the tail as in ReduceGradRow: whole vectors, then lane by lane
#pragma GCC unroll 16
    for (int r = 0; r < kRegs; ++r) {
      if (i + V::kWidth > end) break;
      vector_add(acc, r, V::Load(x + i));
      i += V::kWidth;
      tail_regs = r + 1;
    }
    if constexpr (V::template kPartial<T>) {  // as in ReduceGradBlock: one masked step
      if (i < end) {
        const int left = static_cast<int>(end - i);
        const typename V::reg v = V::LoadFirst(x + i, left);
#pragma GCC unroll 16
        for (int r = 0; r < kRegs; ++r) {
          if (r != tail_regs) continue;
          typename V::reg before[kSums];
          for (int s = 0; s < kSums; ++s) before[s] = acc[s][r];
          vector_add(acc, r, v);
          for (int s = 0; s < kSums; ++s) acc[s][r] = V::Select(left, acc[s][r], before[s]);
        }
        i = end;
      }
    }
    if (i == end) {
      for (int s = 0; s < kSums; ++s) totals[s] += V::FoldRegs(acc[s]);
      continue;
    }
    float lanes[kSums][kLanes];
    for (int s = 0; s < kSums; ++s) {
      for (int r = 0; r < kRegs; ++r) V::StoreLanes(lanes[s] + r * V::kWidth, acc[s][r]);
    }
    for (int l = tail_regs * V::kWidth; i < end; ++i, ++l) scalar_add(lanes, l, ToFloat(x[i]));
    for (int s = 0; s < kSums; ++s) totals[s] += FoldLanes(lanes[s]);
  }
}

// sum_i term(x[i]) for one row (SumsOfRow with one sum): `vector_add(acc, v)` /
// `scalar_add(lane, v)` add the terms of v to a running sum.
template <typename T, typename VectorAdd, typename ScalarAdd>
[[gnu::always_inline]] inline double SumRow(const T *x, int64_t n, VectorAdd vector_add, ScalarAdd scalar_add) {
  double total;
  SumsOfRow<1>(
      x, n, [&](typename V::reg(&acc)[1][kRegs], int r, typename V::reg v) { acc[0][r] = vector_add(acc[0][r], v); },
      [&](float(&lanes)[1][kLanes], int l, float v) { lanes[0][l] = scalar_add(lanes[0][l], v); }, &total);
  return total;
}

// SumRow of `rows` rows of n elements (any n up to kBlock; taken for n < V::kWidth, see
// UseShortRows), kShortRowBatch rows at a time, for the forward's statistics of many tiny
// groups (a few elements per group). There a
// row's block set-up, lane stores and fold cost 50-100 times its elements (8000 x 64,
// G = 32: 0.4x torch's forward). Each row gets SumRow's bits: element i goes to lane
// i % kLanes by the same scalar add (add(lane, v, r), r the row) that SumRow's vector and
// scalar steps compute alike, and the lanes fold by FoldLanes' tree, here with the rows of a
// batch side by side so that the double adds run a vector across rows. Lanes past the row's
// elements are +0 in SumRow; a lane is never -0 (0 + v is +0 for v = -0, and a sum is -0
// only when both terms are), so leaving out the adds of those zeros changes no bit.
// The batch's rows are contiguous, so 16-bit data are widened to floats for the whole batch
// at once (Widen: F16C or AVX-512 conversions where the build has them): a scalar fp16
// conversion per element, with its branches, was a third of the fp16 forward of 8000 x 64,
// G = 32 (each element read three times). The conversion is exact, so the bits stay.
inline const float *BatchAsFloats(const float *x, int64_t /*count*/, float * /*room*/) { return x; }
template <typename T>
inline const float *BatchAsFloats(const T *x, int64_t count, float *room) {
  Widen(x, count, room);
  return room;
}

template <typename T, typename ScalarAdd>
[[gnu::always_inline]] inline void ShortRowSums(const T *x, int64_t n, int64_t rows, double *sums,
                                                ScalarAdd add) {
  const int used = static_cast<int>(n < kLanes ? n : kLanes);  // lanes that get an element
  const int fold_rows = (used + kFoldWidth - 1) / kFoldWidth;  // rows of 8 lanes to fold
  float room[kShortRowBatch * V::kWidth];  // a batch of rows shorter than a vector (UseShortRows)
  for (int64_t r0 = 0; r0 < rows; r0 += kShortRowBatch) {
    const int batch = static_cast<int>(rows - r0 < kShortRowBatch ? rows - r0 : kShortRowBatch);
    const float *values = BatchAsFloats(x + r0 * n, batch * n, room);
    float lanes[kLanes][kShortRowBatch];
    for (int l = 0; l < fold_rows * kFoldWidth; ++l) {
      for (int w = 0; w < kShortRowBatch; ++w) lanes[l][w] = 0.0f;
    }
    for (int w = 0; w < batch; ++w) {
      const float *row = values + w * n;
      for (int64_t i = 0; i < n; ++i) {
        const int l = static_cast<int>(i % kLanes);
        lanes[l][w] = add(lanes[l][w], row[i], r0 + w);
      }
    }
    double part[kFoldWidth][kShortRowBatch];  // FoldLanes, a row of the batch per column
    for (int k = 0; k < kFoldWidth; ++k) {
      for (int w = 0; w < kShortRowBatch; ++w) part[k][w] = lanes[k][w];
    }
    for (int row = 1; row < fold_rows; ++row) {
      for (int k = 0; k < kFoldWidth; ++k) {
        for (int w = 0; w < kShortRowBatch; ++w) part[k][w] += lanes[row * kFoldWidth + k][w];
      }
    }
    for (int width = kFoldWidth / 2; width > 0; width /= 2) {
      for (int k = 0; k < width; ++k) {
        for (int w = 0; w < kShortRowBatch; ++w) part[k][w] += part[k + width][w];
      }
    }
    for (int w = 0; w < batch; ++w) sums[r0 + w] = 0.0 + part[0][w];  // SumRow's total of one block
  }
}
// Only rows shorter than a vector: from one vector up SumRow's vector steps and register fold
// are faster than the scalar adds here (16-element rows: 1.8x slower here, AVX-512). Below
// kShortRowsMin rows a batch is mostly empty columns and the row loop is as fast.
constexpr int64_t kShortRowsMin = 4;
inline bool UseShortRows(int64_t n, int64_t rows) { return n > 0 && n < V::kWidth && rows >= kShortRowsMin; }

template <typename T>
void Sum(const T *x, int64_t hxw, int64_t rows, double *sums) {
  if (UseShortRows(hxw, rows)) {
    return ShortRowSums(x, hxw, rows, sums, [](float lane, float v, int64_t) { return lane + v; });
  }
  auto vector_add = [](typename V::reg acc, typename V::reg v) { return V::Add(acc, v); };
  auto scalar_add = [](float lane, float v) { return lane + v; };
  for (int64_t r = 0; r < rows; ++r) sums[r] = SumRow(x + r * hxw, hxw, vector_add, scalar_add);
}

template <typename T>
void CenteredSum(const T *x, float mu, int64_t hxw, int64_t rows, double *sums) {
  const typename V::reg vmu = V::Set1(mu);
  auto vector_add = [vmu](typename V::reg acc, typename V::reg v) { return V::Add(acc, V::Sub(v, vmu)); };
  auto scalar_add = [mu](float lane, float v) { return lane + (v - mu); };
  for (int64_t r = 0; r < rows; ++r) sums[r] = SumRow(x + r * hxw, hxw, vector_add, scalar_add);
}

template <typename T>
void CenteredSquares(const T *x, float mu, int64_t hxw, int64_t rows, double *sums) {
  const typename V::reg vmu = V::Set1(mu);
  auto vector_add = [vmu](typename V::reg acc, typename V::reg v) {
    const typename V::reg d = V::Sub(v, vmu);
    return V::MulAdd(d, d, acc);
  };
  auto scalar_add = [mu](float lane, float v) {
    const float d = v - mu;
    return V::MulAdd(d, d, lane);
  };
  for (int64_t r = 0; r < rows; ++r) sums[r] = SumRow(x + r * hxw, hxw, vector_add, scalar_add);
}

// CenteredSum about mu and CenteredSquares about c of the same rows in one pass over x:
// each the bits the function alone gives (SumsOfRow).
template <typename T>
void CenteredMoments(const T *x, float mu, float c, int64_t hxw, int64_t rows, double *sums, double *squares) {
  const typename V::reg vmu = V::Set1(mu), vc = V::Set1(c);
  auto vector_add = [vmu, vc](typename V::reg(&acc)[2][kRegs], int r, typename V::reg v) {
    const typename V::reg e = V::Sub(v, vc);
    acc[0][r] = V::Add(acc[0][r], V::Sub(v, vmu));
    acc[1][r] = V::MulAdd(e, e, acc[1][r]);
  };
  auto scalar_add = [mu, c](float(&lanes)[2][kLanes], int l, float v) {
    const float e = v - c;
    lanes[0][l] = lanes[0][l] + (v - mu);
    lanes[1][l] = V::MulAdd(e, e, lanes[1][l]);
  };
  for (int64_t r = 0; r < rows; ++r) {
    double totals[2];
    SumsOfRow<2>(x + r * hxw, hxw, vector_add, scalar_add, totals);
    sums[r] = totals[0];
    squares[r] = totals[1];
  }
}

// CenteredSum and CenteredSquares with a mean per row, mu[r]: the forward's statistics of
// many small groups (HxW = 1, a few channels per group) in one call, each row summed exactly
// as the one-row call with mu[r] sums it.
// Short rows go through ShortRowSums with the scalar step of CenteredSum / CenteredSquares.
template <typename T>
void CenteredSumEach(const T *x, const float *mu, int64_t hxw, int64_t rows, double *sums) {
  if (UseShortRows(hxw, rows)) {
    return ShortRowSums(x, hxw, rows, sums, [mu](float lane, float v, int64_t r) { return lane + (v - mu[r]); });
  }
  for (int64_t r = 0; r < rows; ++r) CenteredSum(x + r * hxw, mu[r], hxw, 1, sums + r);
}

template <typename T>
void CenteredSquaresEach(const T *x, const float *mu, int64_t hxw, int64_t rows, double *sums) {
  if (UseShortRows(hxw, rows)) {
    return ShortRowSums(x, hxw, rows, sums, [mu](float lane, float v, int64_t r) {
      const float d = v - mu[r];
      return V::MulAdd(d, d, lane);
    });
  }
  for (int64_t r = 0; r < rows; ++r) CenteredSquares(x + r * hxw, mu[r], hxw, 1, sums + r);
}

// small_group_moments (row_kernels.h): up to kSmallGroupBatch groups side by side, so that each
// step of the index-order sums is a vector add across the groups (enough of them for several
// independent chains of double adds) and their divisions and square roots run a vector at a
// time. One group at a time, a float-lane sum per group and its shift, mean and rstd in scalar
// code cost about 300 instructions and the divider's latency per group: 20-35 ns for groups of
// one or two elements (AVX-512, Zen 4). Double arithmetic costs more per element than the float
// lanes do, so larger groups keep those (kSmallGroupMax: at 64 elements this was 15 % slower).
// Columns past the last group, up to a multiple of 8, are left out of the sums; their results
// are dropped.
constexpr int kSmallGroupBatch = 64;
template <typename T>
void SmallGroupMoments(const T *x, int64_t m, int64_t groups, double eps, double *mean, double *rstd,
                       double *squares) {
  constexpr int kB = kSmallGroupBatch;
  static_assert(kB % 8 == 0, "SqrtDoubles takes whole vectors of up to 8 doubles");
  float room[kB * kSmallGroupMax];
  const double count = static_cast<double>(m);
  for (int64_t g0 = 0; g0 < groups; g0 += kB) {
    const int batch = static_cast<int>(groups - g0 < kB ? groups - g0 : kB), cols = (batch + 7) & ~7;
    const float *values = BatchAsFloats(x + g0 * m, batch * m, room);
    double sum[kB], mu[kB], sq[kB], r[kB];
    for (int w = 0; w < kB; ++w) sum[w] = sq[w] = 0.0;
    for (int64_t i = 0; i < m; ++i) {
      for (int w = 0; w < batch; ++w) sum[w] += static_cast<double>(values[w * m + i]);
    }
    for (int w = 0; w < cols; ++w) mu[w] = sum[w] / count;
    for (int64_t i = 0; i < m; ++i) {
      for (int w = 0; w < batch; ++w) {
        const double d = static_cast<double>(values[w * m + i]) - mu[w];
        sq[w] += d * d;
      }
    }
    for (int w = 0; w < cols; ++w) r[w] = sq[w] / count + eps;
    V::SqrtDoubles(r, cols);
    for (int w = 0; w < cols; ++w) r[w] = 1.0 / r[w];
    for (int w = 0; w < batch; ++w) {
      mean[g0 + w] = mu[w];
      rstd[g0 + w] = r[w];
      squares[g0 + w] = sq[w];
    }
  }
}
