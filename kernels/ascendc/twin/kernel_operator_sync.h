// CPU twin, part of kernel_operator.h: synchronisation. PipeBarrier, SyncAll, the inter-pipe
// events (SetFlag / WaitFlag on HardEvent, the ISASI form ops-nn's kernels use) and the
// atomic-add switch. Each call is handed to the pipe model of twin_pipes.h, which checks the
// pairing of flags and the UB hazards between pipes (see the comment at its top);
// SyncAll is a real barrier of all blocks (twin_runtime.h).
#ifndef GNMS_TWIN_KERNEL_OPERATOR_SYNC_H
#define GNMS_TWIN_KERNEL_OPERATOR_SYNC_H

// Included by kernel_operator.h (after the parts it builds on); not a standalone header.

namespace AscendC {

// PipeBarrier<PIPE_ALL> waits for every pipe; a barrier on one pipe orders only that pipe,
// whose instructions the model already runs in order.
// PipeBarrier<PIPE_ALL> waits for every pipe. PipeBarrier<PIPE_V> orders dependent vector
// instructions (on arch 2201 the compiler inserts it under --cce-auto-sync, see
// twin_pipes.h); a barrier on another single pipe orders only that pipe, whose
// instructions the model already runs in order.
template <pipe_t pipe>
inline void PipeBarrier() {
  twin::Checkpoint();
  if (pipe == PIPE_ALL) {
    Pipes().BarrierAll();
  } else {
    Pipes().BarrierPipe(pipe == PIPE_V ? twin::kPipeV : pipe == PIPE_MTE2 ? twin::kPipeMte2
                        : pipe == PIPE_MTE3 ? twin::kPipeMte3 : twin::kPipeS);
  }
}

template <bool isAIVOnly = true>
inline void SyncAll() {
  twin::Checkpoint();
  Pipes().SyncAll();
  twin::SyncAllBlocks();
}

// Inter-pipe events (the ISASI form SetFlag<HardEvent>(id), as ops-nn's kernels use it).
enum class HardEvent { MTE2_V, V_MTE2, V_MTE3, MTE3_V, V_S, S_V, MTE2_S, S_MTE2, MTE3_S, S_MTE3, MTE2_MTE3, MTE3_MTE2 };
enum event_t : int32_t { EVENT_ID0 = 0, EVENT_ID1, EVENT_ID2, EVENT_ID3, EVENT_ID4, EVENT_ID5, EVENT_ID6, EVENT_ID7 };

namespace detail {
constexpr int EventSrc(HardEvent e) {
  switch (e) {
    case HardEvent::MTE2_V: case HardEvent::MTE2_S: case HardEvent::MTE2_MTE3: return twin::kPipeMte2;
    case HardEvent::V_MTE2: case HardEvent::V_MTE3: case HardEvent::V_S: return twin::kPipeV;
    case HardEvent::MTE3_V: case HardEvent::MTE3_S: case HardEvent::MTE3_MTE2: return twin::kPipeMte3;
    default: return twin::kPipeS;
  }
}
constexpr int EventDst(HardEvent e) {
  switch (e) {
    case HardEvent::V_MTE2: case HardEvent::S_MTE2: case HardEvent::MTE3_MTE2: return twin::kPipeMte2;
    case HardEvent::MTE2_V: case HardEvent::MTE3_V: case HardEvent::S_V: return twin::kPipeV;
    case HardEvent::V_MTE3: case HardEvent::S_MTE3: case HardEvent::MTE2_MTE3: return twin::kPipeMte3;
    default: return twin::kPipeS;
  }
}
}  // namespace detail

template <HardEvent event>
inline void SetFlag(int32_t eventId) {
  twin::Checkpoint();
  Pipes().SetFlag(detail::EventSrc(event), detail::EventDst(event), eventId, twin::kFlagKernel);
}
template <HardEvent event>
inline void WaitFlag(int32_t eventId) {
  twin::Checkpoint();
  Pipes().WaitFlag(detail::EventSrc(event), detail::EventDst(event), eventId, twin::kFlagKernel);
}

template <typename T>
inline void SetAtomicAdd() {
  static_assert(std::is_same<T, float>::value, "the twin models fp32 atomic add only");
  twin::Block().atomicAdd = true;
}
inline void SetAtomicNone() { twin::Block().atomicAdd = false; }

}  // namespace AscendC

#endif  // GNMS_TWIN_KERNEL_OPERATOR_SYNC_H
