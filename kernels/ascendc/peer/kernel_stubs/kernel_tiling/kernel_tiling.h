// Stand-in for the kernel_tiling/kernel_tiling.h CANN's build generates from asc-devkit's advanced-API
// tiling structs (impl/adv_api/cmake/scripts/gen_kernel_tiling_data_def.py). CANN's GroupNormGrad
// kernel includes it and uses none of those structs; its own tiling struct comes from the header
// tests/cann_peer.py generates. Intentionally empty.
#ifndef GNMS_PEER_KERNEL_TILING_H
#define GNMS_PEER_KERNEL_TILING_H
#endif
