// The row loops of row_kernels.h, written once over a vector type V and compiled once
// per ISA: each row_kernels_<isa>.cc includes this file inside its own namespace
// after choosing the target ISA, so nothing here may include a header (a standard
// header's inline functions compiled for AVX-512 could replace the baseline copies
// at link time).
//
// V provides: reg, kWidth (divides kLanes), Zero, Set1, Add, Sub, Mul, MulAdd (a * b + c,
// for reg and for float: fused in the FMA builds, in both forms), Load/Store/Stream
// for float, Half and BFloat16, StoreLanes (floats to memory), FoldRegs and
// FoldRegsViaFloat (FoldLanes and FoldLanesViaFloat below on the kLanes/kWidth
// registers, without the trip through memory), Fence
// (after streaming stores), StreamAlign<T>() in bytes (enough for Stream and
// StreamPair), and SqrtDoubles(v, n) (square roots of n doubles in place, n a multiple of 8).
//
// Pairs: LoadPair(p, a, b) loads 2 * kWidth elements into two registers in a layout of
// the build's choosing, StorePair/StreamPair(p, a, b) store such a pair back in memory
// order, and Unpair(p, a, b) turns a pair (of sums, say) into memory order: a holds
// elements 0..kWidth-1, b the rest (p only selects the type). Element-wise code never
// needs Unpair; the sums unpair their lanes once per block. For float and fp16 the
// layout is memory order; for bf16 the vector builds put the even elements in a and
// the odd ones in b, which makes a bf16 load one load plus a shift and a mask (the
// bf16 is the top half of a float), and a store a blend of two registers.

constexpr int kRegs = kLanes / V::kWidth;
static_assert(kRegs * V::kWidth == kLanes, "a vector width must divide the lane count");
static_assert(kRegs % 2 == 0, "the sums load their lanes in pairs of registers");
static_assert(kBlock % kLanes == 0, "blocks hold whole lane rows");

#include "lane_folds_impl.h"

// x - mu as the float d = fl(x - mu) and its rounding error e = (x - mu) - d, exactly
// (Knuth's TwoSum, valid whatever the magnitudes): see CentredSums (row_kernels.h) for why
// the backward's centred sums add dy * e. Kept as written: fp-contract is off and nothing
// here may be reassociated.
[[gnu::always_inline]] inline typename V::reg CenteredError(typename V::reg x, typename V::reg vmu,
                                                          typename V::reg d) {
  const typename V::reg x_virtual = V::Add(d, vmu);
  const typename V::reg mu_virtual = V::Sub(x_virtual, d);
  return V::Add(V::Sub(x, x_virtual), V::Sub(mu_virtual, vmu));
}
[[gnu::always_inline]] inline float CenteredError(float x, float mu, float d) {
  const float x_virtual = d + mu;
  const float mu_virtual = x_virtual - d;
  return (x - x_virtual) + (mu_virtual - mu);
}

// The two sums of elements [start, end) of one block (end - start <= kBlock), each
// folded into a double. kCentred (CentredSums): the second is sum dy * fl(x - mu) in its
// lanes plus sum dy * e (CenteredError) in lanes of its own, folded apart; otherwise it is
// sum dy * x, which ReduceGrad turns into sum dy * (x - mu) in double. Always inlined: for
// short rows (8x8 = 64 elements) a call per row and per block cost as much as the data.
// `readable`: how many elements from dy and x the caller's rows hold; a partial step
// whose whole vector stays inside them loads it plainly (Select drops the lanes past end).
template <bool kCentred, typename T>
[[gnu::always_inline]] inline void ReduceGradBlock(const T *dy, const T *x, const typename V::reg vmu, float mu,
                                                   int64_t start, int64_t end, int64_t readable, double &block_dy,
                                                   double &block_dyxc) {
  typename V::reg acc_dy[kRegs], acc_dyxc[kRegs], acc_err[kRegs];
  for (int r = 0; r < kRegs; ++r) acc_dy[r] = acc_dyxc[r] = acc_err[r] = V::Zero();
  auto add = [&](int r, typename V::reg d, typename V::reg xv) {
    acc_dy[r] = V::Add(acc_dy[r], d);
    if constexpr (kCentred) {
      const typename V::reg xc = V::Sub(xv, vmu);
      acc_dyxc[r] = V::MulAdd(d, xc, acc_dyxc[r]);
      acc_err[r] = V::MulAdd(d, CenteredError(xv, vmu, xc), acc_err[r]);
    } else {
      acc_dyxc[r] = V::MulAdd(d, xv, acc_dyxc[r]);
    }
  };
  int64_t i = start;
  for (; i + kLanes <= end; i += kLanes) {
    for (int r = 0; r < kRegs; r += 2) {
      typename V::reg d0, d1, x0, x1;
      V::LoadPair(dy + i + r * V::kWidth, d0, d1);
      V::LoadPair(x + i + r * V::kWidth, x0, x1);
      add(r, d0, x0);
      add(r + 1, d1, x1);
    }
  }
  for (int r = 0; r < kRegs; r += 2) {  // lane l of the block back in register l / kWidth
    V::Unpair(dy, acc_dy[r], acc_dy[r + 1]);
    V::Unpair(dy, acc_dyxc[r], acc_dyxc[r + 1]);
    if constexpr (kCentred) V::Unpair(dy, acc_err[r], acc_err[r + 1]);
  }
  // The block's tail goes to lanes 0, 1, ...: whole vectors first (one add per lane,
  // as in the scalar loop below), then the rest lane by lane. The loop over the
  // registers is unrolled so that they are indexed by constants and stay in registers
  // (an index known only at run time put them on the stack).
  int tail_regs = 0;
#pragma GCC unroll 16
  for (int r = 0; r < kRegs; ++r) {
    if (i + V::kWidth > end) break;
    add(r, V::Load(dy + i), V::Load(x + i));
    i += V::kWidth;
    tail_regs = r + 1;
  }
  if constexpr (V::template kPartial<T>) {  // the last elements in one masked step of register tail_regs
    if (i < end) {
      const int left = static_cast<int>(end - i);
      const bool whole = i + V::kWidth <= readable;
      const typename V::reg d = whole ? V::Load(dy + i) : V::LoadFirst(dy + i, left);
      const typename V::reg xv = whole ? V::Load(x + i) : V::LoadFirst(x + i, left);
#pragma GCC unroll 16
      for (int r = 0; r < kRegs; ++r) {
        if (r != tail_regs) continue;
        const typename V::reg kept_dy = acc_dy[r], kept_dyxc = acc_dyxc[r], kept_err = acc_err[r];
        add(r, d, xv);
        acc_dy[r] = V::Select(left, acc_dy[r], kept_dy);
        acc_dyxc[r] = V::Select(left, acc_dyxc[r], kept_dyxc);
        if constexpr (kCentred) acc_err[r] = V::Select(left, acc_err[r], kept_err);
      }
      i = end;
    }
  }
  if (i == end) {  // fold straight from the registers (same tree, same bits)
    block_dy = V::FoldRegsViaFloat(acc_dy);
    block_dyxc = V::FoldRegsViaFloat(acc_dyxc);
    if constexpr (kCentred) block_dyxc += V::FoldRegsViaFloat(acc_err);
    return;
  }
  float lanes_dy[kLanes], lanes_dyxc[kLanes], lanes_err[kLanes];
  for (int r = 0; r < kRegs; ++r) {
    V::StoreLanes(lanes_dy + r * V::kWidth, acc_dy[r]);
    V::StoreLanes(lanes_dyxc + r * V::kWidth, acc_dyxc[r]);
    V::StoreLanes(lanes_err + r * V::kWidth, acc_err[r]);
  }
  for (int l = tail_regs * V::kWidth; i < end; ++i, ++l) {
    const float d = ToFloat(dy[i]), xv = ToFloat(x[i]);
    lanes_dy[l] += d;
    if constexpr (kCentred) {
      const float xc = xv - mu;
      lanes_dyxc[l] = V::MulAdd(d, xc, lanes_dyxc[l]);
      lanes_err[l] = V::MulAdd(d, CenteredError(xv, mu, xc), lanes_err[l]);
    } else {
      lanes_dyxc[l] = V::MulAdd(d, xv, lanes_dyxc[l]);
    }
  }
  block_dy = FoldLanesViaFloat(lanes_dy);
  block_dyxc = FoldLanesViaFloat(lanes_dyxc);
  if constexpr (kCentred) block_dyxc += FoldLanesViaFloat(lanes_err);
}

template <bool kCentred, typename T>
void ReduceGradRows(const T *dy, const T *x, float mu, int64_t hxw, int64_t rows, double *sum_dy, double *sum_dyxc) {
  const typename V::reg vmu = V::Set1(mu);
  for (int64_t r = 0; r < rows; ++r) {
    const T *dy_row = dy + r * hxw, *x_row = x + r * hxw;
    double total_dy = 0.0, total_dyxc = 0.0;  // the blocks in order
    for (int64_t start = 0; start < hxw; start += kBlock) {
      const int64_t end = hxw - start < kBlock ? hxw : start + kBlock;
      double block_dy, block_dyxc;
      ReduceGradBlock<kCentred>(dy_row, x_row, vmu, mu, start, end, (rows - r) * hxw, block_dy, block_dyxc);
      total_dy += block_dy;
      total_dyxc += block_dyxc;
    }
    sum_dy[r] = total_dy;
    // sum dy * x - mu * sum dy: the double product and difference add an error far below
    // the float32 lanes' (|mu| is at most the spread here: no cancellation to speak of).
    sum_dyxc[r] = kCentred ? total_dyxc : total_dyxc - static_cast<double>(mu) * total_dy;
  }
}

template <typename T>
void ReduceGrad(const T *dy, const T *x, float mu, float rstd, int64_t hxw, int64_t rows, double *sum_dy,
                double *sum_dyxc) {
  if (CentredSums(mu, rstd)) {
    ReduceGradRows<true>(dy, x, mu, hxw, rows, sum_dy, sum_dyxc);
  } else {
    ReduceGradRows<false>(dy, x, mu, hxw, rows, sum_dy, sum_dyxc);
  }
}

#include "point_rows_impl.h"  // after CenteredError and ReduceGradBlock, which its sums use

#include "statistics_rows_impl.h"  // the forward statistics' sums

// Scalar elements before the first aligned vector store (streaming needs alignment).
template <typename T>
inline int64_t UnalignedHead(const T *out, int64_t n, bool stream) {
  if (!stream) return 0;
  const uintptr_t align = static_cast<uintptr_t>(V::template StreamAlign<T>());
  int64_t head = 0;
  while (head < n && reinterpret_cast<uintptr_t>(out + head) % align != 0) ++head;
  return head;
}

// The pairs of MapRow from i on, kAhead pairs (kLookaheadLoadBytes of the kInputs inputs)
// computed before the previous kAhead are stored (see StoresAliasLoads); returns where the
// pairs stopped.
template <int kInputs, typename T, typename PairOp, typename StorePair>
[[gnu::always_inline]] inline int64_t PairsLookingAhead(int64_t i, int64_t n, PairOp pair_op, StorePair store_pair) {
  constexpr int64_t kStep = 2 * V::kWidth;
  constexpr int64_t kFit = kLookaheadLoadBytes / (kInputs * kStep * static_cast<int64_t>(sizeof(T)));
  constexpr int kAhead = kFit < 1 ? 1 : kFit > 8 ? 8 : static_cast<int>(kFit);
  if (i + kAhead * kStep > n) return i;
  typename V::reg a[kAhead], b[kAhead];
#pragma GCC unroll 8
  for (int k = 0; k < kAhead; ++k) pair_op(i + k * kStep, a[k], b[k]);
  for (; i + 2 * kAhead * kStep <= n; i += kAhead * kStep) {
    typename V::reg next_a[kAhead], next_b[kAhead];
#pragma GCC unroll 8
    for (int k = 0; k < kAhead; ++k) pair_op(i + (kAhead + k) * kStep, next_a[k], next_b[k]);
#pragma GCC unroll 8
    for (int k = 0; k < kAhead; ++k) {
      store_pair(i + k * kStep, a[k], b[k]);
      a[k] = next_a[k];
      b[k] = next_b[k];
    }
  }
#pragma GCC unroll 8
  for (int k = 0; k < kAhead; ++k) store_pair(i + k * kStep, a[k], b[k]);
  return i + kAhead * kStep;
}

// out[i] = op(i) over one row: scalar up to alignment, pairs of vectors, one vector,
// scalar tail. pair_op(i, a, b) computes the pair of vectors from i in LoadPair's layout.
// partial_op(i, k) is vector_op(i) on the k < kWidth elements from i (V::kPartial builds).
// lookahead: the pairs as PairsLookingAhead orders them (an input lies just below out).
// spill: how many elements past the row the caller lets the tail read and write (rows that
// store their own values afterwards); a tail that fits in the row and them is one whole
// vector, where a masked store (vmaskmovps, or lane by lane) cost more than a short row's
// other steps (32 x 96 x 7 x 7: rows of 49).
template <int kInputs, typename T, typename PairOp, typename VectorOp, typename PartialOp, typename ScalarOp>
inline void MapRow(T *out, int64_t n, bool stream, bool lookahead, int64_t spill, PairOp pair_op,
                   VectorOp vector_op, PartialOp partial_op, ScalarOp scalar_op) {
  const int64_t head = UnalignedHead(out, n, stream);
  int64_t i = 0;
  for (; i < head; ++i) out[i] = FromFloat<T>(scalar_op(i));
  typename V::reg a, b;
  if (lookahead) {
    i = stream ? PairsLookingAhead<kInputs, T>(i, n, pair_op, [out](int64_t k, typename V::reg x, typename V::reg y) {
      V::StreamPair(out + k, x, y);
    })
               : PairsLookingAhead<kInputs, T>(i, n, pair_op, [out](int64_t k, typename V::reg x, typename V::reg y) {
                   V::StorePair(out + k, x, y);
                 });
  }
  if (stream) {
    for (; i + 2 * V::kWidth <= n; i += 2 * V::kWidth) {
      pair_op(i, a, b);
      V::StreamPair(out + i, a, b);
    }
    for (; i + V::kWidth <= n; i += V::kWidth) V::Stream(out + i, vector_op(i));
  } else {
    for (; i + 2 * V::kWidth <= n; i += 2 * V::kWidth) {
      pair_op(i, a, b);
      V::StorePair(out + i, a, b);
    }
    for (; i + V::kWidth <= n; i += V::kWidth) V::Store(out + i, vector_op(i));
  }
  if constexpr (V::template kPartial<T>) {  // a tail long enough for the build's partial store
    if (i < n && i + V::kWidth <= n + spill) {  // a whole vector: see MapRow's `spill`
      V::Store(out + i, vector_op(i));
      return;
    }
    if (n - i >= V::template kPartialStoreMin<T>) {
      V::StoreFirst(out + i, partial_op(i, static_cast<int>(n - i)), static_cast<int>(n - i));
      return;
    }
  }
  for (; i < n; ++i) out[i] = FromFloat<T>(scalar_op(i));
}

template <typename T>
void AffineGrad(const T *dy, const T *x, T *dx, int64_t hxw, int64_t rows, const float *a, float b, float mu, float c,
                bool stream) {
  const typename V::reg vb = V::Set1(b), vmu = V::Set1(mu), vc = V::Set1(c);
  const bool lookahead = StoresAliasLoads(dx, dy) || StoresAliasLoads(dx, x);
  // A row's tail may spill into the rows after it in this call, which store theirs later;
  // not where dx overlaps the inputs, nor with streaming stores.
  const bool may_spill = !stream && !Overlap(dx, dy, rows * hxw) && !Overlap(dx, x, rows * hxw);
  for (int64_t r = 0; r < rows; ++r) {
    const T *dy_row = dy + r * hxw;
    const T *x_row = x + r * hxw;
    const float ar = a[r];
    const typename V::reg va = V::Set1(ar);
    // b * (x - mu) + (a * dy + c): two multiply-adds (fused in the FMA builds) after
    // centring x, which keeps the cancellation of a large mean out of the product.
    auto op = [=](typename V::reg d, typename V::reg xv) {
      return V::MulAdd(vb, V::Sub(xv, vmu), V::MulAdd(va, d, vc));
    };
    auto pair_op = [=](int64_t i, typename V::reg &out0, typename V::reg &out1) {
      typename V::reg d0, d1, x0, x1;
      V::LoadPair(dy_row + i, d0, d1);
      V::LoadPair(x_row + i, x0, x1);
      out0 = op(d0, x0);
      out1 = op(d1, x1);
    };
    auto vector_op = [=](int64_t i) { return op(V::Load(dy_row + i), V::Load(x_row + i)); };
    auto partial_op = [=](int64_t i, int k) { return op(V::LoadFirst(dy_row + i, k), V::LoadFirst(x_row + i, k)); };
    auto scalar_op = [=](int64_t i) {
      return V::MulAdd(b, ToFloat(x_row[i]) - mu, V::MulAdd(ar, ToFloat(dy_row[i]), c));
    };
    MapRow<2>(dx + r * hxw, hxw, stream, lookahead, may_spill ? (rows - 1 - r) * hxw : 0, pair_op, vector_op,
              partial_op, scalar_op);
  }
  if (stream) V::Fence();
}

template <typename T>
void Normalize(const T *x, T *y, int64_t hxw, int64_t rows, float mu, const float *scale, const float *shift,
               bool stream) {
  const typename V::reg vmu = V::Set1(mu);
  const bool lookahead = StoresAliasLoads(y, x);
  const bool may_spill = !stream && !Overlap(y, x, rows * hxw);  // as in AffineGrad
  for (int64_t r = 0; r < rows; ++r) {
    const T *x_row = x + r * hxw;
    const float s = scale[r], t = shift[r];
    const typename V::reg vs = V::Set1(s), vt = V::Set1(t);
    auto op = [=](typename V::reg xv) { return V::MulAdd(V::Sub(xv, vmu), vs, vt); };
    auto pair_op = [=](int64_t i, typename V::reg &out0, typename V::reg &out1) {
      typename V::reg x0, x1;
      V::LoadPair(x_row + i, x0, x1);
      out0 = op(x0);
      out1 = op(x1);
    };
    auto vector_op = [=](int64_t i) { return op(V::Load(x_row + i)); };
    auto partial_op = [=](int64_t i, int k) { return op(V::LoadFirst(x_row + i, k)); };
    auto scalar_op = [=](int64_t i) { return V::MulAdd(ToFloat(x_row[i]) - mu, s, t); };
    MapRow<1>(y + r * hxw, hxw, stream, lookahead, may_spill ? (rows - 1 - r) * hxw : 0, pair_op, vector_op,
              partial_op, scalar_op);
  }
  if (stream) V::Fence();
}

inline void Coefficients(double rstd, double rest, const double *gamma, const double *beta, int64_t rows,
                         float *scale, float *shift) {
  for (int64_t r = 0; r < rows; ++r) {
    const float s = static_cast<float>(rstd * gamma[r]);
    scale[r] = s;
    shift[r] = static_cast<float>(beta[r] - rest * static_cast<double>(s));
  }
}

inline void CoefficientsEach(const double *rstd, const double *rest, int64_t groups, int64_t rows, const double *gamma,
                             const double *beta, float *scale, float *shift) {
  for (int64_t k = 0; k < groups; ++k) {
    Coefficients(rstd[k], rest[k], gamma + k * rows, beta + k * rows, rows, scale + k * rows, shift + k * rows);
  }
}

template <typename T>
RowKernels<T> MakeRowKernels() {
  return RowKernels<T>{&ReduceGrad<T>,       &Sum<T>,          &CenteredSquares<T>, &AffineGrad<T>,
                       &Normalize<T>,        &CenteredSum<T>,  &Coefficients,       &PointGradSums<T>,
                       &PointAffineGrad<T>,  &PointNormalize<T>, &CenteredSumEach<T>, &CenteredSquaresEach<T>,
                       &CoefficientsEach,    &CenteredMoments<T>, &Widen<T>,
                       &Narrow<T>,           &ShortGradSums<T>,   &ShortAffineGrad<T>,
                       &SmallGroupMoments<T>};
}
