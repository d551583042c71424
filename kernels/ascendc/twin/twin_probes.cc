// Small kernels written against the twin's AscendC API, most of them deliberately
// broken: the tests run each one and check that the twin stops it with the right
// message (or, for the ordering probes, that the outcome depends on the block order).
// They exist because the GroupNormGradMs kernel itself is correct: its own broken
// launches (wrong UB size, core count, buffer sizes, tiling) are made from Python.
#include <cstring>
#include <functional>
#include <map>
#include <string>

#include "kernel_operator.h"

#define GNMS_TWIN_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

using namespace AscendC;

struct ProbeArgs {
  float *out;       // GM buffer of outLen floats, the only one the launch is given
  int64_t outLen;
};

using Probe = std::function<void(const ProbeArgs &)>;

enum Missing { kMissNone, kMissMte2V, kMissVMte3, kMissVS, kMissSV, kMissVMte2 };

// A small pipeline with every inter-pipe hand-over made by hand (TBufs carry no events):
// MTE2 loads in = gm[0:64]; V: out = in + 1; S reads out[0] and writes it to scale[0];
// V: out[0:8] += scale; MTE3 stores out to gm[64:128] (the scalar unit then waits for the
// store); V: out2 = 3 * in; MTE2 reloads in from gm[128:192] (the scalar unit waits for it
// and reads it); MTE3 stores out2 to gm[192:256]. `miss` drops one of the hand-overs.
void PipeProbe(const ProbeArgs &a, Missing miss) {
  TPipe pipe;
  TBuf<QuePosition::VECIN> inBuf;
  TBuf<QuePosition::VECOUT> outBuf;
  TBuf<QuePosition::VECOUT> out2Buf;
  TBuf<QuePosition::VECCALC> scaleBuf;
  pipe.InitBuffer(inBuf, 64 * sizeof(float));
  pipe.InitBuffer(outBuf, 64 * sizeof(float));
  pipe.InitBuffer(out2Buf, 64 * sizeof(float));
  pipe.InitBuffer(scaleBuf, 64 * sizeof(float));
  GlobalTensor<float> gm;
  gm.SetGlobalBuffer(a.out, a.outLen);
  LocalTensor<float> in = inBuf.Get<float>();
  LocalTensor<float> out = outBuf.Get<float>();
  LocalTensor<float> out2 = out2Buf.Get<float>();
  LocalTensor<float> scale = scaleBuf.Get<float>();
  Duplicate(scale, 0.0f, 64);
  DataCopy(in, gm, 64);
  if (miss != kMissMte2V) {
    SetFlag<HardEvent::MTE2_V>(EVENT_ID0);
    WaitFlag<HardEvent::MTE2_V>(EVENT_ID0);
  }
  Adds(out, in, 1.0f, 64);
  if (miss != kMissVS) {
    SetFlag<HardEvent::V_S>(EVENT_ID0);
    WaitFlag<HardEvent::V_S>(EVENT_ID0);
  }
  scale.SetValue(0, out.GetValue(0));
  if (miss != kMissSV) {
    SetFlag<HardEvent::S_V>(EVENT_ID0);
    WaitFlag<HardEvent::S_V>(EVENT_ID0);
  }
  Add(out, out, scale, 8);
  if (miss != kMissVMte3) {
    SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
  }
  DataCopy(gm[64], out, 64);
  SetFlag<HardEvent::MTE3_S>(EVENT_ID0);  // the scalar unit waits for the store (as before reading GM back)
  WaitFlag<HardEvent::MTE3_S>(EVENT_ID0);
  Muls(out2, in, 3.0f, 64);  // the last vector read of `in`
  if (miss != kMissVMte2) {
    SetFlag<HardEvent::V_MTE2>(EVENT_ID0);
    WaitFlag<HardEvent::V_MTE2>(EVENT_ID0);
  }
  DataCopy(in, gm[128], 64);  // reuse of the input buffer
  SetFlag<HardEvent::MTE2_S>(EVENT_ID0);
  WaitFlag<HardEvent::MTE2_S>(EVENT_ID0);
  scale.SetValue(1, in.GetValue(0));  // the scalar unit looks at the new input
  SetFlag<HardEvent::V_MTE3>(EVENT_ID1);
  WaitFlag<HardEvent::V_MTE3>(EVENT_ID1);
  DataCopy(gm[192], out2, 64);
}

// A depth-2 VECIN queue over 4 loads: `overlap` keeps two loads queued before the first
// DeQue; without it each load is dequeued before the next is queued.
void QueueDepthProbe(const ProbeArgs &a, bool overlap) {
  TPipe pipe;
  TQue<QuePosition::VECIN, 2> que;
  TBuf<QuePosition::VECCALC> acc;
  pipe.InitBuffer(que, 2, 64 * sizeof(float));
  pipe.InitBuffer(acc, 64 * sizeof(float));
  GlobalTensor<float> gm;
  gm.SetGlobalBuffer(a.out, a.outLen);
  LocalTensor<float> sum = acc.Get<float>();
  Duplicate(sum, 0.0f, 64);
  auto load = [&] {
    LocalTensor<float> t = que.AllocTensor<float>();
    DataCopy(t, gm, 64);
    que.EnQue(t);
  };
  auto take = [&] {
    LocalTensor<float> t = que.DeQue<float>();
    Add(sum, sum, t, 64);
    que.FreeTensor(t);
  };
  if (overlap) load();
  for (int i = 0; i < (overlap ? 3 : 4); ++i) {
    load();
    take();
  }
  if (overlap) take();
}

const std::map<std::string, Probe> &Probes() {
  static const std::map<std::string, Probe> probes = {
      {"deque_before_enque",
       [](const ProbeArgs &) {
         TPipe pipe;
         TQue<QuePosition::VECIN, 2> que;
         pipe.InitBuffer(que, 2, 256);
         LocalTensor<float> t = que.AllocTensor<float>();
         (void)t;
         que.DeQue<float>();
       }},
      {"enque_beyond_depth",
       [](const ProbeArgs &) {
         TPipe pipe;
         TQue<QuePosition::VECIN, 1> que;
         pipe.InitBuffer(que, 2, 256);
         que.EnQue(que.AllocTensor<float>());
         que.EnQue(que.AllocTensor<float>());
       }},
      {"alloc_beyond_buffers",
       [](const ProbeArgs &) {
         TPipe pipe;
         TQue<QuePosition::VECIN, 2> que;
         pipe.InitBuffer(que, 2, 256);
         que.AllocTensor<float>();
         que.AllocTensor<float>();
         que.AllocTensor<float>();
       }},
      {"double_free",
       [](const ProbeArgs &) {
         TPipe pipe;
         TQue<QuePosition::VECOUT, 2> que;
         pipe.InitBuffer(que, 2, 256);
         LocalTensor<float> t = que.AllocTensor<float>();
         que.FreeTensor(t);
         que.FreeTensor(t);
       }},
      {"use_after_free",
       [](const ProbeArgs &) {
         TPipe pipe;
         TQue<QuePosition::VECIN, 2> que;
         pipe.InitBuffer(que, 2, 256);
         LocalTensor<float> t = que.AllocTensor<float>();
         que.FreeTensor(t);
         Duplicate(t, 1.0f, 64);
       }},
      {"use_while_queued",
       [](const ProbeArgs &) {
         TPipe pipe;
         TQue<QuePosition::VECIN, 2> que;
         pipe.InitBuffer(que, 2, 256);
         LocalTensor<float> t = que.AllocTensor<float>();
         que.EnQue(t);
         Duplicate(t, 1.0f, 64);
       }},
      {"use_after_reset",
       [](const ProbeArgs &) {
         TPipe pipe;
         TBuf<QuePosition::VECCALC> buf;
         pipe.InitBuffer(buf, 256);
         LocalTensor<float> t = buf.Get<float>();
         pipe.Reset();
         Duplicate(t, 1.0f, 64);
       }},
      {"unaligned_ub_address",
       [](const ProbeArgs &) {
         TPipe pipe;
         TBuf<QuePosition::VECCALC> buf;
         pipe.InitBuffer(buf, 1024);
         LocalTensor<float> t = buf.Get<float>();
         Duplicate(t[3], 1.0f, 16);  // 12 bytes into the buffer
       }},
      {"unaligned_datacopy_length",
       [](const ProbeArgs &a) {
         TPipe pipe;
         TBuf<QuePosition::VECCALC> buf;
         pipe.InitBuffer(buf, 1024);
         GlobalTensor<float> gm;
         gm.SetGlobalBuffer(a.out, a.outLen);
         DataCopy(buf.Get<float>(), gm, 12);  // 48 bytes: needs DataCopyPad
       }},
      {"ub_overflow",
       [](const ProbeArgs &) {
         TPipe pipe;
         TBuf<QuePosition::VECCALC> a;
         TBuf<QuePosition::VECCALC> b;
         pipe.InitBuffer(a, 128 * 1024);
         pipe.InitBuffer(b, 128 * 1024);  // 256 KiB in all
       }},
      {"operand_overrun",
       [](const ProbeArgs &) {
         TPipe pipe;
         TBuf<QuePosition::VECCALC> buf;
         pipe.InitBuffer(buf, 256);
         Duplicate(buf.Get<float>(), 1.0f, 65);  // the buffer holds 64 floats
       }},
      {"gm_out_of_bounds",
       [](const ProbeArgs &a) {
         TPipe pipe;
         TQue<QuePosition::VECIN, 1> que;
         pipe.InitBuffer(que, 1, 1024);
         GlobalTensor<float> gm;
         gm.SetGlobalBuffer(a.out, a.outLen);
         LocalTensor<float> t = que.AllocTensor<float>();
         DataCopyExtParams copy{1, static_cast<uint32_t>((a.outLen + 1) * sizeof(float)), 0, 0, 0};
         DataCopyPad(t, gm, copy, DataCopyPadExtParams<float>{false, 0, 0, 0.0f});  // one float too many
       }},
      {"syncall_skipped",
       [](const ProbeArgs &) {
         if (GetBlockIdx() == 0) return;  // block 0 leaves without the barrier
         SyncAll();
       }},
      // Correct: every block publishes a value, and reads its neighbour's after SyncAll.
      {"exchange_with_syncall",
       [](const ProbeArgs &a) {
         const int64_t b = GetBlockIdx();
         const int64_t n = GetBlockNum();
         GlobalTensor<float> gm;
         gm.SetGlobalBuffer(a.out, a.outLen);
         gm.SetValue(b, static_cast<float>(b + 1));
         SyncAll();
         gm.SetValue(n + b, gm.GetValue((b + 1) % n));
       }},
      // Broken: the same without SyncAll; what a block reads depends on the block order.
      {"exchange_without_syncall",
       [](const ProbeArgs &a) {
         const int64_t b = GetBlockIdx();
         const int64_t n = GetBlockNum();
         GlobalTensor<float> gm;
         gm.SetGlobalBuffer(a.out, a.outLen);
         gm.SetValue(b, static_cast<float>(b + 1));
         PipeBarrier<PIPE_ALL>();
         gm.SetValue(n + b, gm.GetValue((b + 1) % n));
       }},
      // Broken determinism: fp32 atomic accumulation, whose rounding depends on the order.
      {"atomic_accumulate",
       [](const ProbeArgs &a) {
         const int64_t b = GetBlockIdx();
         TPipe pipe;
         TBuf<QuePosition::VECOUT> buf;
         pipe.InitBuffer(buf, 32);
         LocalTensor<float> t = buf.Get<float>();
         const float values[4] = {1.0e8f, 3.0f, -1.0e8f, 5.0f};
         t.SetValue(0, values[b % 4] * static_cast<float>(b / 4 + 1));
         SetFlag<HardEvent::S_MTE3>(EVENT_ID0);
         WaitFlag<HardEvent::S_MTE3>(EVENT_ID0);
         GlobalTensor<float> gm;
         gm.SetGlobalBuffer(a.out, a.outLen);
         SetAtomicAdd<float>();
         DataCopyPad(gm, t, DataCopyExtParams{1, sizeof(float), 0, 0, 0});
         SetAtomicNone();
       }},
      // ---- pipe hazards: each probe misses one synchronisation ("_synced" twins add it back)
      // MTE2 -> V: a vector op reads a TBuf that MTE2 is still filling.
      {"hazard_mte2_v", [](const ProbeArgs &a) { PipeProbe(a, kMissMte2V); }},
      // V -> MTE3: MTE3 copies out a buffer the vector unit is still writing.
      {"hazard_v_mte3", [](const ProbeArgs &a) { PipeProbe(a, kMissVMte3); }},
      // V -> S: the scalar unit reads a result before the vector unit wrote it.
      {"hazard_v_s", [](const ProbeArgs &a) { PipeProbe(a, kMissVS); }},
      // S -> V: a vector op reads a value the scalar unit is still writing.
      {"hazard_s_v", [](const ProbeArgs &a) { PipeProbe(a, kMissSV); }},
      // write after read: MTE2 refills a TBuf the vector unit is still reading (buffer reuse).
      {"hazard_war_reuse", [](const ProbeArgs &a) { PipeProbe(a, kMissVMte2); }},
      {"hazards_synced", [](const ProbeArgs &a) { PipeProbe(a, kMissNone); }},
      // The same reuse through a TQue: FreeTensor/AllocTensor carry the V -> MTE2 event.
      {"queue_reuse",
       [](const ProbeArgs &a) {
         TPipe pipe;
         TQue<QuePosition::VECIN, 1> que;
         TBuf<QuePosition::VECCALC> acc;
         pipe.InitBuffer(que, 1, 64 * sizeof(float));
         pipe.InitBuffer(acc, 64 * sizeof(float));
         GlobalTensor<float> gm;
         gm.SetGlobalBuffer(a.out, a.outLen);
         LocalTensor<float> sum = acc.Get<float>();
         Duplicate(sum, 0.0f, 64);
         for (int i = 0; i < 2; ++i) {
           LocalTensor<float> t = que.AllocTensor<float>();
           DataCopy(t, gm, 64);
           que.EnQue(t);
           t = que.DeQue<float>();
           Add(sum, sum, t, 64);
           que.FreeTensor(t);
         }
       }},
      {"waitflag_without_setflag",
       [](const ProbeArgs &) { WaitFlag<HardEvent::V_S>(EVENT_ID0); }},
      {"setflag_never_waited",
       [](const ProbeArgs &) { SetFlag<HardEvent::MTE2_V>(EVENT_ID1); }},
      {"setflag_twice",
       [](const ProbeArgs &) {
         SetFlag<HardEvent::V_MTE3>(EVENT_ID2);
         SetFlag<HardEvent::V_MTE3>(EVENT_ID2);
       }},
      {"path_datacopy_gm_to_vecout",
       [](const ProbeArgs &a) {
         TPipe pipe;
         TBuf<QuePosition::VECOUT> buf;
         pipe.InitBuffer(buf, 256);
         GlobalTensor<float> gm;
         gm.SetGlobalBuffer(a.out, a.outLen);
         DataCopy(buf.Get<float>(), gm, 64);  // DataCopy GM -> UB writes VECIN only
       }},
      {"path_datacopypad_vecccalc_to_gm",
       [](const ProbeArgs &a) {
         TPipe pipe;
         TBuf<QuePosition::VECCALC> buf;
         pipe.InitBuffer(buf, 256);
         GlobalTensor<float> gm;
         gm.SetGlobalBuffer(a.out, a.outLen);
         Duplicate(buf.Get<float>(), 1.0f, 64);
         PipeBarrier<PIPE_ALL>();
         DataCopyPad(gm, buf.Get<float>(), DataCopyExtParams{1, 64 * sizeof(float), 0, 0, 0});
       }},
      {"path_ub_to_ub_vecin_to_vecout",
       [](const ProbeArgs &) {
         TPipe pipe;
         TBuf<QuePosition::VECIN> in;
         TBuf<QuePosition::VECOUT> out;
         pipe.InitBuffer(in, 256);
         pipe.InitBuffer(out, 256);
         DataCopy(out.Get<float>(), in.Get<float>(), 64);  // UB -> UB: VECIN -> VECCALC, VECCALC -> VECOUT only
       }},
      // ReduceSum of out[8..outLen) into out[0] (the tests pick values whose sum depends on the order).
      {"reduce_sum_order",
       [](const ProbeArgs &a) {
         TPipe pipe;
         TQue<QuePosition::VECIN, 1> in;
         TQue<QuePosition::VECOUT, 1> out;
         TBuf<QuePosition::VECCALC> work;
         pipe.InitBuffer(in, 1, 512 * sizeof(float));
         pipe.InitBuffer(out, 1, 8 * sizeof(float));
         pipe.InitBuffer(work, 256);
         GlobalTensor<float> gm;
         gm.SetGlobalBuffer(a.out, a.outLen);
         const int32_t count = static_cast<int32_t>(a.outLen - 8);
         LocalTensor<float> src = in.AllocTensor<float>();
         DataCopy(src, gm[8], count);
         in.EnQue(src);
         src = in.DeQue<float>();
         LocalTensor<float> dst = out.AllocTensor<float>();
         Duplicate(dst, 0.0f, 8);
         ReduceSum(dst, src, work.Get<float>(), count);
         out.EnQue(dst);
         dst = out.DeQue<float>();
         DataCopy(gm, dst, 8);
         out.FreeTensor(dst);
         in.FreeTensor(src);
       }},
      // ---- one event-id pool (kernel_tpipe_impl.h, kernel_tquebind_impl.h)
      // Broken: FetchEventID does not reserve, so the queue's EnQue allocates the same
      // V_MTE3 id while the kernel's flag is still set.
      {"event_fetch_then_queue",
       [](const ProbeArgs &a) {
         TPipe pipe;
         TQue<QuePosition::VECOUT, 1> que;
         pipe.InitBuffer(que, 1, 256);
         GlobalTensor<float> gm;
         gm.SetGlobalBuffer(a.out, a.outLen);
         LocalTensor<float> t = que.AllocTensor<float>();
         Duplicate(t, 1.0f, 64);
         const int32_t id = pipe.FetchEventID(HardEvent::V_MTE3);
         SetFlag<HardEvent::V_MTE3>(id);
         que.EnQue(t);
         t = que.DeQue<float>();
         WaitFlag<HardEvent::V_MTE3>(id);
         DataCopy(gm, t, 64);
         que.FreeTensor(t);
       }},
      // Correct: the same with AllocEventID, which reserves the id until ReleaseEventID.
      {"event_alloc_then_queue",
       [](const ProbeArgs &a) {
         TPipe pipe;
         TQue<QuePosition::VECOUT, 1> que;
         pipe.InitBuffer(que, 1, 256);
         GlobalTensor<float> gm;
         gm.SetGlobalBuffer(a.out, a.outLen);
         LocalTensor<float> t = que.AllocTensor<float>();
         Duplicate(t, 1.0f, 64);
         const int32_t id = pipe.AllocEventID<HardEvent::V_MTE3>();
         SetFlag<HardEvent::V_MTE3>(id);
         que.EnQue(t);
         t = que.DeQue<float>();
         WaitFlag<HardEvent::V_MTE3>(id);
         pipe.ReleaseEventID<HardEvent::V_MTE3>(id);
         DataCopy(gm, t, 64);
         que.FreeTensor(t);
       }},
      // Broken: the kernel waits on the id the queue's EnQue set (id 0, the lowest free
      // one), so the DeQue's wait finds no flag: a hang.
      {"event_kernel_takes_queue_flag",
       [](const ProbeArgs &) {
         TPipe pipe;
         TQue<QuePosition::VECOUT, 1> que;
         pipe.InitBuffer(que, 1, 256);
         LocalTensor<float> t = que.AllocTensor<float>();
         Duplicate(t, 1.0f, 64);
         que.EnQue(t);
         WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
         t = que.DeQue<float>();
         que.FreeTensor(t);
       }},
      // Broken: a V_S flag of the kernel is still set when ReduceSum fetches the same id for
      // its internal V -> S wait.
      {"event_kernel_flag_across_reduce_sum",
       [](const ProbeArgs &) {
         TPipe pipe;
         TBuf<QuePosition::VECCALC> buf;
         pipe.InitBuffer(buf, 512);
         LocalTensor<float> t = buf.Get<float>();
         Duplicate(t, 1.0f, 64);
         const int32_t id = pipe.FetchEventID(HardEvent::V_S);
         SetFlag<HardEvent::V_S>(id);
         ReduceSum(t[64], t, t[120], 64);
         WaitFlag<HardEvent::V_S>(id);
       }},
      {"event_pool_exhausted",
       [](const ProbeArgs &) {
         TPipe pipe;
         for (int i = 0; i < 9; ++i) pipe.AllocEventID<HardEvent::MTE2_V>();
       }},
      // ---- ReduceSum on its pipes (dav_c220 ReduceSumImpl)
      // Correct: the scalar read, a vector read and an MTE3 copy of the result need no
      // synchronisation of the kernel's own (ReduceSum waits V_S, S_V and S_MTE3 itself).
      // out[0] = sum, out[8:16] = 2 * sum, repeated `outLen / 64` times.
      {"reduce_sum_round_trips",
       [](const ProbeArgs &a) {
         TPipe pipe;
         TBuf<QuePosition::VECOUT> buf;
         TBuf<QuePosition::VECCALC> src;
         pipe.InitBuffer(buf, 64 * sizeof(float));
         pipe.InitBuffer(src, 64 * sizeof(float));
         GlobalTensor<float> gm;
         gm.SetGlobalBuffer(a.out, a.outLen);
         LocalTensor<float> s = src.Get<float>();
         LocalTensor<float> d = buf.Get<float>();
         Duplicate(s, 0.5f, 64);
         for (int64_t i = 0; i < a.outLen / 64; ++i) {
           ReduceSum(d, s, s, 64);
           const float sum = d.GetValue(0);
           Muls(d[8], s, 4.0f * sum / 64.0f, 8);
           PipeBarrier<PIPE_ALL>();
           DataCopy(gm[i * 64], d, 64);
           PipeBarrier<PIPE_ALL>();
         }
       }},
      // Broken: ReduceSum's scalar store overwrites a buffer MTE3 is still copying out.
      {"reduce_sum_store_while_mte3_reads",
       [](const ProbeArgs &a) {
         TPipe pipe;
         TBuf<QuePosition::VECOUT> buf;
         pipe.InitBuffer(buf, 128 * sizeof(float));
         GlobalTensor<float> gm;
         gm.SetGlobalBuffer(a.out, a.outLen);
         LocalTensor<float> d = buf.Get<float>();
         Duplicate(d, 1.0f, 128);
         SetFlag<HardEvent::V_MTE3>(EVENT_ID0);
         WaitFlag<HardEvent::V_MTE3>(EVENT_ID0);
         DataCopy(gm, d, 64);
         ReduceSum(d, d[64], d[64], 64);
       }},
      // WholeReduceSum of 4 repeats of `outLen / 4 - 8` floats (out[8..]) at a stride of
      // outLen / 4 floats into out[0..4): the tests pick values whose sum depends on the order.
      {"whole_reduce_sum_order",
       [](const ProbeArgs &a) {
         TPipe pipe;
         TQue<QuePosition::VECIN, 1> in;
         TQue<QuePosition::VECOUT, 1> out;
         pipe.InitBuffer(in, 1, 512 * sizeof(float));
         pipe.InitBuffer(out, 1, 8 * sizeof(float));
         GlobalTensor<float> gm;
         gm.SetGlobalBuffer(a.out, a.outLen);
         LocalTensor<float> src = in.AllocTensor<float>();
         DataCopy(src, gm[8], static_cast<uint32_t>(a.outLen - 8));
         in.EnQue(src);
         src = in.DeQue<float>();
         LocalTensor<float> dst = out.AllocTensor<float>();
         Duplicate(dst, 0.0f, 8);
         const int32_t stride = static_cast<int32_t>((a.outLen - 8) / 4);
         WholeReduceSum<float>(dst, src, stride < 64 ? stride : 64, 4, 1, 1, stride / 8);
         out.EnQue(dst);
         dst = out.DeQue<float>();
         DataCopy(gm, dst, 8);
         out.FreeTensor(dst);
         in.FreeTensor(src);
       }},
      // ---- V -> V: the compiler's barriers (--cce-auto-sync) or PipeBarrier<PIPE_V>
      {"vector_read_after_write",
       [](const ProbeArgs &) {
         TPipe pipe;
         TBuf<QuePosition::VECCALC> buf;
         pipe.InitBuffer(buf, 512);
         LocalTensor<float> t = buf.Get<float>();
         Duplicate(t, 1.0f, 64);
         Adds(t[64], t, 1.0f, 64);
       }},
      {"vector_write_after_read",
       [](const ProbeArgs &) {
         TPipe pipe;
         TBuf<QuePosition::VECCALC> buf;
         TBuf<QuePosition::VECCALC> other;
         pipe.InitBuffer(buf, 512);
         pipe.InitBuffer(other, 512);
         LocalTensor<float> t = buf.Get<float>();
         Duplicate(other.Get<float>(), 1.0f, 64);  // independent of the pair below
         PipeBarrier<PIPE_ALL>();
         Adds(t[64], other.Get<float>(), 1.0f, 64);  // reads `other`
         Duplicate(other.Get<float>(), 2.0f, 64);    // overwrites it
       }},
      {"vector_pair_with_barrier",
       [](const ProbeArgs &) {
         TPipe pipe;
         TBuf<QuePosition::VECCALC> buf;
         pipe.InitBuffer(buf, 512);
         LocalTensor<float> t = buf.Get<float>();
         Duplicate(t, 1.0f, 64);
         PipeBarrier<PIPE_V>();
         Adds(t[64], t, 1.0f, 64);
       }},
      {"vector_independent",
       [](const ProbeArgs &) {
         TPipe pipe;
         TBuf<QuePosition::VECCALC> buf;
         pipe.InitBuffer(buf, 512);
         LocalTensor<float> t = buf.Get<float>();
         Duplicate(t, 1.0f, 64);
         Duplicate(t[64], 2.0f, 64);  // other bytes: independent of the first
         PipeBarrier<PIPE_V>();
         Adds(t, t, 1.0f, 64);  // in place: one instruction reading and writing its operand is not a pair
       }},
      // ---- narrowing casts: out[0:16] fp32 -> half -> fp32, out[16:32] fp32 -> bf16 -> fp32
      {"cast_special_values",
       [](const ProbeArgs &a) {
         TPipe pipe;
         TQue<QuePosition::VECIN, 1> in;
         TQue<QuePosition::VECOUT, 1> out;
         TBuf<QuePosition::VECCALC> narrow;
         pipe.InitBuffer(in, 1, 16 * sizeof(float));
         pipe.InitBuffer(out, 1, 32 * sizeof(float));
         pipe.InitBuffer(narrow, 64);
         GlobalTensor<float> gm;
         gm.SetGlobalBuffer(a.out, a.outLen);
         LocalTensor<float> src = in.AllocTensor<float>();
         DataCopy(src, gm, 16);
         in.EnQue(src);
         src = in.DeQue<float>();
         LocalTensor<float> dst = out.AllocTensor<float>();
         LocalTensor<half> h = narrow.Get<half>();
         Cast(h, src, RoundMode::CAST_RINT, 16);
         Cast(dst, h, RoundMode::CAST_NONE, 16);
         LocalTensor<bfloat16_t> b = narrow.Get<bfloat16_t>();
         Cast(b, src, RoundMode::CAST_RINT, 16);
         Cast(dst[16], b, RoundMode::CAST_NONE, 16);
         out.EnQue(dst);
         dst = out.DeQue<float>();
         DataCopy(gm, dst, 32);
         out.FreeTensor(dst);
         in.FreeTensor(src);
       }},
      // ---- queue depth (TQue简介.md: depth 1 unless tensors are really queued together)
      {"queue_deeper_than_filled",
       [](const ProbeArgs &a) { QueueDepthProbe(a, false); }},
      {"queue_depth_used",
       [](const ProbeArgs &a) { QueueDepthProbe(a, true); }},
  };
  return probes;
}

}  // namespace

// Runs probe `name` on `blockDim` blocks; `out` (outLen floats) is the launch's only GM
// buffer. Returns 0, 1 with the fault in `error`, or 2 for an unknown probe.
GNMS_TWIN_EXPORT int GnmsTwinProbe(const char *name, int64_t blockDim, int64_t coreNum, int64_t ubBytes, int policy,
                                   uint64_t seed, float *out, int64_t outLen, char *error, int errorLen) {
  const auto &probes = Probes();
  const auto it = probes.find(name);
  if (it == probes.end()) return 2;
  twin::Config config;
  config.ubBytes = ubBytes;
  config.coreNum = coreNum;
  config.policy = policy & 0xFF;  // bits 8-15: the execution of the pipes; bit 16: no hazard checks
  config.execution = (policy >> 8) & 0xFF;
  config.checkHazards = ((policy >> 16) & 1) == 0;
  config.cost = twin::DefaultCost();
  config.autoSync = ((policy >> 17) & 1) == 0;    // bit 17: no --cce-auto-sync
  config.saturation = ((policy >> 18) & 1) != 0;  // bit 18: saturation overflow mode
  config.seed = seed;
  std::vector<twin::GmRegion> regions;
  if (outLen > 0) regions.push_back({out, static_cast<size_t>(outLen) * sizeof(float), "out"});
  const ProbeArgs args{out, outLen};
  std::string message;
  const int status = twin::Launch(config, blockDim, 0, regions, [&] { it->second(args); }, &message);
  if (error != nullptr && errorLen > 0) {
    std::strncpy(error, message.c_str(), static_cast<size_t>(errorLen) - 1);
    error[errorLen - 1] = '\0';
  }
  return status;
}
