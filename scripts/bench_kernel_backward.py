#!/usr/bin/env python
"""Kernel-only GroupNorm backward (or, with --op forward, forward): our CPU kernel
(ctypes, preallocated outputs) against torch.ops.aten.native_group_norm_backward
(native_group_norm), interleaved in one process. --op silu_backward / silu_forward time the
fused GroupNorm + SiLU kernels against what torch runs for silu(group_norm(x)): aten's
silu_backward then native_group_norm_backward (the backward, y = group_norm's output saved
as autograd saves it), or native_group_norm then silu (the forward).

For each round, shape, dtype and thread count the implementations are timed in
alternation (the order changes every sample, so that each one follows every other one equally
often): each sample is k back-to-back calls,
k chosen so a sample lasts at least --sample-ms. Per round each implementation's
time is its fastest sample (--stat min: on a shared machine the fastest sample is
the least disturbed one) or its median sample; the table gives, per configuration,
the median over rounds of the per-round ratio torch / ours (> 1 = ours faster). With --baseline PATH a second build
of the library (e.g. the one before a change) is timed in the same rounds, so
before/after ratios come from the same machine state.

    python scripts/bench_kernel_backward.py                       # all anchor shapes
    python scripts/bench_kernel_backward.py --baseline /tmp/old/libms_groupnorm_cpu.so
    python scripts/bench_kernel_backward.py --shapes 4x1280x8x8x32 --dtypes bfloat16 --threads 1
    python scripts/bench_kernel_backward.py --op forward --isa avx2 --threads 1
    python scripts/bench_kernel_backward.py --table scripts/shapes/every_shape.txt --dtypes float32 --rounds 1
    python scripts/bench_kernel_backward.py --shapes 4096x512:32,64x512x7x7:1 --op forward
    python scripts/bench_kernel_backward.py --op silu_backward --table scripts/shapes/every_shape.txt --rounds 1

Shapes are NxCxHxW:G (any number of spatial dims, none for a 2-D input: 4096x512:32) or the
older NxCxHxWxG. --table reads a shape table (scripts/shapes/every_shape.txt: one SHAPE:G and
its reason per line); rows above --max-elements and empty rows are listed and skipped.

Distance to the limit: each configuration also times, in the same rotation, a numpy pass over
the same bytes: for the backward a triad-like np.add(dy, x, out=dx) (two reads, one write, as
the ideal backward), for the forward np.copyto(y, x) (one read, one write). The second table
gives ours and that pass in GB/s (the bytes the ideal kernel moves) for the shapes whose data
outgrow the L2 cache, and ns per element for the small, cache-resident ones.

It calls the library through ctypes, not through MindSpore (importing ms_groupnorm imports
MindSpore, whose threads stay idle here: 1- and 2-thread times were the same without that import).
Times are per call; torch allocates its outputs on every call, which is what a
torch user pays (its .out overload is a wrapper around the same call and is slower).
"""
import argparse
import math
import statistics
import time
from pathlib import Path

import numpy as np
import torch

from bench.timing import balanced_orders
from ms_groupnorm.backends import cpu_kernels

ANCHOR_SHAPES = ["2x64x32x32x32", "8x320x64x64x32", "16x128x56x56x32", "32x32x28x28x8", "4x1280x8x8x32",
                 "1x3x224x224x1", "3x60x17x19x6"]
DEFAULT_LIB = Path(__file__).resolve().parents[1] / "ms_groupnorm" / "_lib" / "libms_groupnorm_cpu.so"
LIMIT = "same-bytes pass"  # np.copyto (forward) / np.add (backward) over the same bytes, timed alongside
CACHE_RESIDENT_BYTES = 2 << 20  # below this the data stay in L2/L3 between calls: report ns per element
TORCH_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


class Case:
    """One (shape, dtype): torch tensors and, per library, numpy buffers and bound calls."""

    def __init__(self, shape, dtype, libs, op="backward"):
        N, C, HxW, G = shape
        self.N, self.C, self.HxW, self.G = N, C, HxW, G
        rng = np.random.default_rng(0)
        tdtype = TORCH_DTYPES[dtype]
        self.t_x = torch.from_numpy((rng.standard_normal((N, C, HxW)) * 2 + 0.5).astype(np.float32)).to(tdtype)
        self.t_dy = torch.from_numpy(rng.standard_normal((N, C, HxW)).astype(np.float32)).to(tdtype)
        self.t_g = torch.from_numpy((1 + 0.1 * rng.standard_normal(C)).astype(np.float32)).to(tdtype)
        t_b = torch.zeros(C, dtype=tdtype)
        self.t_b = t_b
        self.t_y, self.t_mean, self.t_rstd = torch.ops.aten.native_group_norm(self.t_x, self.t_g, t_b, N, C,
                                                                              self.HxW, G, 1e-5)
        view = np.uint16 if dtype == "bfloat16" else None
        as_np = lambda t: (t.view(torch.int16).numpy().view(np.uint16) if view else t.numpy()).copy()
        self.x, self.dy, self.gamma = as_np(self.t_x), as_np(self.t_dy), as_np(self.t_g)
        self.mean, self.rstd = as_np(self.t_mean.to(tdtype)), as_np(self.t_rstd.to(tdtype))
        self.calls = {}
        p = lambda a: a.ctypes.data
        beta = np.zeros_like(self.gamma)
        sizes, dtypes = (N, C, self.HxW, G), (dtype.encode(), dtype.encode())
        for name, lib in libs.items():
            if op.endswith("forward"):
                outs = (np.empty_like(self.x), np.empty_like(self.mean), np.empty_like(self.rstd))
                args = (p(self.x), p(self.gamma), p(beta), *map(p, outs), *sizes, 1e-5)
                fn, args = ((lib.MsGroupNormSiluForward, args + (1.0,) + dtypes) if op == "silu_forward" else
                            (lib.MsGroupNormForward, args + dtypes))
            else:
                outs = (np.empty_like(self.x), np.empty_like(self.gamma), np.empty_like(self.gamma))
                inputs = (p(self.dy), p(self.x), p(self.mean), p(self.rstd), p(self.gamma))
                fn, args = ((lib.MsGroupNormSiluBackward, inputs + (p(beta),) + tuple(map(p, outs)) + sizes +
                             (1.0,) + dtypes + (1, 1, 1)) if op == "silu_backward" else
                            (lib.MsGroupNormBackward, inputs + tuple(map(p, outs)) + sizes + dtypes + (1, 1, 1)))
            outs += (beta,)
            call = lambda fn=fn, args=args: fn(*args)
            assert call() == 0
            self.calls[name] = (call, outs)
        self.calls["torch"] = ({"forward": self.torch_forward, "backward": self.torch_backward,
                                "silu_forward": self.torch_silu_forward, "silu_backward": self.torch_silu_backward}[op],
                               None)
        # the same bytes as the ideal kernel: forward reads x and writes y, backward reads dy, x and writes dx;
        # 16-bit data as uint16 (numpy's float16 arithmetic is a scalar loop, far from memory speed: as
        # float16 this pass took ~7 ns per element, 20-30x longer than the same bytes as integers)
        a, b = (array.view(np.uint16) if array.dtype == np.float16 else array for array in (self.x, self.dy))
        a, b, out = a.copy(), b.copy(), np.empty_like(a)
        self.elements = self.x.size
        forward = op.endswith("forward")
        self.bytes = (2 if forward else 3) * self.x.nbytes
        self.calls[LIMIT] = ((lambda: np.copyto(out, a)) if forward else (lambda: np.add(a, b, out=out)), None)

    def torch_forward(self):
        return torch.ops.aten.native_group_norm(self.t_x, self.t_g, self.t_b, self.N, self.C, self.HxW, self.G, 1e-5)

    def torch_backward(self, dy=None):
        return torch.ops.aten.native_group_norm_backward(self.t_dy if dy is None else dy, self.t_x, self.t_mean,
                                                         self.t_rstd, self.t_g, self.N, self.C, self.HxW, self.G,
                                                         [True, True, True])

    def torch_silu_forward(self):
        return torch.ops.aten.silu(self.torch_forward()[0])

    def torch_silu_backward(self):
        return self.torch_backward(torch.ops.aten.silu_backward(self.t_dy, self.t_y))


def parse_shape(text):
    """(N, C, HxW, G, label) from NxC[xD...]:G, or from the older NxCxHxWxG."""
    if ":" in text:
        dims, groups = text.split(":")
        sizes = [int(v) for v in dims.split("x")]
        if len(sizes) < 2:
            raise SystemExit(f"shape {text!r}: need at least N and C")
        return sizes[0], sizes[1], math.prod(sizes[2:]), int(groups), text
    sizes = [int(v) for v in text.split("x")]
    if len(sizes) != 5:
        raise SystemExit(f"shape {text!r}: write NxCxHxW:G (or NxCxHxWxG)")
    N, C, H, W, G = sizes
    return N, C, H * W, G, "x".join(map(str, sizes[:4])) + f":{G}"


def read_table(path):
    """The shapes of a shape table (SHAPE:G  reason per line, '#' comments), in order."""
    shapes = []
    for line in Path(path).read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            shapes.append(line.split()[0])
    return shapes


def time_interleaved(calls, samples, sample_s, warmup_s, stat):
    """Seconds per call of each callable (`stat` of its samples), sampled in alternation whose order
    changes every sample so that each callable follows every other one equally often."""
    names = list(calls)
    ks = {}
    for name in names:
        fn = calls[name]
        n, start = 0, time.perf_counter()
        while n < 3 or time.perf_counter() - start < warmup_s:
            fn()
            n += 1
        per_call = (time.perf_counter() - start) / n
        ks[name] = max(1, math.ceil(sample_s / per_call))
    times = {name: [] for name in names}
    orders = balanced_orders(len(names))
    for s in range(-(-samples // len(orders)) * len(orders)):  # whole designs: every order as often
        for j in orders[s % len(orders)]:
            name = names[j]
            fn, k = calls[name], ks[name]
            start = time.perf_counter()
            for _ in range(k):
                fn()
            times[name].append((time.perf_counter() - start) / k)
    return {name: stat(v) for name, v in times.items()}


def geomean(values):
    values = [v for v in values if v]
    return math.exp(sum(map(math.log, values)) / len(values)) if values else float("nan")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--lib", default=str(DEFAULT_LIB), help="the library to measure (default: this checkout's)")
    parser.add_argument("--baseline", action="append", default=[], metavar="[NAME=]PATH",
                        help="another build of the library, timed in the same rounds (repeatable)")
    parser.add_argument("--op", choices=["backward", "forward", "silu_backward", "silu_forward"], default="backward")
    parser.add_argument("--isa", help="row-loop build to select in every library (portable/avx2/avx512)")
    parser.add_argument("--shapes", default=",".join(ANCHOR_SHAPES))
    parser.add_argument("--table", help="a shape table (e.g. scripts/shapes/every_shape.txt) instead of --shapes")
    parser.add_argument("--max-elements", type=int, default=1 << 25,
                        help="skip table rows with more elements than this (default 2^25)")
    parser.add_argument("--dtypes", default="float32,bfloat16,float16")
    parser.add_argument("--threads", default="1,2")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--samples", type=int, default=15)
    parser.add_argument("--sample-ms", type=float, default=2.0)
    parser.add_argument("--stat", choices=["min", "median"], default="min",
                        help="per implementation and round: the fastest sample (default; the least disturbed "
                             "on a shared machine) or the median sample")
    parser.add_argument("--warmup-ms", type=float, default=30.0)
    args = parser.parse_args()

    libs = {"ours": cpu_kernels.load_library(args.lib)}
    for k, spec in enumerate(args.baseline):
        name, _, path = spec.rpartition("=")
        libs[name or ("base" if k == 0 else f"base{k}")] = cpu_kernels.load_library(path)
    for name, lib in libs.items():
        if args.isa and lib.MsGroupNormSelectIsa(args.isa.encode()) != 0:
            raise SystemExit(f"{name}: ISA build {args.isa} is not available on this CPU")
    isas = {name: lib.MsGroupNormActiveIsa().decode() for name, lib in libs.items()}
    parsed, shapes, labels = [parse_shape(s) for s in (read_table(args.table) if args.table else
                                                        args.shapes.split(","))], [], {}
    for N, C, HxW, G, label in parsed:
        key = (N, C, HxW, G)
        if key in labels:
            continue
        if N * C * HxW == 0 or N * C * HxW > args.max_elements or C % G:
            print(f"skipped {label}: " + ("empty" if N * C * HxW == 0 else "G does not divide C" if C % G else
                                          f"{N * C * HxW} elements > --max-elements"))
            continue
        shapes.append(key)
        labels[key] = label
    dtypes = args.dtypes.split(",")
    threads_list = [int(t) for t in args.threads.split(",")]
    print(f"{args.op}: torch {torch.__version__} ({torch.backends.cpu.get_cpu_capability()}); ours ISA {isas}; "
          f"{args.rounds} rounds x {args.samples} samples of >= {args.sample_ms} ms, {args.stat} sample", flush=True)

    cases = {(s, d): Case(s, d, libs, args.op) for s in shapes for d in dtypes}
    ratios = {}  # (shape, dtype, threads, name) -> [torch/name per round]
    ms = {}
    t0 = time.time()
    for rnd in range(args.rounds):
        for threads in threads_list:
            torch.set_num_threads(threads)
            for lib in libs.values():
                lib.MsGroupNormSetNumThreads(threads)
            for (shape, dtype), case in cases.items():
                calls = {name: fn for name, (fn, _) in case.calls.items()}
                t = time_interleaved(calls, args.samples, args.sample_ms / 1e3, args.warmup_ms / 1e3,
                                     min if args.stat == "min" else statistics.median)
                for name in libs:
                    ratios.setdefault((shape, dtype, threads, name), []).append(t["torch"] / t[name])
                    ms.setdefault((shape, dtype, threads, name), []).append(t[name] * 1e3)
                ms.setdefault((shape, dtype, threads, "torch"), []).append(t["torch"] * 1e3)
                ms.setdefault((shape, dtype, threads, LIMIT), []).append(t[LIMIT] * 1e3)
                time.sleep(0.01)
        print(f"round {rnd + 1} done ({time.time() - t0:.0f} s)", flush=True)

    names = list(libs)
    head = "| shape | dtype | thr | torch ms | " + " | ".join(f"{n} ms | {n} vs torch" for n in names) + " |"
    print("\n" + head)
    print("|" + "---|" * (3 + 1 + 2 * len(names)))
    for threads in threads_list:
        for dtype in dtypes:
            for shape in shapes:
                key = (shape, dtype, threads)
                cells = [f"{statistics.median(ms[key + ('torch',)]):.4g}"]
                for n in names:
                    cells += [f"{statistics.median(ms[key + (n,)]):.4g}",
                              f"{statistics.median(ratios[key + (n,)]):.2f}x"]
                print(f"| {labels[shape]} | {dtype} | {threads} | " + " | ".join(cells) + " |")
    print(f"\nDistance to the limit ({LIMIT}: " + ("np.copyto, one read + one write" if args.op.endswith("forward") else
          "np.add(dy, x, out=dx), two reads + one write") + f", same bytes, same rotation): GB/s for data of "
          f">= {CACHE_RESIDENT_BYTES >> 20} MiB, ns per element below")
    print("| shape | dtype | thr | MB moved | " + " | ".join(names) + f" | {LIMIT} | " +
          " | ".join(f"{n} / limit" for n in names) + " |")
    print("|" + "---|" * (4 + 2 * len(names) + 1))
    for threads in threads_list:
        for dtype in dtypes:
            for shape in shapes:
                key, case = (shape, dtype, threads), cases[(shape, dtype)]
                t_limit = statistics.median(ms[key + (LIMIT,)]) / 1e3
                t_ours = {n: statistics.median(ms[key + (n,)]) / 1e3 for n in names}
                if case.bytes >= CACHE_RESIDENT_BYTES:
                    cells = [f"{case.bytes / t_ours[n] / 1e9:.1f} GB/s" for n in names]
                    cells.append(f"{case.bytes / t_limit / 1e9:.1f} GB/s")
                else:
                    cells = [f"{t_ours[n] / case.elements * 1e9:.2f} ns/elem" for n in names]
                    cells.append(f"{t_limit / case.elements * 1e9:.2f} ns/elem")
                cells += [f"{t_ours[n] / t_limit:.2f}x time" for n in names]
                print(f"| {labels[shape]} | {dtype} | {threads} | {case.bytes / 1e6:.1f} | " +
                      " | ".join(cells) + " |")
    print()
    for threads in threads_list:
        for dtype in dtypes:
            parts = []
            for n in names:
                r = [statistics.median(ratios[(s, dtype, threads, n)]) for s in shapes]
                parts.append(f"{n}: geo-mean {geomean(r):.2f}x, min {min(r):.2f}x")
            print(f"{dtype} {threads}T: " + "; ".join(parts))


if __name__ == "__main__":
    main()
