// Stand-in for asc-devkit's kernel_type.h, which CANN's GroupNormGrad kernel includes after
// kernel_operator.h: on the twin, kernel_operator.h already holds every type the kernel uses.
// Intentionally empty.
#ifndef GNMS_PEER_KERNEL_TYPE_H
#define GNMS_PEER_KERNEL_TYPE_H
#endif
