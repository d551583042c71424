#!/usr/bin/env python
"""GroupNorm forward/backward benchmark: ms_groupnorm against MindSpore's built-in
kernels, PyTorch (optional) and the numpy reference, in ONE process.

Every round visits every (shape, dtype, threads) configuration and times all the
implementations back to back, so the ratios are same-run numbers; the tables give
medians over rounds (ratios: median of the per-round ratios). A STREAM-like triad
(a = b + c on float32 arrays the size of one tensor; torch.add when torch is
installed, else numpy) runs in the same round to give
each configuration's bandwidth limit; effective GB/s counts the ideal traffic
(backward: read dy and x, write dx = 3 tensors; forward: read x, write y = 2).

    python scripts/bench_group_norm.py             # the full run (about 10 min on a quiet 2-core machine)
    python scripts/bench_group_norm.py --quick     # 1 round, 3 shapes, fp32, 1 thread, a smaller network
    python scripts/bench_group_norm.py --shapes 8x320x64x64x32 --dtypes float32,bfloat16 --threads 1

Outputs (--out, default scripts/results; --quick: scripts/results/quick): bench_latest.csv
(summary), bench_raw.csv (every timing), bench_latest.md (the tables), bench_latest.png.

Sections besides the per-shape tables (issue 11, items 1-4, reported side by side):
* per-call cost of the PyNative calls a user makes, tiny shape, against the built-in
  calls, one process per thread count (MindSpore's thread count is set once per process);
* one op inside a compiled graph, ours against the built-in op, tiny and mid shapes;
* a VAE-like network's training step (scripts/bench_network.py): nn.GroupNorm, ours and
  an identity (the ceiling), GRAPH and PYNATIVE, fp32 and fp16, two sizes;
* the kernel-only backward against torch, fp32 and bf16, for the ISA build the machine
  picks and, on an AVX-512 machine, for the AVX2 build forced too.

Notes on what is measured:
* "ours kernel": the C entry point through ctypes on preallocated numpy buffers
  (kernel only). torch's functional calls allocate their outputs on every call, which
  is what a torch user pays; its `.out` overload is a wrapper and is not faster.
* MindSpore's CPU thread count can be set once per process
  (op_tuning.threads_num); the script sets it to the largest --threads value, so in
  1-thread rows MindSpore's own kernels may use more threads than ours (a
  conservative comparison). Our kernel's threads follow each row via
  MsGroupNormSetNumThreads, which also applies inside MindSpore's launch threads.
* GRAPH rows: a jit-compiled value_and_grad step of a GroupNorm cell (sens = ones,
  constant-folded); "bwd" = step - forward, both from the same round, left out ("—")
  where that difference is below 5 % of the step (a difference of noisy times).
"""
import argparse
import csv
import ctypes
import json
import math
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

ANCHOR_SHAPES = [(2, 64, 32, 32, 32), (8, 320, 64, 64, 32), (16, 128, 56, 56, 32), (32, 32, 28, 28, 8),
                 (4, 1280, 8, 8, 32), (1, 3, 224, 224, 1), (3, 60, 17, 19, 6)]
QUICK_SHAPES = [(2, 64, 32, 32, 32), (16, 128, 56, 56, 32), (3, 60, 17, 19, 6)]
DTYPES = ["float32", "float16", "bfloat16"]
BANDWIDTH_TARGET_SHAPES = [(8, 320, 64, 64, 32), (16, 128, 56, 56, 32)]
EPS = 1e-5

try:
    import torch
except ImportError:  # optional: the torch columns are left out
    torch = None


# ----------------------------------------------------------------------------- timing
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


# ----------------------------------------------------------------------------- data
def bf16_bits(values):
    """float32 -> bfloat16 bit patterns (uint16), round to nearest even."""
    bits = np.ascontiguousarray(values, np.float32).view(np.uint32).astype(np.uint64)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype(np.uint16)


def bf16_values(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def storage(values, dtype):
    """The kernel's numpy storage for float32 `values` in `dtype`."""
    if dtype == "float32":
        return np.ascontiguousarray(values, np.float32)
    if dtype == "float16":
        return np.ascontiguousarray(values, np.float16)
    return bf16_bits(values)


def as_float32(array, dtype):
    return bf16_values(array) if dtype == "bfloat16" else array.astype(np.float32)


def shape_name(shape):
    return "x".join(str(v) for v in shape)


# ----------------------------------------------------------------------------- kernel lib
class KernelLib:
    def __init__(self):
        from ms_groupnorm import _kernel_lib

        self.lib = _kernel_lib.cdll()

    def set_threads(self, threads):
        self.lib.MsGroupNormSetNumThreads(threads)

    def isa(self):
        return self.lib.MsGroupNormActiveIsa().decode()

    def select_isa(self, name):
        if self.lib.MsGroupNormSelectIsa(name.encode()) != 0:
            raise RuntimeError(f"the {name} kernel build cannot run here")


class Case:
    """Inputs of one (shape, dtype) in every framework's form, plus the callables."""

    def __init__(self, shape, dtype, kernel, with_ms):
        N, C, H, W, G = shape
        self.shape, self.dtype, self.N, self.C, self.HxW, self.G = shape, dtype, N, C, H * W, G
        rng = np.random.default_rng(0)
        x32 = (rng.standard_normal((N, C, H, W)) * 2 + 0.5).astype(np.float32)
        dy32 = rng.standard_normal((N, C, H, W)).astype(np.float32)
        g32 = (1 + 0.1 * rng.standard_normal(C)).astype(np.float32)
        b32 = (0.1 * rng.standard_normal(C)).astype(np.float32)
        self.x, self.dy = storage(x32, dtype), storage(dy32, dtype)
        self.gamma, self.beta = storage(g32, dtype), storage(b32, dtype)
        self.y, self.dx = np.empty_like(self.x), np.empty_like(self.x)
        self.mean = np.empty((N, G), self.x.dtype)
        self.rstd = np.empty((N, G), self.x.dtype)
        self.dgamma, self.dbeta = np.empty_like(self.gamma), np.empty_like(self.gamma)
        self.kernel = kernel
        code = dtype.encode()
        ptr = lambda a: a.ctypes.data
        self._fwd_args = (ptr(self.x), ptr(self.gamma), ptr(self.beta), ptr(self.y), ptr(self.mean), ptr(self.rstd),
                          N, C, self.HxW, G, ctypes.c_float(EPS), code, code)
        self._bwd_args = (ptr(self.dy), ptr(self.x), ptr(self.mean), ptr(self.rstd), ptr(self.gamma), ptr(self.dx),
                          ptr(self.dgamma), ptr(self.dbeta), N, C, self.HxW, G, code, code, 1, 1, 1)
        assert self.ours_forward() == 0 and self.ours_backward() == 0
        # float32 copies of the exact stored values, for the numpy reference
        self.x32, self.dy32 = as_float32(self.x, dtype), as_float32(self.dy, dtype)
        self.g32, self.b32 = as_float32(self.gamma, dtype), as_float32(self.beta, dtype)
        self.mean32, self.rstd32 = as_float32(self.mean, dtype), as_float32(self.rstd, dtype)
        if torch is not None:
            self._init_torch()
        if with_ms:
            self._init_ms()

    def numel(self):
        return self.N * self.C * self.HxW

    def itemsize(self):
        return self.x.itemsize

    # -- ours, kernel only
    def ours_forward(self):
        return self.kernel.lib.MsGroupNormForward(*self._fwd_args)

    def ours_backward(self):
        return self.kernel.lib.MsGroupNormBackward(*self._bwd_args)

    # -- torch
    def _init_torch(self):
        tdtype = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}[self.dtype]
        to_t = lambda a: torch.from_numpy(a).to(tdtype)
        self.t_x = to_t(self.x32).contiguous()
        self.t_dy = to_t(self.dy32).contiguous()
        self.t_g, self.t_b = to_t(self.g32), to_t(self.b32)
        _, self.t_mean, self.t_rstd = self.torch_forward()

    def torch_forward(self):
        return torch.ops.aten.native_group_norm(self.t_x, self.t_g, self.t_b, self.N, self.C, self.HxW, self.G, EPS)

    def torch_backward(self):
        return torch.ops.aten.native_group_norm_backward(self.t_dy, self.t_x, self.t_mean, self.t_rstd, self.t_g,
                                                         self.N, self.C, self.HxW, self.G, [True, True, True])

    # -- numpy reference (float64 oracle)
    def numpy_forward(self):
        from ms_groupnorm import reference

        return reference.forward(self.x32, self.g32, self.b32, self.G, EPS)

    def numpy_backward(self):
        from ms_groupnorm import reference

        return reference.backward(self.dy32, self.x32, self.mean32, self.rstd32, self.g32, self.G)

    # -- MindSpore
    def _init_ms(self):
        import mindspore as ms
        from mindspore import Tensor

        mdtype = {"float32": ms.float32, "float16": ms.float16, "bfloat16": ms.bfloat16}[self.dtype]
        self.ms_dtype = mdtype
        to_ms = lambda a: Tensor(a, dtype=mdtype)
        self.m_x, self.m_dy = to_ms(self.x32), to_ms(self.dy32)
        self.m_g, self.m_b = to_ms(self.g32), to_ms(self.b32)
        self.m_mean, self.m_rstd = to_ms(self.mean32), to_ms(self.rstd32)
        self.m_x3 = Tensor(self.x32.reshape(self.N, self.C, -1), dtype=mdtype)


class GraphCall:
    """Calls a Cell in GRAPH_MODE; the timer switches the mode around the whole timing."""

    graph = True

    def __init__(self, cell, *inputs):
        self.cell, self.inputs = cell, inputs

    def __call__(self):
        return self.cell(*self.inputs)


def graph_cells():
    from mindspore import nn
    import mindspore as ms

    class GraphForward(nn.Cell):
        def __init__(self, net):
            super().__init__()
            self.net = net

        def construct(self, x):
            return self.net(x)

    class GraphGradStep(nn.Cell):
        """value_and_grad of the net w.r.t. its input and parameters (sens = ones)."""

        def __init__(self, net):
            super().__init__()
            self.net = net
            self.grad = ms.value_and_grad(net, grad_position=0, weights=net.trainable_params())

        def construct(self, x):
            return self.grad(x)

    class TrainStep(nn.Cell):
        def __init__(self, net, loss_fn, optimizer):
            super().__init__()
            self.optimizer = optimizer
            self.grad = ms.value_and_grad(nn.WithLossCell(net, loss_fn), None, optimizer.parameters)

        def construct(self, data, label):
            loss, grads = self.grad(data, label)
            self.optimizer(grads)
            return loss

    return GraphForward, GraphGradStep, TrainStep


def ms_callables(case):
    """name -> (callable) of the MindSpore-side implementations of one case."""
    import mindspore as ms
    from mindspore import nn, ops
    from mindspore.ops.auto_generate import group_norm_grad_op

    import ms_groupnorm
    from ms_groupnorm import functional as F

    GraphForward, GraphGradStep, _ = graph_cells()
    c = case
    out = {}
    out["bwd/ours_pynative"] = lambda: F.group_norm_backward(c.m_dy, c.m_x, c.m_mean, c.m_rstd, c.m_g, c.N, c.C, c.HxW,
                                                             c.G)
    out["bwd/ms_pynative"] = lambda: group_norm_grad_op(c.m_dy, c.m_x, c.m_mean, c.m_rstd, c.m_g, c.G, True, True,
                                                        True)
    out["fwd/ours_pynative"] = lambda: F.group_norm_forward(c.m_x, c.m_g, c.m_b, c.N, c.C, c.HxW, c.G, EPS)
    out["fwd/ms_pynative"] = lambda: ops.group_norm(c.m_x, c.G, c.m_g, c.m_b, EPS)

    for name, norm in (("ours", ms_groupnorm.GroupNorm(c.G, c.C)), ("ms", nn.GroupNorm(c.G, c.C))):
        fwd, step = GraphForward(norm), GraphGradStep(norm)
        out[f"graphfwd/{name}_graph"] = GraphCall(fwd, c.m_x)
        out[f"graphstep/{name}_graph"] = GraphCall(step, c.m_x)
    return out


# ----------------------------------------------------------------------------- bandwidth
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


# ----------------------------------------------------------------------------- main loop
def parse_shapes(text):
    return [tuple(int(v) for v in item.split("x")) for item in text.split(",") if item]


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true",
                        help="a short run: 1 round, 3 shapes, float32, 1 thread, a smaller network section; "
                             "writes to <out>/quick/ so that the committed full-run results stay")
    parser.add_argument("--shapes", help="comma list of NxCxHxWxG (default: the anchor shapes)")
    parser.add_argument("--dtypes", help="comma list of float32,float16,bfloat16 (default: all three)")
    parser.add_argument("--threads", help="comma list of thread counts (default 1,2)")
    parser.add_argument("--rounds", type=int, help="interleaved rounds of the per-shape tables (default 3, --quick 1)")
    parser.add_argument("--samples", type=int, default=5, help="timing samples per measurement (default 5)")
    parser.add_argument("--min-sample-ms", type=float, default=15.0,
                        help="each sample repeats the call for at least this long (default 15 ms)")
    parser.add_argument("--no-mindspore", action="store_true", help="kernel, torch and numpy only")
    parser.add_argument("--no-network", action="store_true", help="skip the network training-step section")
    parser.add_argument("--network-rounds", type=int,
                        help="interleaved rounds of the network section (default 4, --quick 2)")
    parser.add_argument("--out", help="output folder (default scripts/results, --quick scripts/results/quick)")
    parser.add_argument("--percall-worker", type=int, metavar="THREADS", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.percall_worker is not None:  # internal: one thread count's per-call section, as JSON
        print(PERCALL_MARK + json.dumps(percall_worker(args.percall_worker, args.rounds or 5)))
        return 0

    shapes = parse_shapes(args.shapes) if args.shapes else (QUICK_SHAPES if args.quick else ANCHOR_SHAPES)
    dtypes = args.dtypes.split(",") if args.dtypes else (["float32"] if args.quick else DTYPES)
    threads_list = [int(t) for t in args.threads.split(",")] if args.threads else ([1] if args.quick else [1, 2])
    rounds = args.rounds or (1 if args.quick else 3)
    network_rounds = args.network_rounds or (2 if args.quick else 4)
    out_dir = Path(args.out) if args.out else RESULTS / "quick" if args.quick else RESULTS
    with_ms = not args.no_mindspore
    timer = Timer(args.samples, args.min_sample_ms / 1e3, warmup_s=0.05)

    kernel = KernelLib()
    machine_isa = cpu_isa()
    # Issue 11 item 4: the AVX2 build too, forced where the machine would pick AVX-512.
    avx2_forced = kernel.isa() == "avx512"
    if with_ms:
        import mindspore as ms
        from mindspore.device_context.cpu import op_tuning

        op_tuning.threads_num(max(threads_list))  # settable once per process
        ms.set_context(mode=ms.PYNATIVE_MODE)
    ms_sync = pynative_sync if with_ms else None
    import ms_groupnorm

    # The installed package is what gets measured (run with PYTHONPATH=<checkout> to measure a checkout).
    print(f"ms_groupnorm measured: {Path(ms_groupnorm.__file__).parent}")
    print(f"machine: {machine_isa}; ms_groupnorm CPU kernels: ISA build {kernel.isa()}"
          f"{' (+ the avx2 build, forced)' if avx2_forced else ''}; torch: "
          f"{torch.__version__ if torch else 'not installed (torch columns skipped)'}; "
          f"numpy {np.__version__}; rounds={rounds}", flush=True)

    cases, ms_fns = {}, {}
    for shape in shapes:
        for dtype in dtypes:
            case = Case(shape, dtype, kernel, with_ms)
            cases[(shape, dtype)] = case
            if with_ms:
                ms_fns[(shape, dtype)] = ms_callables(case)
    pool = ThreadPoolExecutor(max(threads_list))
    triads = {}

    raw = []  # (round, shape, dtype, threads, impl, seconds)
    broken = {}  # (shape, dtype, impl) -> error text: not retried

    def record(rnd, shape, dtype, threads, impl, fn, sync=None):
        key = (shape, dtype, impl)
        if key in broken:
            return
        try:
            seconds = timed(timer, fn, sync)
        except Exception as error:  # an implementation that cannot run this case
            broken[key] = f"{type(error).__name__}: {str(error).splitlines()[0][:120] if str(error) else ''}"
            print(f"  n/a {impl} {shape_name(shape)} {dtype}: {broken[key]}", flush=True)
            return
        raw.append((rnd, shape, dtype, threads, impl, seconds))
        pause()

    start = time.time()
    default_isa = kernel.isa()
    for rnd in range(rounds):
        for threads in threads_list:
            kernel.set_threads(threads)
            if torch is not None:
                torch.set_num_threads(threads)
            for shape in shapes:
                for dtype in dtypes:
                    case = cases[(shape, dtype)]
                    nbytes = case.numel() * case.itemsize()
                    if nbytes not in triads:
                        triads[nbytes] = Triad(nbytes, pool)
                    triad = triads[nbytes]
                    record(rnd, shape, dtype, threads, "triad", lambda: triad.run(threads))
                    record(rnd, shape, dtype, threads, "bwd/ours_kernel", case.ours_backward)
                    if avx2_forced and dtype in ITEM4_DTYPES:
                        kernel.select_isa("avx2")
                        record(rnd, shape, dtype, threads, "bwd/ours_kernel_avx2", case.ours_backward)
                        kernel.select_isa(default_isa)
                    record(rnd, shape, dtype, threads, "fwd/ours_kernel", case.ours_forward)
                    if torch is not None:
                        record(rnd, shape, dtype, threads, "bwd/torch", case.torch_backward)
                        record(rnd, shape, dtype, threads, "fwd/torch", case.torch_forward)
                    if dtype == "float32" and threads == threads_list[0]:  # numpy is single-threaded
                        record(rnd, shape, dtype, threads, "bwd/numpy", case.numpy_backward)
                        record(rnd, shape, dtype, threads, "fwd/numpy", case.numpy_forward)
                    if with_ms:
                        for impl, fn in ms_fns[(shape, dtype)].items():
                            if impl.startswith("bwd/ms") or impl.startswith("fwd/ms") or "/ms_graph" in impl:
                                if dtype == "bfloat16":  # MindSpore's CPU GroupNorm(Grad) has no bf16 kernel
                                    broken.setdefault((shape, dtype, impl), "no bfloat16 CPU kernel in MindSpore")
                            record(rnd, shape, dtype, threads, impl, fn, ms_sync)
                        time.sleep(0.1)
            print(f"round {rnd + 1}/{rounds}, {threads} thread(s) done, {time.time() - start:.0f} s", flush=True)
        if with_ms:
            graph_op_round(rnd, kernel, timer, raw)
    kernel.set_threads(max(threads_list))

    percall = {}
    network = {}
    if with_ms:
        for threads in threads_list:
            percall[threads] = run_percall_worker(threads, 3 if args.quick else 7)
            print(f"per-call section, {threads} thread(s) done, {time.time() - start:.0f} s", flush=True)
        if not args.no_network:
            import bench_network

            sizes = ("vae",) if args.quick else tuple(bench_network.SIZES)
            network = bench_network.run(sizes=sizes, rounds=network_rounds, min_seconds=0.5,
                                        log=lambda line: print(line, flush=True))
            print(f"network section done, {time.time() - start:.0f} s", flush=True)

    out_dir.mkdir(parents=True, exist_ok=True)
    write_raw(out_dir / "bench_raw.csv", raw)
    summary = summarize(raw, shapes, dtypes, threads_list, cases)
    write_summary_csv(out_dir / "bench_latest.csv", summary)
    markdown = render_markdown(summary, raw, shapes, dtypes, threads_list, broken, kernel.isa(), rounds,
                               time.time() - start, machine_isa, avx2_forced, percall, network)
    (out_dir / "bench_latest.md").write_text(markdown)
    print(markdown)
    try:
        plot(out_dir / "bench_latest.png", summary, shapes, dtypes, threads_list)
    except Exception as error:  # the plot is a convenience; never lose the tables for it
        print(f"plot skipped: {type(error).__name__}: {error}")
    print(f"wrote {out_dir}/bench_latest.{{md,csv,png}} and bench_raw.csv")


# ----------------------------------------------------------------------------- extra sections
TINY = (2, 8, 4, 1, 4)  # N, C, H, W, G: a call that is pure overhead
MID = (4, 32, 16, 16, 8)
RESULTS = Path(__file__).resolve().parent / "results"
ITEM4_DTYPES = ("float32", "bfloat16")
PERCALL_MARK = "PERCALL-JSON "


def pynative_sync():
    """Waits for MindSpore's queued work. ms.runtime.synchronize() does the same but logs
    "[ERROR] ... CPU device is not supported" on CPU."""
    from mindspore.common.api import _pynative_executor

    _pynative_executor.sync()


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


def percall_worker(threads, rounds):
    """Issue 11 item 1 in this process, at ``threads`` threads for MindSpore and ours:
    per-call times of the PyNative calls a user makes on a tiny shape, interleaved.
    Returns {impl: [seconds per round]}."""
    import mindspore as ms
    from mindspore import Tensor, nn
    from mindspore.device_context.cpu import op_tuning
    from mindspore.ops.auto_generate import group_norm_grad_op

    import ms_groupnorm
    from ms_groupnorm import _kernel_lib, functional as F

    op_tuning.threads_num(threads)
    _kernel_lib.cdll().MsGroupNormSetNumThreads(threads)
    ms.set_context(mode=ms.PYNATIVE_MODE)
    N, C, H, W, G = TINY
    rng = np.random.default_rng(1)
    x = Tensor(rng.standard_normal((N, C, H)).astype(np.float32))
    dy = Tensor(rng.standard_normal((N, C, H)).astype(np.float32))
    gamma = Tensor(np.ones(C, np.float32))
    _, mean, rstd = F.group_norm_forward(x, gamma, None, N, C, H * W, G)
    impls = {
        "bwd/ours": lambda: F.group_norm_backward(dy, x, mean, rstd, gamma, N, C, H * W, G),
        "bwd/ms": lambda: group_norm_grad_op(dy, x, mean, rstd, gamma, G, True, True, True),
    }
    for name, layer in (("ours", ms_groupnorm.GroupNorm(G, C)), ("ms", nn.GroupNorm(G, C))):
        step = ms.value_and_grad(layer, grad_position=0, weights=layer.trainable_params())
        impls[f"layer_fwd/{name}"] = lambda layer=layer: layer(x)
        impls[f"layer_step/{name}"] = lambda step=step: step(x)
    timer = Timer(samples=3, min_sample_s=0.01, warmup_s=0.05)
    times = {impl: [] for impl in impls}
    for _ in range(rounds):
        for impl, fn in impls.items():
            times[impl].append(timer(fn, pynative_sync))
            pause()
    return times


def run_percall_worker(threads, rounds):
    """percall_worker in a fresh process: MindSpore's thread count is set once per process."""
    command = [sys.executable, str(Path(__file__).resolve()), "--percall-worker", str(threads), "--rounds", str(rounds)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900)
    for line in result.stdout.splitlines():
        if line.startswith(PERCALL_MARK):
            return json.loads(line[len(PERCALL_MARK):])
    print(f"  per-call worker ({threads} threads) failed:\n{result.stdout[-1500:]}\n{result.stderr[-3000:]}")
    return {}


def graph_op_round(rnd, kernel, timer, raw):
    """Issue 11 item 2: what one op costs inside a compiled graph, ours (the aot Custom
    ops) next to the built-in GroupNorm/GroupNormGrad, on a tiny and a mid shape: a graph
    runs the op REPS times in a chain, so graph-launch overhead is shared."""
    import mindspore as ms
    from mindspore import Tensor

    if not hasattr(graph_op_round, "nets"):
        graph_op_round.nets = {}
        for shape in (TINY, MID):
            N, C, H, W, G = shape
            rng = np.random.default_rng(3)
            x = Tensor(rng.standard_normal((N, C, H, W)).astype(np.float32))
            gamma, beta = Tensor(np.ones(C, np.float32)), Tensor(np.zeros(C, np.float32))
            mean, rstd = Tensor(np.zeros((N, G), np.float32)), Tensor(np.ones((N, G), np.float32))
            for impl, net in graph_op_cells(G).items():
                args = (x, gamma, beta) if impl.startswith("graphop_fwd") else (x, x, mean, rstd, gamma)
                graph_op_round.nets[(shape, impl)] = GraphCall(net, *args)
    kernel.set_threads(1)
    for (shape, impl), call in graph_op_round.nets.items():
        seconds = timed(timer, call, pynative_sync)
        raw.append((rnd, shape, "float32", 1, impl, seconds / GRAPH_OP_REPS))
        pause()


GRAPH_OP_REPS = 16


def graph_op_cells(group):
    """GRAPH_MODE cells running one op GRAPH_OP_REPS times in a chain: ours and built-in,
    forward and backward."""
    from mindspore import nn
    from mindspore.ops.auto_generate import group_norm_grad_op, group_norm_op

    from ms_groupnorm import _ops

    full = (True, True, True)

    class OursForward(nn.Cell):
        def __init__(self):
            super().__init__()
            self.op = _ops._forward_op(group, EPS, full, "cpu")

        def construct(self, x, gamma, beta):
            for _ in range(GRAPH_OP_REPS):
                x = self.op(x, gamma, beta)[0]
            return x

    class BuiltinForward(nn.Cell):
        def construct(self, x, gamma, beta):
            for _ in range(GRAPH_OP_REPS):
                x = group_norm_op(x, group, gamma, beta, EPS)[0]
            return x

    class OursBackward(nn.Cell):
        def __init__(self):
            super().__init__()
            self.op = _ops._backward_op(group, full, "cpu")

        def construct(self, dy, x, mean, rstd, gamma):
            for _ in range(GRAPH_OP_REPS):
                dy = self.op(dy, x, mean, rstd, gamma)[0]
            return dy

    class BuiltinBackward(nn.Cell):
        def construct(self, dy, x, mean, rstd, gamma):
            for _ in range(GRAPH_OP_REPS):
                dy = group_norm_grad_op(dy, x, mean, rstd, gamma, group, True, True, True)[0]
            return dy

    return {"graphop_fwd/ours": OursForward(), "graphop_fwd/ms": BuiltinForward(),
            "graphop_bwd/ours": OursBackward(), "graphop_bwd/ms": BuiltinBackward()}


# ----------------------------------------------------------------------------- summary
def write_raw(path, raw):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["round", "shape", "dtype", "threads", "impl", "ms"])
        for rnd, shape, dtype, threads, impl, seconds in raw:
            w.writerow([rnd, shape_name(shape), dtype, threads, impl, f"{seconds * 1e3:.6g}"])


def summarize(raw, shapes, dtypes, threads_list, cases):
    """{(shape, dtype, threads): {impl: {"ms": median ms, "rounds": {rnd: seconds}}}} plus
    derived entries: graph bwd = step - forward per round."""
    table = {}
    for rnd, shape, dtype, threads, impl, seconds in raw:
        table.setdefault((shape, dtype, threads), {}).setdefault(impl, {})[rnd] = seconds
    for key, impls in table.items():
        for name in ("ours", "ms"):
            step, fwd = impls.get(f"graphstep/{name}_graph"), impls.get(f"graphfwd/{name}_graph")
            if step and fwd:
                diffs = {r: step[r] - fwd[r] for r in step if r in fwd}
                # step - forward is a difference of two noisy times: below 5 % of the step
                # (or negative) it says nothing, and no backward time is reported.
                if diffs and statistics.median(diffs.values()) > 0.05 * statistics.median(step.values()):
                    impls[f"bwd/{name}_graph"] = diffs
        # numpy is single-threaded: show its 1-thread time in every thread row
    for (shape, dtype, threads), impls in list(table.items()):
        for impl in ("bwd/numpy", "fwd/numpy"):
            if impl not in impls:
                for other_threads in threads_list:
                    src = table.get((shape, dtype, other_threads), {}).get(impl)
                    if src:
                        impls[impl] = src
    summary = {}
    for key, impls in table.items():
        summary[key] = {impl: {"ms": statistics.median(rounds.values()) * 1e3, "rounds": rounds}
                        for impl, rounds in impls.items()}
        shape, dtype, threads = key
        case = cases.get((shape, dtype))
        if case is None or "triad" not in impls:
            continue
        tensor_bytes = case.numel() * case.itemsize()
        limit = statistics.median(3 * tensor_bytes / s for s in impls["triad"].values()) / 1e9
        summary[key]["triad"]["gbps"] = limit
        for impl, entry in summary[key].items():
            if impl.startswith("bwd/") or impl.startswith("fwd/"):
                streams = 3 if impl.startswith("bwd/") else 2
                entry["gbps"] = streams * tensor_bytes / (entry["ms"] / 1e3) / 1e9
                entry["fraction"] = entry["gbps"] / limit
    return summary


def ratio(summary_entry, ours, other):
    """Median over rounds of other/ours (same-round): > 1 means ours is faster."""
    a, b = summary_entry.get(ours), summary_entry.get(other)
    if not a or not b:
        return None
    common = [r for r in a["rounds"] if r in b["rounds"] and a["rounds"][r] > 0]
    if not common:
        return None
    return statistics.median(b["rounds"][r] / a["rounds"][r] for r in common)


def geomean(values):
    values = [v for v in values if v is not None and v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def write_summary_csv(path, summary):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["shape", "dtype", "threads", "impl", "median_ms", "rounds", "eff_GBps", "fraction_of_triad",
                    "speedup_of_ours"])
        for (shape, dtype, threads), impls in sorted(summary.items(), key=lambda kv: str(kv[0])):
            for impl, entry in sorted(impls.items()):
                ours = None
                if impl.startswith("bwd/") or impl.startswith("fwd/"):
                    kind = impl.split("/")[0]
                    ours_impl = f"{kind}/ours_kernel"
                    if "pynative" in impl:
                        ours_impl = f"{kind}/ours_pynative"
                    elif "graph" in impl:
                        ours_impl = f"{kind}/ours_graph"
                    ours = ratio(impls, ours_impl, impl)
                w.writerow([shape_name(shape), dtype, threads, impl, f"{entry['ms']:.6g}", len(entry["rounds"]),
                            f"{entry.get('gbps', float('nan')):.4g}", f"{entry.get('fraction', float('nan')):.4g}",
                            "" if ours is None else f"{ours:.4g}"])


def fmt(value, spec=".3g", suffix=""):
    return "—" if value is None else f"{value:{spec}}{suffix}"


def render_markdown(summary, raw, shapes, dtypes, threads_list, broken, isa, rounds, seconds, machine_isa="",
                    avx2_forced=False, percall=None, network=None):
    lines = [f"Benchmark `scripts/bench_group_norm.py`: {rounds} round(s), implementations "
             f"interleaved per configuration; machine: {machine_isa}; ms_groupnorm ISA build `{isa}`"
             f"{' (and the avx2 build, forced, for item 4)' if avx2_forced else ''}; torch "
             f"{torch.__version__ if torch else 'not installed'}; {seconds / 60:.1f} min.",
             "Times are medians over rounds (ms); speed-ups are medians of same-round ratios "
             "(other / ours, > 1 = ours faster). GB/s = ideal traffic / time; % = of the same-run "
             f"{'torch' if torch else 'numpy'} triad a = b + c on tensor-sized float32 arrays (no non-temporal stores, so a kernel that streams its output can "
             "pass 100 %).", ""]
    lines += ["### Backward", "",
              "| shape | dtype | thr | ours kernel ms | GB/s (% triad) | vs torch | vs numpy | PyNative: vs MS GroupNormGrad | "
              "GRAPH bwd: vs MS | ours PyNative vs torch | ours GRAPH bwd vs torch |",
              "|---|---|---|---|---|---|---|---|---|---|---|"]
    for threads in threads_list:
        for dtype in dtypes:
            for shape in shapes:
                e = summary.get((shape, dtype, threads), {})
                k = e.get("bwd/ours_kernel")
                if not k:
                    continue
                lines.append(
                    f"| {shape_name(shape)} | {dtype} | {threads} | {k['ms']:.4g} | "
                    f"{k.get('gbps', 0):.1f} ({100 * k.get('fraction', 0):.0f} %) | "
                    f"{fmt(ratio(e, 'bwd/ours_kernel', 'bwd/torch'), '.2f', '×')} | "
                    f"{fmt(ratio(e, 'bwd/ours_kernel', 'bwd/numpy'), '.1f', '×')} | "
                    f"{fmt(ratio(e, 'bwd/ours_pynative', 'bwd/ms_pynative'), '.1f', '×')} | "
                    f"{fmt(ratio(e, 'bwd/ours_graph', 'bwd/ms_graph'), '.1f', '×')} | "
                    f"{fmt(ratio(e, 'bwd/ours_pynative', 'bwd/torch'), '.2f', '×')} | "
                    f"{fmt(ratio(e, 'bwd/ours_graph', 'bwd/torch'), '.2f', '×')} |")
    lines += ["", "### Forward", "",
              "| shape | dtype | thr | ours kernel ms | GB/s (% triad) | vs torch | vs numpy | PyNative: vs MS GroupNorm | "
              "GRAPH fwd: vs MS |", "|---|---|---|---|---|---|---|---|---|"]
    for threads in threads_list:
        for dtype in dtypes:
            for shape in shapes:
                e = summary.get((shape, dtype, threads), {})
                k = e.get("fwd/ours_kernel")
                if not k:
                    continue
                lines.append(
                    f"| {shape_name(shape)} | {dtype} | {threads} | {k['ms']:.4g} | "
                    f"{k.get('gbps', 0):.1f} ({100 * k.get('fraction', 0):.0f} %) | "
                    f"{fmt(ratio(e, 'fwd/ours_kernel', 'fwd/torch'), '.2f', '×')} | "
                    f"{fmt(ratio(e, 'fwd/ours_kernel', 'fwd/numpy'), '.1f', '×')} | "
                    f"{fmt(ratio(e, 'fwd/ours_pynative', 'fwd/ms_pynative'), '.1f', '×')} | "
                    f"{fmt(ratio(e, 'graphfwd/ours_graph', 'graphfwd/ms_graph'), '.1f', '×')} |")
    lines += ["", "### Median times (ms)", "", "| shape | dtype | thr | " + " | ".join(TIME_COLUMNS) + " |",
              "|---|---|---|" + "---|" * len(TIME_COLUMNS)]
    for threads in threads_list:
        for dtype in dtypes:
            for shape in shapes:
                e = summary.get((shape, dtype, threads), {})
                if not e:
                    continue
                cells = [fmt(e[c]["ms"], ".4g") if c in e else "—" for c in TIME_COLUMNS]
                lines.append(f"| {shape_name(shape)} | {dtype} | {threads} | " + " | ".join(cells) + " |")
    if network:
        import bench_network

        lines += ["", "### Network training step (VAE-like, `scripts/bench_network.py`)", "",
                  "Per-step medians over interleaved rounds; ceiling = nn.GroupNorm step / identity step; "
                  "gain taken = (t_nn − t_ours) / (t_nn − t_identity) per round, median ± half the interquartile "
                  "range.", ""] + bench_network.table(network)
    lines += ["", "### Issue 11 targets (items 1–4), this run", ""]
    lines += issue11_targets(summary, shapes, threads_list, isa, avx2_forced, percall or {}, network or {})
    lines += ["", "### Earlier targets (kernels and per-shape calls)", ""] + targets(summary, raw, shapes, dtypes,
                                                                                   threads_list)
    if broken:
        lines += ["", "Not measured:", ""]
        seen = set()
        for (shape, dtype, impl), why in sorted(broken.items(), key=str):
            if (dtype, impl, why) not in seen:
                seen.add((dtype, impl, why))
                lines.append(f"* {impl} {dtype}: {why}")
    return "\n".join(lines) + "\n"


TIME_COLUMNS = ["triad", "bwd/ours_kernel", "bwd/torch", "bwd/numpy", "bwd/ours_pynative", "bwd/ms_pynative",
                "bwd/ours_graph", "bwd/ms_graph", "fwd/ours_kernel", "fwd/torch", "fwd/ours_pynative",
                "fwd/ms_pynative", "graphfwd/ours_graph", "graphfwd/ms_graph"]


def targets(summary, raw, shapes, dtypes, threads_list):
    out = []

    def verdict(ok):
        return "—" if ok is None else ("met" if ok else "NOT met")

    def geo(kind_ours, kind_other, dtype, threads, subset=None):
        return geomean([ratio(summary.get((s, dtype, threads), {}), kind_ours, kind_other)
                        for s in (subset or shapes)])

    for threads in threads_list:
        g = geo("bwd/ours_kernel", "bwd/torch", "float32", threads)
        worst = [ratio(summary.get((s, "float32", threads), {}), "bwd/ours_kernel", "bwd/torch") for s in shapes]
        worst = min((w for w in worst if w is not None), default=None)
        out.append(f"* bwd fp32 kernel vs torch, {threads}T: geo-mean {fmt(g, '.2f', '×')} (target ≥ 1.5×), "
                   f"slowest shape {fmt(worst, '.2f', '×')} (target ≥ 1×): "
                   f"{verdict(None if g is None else g >= 1.5 and worst >= 1.0)}")
    for shape in BANDWIDTH_TARGET_SHAPES:
        e = summary.get((shape, "float32", 1), {}).get("bwd/ours_kernel")
        if e and "fraction" in e:
            out.append(f"* bwd fp32 1T {shape_name(shape)}: {e['gbps']:.1f} GB/s = {100 * e['fraction']:.0f} % of the "
                       f"same-run triad (target ≥ 60 %): {verdict(e['fraction'] >= 0.6)}")
    for dtype, goal in (("bfloat16", 1.5), ("float16", 3.0)):
        for threads in threads_list:
            g = geo("bwd/ours_kernel", "bwd/torch", dtype, threads)
            out.append(f"* bwd {dtype} kernel vs torch, {threads}T: geo-mean {fmt(g, '.2f', '×')} "
                       f"(target ≥ {goal}×): {verdict(None if g is None else g >= goal)}")
    for path, ours, other in (("PyNative", "bwd/ours_pynative", "bwd/ms_pynative"),
                              ("GRAPH", "bwd/ours_graph", "bwd/ms_graph")):
        for threads in threads_list:
            g = geomean([geo(ours, other, d, threads) for d in dtypes if d != "bfloat16"])
            out.append(f"* bwd through MindSpore ({path}) vs built-in, {threads}T, fp32+fp16: geo-mean "
                       f"{fmt(g, '.1f', '×')} (target ≥ 10×): {verdict(None if g is None else g >= 10)}")
            for shape in BANDWIDTH_TARGET_SHAPES:
                r = ratio(summary.get((shape, "float32", threads), {}), ours, "bwd/torch")
                out.append(f"  * {path} {shape_name(shape)} fp32 {threads}T vs torch: {fmt(r, '.2f', '×')} "
                           f"(target ≥ 1.5×): {verdict(None if r is None else r >= 1.5)}")
    for threads in threads_list:
        g_ms = geomean([geo("fwd/ours_kernel", "fwd/ms_pynative", d, threads) for d in dtypes if d != "bfloat16"])
        g_t = geomean([geo("fwd/ours_kernel", "fwd/torch", d, threads) for d in dtypes])
        out.append(f"* fwd {threads}T: vs MS GroupNorm (PyNative, kernel-only ours) geo-mean {fmt(g_ms, '.1f', '×')} "
                   f"(target ≥ 5×): {verdict(None if g_ms is None else g_ms >= 5)}; vs torch geo-mean "
                   f"{fmt(g_t, '.2f', '×')} (target ≥ 1×): {verdict(None if g_t is None else g_t >= 1)}")
        g_py = geomean([geo("fwd/ours_pynative", "fwd/ms_pynative", d, threads) for d in dtypes if d != "bfloat16"])
        out.append(f"  * fwd {threads}T through MindSpore PyNative (ours op vs built-in): geo-mean {fmt(g_py, '.1f', '×')}")
    return out


def pace(ratio_value):
    """"1.30× faster" / "1.25× slower" from a speed-up (> 1 = ours faster)."""
    if ratio_value is None:
        return "—"
    return f"{ratio_value:.2f}× faster" if ratio_value >= 1 else f"{1 / ratio_value:.2f}× slower"


def round_ratios(times, ours, other):
    """Per-round ours/other cost ratios of a per-call section ({impl: [seconds per round]})."""
    a, b = times.get(ours, []), times.get(other, [])
    return [x / y for x, y in zip(a, b) if x > 0 and y > 0]


def issue11_targets(summary, shapes, threads_list, isa, avx2_forced, percall, network):
    out = []

    def verdict(ok):
        return "—" if ok is None else ("met" if ok else "NOT met")

    # Item 1: per-call cost in PyNative, tiny shape, default settings.
    n, c, h, w, g = TINY
    for threads in threads_list:
        times = percall.get(threads, {})
        if not times:
            out.append(f"* item 1, {threads}T: per-call section not measured")
            continue
        times = dict(times)
        for name in ("ours", "ms"):  # the layer's backward = (value_and_grad step) - forward, per round
            times[f"layer_bwd/{name}"] = [s - f for s, f in zip(times[f"layer_step/{name}"], times[f"layer_fwd/{name}"])]
        for label, impl in (("layer forward (GroupNorm vs nn.GroupNorm, no gradient)", "layer_fwd"),
                            ("layer forward+backward (value_and_grad step)", "layer_step"),
                            ("layer backward (step − forward)", "layer_bwd"),
                            ("group_norm_backward vs GroupNormGrad", "bwd")):
            ratios = round_ratios(times, f"{impl}/ours", f"{impl}/ms")
            r = statistics.median(ratios) if ratios else None
            ms_us = statistics.median(times[f"{impl}/ms"]) * 1e6
            out.append(f"* item 1, {threads}T, {n}x{c}x{h} G={g}, {label}: ours costs {fmt(r, '.2f', '×')} the built-in "
                       f"call ({ms_us:.0f} µs) (target ≤ 1×): {verdict(None if r is None else r <= 1.0)}")
    # Item 2: one op inside a compiled graph.
    for shape in (TINY, MID):
        e = summary.get((shape, "float32", 1), {})
        for kind in ("fwd", "bwd"):
            r = ratio(e, f"graphop_{kind}/ms", f"graphop_{kind}/ours")  # ours / built-in cost
            if r is None:
                continue
            out.append(f"* item 2, GRAPH, one {kind} op {shape_name(shape)}: ours costs {r:.2f}× the built-in op "
                       f"({e[f'graphop_{kind}/ms']['ms'] * 1e3:.0f} µs per op) (target ≤ 1.1×): {verdict(r <= 1.1)}")
    # Item 3: the network.
    if network:
        import bench_network

        out += [bench_network.verdict_line(key, bench_network.summarize(t)) for key, t in network.items()]
    # Item 4: kernel-only backward vs torch, fp32 and bf16, both ISA builds; PyNative vs torch.
    builds = [(isa, "bwd/ours_kernel")] + ([("avx2 (forced)", "bwd/ours_kernel_avx2")] if avx2_forced else [])
    for build, impl in builds:
        for dtype in ITEM4_DTYPES:
            for threads in threads_list:
                rs = [ratio(summary.get((s, dtype, threads), {}), impl, "bwd/torch") for s in shapes]
                rs = [r for r in rs if r is not None]
                if not rs:
                    continue
                geo, worst = geomean(rs), min(rs)
                out.append(f"* item 4, kernel-only bwd vs torch, {build} build, {dtype}, {threads}T: geo-mean "
                           f"{geo:.2f}×, slowest shape {pace(worst)} (target geo-mean ≥ 1.5×, no shape below 1×): "
                           f"{verdict(geo >= 1.5 and worst >= 1.0)}")
    for dtype in ITEM4_DTYPES:
        for threads in threads_list:
            rs = [(ratio(summary.get((s, dtype, threads), {}), "bwd/ours_pynative", "bwd/torch"), s) for s in shapes]
            rs = [(r, s) for r, s in rs if r is not None]
            if rs:
                worst, where = min(rs)
                out.append(f"* item 4, bwd through PyNative vs torch, {dtype}, {threads}T: slowest shape "
                           f"{shape_name(where)} {pace(worst)} (target: no anchor shape slower): {verdict(worst >= 1.0)}")
    return out


def plot(path, summary, shapes, dtypes, threads_list):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    comparisons = [("bwd/ours_kernel", "bwd/torch", "bwd kernel vs torch"),
                   ("bwd/ours_pynative", "bwd/ms_pynative", "bwd PyNative vs MS GroupNormGrad"),
                   ("bwd/ours_graph", "bwd/ms_graph", "bwd GRAPH vs MS"),
                   ("fwd/ours_kernel", "fwd/torch", "fwd kernel vs torch")]
    fig, axes = plt.subplots(len(comparisons), len(threads_list), figsize=(7 * len(threads_list), 3.2 * len(comparisons)),
                             squeeze=False)
    width = 0.8 / max(1, len(dtypes))
    for row, (ours, other, title) in enumerate(comparisons):
        for col, threads in enumerate(threads_list):
            ax = axes[row][col]
            for k, dtype in enumerate(dtypes):
                values = [ratio(summary.get((s, dtype, threads), {}), ours, other) or 0 for s in shapes]
                ax.bar([i + k * width for i in range(len(shapes))], values, width, label=dtype)
            ax.axhline(1.0, color="black", linewidth=0.8)
            ax.set_yscale("log")
            ax.set_xticks([i + width * (len(dtypes) - 1) / 2 for i in range(len(shapes))])
            ax.set_xticklabels([shape_name(s) for s in shapes], rotation=20, fontsize=7)
            ax.set_title(f"{title}, {threads} thread(s): speed-up (>1 = ours faster)", fontsize=9)
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    sys.exit(main())
