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
         TBuf<QuePosition::VECCALC> buf;
         pipe.InitBuffer(buf, 32);
         LocalTensor<float> t = buf.Get<float>();
         const float values[4] = {1.0e8f, 3.0f, -1.0e8f, 5.0f};
         t.SetValue(0, values[b % 4] * static_cast<float>(b / 4 + 1));
         GlobalTensor<float> gm;
         gm.SetGlobalBuffer(a.out, a.outLen);
         SetAtomicAdd<float>();
         DataCopyPad(gm, t, DataCopyExtParams{1, sizeof(float), 0, 0, 0});
         SetAtomicNone();
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
  config.policy = policy;
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
