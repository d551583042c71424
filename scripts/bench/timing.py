"""Timing: the median-of-samples timer, MindSpore's sync, and the same-run bandwidth triad."""
import math
import statistics
import time

import numpy as np

from .common import torch


class Timer:
    """Median per-call time of fn: a warm-up, then `samples` samples of k calls each,
    k chosen so that one sample lasts at least min_sample_s."""

    def __init__(self, samples, min_sample_s, warmup_s):
        self.samples, self.min_sample_s, self.warmup_s = samples, min_sample_s, warmup_s

    def __call__(self, fn, sync=None, warmup_calls=2):
        def run(k):
            start = time.perf_counter()
            for _ in range(k):
                fn()
            if sync is not None:
                sync()
            return time.perf_counter() - start

        calls, spent = 0, 0.0
        while calls < warmup_calls or spent < self.warmup_s:
            spent += run(1)
            calls += 1
        per_call = max(spent / calls, 1e-7)
        k = max(1, int(math.ceil(self.min_sample_s / per_call)))
        return statistics.median(run(k) / k for _ in range(self.samples))


def timed(timer, fn, sync):
    """timer(fn) in GRAPH_MODE for GraphCall objects, in the current mode otherwise."""
    if not getattr(fn, "graph", False):
        return timer(fn, sync)
    import mindspore as ms

    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        return timer(fn, sync)
    finally:
        ms.set_context(mode=ms.PYNATIVE_MODE)


def pause():
    """Lets idle pool threads (MindSpore's, OpenMP's) stop spinning between timings."""
    time.sleep(0.02)


def pynative_sync():
    """Waits for MindSpore's queued work. ms.runtime.synchronize() does the same but logs
    "[ERROR] ... CPU device is not supported" on CPU."""
    from mindspore.common.api import _pynative_executor

    _pynative_executor.sync()


class GraphCall:
    """Calls a Cell in GRAPH_MODE; the timer switches the mode around the whole timing."""

    graph = True

    def __init__(self, cell, *inputs):
        self.cell, self.inputs = cell, inputs

    def __call__(self):
        return self.cell(*self.inputs)


class Triad:
    """STREAM triad a = b + c (read 2, write 1) on float32 arrays of `nbytes` each.
    With torch: torch.add(out=) on torch's own threads. Without it: numpy split over
    Python threads (numpy releases the GIL), whose dispatch cost makes small arrays
    look slower than they are."""

    def __init__(self, nbytes, pool):
        n = max(1024, nbytes // 4)
        self.a, self.b, self.c = np.zeros(n, np.float32), np.ones(n, np.float32), np.ones(n, np.float32)
        if torch is not None:
            self.ta, self.tb, self.tc = (torch.from_numpy(v) for v in (self.a, self.b, self.c))
        self.pool = pool

    def run(self, threads):
        if torch is not None:
            torch.add(self.tb, self.tc, out=self.ta)  # torch.set_num_threads(threads) is in effect
            return
        if threads == 1:
            np.add(self.b, self.c, out=self.a)
            return
        bounds = [(p[0], p[-1] + 1) for p in np.array_split(np.arange(self.a.size), threads)]
        list(self.pool.map(lambda lo_hi: np.add(self.b[lo_hi[0]:lo_hi[1]], self.c[lo_hi[0]:lo_hi[1]],
                                                out=self.a[lo_hi[0]:lo_hi[1]]), bounds))


def cpu_isa():
    """The machine's widest vector ISA that matters here, from /proc/cpuinfo."""
    try:
        flags = set(next(line for line in open("/proc/cpuinfo") if line.startswith("flags")).split())
    except (OSError, StopIteration):
        return "unknown ISA"
    if "avx512f" in flags:
        return "AVX-512 (avx512f)"
    if "avx2" in flags:
        return "AVX2, no AVX-512"
    return "no AVX2"

