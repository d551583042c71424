// Included by every row_kernels_<isa>.cc: forbids fusing a*b+c into one FMA, which
// rounds once instead of twice and would make the builds disagree in the last bit.
// (setup.py compiles all sources with the same flags, so this is set per file.)
#if defined(__clang__)
#pragma clang fp contract(off)
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif
