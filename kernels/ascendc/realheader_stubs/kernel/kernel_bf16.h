// Stand-in for tikicpulib's kernel_bf16.h (CANN's closed CPU-debug library; bisheng's built-in
// `bfloat16_t` on the device): the bfloat16 type of AscendC kernels. Declarations only: storage,
// conversion from and to float (implicit, as the built-in type converts), and ToFloat(), which
// asc-devkit calls in CPU-debug mode. No arithmetic operator is declared: arithmetic on bfloat16_t goes
// through float here, which is at most as permissive as the real type.
#ifndef MS_GROUPNORM_REALHEADER_KERNEL_BF16_H
#define MS_GROUPNORM_REALHEADER_KERNEL_BF16_H
#include <cstdint>
struct bfloat16_t {
  uint16_t bits = 0;
  bfloat16_t() = default;
  bfloat16_t(float value);
  operator float() const;
  float ToFloat() const;
};
#endif  // MS_GROUPNORM_REALHEADER_KERNEL_BF16_H
