#!/usr/bin/env bash
# Builds the CPU kernels with AddressSanitizer + UndefinedBehaviorSanitizer and runs
# tests/sanitize/kernel_driver.cc (every shape/dtype/mask combination it lists, plus
# broken calls) with 1 and 2 OpenMP threads. Any sanitizer report fails the run.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out="${1:-$(mktemp -d)}"
mkdir -p "$out"
g++ -std=c++17 -O1 -g -fopenmp -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=all \
    -D_GLIBCXX_USE_CXX11_ABI=0 -I"$root/kernels/cpu" \
    "$root"/kernels/cpu/*.cc "$root/tests/sanitize/kernel_driver.cc" -o "$out/kernel_driver_asan"
for threads in 1 2; do
  echo "OMP_NUM_THREADS=$threads"
  OMP_NUM_THREADS=$threads ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1 \
      "$out/kernel_driver_asan"
done
echo "sanitizers: clean"
