// Included by every row_kernels_<isa>.cc: forbids the compiler to fuse a*b+c into one
// FMA on its own. The kernels fuse where they say so (V::MulAdd: FMA in the AVX2 and
// AVX-512 builds and where portable_mul_add.h finds one); a fusion the compiler chose
// could differ between the vector body and the scalar tail of one row, or between
// compiler versions. (setup.py compiles all sources with the same flags, so this is
// set per file.)
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
