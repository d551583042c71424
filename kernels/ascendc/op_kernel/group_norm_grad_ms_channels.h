// Member definitions of KernelGroupNormGradMs (group_norm_grad_ms.h) for modes 0-2: the group
// tasks (one (n, g) group, or group g over every n), the per-channel sums db, dg of a task's
// channels and their dx, over the items of the load stream;
// with SILU the swish gradient g replaces dy right after xhat is formed (swish_grad_math.h).
// Included by group_norm_grad_ms.h after the class; not a header of its own.
#ifndef GROUP_NORM_GRAD_MS_CHANNELS_H
#define GROUP_NORM_GRAD_MS_CHANNELS_H

namespace GroupNormGradMsKernel {

// The repeat parameters of a Mul/Add over rows `stride` floats apart (<= 64: one repeat a row)
// whose second source is a 32-byte block per row (BroadcastRows): that source's block stride 0
// reads its row's block in each of the repeat's 8 DataBlocks, its repeat stride of one block
// moves to the next row's (asc-devkit docs/zh/api/SIMD-API/基础API/Memory矢量计算/SIMD计算说明/
// 高维切分.md: a source blkStride of 0 reuses the first DataBlock; the destination's is 1).
__aicore__ inline BinaryRepeatParams RowBlockParams(int64_t stride) {
  const uint8_t pitch = BlockStride(stride / FLOATS_PER_BLOCK);
  return BinaryRepeatParams(1, 1, 0, pitch, pitch, 1);
}

// Brcb of `repeats` repeats, each 8 scalars of src into 8 consecutive blocks of dst, in
// instructions of at most MAX_REPEAT (a group of 2048 rows needs 256: BroadcastRows).
__aicore__ inline void BrcbRows(const LocalTensor<float> &dst, const LocalTensor<float> &src, int64_t repeats) {
  const BrcbRepeatParams params(1, 8);  // 8 consecutive blocks a repeat, the next 8 after them
  for (int64_t done = 0; done < repeats; done += MAX_REPEAT) {
    const int64_t now = repeats - done < MAX_REPEAT ? repeats - done : MAX_REPEAT;
    Brcb(dst[done * FLOATS_PER_BLOCK * FLOATS_PER_BLOCK], src[done * FLOATS_PER_BLOCK], RepeatTimes(now), params);
  }
}

// groupAcrossN: group g of every sample; dgamma/dbeta of its channels accumulate in UB over
// n = 0..N-1 (the order of stage 2, so the bits are the same) and are stored once.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::GroupAcrossNTask(int64_t g, bool more) {
  const int32_t D = static_cast<int32_t>(t_->D);
  LocalTensor<float> accDb = StatArray(3);
  LocalTensor<float> accDg = StatArray(4);
  Duplicate(accDb, 0.0f, D);
  Duplicate(accDg, 0.0f, D);
  for (int64_t n = 0; n < t_->N; ++n) {
    GroupTask(n * t_->G + g, n + 1 < t_->N ? g : (more ? g + 1 : -1));
    Add(accDb, accDb, StatArray(0), D);
    Add(accDg, accDg, StatArray(1), D);
  }
  if (t_->dbetaRequired != 0) StoreFromFloat(outQue_, dbetaGm_, g * D, D, accDb, 0.0f, false);
  if (t_->dgammaRequired != 0) StoreFromFloat(outQue_, dgammaGm_, g * D, D, accDg, 0.0f, false);
}

// Modes 0-2, one (n, g) group. gamma (and beta) stay in UB from one task to the next of the
// same group (groupAcrossN runs group g for every n): loaded once per group. With affineAhead
// the next group's are loaded while this task runs (the first task's by Process, ahead of the
// stream), or (AFFINE_TABLE) the core's groups' all at once by Process and cast per group;
// else issued before the mean/rstd window is waited for, so the two loads' latencies overlap.
// With the workspace, db and dg are a sumsQue_ tensor (see TakeSums).
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::GroupTask(int64_t task, int64_t nextG) {
  const int64_t n = task / t_->G;
  const int64_t g = task % t_->G;
  const int64_t D = t_->D;
  const bool ahead = t_->affineAhead != 0;
  BeginHeldScope();
  LocalTensor<float> db = TakeSums();
  LocalTensor<float> dg = db[t_->statElems];
  LocalTensor<float> gamma = StatArray(2);
  const bool table = t_->affineAhead == AFFINE_TABLE;
  const bool newAffine = ahead && g != gammaGroup_;
  if (newAffine) TakeAffine(g);
  if (ahead && !table && nextG >= 0 && nextG != g) IssueAffine(nextG);  // before the stream's next loads
  const bool newGamma = !SILU && !ahead && t_->dxRequired != 0 && g != gammaGroup_;
  if (newGamma) IssueLoad(statQue_, gammaGm_, g * D, D, false);  // early: off the critical path
  const float mean = Stat(true, task);
  const float rstd = Stat(false, task);
  if constexpr (SILU) {
    if (!ahead) LoadAffine(g);  // the sums pass needs gamma and beta already
  }
  ChannelSums(g * D, D, 0, mean, rstd, db, 0);
  float c1 = 0.0f;
  float c2 = 0.0f;
  if (t_->dxRequired != 0) {
    if (newGamma) {
      TakeAsFloat<U>(statQue_, D, gamma);
      gammaGroup_ = g;
    }
    GroupCoefficients(db, dg, gamma, &c1, &c2);
  }
  StoreSums(db, n * t_->C + g * D, D);
  if (t_->dxRequired != 0) ChannelDx(n, g * D, D, 0, mean, rstd, gamma, 0, rstd * c2, rstd * c1);
}

// db and dg of a task (dg statElems after db): a sumsQue_ tensor when they go to the workspace.
// Its buffers (two; three in mode 0, whose tasks are short) are taken in turn, so a task waits
// (in AllocTensor) only for the workspace copy of the task two (three) back.
template <typename T, typename U, bool SILU>
__aicore__ inline LocalTensor<float> KernelGroupNormGradMs<T, U, SILU>::TakeSums() {
  return t_->needWorkspace != 0 ? sumsQue_.template AllocTensor<float>() : StatArray(0);
}

// With the workspace: db and dg (from TakeSums) to cells [cell, cell + len) of the workspace
// arrays, through sumsQue_ (its EnQue / DeQue order the vector or scalar writes before the
// copies), and the tensor is given back.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::StoreSums(LocalTensor<float> &db, int64_t cell,
                                                                    int64_t len) {
  if (t_->needWorkspace == 0) return;
  sumsQue_.EnQue(db);
  db = sumsQue_.template DeQue<float>();
  StoreToWorkspace(wsDbGm_, cell, len, db);
  StoreToWorkspace(wsDgGm_, cell, len, db[t_->statElems]);
  sumsQue_.FreeTensor(db);
}

// Whether the partials of both row sums of a channel (db's and dg's) fit side by side in the halves of
// the reduce work buffer, so dg's sums do not wait (a compiler V barrier) for db's to have read theirs:
// rows up to 64 elements need no partials.
template <typename T, typename U, bool SILU>
__aicore__ inline bool KernelGroupNormGradMs<T, U, SILU>::DbDgSideBySide(int32_t len) const {
  return len <= 64 || DbDgHalf() >= RowPartialElems(len);
}

// db[0..rows) and dg[0..rows): the row sums of dy's and prod's `rows` rows of len (stride apart).
// Side by side, each step of both sums in turn (RowSums: one V barrier a step, not two); else one
// sum after the other.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::DbDgRowSums(const LocalTensor<float> &db,
                                                                      const LocalTensor<float> &dg,
                                                                      const LocalTensor<float> &dy,
                                                                      const LocalTensor<float> &prod, int64_t rows,
                                                                      int64_t stride, int32_t len) {
  if (DbDgSideBySide(len)) {
    const RowSumOperands both[2] = {{db, dy, ReduceWork()}, {dg, prod, ReduceWork()[DbDgHalf()]}};
    RowSums(both, 2, rows, stride, len, DbDgHalf());
    return;
  }
  RowSums(db, dy, rows, stride, len, ReduceWork(), t_->reduceWorkElems);
  RowSums(dg, prod, rows, stride, len, ReduceWork(), t_->reduceWorkElems);
}

// db and dg of `channels` channels (HxW slice `slice` of each) into db[0..channels) and
// dg[0..channels) = db[statElems..statElems + channels) (V writes, or S writes when a slice has
// several chunks). Mode 0 keeps dy and x - mean resident (xhat with SILU). SILU: affineIndex is
// channel c0's index in the loaded gamma/beta arrays.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::ChannelSums(
    int64_t c0, int64_t channels, int64_t slice, float mean, float rstd, const LocalTensor<float> &db,
    int64_t affineIndex) {
  const LocalTensor<float> dg = db[t_->statElems];
  const int64_t chunks = SliceChunks(slice);
  const bool resident = t_->mode == GNG_MODE_GROUP_RESIDENT;
  const int64_t cpi = t_->channelsPerItem;  // channels per item, one DMA (1 with the channel split or HxW chunks)
  const int64_t items = (channels + cpi - 1) / cpi * chunks;
  const int64_t stride = t_->residentStride;
  LocalTensor<float> red = ReduceDst();
  // mode 0: the group is one item (channels == cpi); mode 1: rows of the group's blocks from the item's
  const bool bcast = t_->bcastElems > 0;
  if (bcast && (resident || SILU)) {  // needs only gamma (beta): V works on it while the item loads
    BroadcastRows(rstd, c0 / t_->D, resident && t_->dxRequired != 0);
  }
  const Centring cen = CentringOf(mean, rstd);  // x - centre, then the sums less shift * db
  CascadeSum dbSum;
  CascadeSum dgSum;
  dbSum.Reset();
  dgSum.Reset();
  for (int64_t item = 0; item < items; ++item) {
    const int64_t local = (item / chunks) * cpi;
    const int64_t chunk = item % chunks;
    const int32_t len = static_cast<int32_t>(ItemLen(slice, chunk));
    const int64_t rows = (channels - local < cpi) ? channels - local : cpi;
    const int32_t span = static_cast<int32_t>((rows - 1) * stride + len);
    LocalTensor<float> dyF = resident ? ResidentDy(local) : FloatBuf(0);
    LocalTensor<float> xF = resident ? ResidentX(local) : FloatBuf(1);
    LocalTensor<float> tmp = FloatBuf(resident ? 0 : 2);
    TakeItem(span, cen.centre, dyF, xF);
    // Mode 0 without SILU keeps x - mean resident: its dx then multiplies x - mean by
    // XhatFactor * b, as the channel split's dx does, so the tiling's choice between the two
    // (it depends on the core count) gives the same bits.
    LocalTensor<float> xhat = (resident && !SILU) ? tmp : xF;
    Muls(xhat, xF, XhatFactor(cen.centre, rstd), span);
    if constexpr (SILU) {  // dz -> g (mode 0: the resident dy, once for both passes); -t in tmp
      if (affineUnsynced_ && !bcast) {  // (the broadcast path reads gamma/beta on the vector unit only)
        Sync<HardEvent::V_S>();  // TakeAffine's casts, before AffineT's GetValue reads
        affineUnsynced_ = false;
      }
      if (bcast) {  // AffineT's products and sums, every row at once: each row's whole stride, as
        // AffineT's rows but the last (whose padding it leaves: here computed too, in bounds, unused)
        AffineTRows(tmp, xF, affineIndex + local, rows, cen.shift);
      } else {
        AffineT(tmp, xF, StatArray(2), BetaArray(), affineIndex + local, -swishScale_, rows, stride, len,
                cen.shift);  // -t
      }
      SwishGradFromNegT(dyF, tmp, FloatBuf(resident ? 1 : 3), Ones(), span);
    }
    Mul(tmp, dyF, xhat, span);
    if (chunks == 1) {
      // Modes 1-2 with one row: dy (FloatBuf(0)) and the product (FloatBuf(2)) are two rows 2K
      // apart, and dg is db[statElems]: one call.
      if (!resident && rows == 1 && DbDgSideBySide(len)) {
        RowSums(db[local], dyF, 2, 2 * t_->chunkElems, len, ReduceWork(), t_->reduceWorkElems, t_->statElems);
        continue;
      }
      DbDgRowSums(db[local], dg[local], dyF, tmp, rows, stride, len);
      continue;
    }
    ReduceSum(red, dyF, ReduceWork(), len);  // each ends with its scalar store (V -> S inside)
    ReduceSum(red[1], tmp, ReduceWork(), len);
    dbSum.Add(red.GetValue(0));
    dgSum.Add(red.GetValue(1));
    if (chunk == chunks - 1) {
      db.SetValue(local, dbSum.Total());
      dg.SetValue(local, dgSum.Total());
      dbSum.Reset();
      dgSum.Reset();
    }
  }
  if (chunks > 1) Sync<HardEvent::S_V>();  // vector and MTE3 readers of db/dg follow the scalar writes
  if (cen.shift != 0.0f) {
    // dg = sum dy * (x - centre) * factor - shift * db, each channel's on its own (the same bits
    // whether a call has one channel or the group's D), in pieces of the work buffer
    LocalTensor<float> tmp = FloatBuf(resident ? 0 : 2);
    for (int64_t first = 0; first < channels; first += t_->chunkElems) {
      const int32_t count = static_cast<int32_t>(channels - first < t_->chunkElems ? channels - first
                                                                                   : t_->chunkElems);
      Muls(tmp, db[first], cen.shift, count);
      Sub(dg[first], dg[first], tmp, count);
    }
  }
}

// dx of slice `slice` of `channels` channels of sample n: dx = a_c * dy - b * xhat - e with
// a_c = rstd * gamma_c.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::ChannelDx(
    int64_t n, int64_t c0, int64_t channels, int64_t slice, float mean, float rstd,
    const LocalTensor<float> &gamma, int64_t gammaIndex, float b, float e, bool frontTaken) {
  const bool aligned = t_->copyAligned != 0;
  // xhat = (x - centre) * factor - shift (CentringOf): dx = a_c dy - b (x - centre) factor - (e - b shift)
  const Centring cen = CentringOf(mean, rstd);
  if (cen.shift != 0.0f) e -= b * cen.shift;
  if (t_->mode == GNG_MODE_GROUP_RESIDENT) {  // items of channelsPerItem channels, one store each
    const int32_t L = static_cast<int32_t>(t_->HxW);
    const int64_t cpi = t_->channelsPerItem;
    const int64_t stride = t_->residentStride;
    LocalTensor<float> tmp = FloatBuf(0);
    for (int64_t local = 0; local < channels; local += cpi) {
      const int64_t rows = (channels - local < cpi) ? channels - local : cpi;
      const int32_t span = static_cast<int32_t>((rows - 1) * stride + L);
      LocalTensor<float> dyRes = ResidentDy(local);
      if (t_->bcastElems > 0) {  // the per-row Muls of the else branch at once (BroadcastRows)
        Mul(dyRes, dyRes, RowBlocks(SILU ? 2 : 0), static_cast<uint64_t>(L), RepeatTimes(rows),
            RowBlockParams(stride));
      } else {
        for (int64_t r = 0; r < rows; ++r) {
          Muls(dyRes[r * stride], dyRes[r * stride], rstd * gamma.GetValue(gammaIndex + local + r), L);
        }
      }
      // SILU: the resident x is xhat (the swish gradient needed it); else x - mean (ChannelSums).
      Muls(tmp, ResidentX(local), SILU ? b : XhatFactor(cen.centre, rstd) * b, span);
      Sub(dyRes, dyRes, tmp, span);
      StoreFromFloat(dxQue_, dxGm_, (n * t_->C + c0 + local) * t_->HxW, L, dyRes, -e, aligned, rows);
    }
    return;
  }
  const int64_t chunks = SliceChunks(slice);
  const int64_t cpi = t_->channelsPerItem;  // > 1 only with whole channels (chunks == 1), as in ChannelSums
  const int64_t items = (channels + cpi - 1) / cpi * chunks;
  // mode 1's blocks of rstd gamma_c (SILU: and the group's -k gamma_c, -k beta_c) for DxFront
  if (t_->bcastElems > 0 && !frontTaken && !DxOnRuns()) BroadcastRows(rstd, c0 / t_->D, true);
  LocalTensor<float> dyF = FloatBuf(0);
  LocalTensor<float> xF = FloatBuf(1);
  // A task that holds its first items (not the channel split, whose held items span its tasks)
  // takes them in turn with its loaded items, then the rest: each loaded item taken frees a load
  // buffer, so the next load (of this pass, then of the next task) runs while a held item
  // converts. (All held items first left the buffers full meanwhile; all last, full of the next
  // task's items.) Each item's dx is its own, so the order changes no value.
  const int64_t heldFirst = (t_->splitByChannel == 0 && !frontTaken)
                                ? (t_->heldItems < items ? t_->heldItems : items) : 0;
  const int64_t loaded = items - heldFirst;
  const int64_t pairs = heldFirst < loaded ? heldFirst : loaded;
  for (int64_t k = 0; k < items; ++k) {
    // loaded and held items in turn, then the rest
    const int64_t item = k < 2 * pairs ? ((k % 2 == 0) ? heldFirst + k / 2 : k / 2)
                                       : (heldFirst < loaded ? heldFirst + k - pairs : k - pairs);
    const int64_t local = (item / chunks) * cpi;
    const int64_t chunk = item % chunks;
    const int32_t len = static_cast<int32_t>(ItemLen(slice, chunk));
    const int64_t rows = (channels - local < cpi) ? channels - local : cpi;
    const int32_t span = static_cast<int32_t>((rows - 1) * t_->residentStride + len);
    if (!frontTaken || item > 0) {
      DxFront(len, mean, rstd, gamma, gammaIndex + local, heldFirst > 0 ? item : -1, rows);
    }
    // DxOnRuns: the rows as one run of rows * len, stored as one row (one burst)
    const bool runs = DxOnRuns();
    const int32_t width = runs ? static_cast<int32_t>(rows * len) : span;
    // SILU: xF is xhat; else x - mean, and rstd * (x - mean) * b = xhat * b
    Muls(xF, xF, SILU ? b : XhatFactor(cen.centre, rstd) * b, width);
    Sub(dyF, dyF, xF, width);
    const int64_t start = slice * t_->sliceElems + chunk * t_->chunkElems;
    StoreFromFloat(dxQue_, dxGm_, (n * t_->C + c0 + local) * t_->HxW + start, runs ? width : len, dyF, -e, aligned,
                   runs ? 1 : rows);
  }
}

// AffineT's -t over `rows` rows (residentStride <= 64 apart) from the broadcast blocks (BroadcastRows)
// of the group's rows from `row`: each row's whole stride, as AffineT's rows but the last (whose
// padding it leaves: here computed too, in bounds, unused); the same products and sums.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::AffineTRows(const LocalTensor<float> &t,
                                                                   const LocalTensor<float> &xhat, int64_t row,
                                                                   int64_t rows, float shift) {
  const int64_t stride = t_->residentStride;
  const uint8_t repeats = RepeatTimes(rows);
  const int64_t first = row * FLOATS_PER_BLOCK;
  if (shift != 0.0f) {  // xhat - shift first, as AffineT does
    Adds(t, xhat, -shift, static_cast<int32_t>(rows * stride));
    Mul(t, t, RowBlocks(0)[first], static_cast<uint64_t>(stride), repeats, RowBlockParams(stride));
  } else {
    Mul(t, xhat, RowBlocks(0)[first], static_cast<uint64_t>(stride), repeats, RowBlockParams(stride));
  }
  Add(t, t, RowBlocks(1)[first], static_cast<uint64_t>(stride), repeats, RowBlockParams(stride));
}

// Mode 0 with bcastElems: gamma_c (and beta_c) of the group's rows, from the fp32 arrays (the group
// at index 0), broadcast into one 32-byte block per row (Brcb: a repeat writes 8 source elements
// into 8 DataBlocks; asc-devkit docs/zh/api/SIMD-API/基础API/Memory矢量计算/数据填充/Brcb.md, whose
// dstBlkStride must not be 0 and whose source and destination must not overlap), then scaled: by
// -k (both areas in one Muls) for AffineT's -k gamma_c and -k beta_c, by rstd for ChannelDx's
// rstd gamma_c. Each block element is one fp32 product of the same two values as the scalar
// products they replace (gamma_c * k, rstd * gamma_c: IEEE multiplication commutes exactly), so
// the bits are the same; a Brcb repeat covers 8 rows (the rows past D are read but not used).
// The -k areas depend on the group only: groupAcrossN's tasks (group g for n = 0..N-1) form them
// once, at the group's first task (`group` is the task's group).
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::BroadcastRows(float rstd, int64_t group, bool dx) {
  const int64_t rows8 = AlignUp(t_->D, FLOATS_PER_BLOCK);
  const int64_t repeats = rows8 / FLOATS_PER_BLOCK;
  const int32_t areaElems = static_cast<int32_t>(FLOATS_PER_BLOCK * rows8);
  const bool newGroup = SILU && group != bcastGroup_;
  if (newGroup) {
    BrcbRows(RowBlocks(0), StatArray(2), repeats);
    BrcbRows(RowBlocks(1), BetaArray(), repeats);
    bcastGroup_ = group;
  }
  if (dx) BrcbRows(RowBlocks(SILU ? 2 : 0), StatArray(2), repeats);
  // the Muls after all Brcb: the compiler's V barrier before them comes once
  if (newGroup) Muls(RowBlocks(0), RowBlocks(0), -swishScale_, 2 * areaElems);
  if (dx) Muls(RowBlocks(SILU ? 2 : 0), RowBlocks(SILU ? 2 : 0), rstd, areaElems);
}

// The part of a dx item (modes 1-2) that needs no c1/c2: the next item taken, dy (SILU: the
// swish gradient g, recomputed from xhat as the sums pass did) times a_c into FloatBuf(0),
// x - mean (SILU: xhat) into FloatBuf(1). Element-wise, so running it early (the HxW split,
// while the sums load) gives the same values. `rows` channels (mode 1's channelsPerItem), each
// `len` elements, residentStride apart.
template <typename T, typename U, bool SILU>
__aicore__ inline void KernelGroupNormGradMs<T, U, SILU>::DxFront(int32_t len, float mean, float rstd,
                                                                  const LocalTensor<float> &gamma,
                                                                  int64_t gammaIndex, int64_t dxItem, int64_t rows) {
  LocalTensor<float> dyF = FloatBuf(0);
  LocalTensor<float> xF = FloatBuf(1);
  const int64_t stride = t_->residentStride;
  const int32_t span = static_cast<int32_t>((rows - 1) * stride + len);
  const Centring cen = CentringOf(mean, rstd);  // as the sums pass
  TakeItem(span, cen.centre, dyF, xF, true, dxItem);
  if (DxOnRuns()) {  // the run of `rows` rows of len: a_c spread over it (Gather.md: dst[i] =
    // src[(srcBaseAddr + srcOffset[i]) / 4], srcBaseAddr in bytes), then dy * a_c
    const int32_t run = static_cast<int32_t>(rows * len);
    LocalTensor<float> coef = FloatBuf(2);
    const uint32_t base = static_cast<uint32_t>(gammaIndex * sizeof(float));
    if (t_->splitByChannel != 0) {  // rstd * gamma_c formed once a group (ScaleGamma)
      Gather(coef, scaledGamma_, RowTable(), base, static_cast<uint32_t>(run));
    } else {
      Gather(coef, gamma, RowTable(), base, static_cast<uint32_t>(run));
      Muls(coef, coef, rstd, run);
    }
    Mul(dyF, dyF, coef, run);
    return;
  }
  const bool bcast = t_->bcastElems > 0;  // mode 1, rows of <= 64 floats: ChannelDx's BroadcastRows
  if constexpr (SILU) {
    Muls(xF, xF, XhatFactor(cen.centre, rstd), span);  // xhat + shift
    if (bcast) {
      AffineTRows(FloatBuf(2), xF, gammaIndex, rows, cen.shift);  // -t
    } else {
      AffineT(FloatBuf(2), xF, gamma, BetaArray(), gammaIndex, -swishScale_, rows, stride, len, cen.shift);  // -t
    }
    SwishGradFromNegT(dyF, FloatBuf(2), FloatBuf(3), Ones(), span);
  }
  if (bcast) {  // every row's Muls below at once
    Mul(dyF, dyF, RowBlocks(SILU ? 2 : 0)[gammaIndex * FLOATS_PER_BLOCK], static_cast<uint64_t>(len),
        RepeatTimes(rows), RowBlockParams(stride));
    return;
  }
  for (int64_t r = 0; r < rows; ++r) {
    Muls(dyF[r * stride], dyF[r * stride], rstd * gamma.GetValue(gammaIndex + r), len);
  }
}

}  // namespace GroupNormGradMsKernel

#endif  // GROUP_NORM_GRAD_MS_CHANNELS_H
