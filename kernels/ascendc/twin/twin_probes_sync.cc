// Probes of the synchronisation rules (kernel_operator_sync.h, twin_pipes.h): SyncAll and
// the block order, atomics, pipe hazards, SetFlag/WaitFlag pairing, the event-id pool and
// the V -> V barriers. See twin_probes.h.
#include <map>
#include <string>

#include "kernel_operator.h"
#include "twin_probes.h"

using namespace AscendC;
using twin::probes::ProbeArgs;

namespace {

enum Missing { kMissNone, kMissMte2V, kMissVMte3, kMissVS, kMissSV, kMissVMte2, kMissMte3S };

// A small pipeline with every inter-pipe hand-over made by hand (TBufs carry no events):
// MTE2 loads in = gm[0:64]; V: out = in + 1; S reads out[0] and writes it to scale[0];
// V: out[0:8] += scale; MTE3 stores out to gm[64:128] (the scalar unit then waits for the
// store and rewrites out[16], a scalar write over the bytes the store reads); V: out2 = 3 * in;
// MTE2 reloads in from gm[128:192] (the scalar unit waits for it and reads it); MTE3 stores
// out2 to gm[192:256]. `miss` drops one of the hand-overs.
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
  if (miss != kMissMte3S) {
    SetFlag<HardEvent::MTE3_S>(EVENT_ID0);  // the store has read out before the scalar unit rewrites it
    WaitFlag<HardEvent::MTE3_S>(EVENT_ID0);
  }
  out.SetValue(16, -7.0f);  // write after read (out[16] is V-ordered): the scalar unit reuses what MTE3 stores
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

}  // namespace

namespace twin::probes {

void AddSyncProbes(ProbeMap *probes) {
  probes->insert({
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
      // write after read: the scalar unit rewrites a TBuf MTE3 is still copying out (a staging
      // buffer of scalar results reused for the next task's).
      {"hazard_mte3_s", [](const ProbeArgs &a) { PipeProbe(a, kMissMte3S); }},
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
  });
}

}  // namespace twin::probes
