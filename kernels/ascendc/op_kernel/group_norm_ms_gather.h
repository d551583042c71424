// Gather's offset tables, shared by the GroupNormGradMs class (mode 3, hwOneGather) and the
// GroupNormSiluMs class (batches of groups, groupRowsGather): a batch of groups of D elements moves
// between GM and UB as one contiguous run, and is computed in rows P elements apart.
//   spread[r * P + c] = 4 (r D + min(c, D - 1))  takes a run into the rows (a row's padding repeats
//                                                its last element, which nothing reads),
//   pack[r * D + c]   = 4 (r P + c)              takes the rows back into a run,
// as byte offsets of fp32 elements. The scalar unit writes the first P entries of spread and the first
// whole rows of pack that are a multiple of 8 entries (D's least common multiple with 8, so every
// later Adds starts 32-byte aligned); int32 Adds then double each run. Between the two the caller
// orders the scalar writes before the vector unit (S -> V).
#ifndef GROUP_NORM_MS_GATHER_H
#define GROUP_NORM_MS_GATHER_H

#include "kernel_operator.h"

namespace GroupNormMsGather {
using namespace AscendC;

// Entries of pack the scalar unit writes: whole rows of D, a multiple of 8 entries (at most packLen).
__aicore__ inline int64_t PackHead(int64_t D, int64_t packLen) {
  int64_t rows = 8;  // 8 / gcd(D, 8) rows
  while (rows > 1 && (D * (rows / 2)) % 8 == 0) rows /= 2;
  return (rows * D < packLen) ? rows * D : packLen;
}

// The scalar unit's part (S).
__aicore__ inline void WriteTableHeads(const LocalTensor<int32_t> &spread, const LocalTensor<int32_t> &pack,
                                       int64_t packLen, int64_t D, int64_t P) {
  for (int64_t c = 0; c < P; ++c) spread.SetValue(c, static_cast<int32_t>(4 * (c < D ? c : D - 1)));
  const int64_t head = PackHead(D, packLen);
  for (int64_t j = 0; j < head; ++j) pack.SetValue(j, static_cast<int32_t>(4 * (j / D * P + j % D)));
}

// The vector unit's part (V), after the caller's S -> V synchronisation.
__aicore__ inline void GrowTables(const LocalTensor<int32_t> &spread, int64_t spreadLen,
                                  const LocalTensor<int32_t> &pack, int64_t packLen, int64_t D, int64_t P) {
  for (int64_t have = P; have < spreadLen; have *= 2) {
    const int64_t n = (spreadLen - have < have) ? spreadLen - have : have;
    Adds(spread[have], spread, static_cast<int32_t>(4 * (have / P) * D), static_cast<int32_t>(n));
  }
  for (int64_t have = PackHead(D, packLen); have < packLen; have *= 2) {
    const int64_t n = (packLen - have < have) ? packLen - have : have;
    Adds(pack[have], pack, static_cast<int32_t>(4 * (have / D) * P), static_cast<int32_t>(n));
  }
}

// rowOf[j] = 4 (j / D) over `len` entries: the byte offset of row j / D's value in an array of one
// fp32 value a row, so that one Gather spreads a per-row coefficient over every element of a run of
// rows of D (GroupNormGradMs's dx pass on runs). The scalar unit writes the first whole rows that
// are a multiple of 8 entries (PackHead), the caller orders them before the vector unit (S -> V),
// then int32 Adds double the run (each `have` is whole rows: entry have + j is row have / D + j / D).
__aicore__ inline void WriteRowTableHead(const LocalTensor<int32_t> &rowOf, int64_t len, int64_t D) {
  const int64_t head = PackHead(D, len);
  for (int64_t j = 0; j < head; ++j) rowOf.SetValue(j, static_cast<int32_t>(4 * (j / D)));
}
__aicore__ inline void GrowRowTable(const LocalTensor<int32_t> &rowOf, int64_t len, int64_t D) {
  for (int64_t have = PackHead(D, len); have < len; have *= 2) {
    const int64_t n = (len - have < have) ? len - have : have;
    Adds(rowOf[have], rowOf, static_cast<int32_t>(4 * (have / D)), static_cast<int32_t>(n));
  }
}

}  // namespace GroupNormMsGather

#endif  // GROUP_NORM_MS_GATHER_H
