// Probes of the vector-instruction rules (kernel_operator_vector.h): the reduction orders of
// ReduceSum and WholeReduceSum, ReduceSum on its pipes, and narrowing casts. See
// twin_probes.h.
#include <map>
#include <string>

#include "kernel_operator.h"
#include "twin_probes.h"

using namespace AscendC;
using twin::probes::ProbeArgs;

namespace twin::probes {

void AddVectorProbes(ProbeMap *probes) {
  probes->insert({
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
  });
}

}  // namespace twin::probes
