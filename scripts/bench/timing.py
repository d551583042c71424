"""Timing: the median-of-samples timer and MindSpore's sync (the triad is in limit.py)."""
import math
import statistics
import time


def balanced_orders(n):
    """Orders of range(n) in which each item follows every other item equally often (a Williams
    design: n orders for even n, 2n for odd). A plain rotation keeps the cyclic order, so each
    implementation always ran right after the same other one (in bench_kernel_backward.py: after the
    same-bytes pass, which evicts the inputs, or after a library that had just read them; one build
    passed as both --lib and --baseline ran 5-15 % slower in one place than in the other)."""
    first = [0]
    for k in range(1, n):
        first.append((k + 1) // 2 if k % 2 else n - k // 2)
    orders = [[(i + shift) % n for i in first] for shift in range(n)]
    return orders + ([order[::-1] for order in orders] if n % 2 else [])


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
