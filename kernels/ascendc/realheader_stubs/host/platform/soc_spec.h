// Stand-in for platform/soc_spec.h, a header of CANN's closed platform library that asc-devkit's
// include/utils/tiling/platform/platform_ascendc.h includes (for the SoC/arch enums of its
// platform queries). platform_ascendc.h forward-declares what it uses itself (fe::PlatFormInfos,
// enum class NpuArch), and our op_host calls only its UB-size, core-count and workspace queries,
// so nothing is needed from it here. Intentionally empty.
#ifndef MS_GROUPNORM_REALHEADER_PLATFORM_SOC_SPEC_H
#define MS_GROUPNORM_REALHEADER_PLATFORM_SOC_SPEC_H
#endif  // MS_GROUPNORM_REALHEADER_PLATFORM_SOC_SPEC_H
