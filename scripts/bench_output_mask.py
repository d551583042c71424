"""What each output_mask of the backward costs, measured side by side in one run.

For each shape, the masks are timed round-robin (kernel only via ctypes, and through
MindSpore as a PyNative op call), and the table gives medians and the ratio to the
full mask (True, True, True). A C triad of one tensor's bytes (scripts/bench/limit.py) runs
in the same rounds and gives the kernel's distance to the limit, counting the full-size
tensors each mask must move: dx reads dy and x and writes dx (3), dgamma reads dy and x (2),
dbeta alone reads dy (1). Usage: python scripts/bench_output_mask.py [--rounds 7]
"""
import argparse
import os
import statistics
import time

import mindspore as ms
import numpy as np
from mindspore import Tensor

import ms_groupnorm
from bench.limit import LEGEND, Distance, Triad
from ms_groupnorm.backends import cpu_kernels

MASKS = [(True, True, True), (True, False, False), (False, True, True), (False, True, False),
         (False, False, True)]
SHAPES = [((8, 320, 64, 64), 32), ((16, 128, 56, 56), 32), ((2, 64, 32, 32), 32)]


def streams(mask):
    """Full-size tensors the kernel reads and writes at least for ``mask`` (dx, dgamma, dbeta)."""
    dx, dgamma, _ = mask
    return 3 if dx else 2 if dgamma else 1


def time_call(fn, min_seconds=0.2):
    """Median seconds per call over 5 samples of back-to-back calls."""
    fn()
    calls = 1
    while True:
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed >= min_seconds / 5:
            break
        calls *= 2
    samples = []
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - start) / calls)
    return statistics.median(samples)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    ms.set_context(mode=ms.PYNATIVE_MODE)
    rng = np.random.default_rng(0)
    print(f"kernel {LEGEND}")
    print(f"{'shape':>22} {'mask':>20} {'kernel ms':>10} {'ratio':>6} {'pynative ms':>12} {'ratio':>6}  "
          f"kernel: distance to the limit")
    for shape, G in SHAPES:
        x = rng.standard_normal(shape).astype(np.float32)
        dy = rng.standard_normal(shape).astype(np.float32)
        gamma = rng.standard_normal(shape[1]).astype(np.float32)
        _, mean, rstd = cpu_kernels.forward(x, gamma, None, G)
        tensors = [Tensor(a) for a in (dy, x, mean, rstd, gamma)]
        N, C, HxW = shape[0], shape[1], int(np.prod(shape[2:]))

        def kernel(mask):
            return lambda: cpu_kernels.backward(dy, x, mean, rstd, gamma, G, mask)

        def framework(mask):
            def call():
                outs = ms_groupnorm.group_norm_backward(*tensors, N, C, HxW, G, mask)
                ms.runtime.synchronize()
                return outs
            return call

        times = {(kind, mask): [] for kind in ("kernel", "ms") for mask in MASKS}
        triad, triad_times = Triad(x.nbytes, os.cpu_count()), []  # the kernel runs on OpenMP's default threads
        for _ in range(args.rounds):
            for mask in MASKS:  # the triad next to every mask: the limit of the same moments
                times[("kernel", mask)].append(time_call(kernel(mask)))
                times[("ms", mask)].append(time_call(framework(mask)))
                triad_times.append(time_call(triad))
        full_k = statistics.median(times[("kernel", MASKS[0])])
        full_m = statistics.median(times[("ms", MASKS[0])])
        for mask in MASKS:
            k, m = statistics.median(times[("kernel", mask)]), statistics.median(times[("ms", mask)])
            label = "".join("1" if b else "0" for b in mask)
            limit = Distance(k, x.size, x.itemsize, streams(mask), statistics.median(triad_times)).text()
            print(f"{str((*shape, G)):>22} {label:>20} {k * 1e3:10.3f} {k / full_k:6.2f} {m * 1e3:12.3f} "
                  f"{m / full_m:6.2f}  {limit}")


if __name__ == "__main__":
    main()
