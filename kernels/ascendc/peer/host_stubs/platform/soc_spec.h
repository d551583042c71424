// Stand-in for CANN's closed platform/soc_spec.h: the NpuArch enum asc-devkit's platform_ascendc.h
// forward-declares. Its values are the arch numbers (PlatformAscendC::GetCurNpuArch casts the
// platform's NPU_ARCH string, e.g. "2201" for the 910B, to it); the names are the ones ops-nn and
// asc-devkit compare against. DAV_RESV is what GetCurNpuArch returns when it has none.
#ifndef GNMS_PEER_PLATFORM_SOC_SPEC_H
#define GNMS_PEER_PLATFORM_SOC_SPEC_H
#include <cstdint>
enum class NpuArch : uint32_t {
  DAV_RESV = 0,
  DAV_1001 = 1001,
  DAV_2002 = 2002,
  DAV_2201 = 2201,
  DAV_3510 = 3510,
  DAV_5102 = 5102,
};
#endif
