// Stand-in for tikicpulib's stub_fun.h (CANN's closed CPU-debug library): the CPU-debug runtime's
// bookkeeping hooks that asc-devkit's CPU-debug branches call (buffer and queue tracking, the
// simulated cross-core barrier). Declarations only, any arguments, no value except the UB base
// address: they record state for the CPU simulator and check nothing a compiler would.
// (__sync_all_stub/__ib_set_stub/__ib_wait_stub are called on the device too: cce_builtins.h.)
#ifndef MS_GROUPNORM_REALHEADER_STUB_FUN_H
#define MS_GROUPNORM_REALHEADER_STUB_FUN_H

#include <cstdint>

#include "stub_def.h"

#define ASC_CPU_HOOK(name) template <typename... Args> void name(Args...);
ASC_CPU_HOOK(AscendCBufAlloc) ASC_CPU_HOOK(AscendCBufDeque) ASC_CPU_HOOK(AscendCBufEnque) ASC_CPU_HOOK(AscendCBufFree)
ASC_CPU_HOOK(AscendCBufGet) ASC_CPU_HOOK(AscendCBufInit) ASC_CPU_HOOK(AscendCQueCreate)
ASC_CPU_HOOK(AscendCRecordPoolHierarchy) ASC_CPU_HOOK(AscendCTBufPoolInit) ASC_CPU_HOOK(AscendCTBufPoolResetCheck)
ASC_CPU_HOOK(AscendCUpdateTbufPoolStatus)
#undef ASC_CPU_HOOK
uint8_t *AscendCBufAbsAddr(uint8_t hardware, uint64_t addr, uint32_t len);

#endif  // MS_GROUPNORM_REALHEADER_STUB_FUN_H
