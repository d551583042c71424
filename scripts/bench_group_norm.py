#!/usr/bin/env python
"""GroupNorm forward/backward benchmark: ms_groupnorm against MindSpore's built-in
kernels, PyTorch (optional) and the numpy reference, in ONE process.

Every round visits every (shape, dtype, threads) configuration and times all the
implementations back to back, so the ratios are same-run numbers; the tables give
medians over rounds (ratios: median of the per-round ratios). A C triad (a = b + 0.5c,
two reads and one write on float32 arrays of one tensor's bytes, at the row's threads;
scripts/bench/limit.py) runs in the same round and gives each configuration's distance to
the limit: GB/s and its share of the triad's for large shapes, ns per element for small ones
(the ideal traffic: backward reads dy and x and writes dx = 3 tensors; forward 2).

    python scripts/bench_group_norm.py             # the default run: ~6 min on a quiet 2-core machine
    python scripts/bench_group_norm.py --quick     # 1 round, 3 shapes, fp32, 1 thread: ~1 min
    python scripts/bench_group_norm.py --shapes 8x320x64x64x32 --dtypes float32,bfloat16 --threads 1
    python scripts/bench_group_norm.py --network   # adds the network training step (several minutes more)

Outputs (--out, default scripts/results; --quick: scripts/results/quick): bench_latest.md (the
tables; the committed one is what docs/performance.md shows), and, not committed (.gitignore),
bench_latest.csv (summary) and bench_raw.csv (every timing). The picture (--png): a run with the
default shapes, dtypes and threads writes docs/img/bench_group_norm.png, the README's picture;
any other run writes bench_group_norm.png next to its tables.

Sections besides the per-shape tables, each with its target and a met/NOT met line:
* per-call cost of the PyNative calls a user makes, tiny shape, against the built-in
  calls, one process per thread count (MindSpore's thread count is set once per process);
* one op inside a compiled graph, ours against the built-in op, tiny and mid shapes;
* (--network) a VAE-like network's training step (scripts/bench_network.py): nn.GroupNorm,
  ours and an identity (the ceiling), GRAPH and PYNATIVE, fp32 and fp16, two sizes;
* the kernel-only backward against torch, fp32 and bf16, for the ISA build the machine
  picks and, on an AVX-512 machine, for the AVX2 build forced too.

The sections live in scripts/bench/: common (shapes, dtypes), timing (the timer), limit (the
triad and the distance to it), machine (CPU, cores, kernel build), cases (the per-shape inputs
and callables), percall (per-call cost), graph_ops (one op in a graph), summary (medians and
ratios), report (the markdown, the targets, the picture) and plot (the bars); the network section
is scripts/bench_network.py. Its results are described in docs/performance.md.

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
import json
import sys
import time
from pathlib import Path

import numpy as np

from bench.cases import Case, KernelLib, ms_callables
from bench.common import ANCHOR_SHAPES, DTYPES, KERNEL_VS_TORCH_DTYPES, QUICK_SHAPES, shape_name, torch
from bench.graph_ops import graph_op_round
from bench.percall import PERCALL_MARK, percall_worker, run_percall_worker
from bench.report import plot, render_markdown
from bench.summary import summarize, write_raw, write_summary_csv
from bench.limit import Triad
from bench.machine import describe, load_text
from bench.plot import IMAGE_DIR
from bench.timing import Timer, pause, pynative_sync, timed

RESULTS = Path(__file__).resolve().parent / "results"


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
    parser.add_argument("--network", action="store_true",
                        help="add the network training-step section (scripts/bench_network.py; several minutes)")
    parser.add_argument("--network-rounds", type=int,
                        help="interleaved rounds of the network section (default 4, --quick 2)")
    parser.add_argument("--out", help="output folder (default scripts/results, --quick scripts/results/quick)")
    parser.add_argument("--png", help="the picture (default: docs/img/bench_group_norm.png for a run with the "
                                      "default shapes, dtypes and threads, else <out>/bench_group_norm.png)")
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

    default_selection = not (args.quick or args.shapes or args.dtypes or args.threads)
    png = Path(args.png) if args.png else (IMAGE_DIR if default_selection else out_dir) / "bench_group_norm.png"
    kernel = KernelLib()
    machine = describe(kernel.lib)
    started = f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {load_text()}"
    # The AVX2 build too, forced where the machine would pick AVX-512: users of AVX2 machines get that build.
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
    print(f"machine: {machine} ({kernel.isa()})"
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
                    triad = triads.setdefault((nbytes, threads), Triad(nbytes, threads))
                    record(rnd, shape, dtype, threads, "triad", triad)
                    record(rnd, shape, dtype, threads, "bwd/ours_kernel", case.ours_backward)
                    if avx2_forced and dtype in KERNEL_VS_TORCH_DTYPES:
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
        if args.network:
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
                               time.time() - start, machine, avx2_forced, percall, network, started)
    (out_dir / "bench_latest.md").write_text(markdown)
    print(markdown)
    title = (f"ms_groupnorm GroupNorm on CPU, {threads_list[0]} thread(s), same-run ratios, {started}\n{machine}; "
             f"MindSpore {ms.__version__ if with_ms else '—'}, torch {torch.__version__ if torch else '—'}")
    command = " ".join(["scripts/bench_group_norm.py"] + list(sys.argv[1:] if argv is None else argv))
    try:
        plot(png, summary, shapes, dtypes, threads_list[0], title,
             note=f"{rounds} round(s), {(time.time() - start) / 60:.1f} min: python {command}")
        print(f"wrote {png}")
    except Exception as error:  # the picture is a convenience; never lose the tables for it
        print(f"picture skipped: {type(error).__name__}: {error}")
    print(f"wrote {out_dir}/bench_latest.{{md,csv}} and bench_raw.csv")


if __name__ == "__main__":
    sys.exit(main())
