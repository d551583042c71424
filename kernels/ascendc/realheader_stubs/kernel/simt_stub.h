// Stand-in for tikicpulib's simt_stub.h (CANN's closed CPU-debug library): the SIMT programming
// model's CPU-debug support. SIMT exists on Ascend 950 (arch 3510) only; asc-devkit's
// include/simt_api/device_types.h includes this header in CPU-debug mode on every arch, and
// nothing of it is used when compiling for dav-c220 (910B). Intentionally empty.
#ifndef MS_GROUPNORM_REALHEADER_SIMT_STUB_H
#define MS_GROUPNORM_REALHEADER_SIMT_STUB_H
#endif  // MS_GROUPNORM_REALHEADER_SIMT_STUB_H
