// Probes of the buffer and data-movement rules (kernel_operator_buffers.h,
// kernel_operator_data_copy.h): queue misuse, UB alignment and capacity, operand and GM
// bounds, the TPosition data paths of the copies, and the queue depth. See twin_probes.h.
#include <map>
#include <string>

#include "kernel_operator.h"
#include "twin_probes.h"

using namespace AscendC;
using twin::probes::ProbeArgs;

namespace {

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

// A VECOUT queue of 3 buffers: the first tensor stays allocated, then 4 tensors are each
// written, stored and freed in turn. out[i] is the UB address of the i-th AllocTensor (the
// scalar unit writes it; a TQue hands its buffers round-robin from a cursor that skips busy
// ones, asc-devkit impl/basic_api/kernel_tquebind_impl.h AllocBuffer).
void QueueRotationProbe(const ProbeArgs &a) {
  TPipe pipe;
  TQue<QuePosition::VECOUT, 1> que;
  pipe.InitBuffer(que, 3, 8 * sizeof(float));
  GlobalTensor<float> gm;
  gm.SetGlobalBuffer(a.out, a.outLen);
  LocalTensor<float> held = que.AllocTensor<float>();
  gm.SetValue(0, static_cast<float>(held.addr()));
  for (int i = 1; i <= 4; ++i) {
    LocalTensor<float> t = que.AllocTensor<float>();
    gm.SetValue(i, static_cast<float>(t.addr()));
    Duplicate(t, static_cast<float>(i), 8);
    que.EnQue(t);
    t = que.DeQue<float>();
    DataCopy(gm[8 * i], t, 8);
    que.FreeTensor(t);
  }
  que.FreeTensor(held);
}

// DataCopyPad of `rows` one-float rows between GM (contiguous) and UB (one 32-byte block per row).
void CopyPadRowsProbe(const ProbeArgs &a, uint16_t rows, bool toGm) {
  TPipe pipe;
  GlobalTensor<float> gm;
  gm.SetGlobalBuffer(a.out, a.outLen);
  const DataCopyExtParams copy{rows, sizeof(float), 0, 0, 0};
  if (toGm) {
    TBuf<QuePosition::VECOUT> buf;
    pipe.InitBuffer(buf, rows * 32u);
    Duplicate(buf.Get<float>(), 1.0f, rows * 8);
    PipeBarrier<PIPE_ALL>();
    DataCopyPad(gm, buf.Get<float>(), copy);
  } else {
    TBuf<QuePosition::VECIN> buf;
    pipe.InitBuffer(buf, rows * 32u);
    DataCopyPad(buf.Get<float>(), gm, copy, DataCopyPadExtParams<float>{false, 0, 0, 0.0f});
  }
}

}  // namespace

namespace twin::probes {

void AddBufferProbes(ProbeMap *probes) {
  probes->insert({
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
      // ---- DataCopyPad's blockCount range [0, 4095]
      {"copy_pad_in_4095_rows", [](const ProbeArgs &a) { CopyPadRowsProbe(a, 4095, false); }},
      {"copy_pad_in_4096_rows", [](const ProbeArgs &a) { CopyPadRowsProbe(a, 4096, false); }},
      {"copy_pad_out_4096_rows", [](const ProbeArgs &a) { CopyPadRowsProbe(a, 4096, true); }},
      // ---- queue depth (TQue简介.md: depth 1 unless tensors are really queued together)
      {"queue_deeper_than_filled",
       [](const ProbeArgs &a) { QueueDepthProbe(a, false); }},
      {"queue_depth_used",
       [](const ProbeArgs &a) { QueueDepthProbe(a, true); }},
      // ---- which buffer AllocTensor hands out
      {"queue_buffers_rotate", [](const ProbeArgs &a) { QueueRotationProbe(a); }},
  });
}

}  // namespace twin::probes
