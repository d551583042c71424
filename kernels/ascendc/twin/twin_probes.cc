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
