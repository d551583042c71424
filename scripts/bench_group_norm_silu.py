#!/usr/bin/env python
"""Fused GroupNorm + SiLU benchmark, in ONE process, ratios measured side by side:

1. a training step (forward + backward: gradients of the input and of every gamma/beta) of
   a stack of GroupNorm+SiLU blocks at Stable-Diffusion-like shapes, GRAPH and PYNATIVE,
   float32 and float16 activations, with three implementations of a block:
     fused   ms_groupnorm.GroupNormSiLU
     ours    ms_groupnorm.GroupNorm, then ops.silu (the unfused pair on our kernels)
     nn      mindspore.nn.GroupNorm, then ops.silu
   Parameters are float32, except nn's with float16 input (nn.GroupNorm needs them in the
   input's dtype). Goal: fused >= 1.3x ours in both modes (what fusing must give a user).
2. kernel-only forward + backward, fused (C entry points through ctypes on preallocated
   buffers) against torch's aten kernels native_group_norm + silu + silu_backward +
   native_group_norm_backward (which allocate their outputs, as a torch user pays), float32
   and bfloat16 (float32 parameters for ours; torch's parameters in the input's dtype).
   Goal: fused >= 1.5x torch.
3. the memory the backward keeps, per block: the full-size tensors the backward kernels
   read that the forward must keep alive (derived from the kernels' contracts, not an
   allocator measurement): unfused x (GroupNorm's backward) and y (SiLU's backward reads
   its input); fused x only (y and sigmoid(y) are recomputed from x, mean, rstd, gamma, beta).

Every round times every variant of a configuration back to back (order alternating), and
the tables give medians over rounds of the per-round ratios. A C triad of the same bytes
(scripts/bench/limit.py) is timed in the same rounds and gives the distance to the limit of
sections 1 and 2: the ideal traffic of a block's fused forward + backward is 5 full-size
tensors (read x, write z; read dz and x, write dx).

    python scripts/bench_group_norm_silu.py            # full: 3 rounds, 2 blocks
    python scripts/bench_group_norm_silu.py --quick    # 2 rounds, shorter timings
    python scripts/bench_group_norm_silu.py --kernel-only --threads 1,default \
        --baseline-lib /tmp/old/libms_groupnorm_cpu.so  # section 2 only, an older build alongside

A full run with the default modes, dtypes and threads writes its picture to
docs/img/bench_group_norm_silu.png (the README's); other runs to
scripts/results/quick/bench_group_norm_silu.png (--png PATH to choose).
"""
import argparse
import ctypes
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from bench.limit import LEGEND, Distance, Triad
from bench.machine import describe, load_text
from bench.plot import IMAGE_DIR, bars, figure, save

SHAPES = [(2, 320, 64, 64, 32), (4, 256, 32, 32, 32)]  # N, C, H, W, G
MODES = ("graph", "pynative")
DTYPES = ("float32", "float16")
VARIANTS = ("fused", "ours", "nn")
STEP_GOAL, KERNEL_GOAL = 1.3, 1.5
STREAMS = 5  # full-size tensors a fused forward + backward reads and writes at least
QUICK_DIR = Path(__file__).resolve().parent / "results" / "quick"
DEFAULT_TORCH_THREADS = None  # torch's own default, read once before any change (main)


ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2}


def shape_name(shape):
    N, C, H, W, G = shape
    return f"({N}, {C}, {H}, {W}) G{G}"


def numel(shape):
    N, C, H, W, _ = shape
    return N * C * H * W


def distance(t, variant, dtype, shape, per=1):
    """The distance to the limit of ``variant``'s median time (divided by ``per`` blocks)."""
    if "triad" not in t:
        return "—"
    return Distance(statistics.median(t[variant]) / per, numel(shape), ITEMSIZE[dtype], STREAMS,
                    statistics.median(t["triad"])).text()


def time_call(fn, min_seconds, calls_min=3):
    """Median per-call seconds over at least ``calls_min`` calls and ``min_seconds``."""
    times, spent = [], 0.0
    while len(times) < calls_min or spent < min_seconds:
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
        spent += times[-1]
    return statistics.median(times)


# ---------------------------------------------------------------- 1. training step
def block_factory(variant, dtype_name):
    import mindspore as ms
    from mindspore import nn, ops

    import ms_groupnorm

    class Pair(nn.Cell):
        def __init__(self, norm):
            super().__init__()
            self.norm = norm

        def construct(self, x):
            return ops.silu(self.norm(x))

    def make(groups, channels):
        if variant == "fused":
            return ms_groupnorm.GroupNormSiLU(groups, channels)
        if variant == "ours":
            return Pair(ms_groupnorm.GroupNorm(groups, channels))
        param_dtype = ms.float16 if dtype_name == "float16" else ms.float32
        return Pair(nn.GroupNorm(groups, channels, dtype=param_dtype))

    return make


def train_step(variant, shape, dtype_name, mode, blocks):
    import mindspore as ms
    from mindspore import Tensor, nn

    N, C, H, W, G = shape
    make = block_factory(variant, dtype_name)

    class Net(nn.Cell):
        def __init__(self):
            super().__init__()
            self.blocks = nn.SequentialCell([make(G, C) for _ in range(blocks)])

        def construct(self, x):
            return self.blocks(x).astype(ms.float32).mean()

    net = Net()
    grad_fn = ms.value_and_grad(net, grad_position=0, weights=net.trainable_params())

    def step(x):
        loss, (dx, grads) = grad_fn(x)
        return loss, dx, grads

    if mode == "graph":
        step = ms.jit(step)
    dtype = ms.float16 if dtype_name == "float16" else ms.float32
    x = Tensor(np.random.default_rng(1).standard_normal((N, C, H, W)).astype(np.float32)).astype(dtype)

    def run():
        loss, dx, _ = step(x)
        dx.asnumpy()  # waits for the step, also in PyNative
        return loss

    return run


def bench_steps(shapes, modes, dtypes, blocks, rounds, min_seconds, log):
    import mindspore as ms

    configs = [(mode, dtype, shape) for mode in modes for dtype in dtypes for shape in shapes]
    steps = {}
    for mode, dtype, shape in configs:
        ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
        for variant in VARIANTS:
            start = time.perf_counter()
            fn = train_step(variant, shape, dtype, mode, blocks)
            fn()
            fn()
            steps[(mode, dtype, shape, variant)] = fn
            log(f"  step {mode} {dtype} {shape_name(shape)} {variant}: ready in {time.perf_counter() - start:.1f} s")
    times = {}
    triads = {}
    for rnd in range(rounds):
        for mode, dtype, shape in configs:
            ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
            for variant in (VARIANTS if rnd % 2 == 0 else VARIANTS[::-1]):
                seconds = time_call(steps[(mode, dtype, shape, variant)], min_seconds)
                times.setdefault((mode, dtype, shape), {}).setdefault(variant, []).append(seconds)
            nbytes = numel(shape) * ITEMSIZE[dtype]  # the limit: MindSpore's kernels use every core
            triad = triads.setdefault(nbytes, Triad(nbytes, os.cpu_count()))
            times[(mode, dtype, shape)].setdefault("triad", []).append(time_call(triad, min_seconds / 4))
        log(f"  step round {rnd + 1}/{rounds} done")
    ms.set_context(mode=ms.PYNATIVE_MODE)
    return times


def ratio(times, numerator, denominator):
    """Median over rounds of times[numerator] / times[denominator]."""
    return statistics.median(a / b for a, b in zip(times[numerator], times[denominator]))


def mark(value, goal):
    return f"{value:.2f}x " + ("(met)" if value >= goal else "(NOT met)")


def step_table(times, blocks):
    lines = [f"Training step of {blocks} GroupNorm+SiLU blocks (forward + backward, gradients of x, gamma, beta); "
             f"median ms over rounds; speed-up = median of per-round time ratios.", "",
             "Last column: one fused block's share of the step (step time / blocks), its " + LEGEND + ".", "",
             "| mode | dtype | shape | fused ms | ours+silu ms | nn+silu ms | fused vs ours+silu (goal 1.3x) "
             "| fused vs nn+silu | fused: distance to the limit |", "|---|---|---|---|---|---|---|---|---|"]
    for (mode, dtype, shape), t in times.items():
        ms_ = {v: statistics.median(t[v]) * 1e3 for v in VARIANTS}
        lines.append(f"| {mode} | {dtype} | {shape_name(shape)} | {ms_['fused']:.1f} | {ms_['ours']:.1f} | "
                     f"{ms_['nn']:.1f} | {mark(ratio(t, 'ours', 'fused'), STEP_GOAL)} | "
                     f"{ratio(t, 'nn', 'fused'):.2f}x | {distance(t, 'fused', dtype, shape, blocks)} |")
    return lines


# ---------------------------------------------------------------- 2. kernel only
def bf16_bits(values):
    bits = np.ascontiguousarray(values, np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


class FusedKernel:
    """Forward + backward through the C entry points, preallocated buffers; ``lib``: a
    loaded kernel library (default: this checkout's)."""

    def __init__(self, shape, dtype, lib=None):
        from ms_groupnorm.backends import cpu_kernels

        self.lib = cpu_kernels.cdll() if lib is None else cpu_kernels.declare_silu(lib)
        N, C, H, W, G = shape
        self.sizes = (N, C, H * W, G)
        rng = np.random.default_rng(0)
        x = rng.standard_normal((N, C, H, W)).astype(np.float32)
        dz = rng.standard_normal((N, C, H, W)).astype(np.float32)
        if dtype == "bfloat16":
            x, dz = bf16_bits(x), bf16_bits(dz)
        self.x, self.dz = x, dz
        self.z, self.dx = np.empty_like(x), np.empty_like(x)
        self.gamma = rng.uniform(0.5, 1.5, C).astype(np.float32)
        self.beta = rng.uniform(-0.5, 0.5, C).astype(np.float32)
        self.mean, self.rstd = np.empty((N, G), np.float32), np.empty((N, G), np.float32)
        self.dgamma, self.dbeta = np.empty(C, np.float32), np.empty(C, np.float32)
        self.names = (dtype.encode(), b"float32")

    def __call__(self):
        p = lambda a: a.ctypes.data_as(ctypes.c_void_p)  # noqa: E731
        N, C, HxW, G = self.sizes
        status = self.lib.MsGroupNormSiluForward(p(self.x), p(self.gamma), p(self.beta), p(self.z), p(self.mean),
                                                 p(self.rstd), N, C, HxW, G, 1e-5, 1.0, *self.names)
        status |= self.lib.MsGroupNormSiluBackward(
            p(self.dz), p(self.x), p(self.mean), p(self.rstd), p(self.gamma), p(self.beta), p(self.dx),
            p(self.dgamma), p(self.dbeta), N, C, HxW, G, 1.0, *self.names, 1, 1, 1)
        assert status == 0


class TorchKernels:
    """torch's aten GroupNorm and SiLU kernels, forward + backward, no autograd."""

    def __init__(self, shape, dtype):
        import torch

        N, C, H, W, G = shape
        self.torch, self.sizes = torch, (N, C, H * W, G)
        tdtype = getattr(torch, dtype)
        rng = np.random.default_rng(0)
        self.x = torch.tensor(rng.standard_normal((N, C, H, W)), dtype=tdtype)
        self.dz = torch.tensor(rng.standard_normal((N, C, H, W)), dtype=tdtype)
        self.w = torch.tensor(rng.uniform(0.5, 1.5, C), dtype=tdtype)
        self.b = torch.tensor(rng.uniform(-0.5, 0.5, C), dtype=tdtype)

    def __call__(self):
        aten = self.torch.ops.aten
        N, C, HxW, G = self.sizes
        with self.torch.no_grad():
            y, mean, rstd = aten.native_group_norm(self.x, self.w, self.b, N, C, HxW, G, 1e-5)
            aten.silu(y)
            dy = aten.silu_backward(self.dz, y)
            aten.native_group_norm_backward(dy, self.x, mean, rstd, self.w, N, C, HxW, G, [True, True, True])


def set_threads(libs, threads):
    """threads: an int, or None for the defaults (torch's and OpenMP's)."""
    import torch

    torch.set_num_threads(threads or DEFAULT_TORCH_THREADS)
    for lib in libs:
        lib.MsGroupNormSetNumThreads(threads or 0)  # 0: OpenMP's default again


def bench_kernels(shapes, rounds, min_seconds, log, thread_counts=(None,), baseline=None):
    """{(threads, dtype, shape): {variant: [seconds per round]}}; variants fused, torch and,
    with a ``baseline`` library, base (the fused kernels of that older build)."""
    try:
        import torch  # noqa: F401  pylint: disable=unused-import
    except ImportError:
        log("  torch not installed: no kernel-only comparison")
        return {}
    from ms_groupnorm.backends import cpu_kernels

    libs = [cpu_kernels.cdll()] + ([baseline] if baseline is not None else [])
    times = {}
    for threads in thread_counts:
        set_threads(libs, threads)
        for dtype in ("float32", "bfloat16"):
            for shape in shapes:
                variants = [("fused", FusedKernel(shape, dtype)), ("torch", TorchKernels(shape, dtype)),
                            ("triad", Triad(numel(shape) * ITEMSIZE[dtype], threads or os.cpu_count()))]
                if baseline is not None:
                    variants.append(("base", FusedKernel(shape, dtype, baseline)))
                for _, fn in variants:
                    fn()
                for rnd in range(rounds):
                    for name, fn in (variants if rnd % 2 == 0 else variants[::-1]):
                        times.setdefault((threads, dtype, shape), {}).setdefault(name, []).append(
                            time_call(fn, min_seconds))
            log(f"  kernel-only {dtype}, threads {threads or 'default'} done")
    set_threads(libs, None)
    return times


def kernel_table(times):
    import torch

    with_base = any("base" in t for t in times.values())
    lines = [f"Kernel-only forward + backward (torch {torch.__version__}; default threads: torch "
             f"{DEFAULT_TORCH_THREADS}, ours OpenMP's default); median ms; ratios = median of per-round ratios. "
             "Fused kernels' " + LEGEND + ".", "",
             "| threads | dtype | shape | fused ms | " + ("old fused ms | " if with_base else "") +
             "torch GN+SiLU ms | fused vs torch (goal 1.5x) | fused: distance to the limit |" +
             (" fused vs old |" if with_base else ""),
             "|---|---|---|---|---|---|---|" + ("---|---|" if with_base else "")]
    for (threads, dtype, shape), t in times.items():
        row = f"| {threads or 'default'} | {dtype} | {shape_name(shape)} | {statistics.median(t['fused']) * 1e3:.2f} | "
        if with_base:
            row += f"{statistics.median(t['base']) * 1e3:.2f} | "
        row += (f"{statistics.median(t['torch']) * 1e3:.2f} | {mark(ratio(t, 'torch', 'fused'), KERNEL_GOAL)} | "
                f"{distance(t, 'fused', dtype, shape)} |")
        if with_base:
            row += f" {ratio(t, 'base', 'fused'):.2f}x |"
        lines.append(row)
    return lines


# ---------------------------------------------------------------- 3. memory
def memory_table(shapes, dtypes):
    lines = ["Full-size tensors the backward keeps per block (statistics, O(N*G), and parameters left out).", "",
             "| dtype | shape | unfused: x and y | fused: x | saved |", "|---|---|---|---|---|"]
    for dtype in dtypes:
        size = 4 if dtype == "float32" else 2
        for shape in shapes:
            N, C, H, W, _ = shape
            mib = N * C * H * W * size / 2 ** 20
            lines.append(f"| {dtype} | {shape_name(shape)} | {2 * mib:.1f} MiB | {mib:.1f} MiB | {mib:.1f} MiB (50 %) |")
    return lines


def picture(path, step_times, kernel_times, title, note):
    """The fused pair's picture: the training step against the unfused pairs (ours, nn), the
    kernel-only step against torch and the fused kernels' distance to the triad, per shape."""
    fig, axes = figure(2, 2, title, width=7.0)
    shapes = list(dict.fromkeys(key[-1] for key in list(step_times) + list(kernel_times)))
    labels = [shape_name(s) for s in shapes]

    def series(times, name, numerator, denominator="fused"):
        return [ratio(times[key], numerator, denominator) if key in times else None
                for key in ((*name, s) for s in shapes)]

    configs = list(dict.fromkeys(key[:2] for key in step_times))
    pairs = ((axes[0][0], "ours", "our GroupNorm + ops.silu"), (axes[0][1], "nn", "nn.GroupNorm + ops.silu"))
    for ax, other, text in pairs:
        bars(ax, labels, {f"{mode.upper()} {dtype}": series(step_times, (mode, dtype), other)
                          for mode, dtype in configs},
             f"training step of 2 blocks: fused vs {text} (goal 1.3x vs ours)")
    kconfigs = list(dict.fromkeys(key[:2] for key in kernel_times))
    bars(axes[1][0], labels, {f"{threads or 'default'} thr {dtype}": series(kernel_times, (threads, dtype), "torch")
                              for threads, dtype in kconfigs},
         "kernel only, forward + backward: fused vs torch GroupNorm + SiLU (goal 1.5x)")
    limit = {}
    for threads, dtype in kconfigs:
        values = []
        for s in shapes:
            t = kernel_times.get((threads, dtype, s))
            d = None if not t or "triad" not in t else Distance(
                statistics.median(t["fused"]), numel(s), ITEMSIZE[dtype], STREAMS, statistics.median(t["triad"]))
            values.append(100 * d.fraction if d else None)
        limit[f"{threads or 'default'} thr {dtype}"] = values
    bars(axes[1][1], labels, limit, "fused kernels: distance to the memory limit (GB/s / triad GB/s)", kind="percent")
    return save(fig, path, note)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 rounds, 0.2 s per timing")
    parser.add_argument("--rounds", type=int, default=None)
    parser.add_argument("--blocks", type=int, default=2, help="GroupNorm+SiLU blocks per step (default 2)")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--dtypes", default=",".join(DTYPES))
    parser.add_argument("--out", default=None, help="also write the tables (markdown) to this file")
    parser.add_argument("--kernel-only", action="store_true", help="only the kernel-only comparison (section 2)")
    parser.add_argument("--threads", default="default",
                        help="kernel-only thread counts, comma-separated ints or 'default' (default: default)")
    parser.add_argument("--baseline-lib", default=None,
                        help="an older libms_groupnorm_cpu.so whose fused kernels join the kernel-only table")
    parser.add_argument("--png", default=None,
                        help="the picture (default: docs/img/bench_group_norm_silu.png for a full run with the "
                             "default modes, dtypes and threads, else scripts/results/quick/)")
    args = parser.parse_args(argv)
    default_run = not (args.quick or args.kernel_only or args.baseline_lib) and (
        args.modes, args.dtypes, args.threads, args.blocks) == (",".join(MODES), ",".join(DTYPES), "default", 2)
    png = Path(args.png) if args.png else (IMAGE_DIR if default_run else QUICK_DIR) / "bench_group_norm_silu.png"
    start = time.time()
    started = f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {load_text()}"
    thread_counts = tuple(None if t == "default" else int(t) for t in args.threads.split(","))
    rounds = args.rounds or (2 if args.quick else 3)
    min_seconds = 0.2 if args.quick else 0.5
    log = lambda text: print(text, flush=True)  # noqa: E731
    import mindspore as ms

    import ms_groupnorm
    from ms_groupnorm.backends import cpu_kernels

    global DEFAULT_TORCH_THREADS  # pylint: disable=global-statement
    try:
        import torch

        DEFAULT_TORCH_THREADS = torch.get_num_threads()
    except ImportError:
        pass
    lib = cpu_kernels.cdll()
    baseline = None if args.baseline_lib is None else cpu_kernels.load_library(args.baseline_lib)
    machine = describe(lib)
    log(f"ms_groupnorm from {ms_groupnorm.__file__}, MindSpore {ms.__version__}; {machine}; {started}; "
        f"{'quick' if args.quick else 'full'} run: {rounds} rounds, {min_seconds} s per timing")
    kernel_times = bench_kernels(SHAPES, rounds, min_seconds, log, thread_counts, baseline)
    lines = [f"`scripts/bench_group_norm_silu.py`, {started}; {machine}; MindSpore {ms.__version__}.", ""]
    step_times = {}
    if not args.kernel_only:
        step_times = bench_steps(SHAPES, args.modes.split(","), args.dtypes.split(","), args.blocks, rounds,
                                 min_seconds, log)
        lines += step_table(step_times, args.blocks) + [""]
    if kernel_times:
        lines += kernel_table(kernel_times) + [""]
    if not args.kernel_only:
        lines += memory_table(SHAPES, args.dtypes.split(","))
    text = "\n".join(lines)
    print("\n" + text)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
    command = " ".join(["scripts/bench_group_norm_silu.py"] + list(sys.argv[1:] if argv is None else argv))
    try:
        import torch

        title = (f"ms_groupnorm fused GroupNorm + SiLU on CPU, same-run ratios, {started}\n{machine}; "
                 f"MindSpore {ms.__version__}, torch {torch.__version__}")
    except ImportError:
        title = f"ms_groupnorm fused GroupNorm + SiLU on CPU, same-run ratios, {started}\n{machine}"
    try:
        picture(png, step_times, kernel_times, title, f"{rounds} rounds, {(time.time() - start) / 60:.1f} min: "
                f"python {command}")
        log(f"wrote {png}")
    except Exception as error:  # the picture is a convenience; never lose the tables for it
        log(f"picture skipped: {type(error).__name__}: {error}")


if __name__ == "__main__":
    main()
