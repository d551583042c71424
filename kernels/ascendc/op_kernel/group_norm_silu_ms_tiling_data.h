// Tiling data of GroupNormSiluMs (GroupNorm forward, optionally followed by SiLU), shared
// by the host tiling function and the kernel.
//
// A plain struct (CANN's "standard C++ tiling struct": the host fills it, the kernel reads
// it with GET_TILING_DATA_WITH_STRUCT). Every UB buffer size the kernel passes to
// InitBuffer is derived from these fields on the host, which sums them against the UB.
#ifndef GROUP_NORM_SILU_MS_TILING_DATA_H
#define GROUP_NORM_SILU_MS_TILING_DATA_H

#include <cstdint>

// Tiling modes, chosen by what fits in the unified buffer (UB).
constexpr int64_t GNS_MODE_GROUP_RESIDENT = 0;  // a whole (n, g) group stays in UB: x read once, exact two-pass stats
constexpr int64_t GNS_MODE_CHUNKED = 1;         // the group does not fit: chunks, combined (Chan) stats, x read twice
constexpr int64_t GNS_MODE_EMPTY_GROUPS = 2;    // D * HxW == 0: only mean = 0 and rstd = NaN are written

// Mode 0's batches of whole groups (groupRows > 0): a batch's per-group fp32 vectors (GNS_ROWS_VECTORS
// arrays of groupRows rounded up to 8, group_norm_silu_ms_group_rows.h) and the Brcb blocks of up to
// GNS_ROWS_PIECE groups (a vector repeat a group: at most 255 an instruction), in bcastElems.
constexpr int64_t GNS_ROWS_VECTORS = 11;
constexpr int64_t GNS_ROWS_PIECE = 248;
constexpr int64_t GNS_GATHER_COLUMNS = 2;  // groupRowsGather: a batch's groups as D columns (D <= GNS_MAX_COLUMNS)
constexpr int64_t GNS_MAX_COLUMNS = 8;
constexpr int64_t GnsRowsRound8(int64_t n) { return (n + 7) / 8 * 8; }
constexpr int64_t GnsGroupRowsBcastElems(int64_t groupRows) {
  return GNS_ROWS_VECTORS * GnsRowsRound8(groupRows) +
         8 * (GnsRowsRound8(groupRows) < GNS_ROWS_PIECE ? GnsRowsRound8(groupRows) : GNS_ROWS_PIECE);
}
// The part ring's batches of rows (bcastElems > 0 with ringParts > 0, group_norm_silu_ms_ring_rows.h):
// a part's per-row vectors and Brcb blocks as above, then a group's two per-channel tables of rows.
constexpr int64_t GnsRingRowsBcastElems(int64_t partItems, int64_t rows) {
  return GnsGroupRowsBcastElems(partItems) + 2 * GnsRowsRound8(rows);
}

// Tiling keys: the (x, gamma/beta) dtype pair (mean and rstd are always float32).
constexpr int64_t GNS_KEY_FP32 = 1;       // float / float
constexpr int64_t GNS_KEY_FP16 = 2;       // half / half
constexpr int64_t GNS_KEY_BF16 = 3;       // bfloat16 / bfloat16
constexpr int64_t GNS_KEY_FP16_FP32 = 4;  // half x, float gamma/beta
constexpr int64_t GNS_KEY_BF16_FP32 = 5;  // bfloat16 x, float gamma/beta

struct GroupNormSiluMsTilingData {
  // sizes
  int64_t N;
  int64_t C;
  int64_t HxW;
  int64_t G;
  int64_t D;  // C / G
  int64_t mode;
  // A group seen as `rows` rows of `rowLen` elements, contiguous in GM: the D channels of
  // HxW elements when HxW > 1 (per-row scalar gamma/beta), or one row of D elements when
  // HxW == 1 (gamma/beta are vectors along the row: vectorCoef = 1).
  int64_t rows;
  int64_t rowLen;
  int64_t rowPitch;  // elements between rows in UB: rowLen rounded up to 32 bytes of x's dtype
  int64_t vectorCoef;
  int64_t activateSilu;
  // work split: tasks [0, numTasks) over usedCores blocks, the first tailCores get one more;
  // a block's tasks are consecutive. A task is a slice of sliceItems consecutive chunks of
  // the group task / sliceCount (sliceCount == 1: a whole group). Mode 1 splits groups into
  // slices when N * G < cores; sliceItems is a power of two, so the slices' statistics
  // combine in the same pairwise tree as one block's (results do not depend on the split).
  int64_t sliceCount;
  int64_t sliceItems;
  int64_t numTasks;
  int64_t usedCores;
  int64_t tasksPerCore;
  int64_t tailCores;
  int64_t blockDim;
  // UB layout
  int64_t chunkElems;      // mode 0: rows * rowPitch (the group); mode 1: K, elements per chunk (multiple of 16)
  int64_t chunksPerRow;    // mode 1: ceil(rowLen / K); mode 0: 1
  int64_t coefElems;       // fp32 gamma/beta array length (coefPerBlock: C; mode 0: D or rowPitch; mode 1 vectorCoef: K; else 0)
  int64_t partialElems;    // per-row partial sums (rows rounded up to 8)
  int64_t reduceWorkElems; // ReduceSum work buffer
  int64_t statBatch;       // mean/rstd entries kept in UB before one store to GM
  int64_t ubBytes;         // UB bytes the kernel allocates (for tests and logs)
  // x staging. Mode 0 and streamed chunks: xBuffers (2) buffers of one group / one chunk.
  // staged (mode 1 only): a task's whole x is loaded into one x buffer at the task's start
  // and both passes read it there, so x is read once; xBufferElems is then the group's rows at
  // rowPitch (sliceCount == 1: one copy of its rows, chunks of whole rows) or a slice's chunks
  // at a pitch of chunkElems (one copy each). The chunks, and so the arithmetic, are those of the streamed
  // plan with the same chunkElems: staging changes where x comes from, not the bits.
  int64_t xBuffers;
  int64_t xBufferElems;
  int64_t staged;
  // coefPerBlock (HxW > 1): gamma/beta of all C channels are loaded once per block into the
  // coefficient arrays (coefElems = C rounded up to 16), instead of once per task or by
  // scalar GM reads per channel.
  int64_t coefPerBlock;
  // staged whole rows: y of a task leaves in runs of yRows consecutive rows, one copy per run
  // from a y buffer of yRows * rowPitch (else 1: one copy per chunk from a buffer of chunkElems)
  int64_t yRows;
  // staged whole rows with rowPitch == rowLen: a chunk (item) is rowsPerItem consecutive rows,
  // one vector instruction over all of them where gamma/beta do not differ (else 1)
  int64_t rowsPerItem;
  // buffers of the y queue (2-4): a y buffer is written again only once its store has landed
  // (the MTE3 -> V hand-over waits for the copy's data), so more buffers keep the vector unit
  // from waiting for the store two chunks back; as many as the UB left over allows
  int64_t yBuffers;
  // the part ring (sliceCount == 1, chunks of whole rows; 0: not used): a group's chunks in
  // ringParts parts of partItems chunks, each part one load into one of xBuffers slots of
  // xBufferElems elements; parts 0..ringResident-1 stay in UB between the passes (x read once
  // when ringResident == ringParts), the others are loaded again for pass 2
  int64_t ringParts;
  int64_t ringResident;
  int64_t partItems;
  // (without the ring, partItems > 0 marks staged slices of one-row chunks: a slice's rows land at rowPitch
  // by one copy, and with bcastElems > 0 the vector unit takes them in batches of partItems rows, the
  // ring's batches; chunkElems is then a batch's rows at rowPitch)
  // mode 0 with short rows (rowLen <= 64: one vector repeat a row; per-channel gamma/beta): the
  // floats of the buffer that holds every row's scale and shift broadcast into one 32-byte block
  // each (2 * 8 * rows rounded up to 8), so that one Mul and one Add scale and shift all the rows
  // of a group; 0: one Muls and one Adds a row. With the part ring (ringParts > 0): a part's rows are
  // one batch for the vector unit (GnsRingRowsBcastElems; chunkElems is then the part's rows at rowPitch)
  int64_t bcastElems;
  // mode 0 with HxW == 1 and rows of at most 255 blocks (group_norm_silu_ms_group_rows.h; 0: a group at a
  // time): a  // block's groups go through UB in batches of up to groupRows, each group a row of D elements at
  // rowPitch; every per-group value (shift, sums, mean, rstd) is one element of a vector over the
  // batch, and gamma/beta are rows of a table of groupRows + G rows (coefElems each) built once.
  // bcastElems then holds the batch's per-group vectors and Brcb blocks, statBatch two slots of
  // groupRows rounded up to 8 (mean and rstd leave a batch at a time).
  int64_t groupRows;
  // with groupRows, rows of D elements that are not a 32-byte multiple (a DMA burst each otherwise): a
  // batch's x and y move as one contiguous run, and Gather spreads x into the rows at rowPitch and
  // packs y back (group_norm_ms_gather.h's tables); 0: a burst a row
  // GNS_GATHER_COLUMNS (2): groups of 2..8 elements, Gather spreads a batch into D columns of the batch
  // instead (group_norm_silu_ms_group_columns.h; groupRows then a multiple of G)
  int64_t groupRowsGather;
  // attributes
  float eps;
  float swishScale;
};

#endif  // GROUP_NORM_SILU_MS_TILING_DATA_H
