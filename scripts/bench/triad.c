/* The same-run bandwidth limit of the benchmarks (scripts/bench/limit.py): a STREAM-style
 * triad, two reads and one write per element, on float32 arrays sized to a tensor's bytes.
 * It is built with -O3 -march=native like the kernels' widest build and takes the thread
 * count per call, so each timing uses exactly the threads of the row it sits next to. */
void BenchTriad(float *a, const float *b, const float *c, long n, int threads) {
#pragma omp parallel for num_threads(threads) schedule(static)
  for (long i = 0; i < n; ++i) a[i] = b[i] + 0.5f * c[i];
}
