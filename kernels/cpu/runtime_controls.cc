// Exported run-time controls of the CPU kernels: the thread count, the sizes that get a
// second thread or non-temporal stores, and the ISA build.
// Benchmarks and tests use them through ctypes; ordinary callers never need them.
#include "c_api.h"
#include "row_kernels.h"

extern "C" {

// Threads every kernel call uses from now on, whichever thread launches it
// (omp_set_num_threads would only reach the calling thread). 0 = OpenMP's default.
MS_GROUPNORM_EXPORT void MsGroupNormSetNumThreads(int threads) { ms_groupnorm::SetKernelThreads(threads); }

MS_GROUPNORM_EXPORT int MsGroupNormGetNumThreads() { return ms_groupnorm::KernelThreads(); }

// Smallest number of elements per thread before a call uses another thread; 0 = default.
MS_GROUPNORM_EXPORT void MsGroupNormSetMinElementsPerThread(int64_t elements) {
  ms_groupnorm::SetMinElementsPerThread(elements);
}

// Smallest output (bytes) written with non-temporal stores; 0 = default.
MS_GROUPNORM_EXPORT void MsGroupNormSetStreamMinBytes(int64_t bytes) { ms_groupnorm::SetStreamMinBytes(bytes); }

// Name of the row-loop build in use: "avx512", "avx2" or "portable".
MS_GROUPNORM_EXPORT const char *MsGroupNormActiveIsa() { return ms_groupnorm::ActiveRowKernels().isa; }

// Switches to the named build; returns 0, or 1 when the name is unknown or the CPU
// lacks the ISA (nothing changes then). Not meant to be called while kernels run.
MS_GROUPNORM_EXPORT int MsGroupNormSelectIsa(const char *isa) { return ms_groupnorm::SelectRowKernels(isa) ? 0 : 1; }

}  // extern "C"
