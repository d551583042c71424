// Member definitions of KernelGroupNormGradMs (group_norm_grad_ms.h) for mode 3 in columns: groups of
// D <= 8 channels (hwOneGather) without the padding of their rows to 16 elements.
// Included by group_norm_grad_ms.h after group_norm_grad_ms_hw_one.h; not a header of its own.
//
// A batch's run of groups (D contiguous channels each) is spread by Gather into D columns: column k holds
// channel k of every group of the batch, contiguous, so each per-group coefficient is an operand of the
// same length as a column and applies with D flat instructions, and the per-group sums over D are D - 1
// flat Adds. Padded rows of 16 elements made 8000x64 G32 (D = 2) spread, compute and gather 8 times the
// data, and every per-group step a repeat a group. Every element sees the same fp32 operations on the
// same values as in the padded rows (the sums in WholeReduceSum's lane order), so the bits are those of
// the padded layout.
#ifndef GROUP_NORM_GRAD_MS_HW_COLUMNS_H
#define GROUP_NORM_GRAD_MS_HW_COLUMNS_H

namespace GroupNormGradMsKernel {

constexpr int64_t HW_COLUMNS_MAX_D = 8;

// The groups of a batch in columns, or 0 where columns do not apply (Init keeps it: hwColumnsRows_).
// Columns apply to D <= 8 of the run layout (hwOneGather), the coefficients as vectors, and either
// whole samples of G a multiple of 8 (each sample's groups start 32-byte aligned in a column, for the
// per-channel sums) or D = 1 (a column is the run itself: the workspace rows store as they are).
// A batch: the run (rows * D elements) and the columns (D column strides) fit in K, the per-group
// arrays (five, and for D > 2 the sums' tree: (D + 1) / 2) in FloatBuf(3), the groups in a stat slot
// (the host sizes the slots for columns: kHwColumnsStatWindow); with hwOneSamples whole samples, and
// the sums' table (D * G entries) beside the pack table.
template <typename T, typename U, bool SILU>
__aicore__ inline int64_t KernelGroupNormGradMs<T, U, SILU>::HwColumnsPlan() const {
  if (t_->mode != GNG_MODE_HW_ONE || t_->hwOneGather == 0 || t_->D > HW_COLUMNS_MAX_D) return 0;
  if (t_->hwOneSamples > 0 ? t_->G % FLOATS_PER_BLOCK != 0 : t_->D != 1) return 0;
  const int64_t K = t_->chunkElems;
  const int64_t D = t_->D;
  const int64_t sampleTable = t_->hwOneSamples > 0 && D > 1 ? D * t_->G : 0;
  int64_t rows = (K - sampleTable) / D;
  const int64_t arrays = (K / (5 + (D > 2 ? (D + 1) / 2 : 0))) / FLOATS_PER_BLOCK * FLOATS_PER_BLOCK;
  if (arrays < rows) rows = arrays;
  rows = rows / FLOATS_PER_BLOCK * FLOATS_PER_BLOCK;  // the column stride is the batch's rows
  if (t_->statWindowElems < rows) rows = t_->statWindowElems;
  if (t_->hwOneSamples > 0) rows = rows / t_->G * t_->G;
  return rows > 0 ? rows : 0;
}

// The offset tables (gatherBuf_), once a core, S the column stride:
//   spread[k * S + q] = 4 (q D + k)        takes the run into the columns (Gather into FloatBuf(0/1/2..)),
//   pack[q * D + k]   = 4 (k S + q)        takes the columns back into a run (dx), at K,
//   sums[g * D + k]   = 4 (k G + g)        the same for a task's per-channel sums (hwOneSamples), at K + D S.
// The scalar unit writes the first 8 entries (groups) of each, then int32 Adds double them.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::HwColumnsBuildTables() {
  const int64_t D = t_->D;
  const int64_t S = HwColumnStride();
  const int64_t K = t_->chunkElems;
  LocalTensor<int32_t> spread = gatherBuf_.Get<int32_t>();
  LocalTensor<int32_t> pack = gatherBuf_.Get<int32_t>()[K];
  LocalTensor<int32_t> sums = gatherBuf_.Get<int32_t>()[K + D * S];
  const bool sampleSums = t_->hwOneSamples > 0;
  for (int64_t q = 0; q < FLOATS_PER_BLOCK; ++q) spread.SetValue(q, static_cast<int32_t>(4 * q * D));
  for (int64_t j = 0; j < FLOATS_PER_BLOCK * D; ++j) {
    pack.SetValue(j, static_cast<int32_t>(4 * (j % D * S + j / D)));
    if (sampleSums) sums.SetValue(j, static_cast<int32_t>(4 * (j % D * t_->G + j / D)));
  }
  Sync<HardEvent::S_V>();
  for (int64_t have = FLOATS_PER_BLOCK; have < S; have *= 2) {
    const int64_t n = (S - have < have) ? S - have : have;
    Adds(spread[have], spread, static_cast<int32_t>(4 * have * D), static_cast<int32_t>(n));
  }
  for (int64_t k = 1; k < D; ++k) Adds(spread[k * S], spread, static_cast<int32_t>(4 * k), static_cast<int32_t>(S));
  for (int64_t have = FLOATS_PER_BLOCK * D; have < S * D; have *= 2) {
    const int64_t n = (S * D - have < have) ? S * D - have : have;
    Adds(pack[have], pack, static_cast<int32_t>(4 * (have / D)), static_cast<int32_t>(n));
  }
  for (int64_t have = FLOATS_PER_BLOCK * D; sampleSums && have < t_->C; have *= 2) {
    const int64_t n = (t_->C - have < have) ? t_->C - have : have;
    Adds(sums[have], sums, static_cast<int32_t>(4 * (have / D)), static_cast<int32_t>(n));
  }
}

// The oldest load of `que` (a run of rows groups) as fp32 columns in dst: cast (or Muls by 1) first, as
// the padded layout does, then spread (D = 1: the run is the column).
template <typename T, typename U, bool SILU>
template <typename Que>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::HwColumnsTakeRows(Que &que, int64_t rows,
                                                                            const LocalTensor<float> &dst) {
  if (t_->D == 1) {
    TakeAsFloat<T>(que, rows, dst);
    return;
  }
  LocalTensor<T> staging = que.template DeQue<T>();
  LocalTensor<float> run = FloatBuf(2);
  RowAsFloat<T>(run, staging, rows * t_->D);
  que.FreeTensor(staging);
  Gather(dst, run, gatherBuf_.Get<uint32_t>(), 0, static_cast<uint32_t>(HwOneSpan(rows)));
}

// dst's columns op= the per-group coefficient array coef (Mul, or Add): each element the fp32 product
// (sum) of the values a per-group Muls (Adds) takes.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::HwColumnsApply(const LocalTensor<float> &dst,
                                                                         const LocalTensor<float> &coef,
                                                                         int64_t rows, bool add) {
  const int64_t S = HwColumnStride();
  for (int64_t k = 0; k < t_->D; ++k) {
    if (add) {
      Add(dst[k * S], dst[k * S], coef, static_cast<int32_t>(rows));
    } else {
      Mul(dst[k * S], dst[k * S], coef, static_cast<int32_t>(rows));
    }
  }
}

// dst[q] = the sum of group q's D elements (src's columns) in WholeReduceSum's order for a mask of D
// lanes: neighbours paired level by level, a lane without a neighbour paired with a masked lane (+ 0),
// and the root + 0 (the masked half of the 64 lanes), which only makes a -0 sum +0. The levels in
// FloatBuf(3) from 5 r8 (the five per-group arrays before it).
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::HwColumnsSum(const LocalTensor<float> &dst,
                                                                       const LocalTensor<float> &src, int64_t rows) {
  const int32_t n = static_cast<int32_t>(rows);
  const int64_t r8 = HwOneRows8(rows);
  LocalTensor<float> level = FloatBuf(3)[5 * HwColumnStride()];
  LocalTensor<float> from = src;
  int64_t stride = HwColumnStride();
  int64_t lanes = t_->D;
  while (lanes > 1) {
    const int64_t pairs = (lanes + 1) / 2;
    for (int64_t i = 0; i < pairs; ++i) {
      const LocalTensor<float> out = pairs == 1 ? dst : level[i * r8];
      if (2 * i + 1 < lanes) {
        Add(out, from[2 * i * stride], from[(2 * i + 1) * stride], n);
      } else {
        Adds(out, from[2 * i * stride], 0.0f, n);
      }
    }
    from = level;
    stride = r8;
    lanes = pairs;
  }
  Adds(dst, lanes == t_->D ? src : dst, 0.0f, n);  // D = 1: the column itself + 0
}

// A sample's per-channel values (its G groups of the columns, from group s) added to the task's sums
// acc (db's D columns of G, then dg's): dy's columns and dg's follow each other S apart (HwOneDgAt), so
// with G <= 64 one Add takes both, a repeat a column; else an Add a column.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::HwColumnsAccumulate(const LocalTensor<float> &acc,
                                                                              const LocalTensor<float> &dyF,
                                                                              int64_t s) {
  const int64_t G = t_->G;
  const int64_t S = HwColumnStride();
  const int64_t columns = 2 * t_->D;
  if (G <= 64 && S / FLOATS_PER_BLOCK <= 255) {
    const uint8_t accRep = BlockStride(G / FLOATS_PER_BLOCK);
    const BinaryRepeatParams params(1, 1, 1, accRep, accRep, BlockStride(S / FLOATS_PER_BLOCK));
    Add(acc, acc, dyF[s], static_cast<uint64_t>(G), RepeatTimes(columns), params);
    return;
  }
  for (int64_t k = 0; k < columns; ++k) Add(acc[k * G], acc[k * G], dyF[k * S + s], static_cast<int32_t>(G));
}

// A batch's per-channel values (its samples' rows of the 2 D columns, S apart from dyF) added to the task's
// sums acc. A full batch of B = 2^a b samples (b odd) is first summed as a tree: level 1 adds samples
// 2i and 2i + 1 of every column into row i of FloatBuf(2) (gdy's, free until gamma * dy), each later
// level adds rows 2^j apart in place, each level one Add over every column (B / 2^j is even, so no pair
// crosses a column); acc then adds the b rows left a column. One instruction and one compiler barrier a
// level, not one a sample (8000x64 G32: 167 dependent Adds a core). The order is fixed by the batch,
// which the tiling sets from the shape, not the core count; a partial batch (a task's last), G > 64 or
// strides past 255 blocks add sample by sample.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::HwColumnsAccumulateBatch(const LocalTensor<float> &acc,
                                                                                   const LocalTensor<float> &dyF,
                                                                                   int64_t rows) {
  const int64_t G = t_->G;
  const int64_t S = HwColumnStride();
  const int64_t columns = 2 * t_->D;
  const int64_t B = rows / G;  // samples a column
  int64_t levels = 0;          // tree levels: while the rows a column halve evenly and the strides fit
  if (rows == S && G <= 64 && rows / 2 / FLOATS_PER_BLOCK <= MAX_REPEAT) {  // (the last Adds' column stride)
    while ((B >> levels) % 2 == 0 && (G << (levels + 1)) / FLOATS_PER_BLOCK <= MAX_REPEAT) ++levels;
  }
  if (levels == 0) {
    for (int64_t s = 0; s < rows; s += G) HwColumnsAccumulate(acc, dyF, s);
    return;
  }
  const LocalTensor<float> tree = FloatBuf(2);
  HwColumnsPairRows(tree, dyF, columns * B / 2, 1, 2, 1);
  for (int64_t j = 1; j < levels; ++j) {
    const int64_t step = int64_t{1} << j;  // level j + 1: rows 2^(j-1) apart, pairs 2^j apart
    HwColumnsPairRows(tree, tree, columns * B / (2 * step), step, step, step / 2);
  }
  const int64_t left = B >> levels;             // rows a column still to add
  const int64_t spacing = int64_t{1} << (levels - 1);  // their rows' spacing in tree
  const uint8_t accRep = BlockStride(G / FLOATS_PER_BLOCK);
  const uint8_t colRep = BlockStride(left * spacing * G / FLOATS_PER_BLOCK);
  const BinaryRepeatParams params(1, 1, 1, accRep, accRep, colRep);
  for (int64_t t = 0; t < left; ++t) {
    Add(acc, acc, tree[t * spacing * G], static_cast<uint64_t>(G), RepeatTimes(columns), params);
  }
}

// dst row (dstStep i) = src row (srcStep i) + src row (srcStep i + apart), rows of G floats, for
// `pairs` pairs: repeat-form Adds of up to 255 pairs (independent of each other: no barrier between).
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::HwColumnsPairRows(const LocalTensor<float> &dst,
                                                                            const LocalTensor<float> &src,
                                                                            int64_t pairs, int64_t dstStep,
                                                                            int64_t srcStep, int64_t apart) {
  const int64_t G = t_->G;
  const int64_t blocks = G / FLOATS_PER_BLOCK;
  const BinaryRepeatParams params(1, 1, 1, BlockStride(dstStep * blocks), BlockStride(srcStep * blocks),
                                  BlockStride(srcStep * blocks));
  for (int64_t p0 = 0; p0 < pairs; p0 += MAX_REPEAT) {
    const int64_t n = (pairs - p0 < MAX_REPEAT) ? pairs - p0 : MAX_REPEAT;
    Add(dst[p0 * dstStep * G], src[p0 * srcStep * G], src[(p0 * srcStep + apart) * G], static_cast<uint64_t>(G),
        RepeatTimes(n), params);
  }
}

// The task's per-channel sums (hwAccBuf_: db columns, then dg columns, C apart) as channel rows into dst
// (db at 0, dg at C), for the workspace or dgamma/dbeta stores.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::HwColumnsPackSums(const LocalTensor<float> &dst) {
  LocalTensor<float> acc = hwAccBuf_.Get<float>();
  const int64_t C = t_->C;
  if (t_->D == 1) {
    Muls(dst, acc, 1.0f, static_cast<int32_t>(2 * C));
    return;
  }
  LocalTensor<uint32_t> table = gatherBuf_.Get<uint32_t>()[t_->chunkElems + t_->D * HwColumnStride()];
  Gather(dst, acc, table, 0, static_cast<uint32_t>(C));
  Gather(dst[C], acc[C], table, 0, static_cast<uint32_t>(C));
}

// gamma (beta) for a batch: with whole samples one sample's C values (the same for every sample), else
// (D = 1) the run's own G-range of one sample; one DMA.
template <typename T, typename U, bool SILU>
template <typename Que>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::HwColumnsIssueAffine(Que &que, const GlobalTensor<U> &src,
                                                                               int64_t q0, int64_t rows) {
  LocalTensor<U> staging = que.template AllocTensor<U>();
  if (t_->hwOneSamples > 0) {
    LoadRow(staging, src, 0, t_->C);
  } else {
    LoadRow(staging, src, q0 % t_->G, rows);
  }
  que.EnQue(staging);
}

// The loaded gamma (beta) as fp32 columns of `rows` groups in dst: with whole samples copied sample to
// sample (Muls by 1.0f, exact; the copied run doubling), then spread as the data. The run goes where
// nothing lives yet: with SILU (gamma and beta before the batch's dg) dg's rows of floatOutBuf_, a buffer
// of its own (Gather's source may not reach its destination, beta's FloatBuf(4)); else FloatBuf(2),
// before gamma * dy is formed there.
template <typename T, typename U, bool SILU>
template <typename Que>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::HwColumnsTakeAffine(Que &que, const LocalTensor<float> &dst,
                                                                              int64_t rows) {
  const int64_t D = t_->D;
  const LocalTensor<float> free = SILU ? floatOutBuf_.Get<float>()[t_->chunkElems] : FloatBuf(2);
  const LocalTensor<float> run = D == 1 ? dst : free;
  const int64_t loaded = t_->hwOneSamples > 0 ? t_->C : rows;
  const int64_t span = rows * D;
  TakeAsFloat<U>(que, loaded, run);
  for (int64_t have = loaded; have < span; have *= 2) {
    const int64_t n = (span - have < have) ? span - have : have;
    Muls(run[have], run, 1.0f, static_cast<int32_t>(n));
  }
  if (D > 1) Gather(dst, run, gatherBuf_.Get<uint32_t>(), 0, static_cast<uint32_t>(HwOneSpan(rows)));
}

}  // namespace GroupNormGradMsKernel

#endif  // GROUP_NORM_GRAD_MS_HW_COLUMNS_H
