// Stand-in for tikicpulib's kernel_fp16.h (CANN's closed CPU-debug library; bisheng's built-in
// `half` on the device): the 16-bit float type of AscendC kernels. Declarations only: storage,
// conversion from and to float (implicit, as the built-in type converts), and ToFloat(), which
// asc-devkit calls in CPU-debug mode. No arithmetic operator is declared: arithmetic on half goes
// through float here, which is at most as permissive as the real type.
#ifndef MS_GROUPNORM_REALHEADER_KERNEL_FP16_H
#define MS_GROUPNORM_REALHEADER_KERNEL_FP16_H
#include <cstdint>
struct half {
  uint16_t bits = 0;
  half() = default;
  half(float value);
  operator float() const;
  float ToFloat() const;
};
#endif  // MS_GROUPNORM_REALHEADER_KERNEL_FP16_H
