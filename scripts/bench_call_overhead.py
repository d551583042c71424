#!/usr/bin/env python
"""Where a PyNative call of the GroupNorm backward spends its time beyond the kernel.

One process, one thread count ($OMP_NUM_THREADS or --threads, set before anything is
loaded); every configuration is timed in interleaved rounds (in orders where each one
follows every other one equally often), each sample being K back-to-back calls followed
by one synchronisation, so the per-call time is that of pipelined calls (MindSpore queues
the work; the Python thread runs ahead).
Per configuration the table gives the wall time per call (median and minimum over
samples), the process CPU time per call (all threads: the Python thread, MindSpore's
queue threads, kernel threads; on a loaded machine it moves far less than wall time), the
Python thread's own CPU time per call while it queues the calls (minimum over samples;
the final synchronisation, which spin-waits, excluded) and the minor page faults per call
(a fresh output buffer costs one per 4 KiB page touched).

Rows, from the inside out:
  triad        the limit: a C triad a = b + 0.5c on float32 arrays of one tensor's bytes at the
               same threads (scripts/bench/limit.py); the kernel's distance to it is printed below
               each table (ns per element for these small shapes, GB/s for a tensor of >= 4 MiB)
  kernel       the C kernel through ctypes on numpy buffers, outputs preallocated
  module_stub  (--stub) a scratch build of the pyboost module whose runners skip the kernel
               call: what MindSpore's pipeline, our checks and the output allocation cost
  module_timed (--timed) a scratch build that also clocks its kernel calls where they run
               (the mean wall and thread-CPU time of the kernel inside MindSpore's queue thread)
  module       the pyboost module function (ms_groupnorm/_native/group_norm_pyboost.h)
  functional   ms_groupnorm.group_norm_backward (Python checks + module)
  layer_fwd    ms_groupnorm.GroupNorm forward (no gradient recorded), the backward's shape
  layer_step   value_and_grad of sum(GroupNorm(x)**2) w.r.t. x and the parameters
  nn_fwd, nn_step  the same with mindspore.nn.GroupNorm (MindSpore's own kernels), for scale

    OMP_NUM_THREADS=1 python scripts/bench_call_overhead.py --stub
    OMP_NUM_THREADS=2 python scripts/bench_call_overhead.py --stub
"""
import argparse
import ctypes
import os
import resource
import statistics
import sys
import time
from pathlib import Path

from bench.timing import balanced_orders

SHAPES = {"4x1280x8x8": ((4, 1280, 8, 8), 32), "32x32x28x28": ((32, 32, 28, 28), 8), "tiny": ((1, 4, 2, 2), 2)}


def parse():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=None, help="kernel threads (default: $OMP_NUM_THREADS or 1)")
    parser.add_argument("--shapes", nargs="+", default=list(SHAPES), choices=list(SHAPES))
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--calls", type=int, default=0, help="calls per sample (default: ~20 ms of kernel time)")
    parser.add_argument("--stub", action="store_true", help="also time a module build without the kernel call")
    parser.add_argument("--timed", action="store_true",
                        help="also time a module build that measures its kernel calls where they run")
    return parser.parse_args()


STUB = "template <typename... Args> int NoKernel(Args...) { return 0; }\n"
TIMED = """#include <time.h>
#include <atomic>
std::atomic<long long> g_kernel_wall_ns{0}, g_kernel_cpu_ns{0}, g_kernel_calls{0};
inline long long NowNs(clockid_t clock) {
  timespec t;
  clock_gettime(clock, &t);
  return t.tv_sec * 1000000000LL + t.tv_nsec;
}
template <typename... Args> int TimedBackward(Args... args) {
  const long long wall = NowNs(CLOCK_MONOTONIC), cpu = NowNs(CLOCK_THREAD_CPUTIME_ID);
  const int result = MsGroupNormBackward(args...);
  g_kernel_cpu_ns += NowNs(CLOCK_THREAD_CPUTIME_ID) - cpu;
  g_kernel_wall_ns += NowNs(CLOCK_MONOTONIC) - wall;
  ++g_kernel_calls;
  return result;
}
"""


def variant_module(kind, build_root):
    """GroupNorm's functions of the pyboost module rebuilt (once, in build_root/kind) from the
    shipped source with one change: "stub" replaces every kernel call by 'return 0' (the
    runners still check, allocate and queue exactly as shipped); "timed" times each backward
    kernel call where it runs (MindSpore's queue thread) and adds kernel_time() -> (wall ns,
    thread CPU ns, calls)."""
    from mindspore import ops

    from ms_groupnorm.backends import cpu_kernels
    from ms_groupnorm.backends import cpu_pyboost

    text = cpu_pyboost.source("group_norm").read_text()
    binding = "PYBIND11_MODULE(MS_EXTENSION_NAME, m) {\n  group_norm_op::Define(m);\n"
    scope = "namespace group_norm_op {"  # the helpers go before it, at file scope
    if kind == "stub":
        text = text.replace(scope, STUB + "\n" + scope, 1)
        for name in ("MsGroupNormForward(", "MsGroupNormBackward("):
            text = text.replace(f"return {name}", "return NoKernel(")
        found = text.count("NoKernel(") == 3
    else:
        text = text.replace(scope, TIMED + "\n" + scope, 1)
        text = text.replace("return MsGroupNormBackward(", "return TimedBackward(")
        binding += ("  m.def(\"kernel_time\", []() { return py::make_tuple("
                    "g_kernel_wall_ns.load(), g_kernel_cpu_ns.load(), g_kernel_calls.load()); });\n")
        found = text.count("TimedBackward(") == 2
    if not found:
        raise RuntimeError(f"the module source changed: the kernel calls for the {kind!r} build were not found")
    text += "\n" + binding + "}\n"
    build_dir = build_root / kind
    build_dir.mkdir(parents=True, exist_ok=True)
    path = build_dir / f"group_norm_pyboost_{kind}.cc"
    if not path.is_file() or path.read_text() != text:
        path.write_text(text)
    library = Path(cpu_kernels.library_path()).resolve()
    return ops.CustomOpBuilder(f"ms_groupnorm_pyboost_{kind}", [str(path)], backend="CPU",
                               include_paths=[str(cpu_pyboost.NATIVE_DIR)],
                               ldflags=f"-L{library.parent} -l:{library.name} -Wl,-rpath,{library.parent}",
                               build_dir=str(build_dir)).load()


def main():
    args = parse()
    threads = args.threads or int(os.environ.get("OMP_NUM_THREADS", "1") or 1)
    os.environ["OMP_NUM_THREADS"] = str(threads)
    import mindspore as ms
    import numpy as np
    from mindspore import Tensor

    import ms_groupnorm
    from bench.limit import Triad, distance_text  # after OMP_NUM_THREADS is set: it imports numpy
    from ms_groupnorm import reference
    from ms_groupnorm.backends import cpu_kernels
    from ms_groupnorm.backends import cpu_pyboost

    ms.set_context(mode=ms.PYNATIVE_MODE)
    lib = cpu_kernels.cdll()
    lib.MsGroupNormSetNumThreads(threads)
    module = cpu_pyboost.module()
    variants_root = cpu_pyboost.cache_root() / "pyboost_variants"
    stub = variant_module("stub", variants_root) if args.stub else None
    timed = variant_module("timed", variants_root) if args.timed else None
    print(f"threads {threads}, MindSpore {ms.__version__}, ISA {lib.MsGroupNormActiveIsa().decode()}, "
          f"{args.rounds} rounds; us per call (median / min over rounds), pipelined calls")

    for name in args.shapes:
        shape, G = SHAPES[name]
        rng = np.random.default_rng(0)
        x = rng.standard_normal(shape).astype(np.float32) + 0.5
        dy = rng.standard_normal(shape).astype(np.float32)
        gamma = rng.standard_normal(shape[1]).astype(np.float32)
        _, mean, rstd = reference.forward(x, gamma, None, G)
        mean, rstd = mean.astype(np.float32), rstd.astype(np.float32)
        N, C, HxW = shape[0], shape[1], int(np.prod(shape[2:]))
        dx_np, dg_np, db_np = np.empty_like(x), np.empty(C, np.float32), np.empty(C, np.float32)
        ptr = lambda a: ctypes.c_void_p(a.ctypes.data)  # noqa: E731
        kernel_args = [ptr(a) for a in (dy, x, mean, rstd, gamma, dx_np, dg_np, db_np)] + [
            N, C, HxW, G, b"float32", b"float32", 1, 1, 1]
        t = [Tensor(a) for a in (dy, x, mean, rstd, gamma)]
        layer = ms_groupnorm.GroupNorm(G, C)
        builtin = ms.nn.GroupNorm(G, C)
        x_t = t[1]
        step = ms.value_and_grad(lambda v: (layer(v) ** 2).sum(), grad_position=0, weights=layer.trainable_params())
        builtin_step = ms.value_and_grad(lambda v: (builtin(v) ** 2).sum(), grad_position=0,
                                         weights=builtin.trainable_params())

        def kernel():
            lib.MsGroupNormBackward(*kernel_args)

        configs = {"triad": (Triad(x.nbytes, threads), None), "kernel": (kernel, None)}
        if stub is not None:
            configs["module_stub"] = (lambda: stub.group_norm_grad(*t, G, True, True, True), lambda r: r[0].asnumpy())
        if timed is not None:
            configs["module_timed"] = (lambda: timed.group_norm_grad(*t, G, True, True, True),
                                       lambda r: r[0].asnumpy())
        configs.update({
            "module": (lambda: module.group_norm_grad(*t, G, True, True, True), lambda r: r[0].asnumpy()),
            "functional": (lambda: ms_groupnorm.group_norm_backward(*t, N, C, HxW, G), lambda r: r[0].asnumpy()),
            "layer_fwd": (lambda: layer(x_t), lambda r: r.asnumpy()),
            "layer_step": (lambda: step(x_t), lambda r: r[0].asnumpy()),
            "nn_fwd": (lambda: builtin(x_t), lambda r: r.asnumpy()),
            "nn_step": (lambda: builtin_step(x_t), lambda r: r[0].asnumpy()),
        })
        for fn, sync in configs.values():  # warm-up (compiles, first allocations)
            for _ in range(3):
                out = fn()
            if sync:
                sync(out)
        start = time.perf_counter()
        for _ in range(20):
            kernel()
        kernel_s = (time.perf_counter() - start) / 20
        calls = args.calls or max(5, min(400, int(0.02 / max(kernel_s, 1e-6))))
        samples = {key: ([], [], [], []) for key in configs}  # wall, cpu, python-thread cpu (us), faults
        keys, orders = list(configs), balanced_orders(len(configs))
        for r in range(args.rounds):
            for key in (keys[j] for j in orders[r % len(orders)]):
                fn, sync = configs[key]
                faults, cpu, start = resource.getrusage(resource.RUSAGE_SELF).ru_minflt, time.process_time(), \
                    time.perf_counter()
                py_cpu = time.thread_time()
                for _ in range(calls):
                    out = fn()
                py_cpu = time.thread_time() - py_cpu  # before the synchronisation, which spin-waits
                if sync:
                    sync(out)
                wall = time.perf_counter() - start
                for into, value in zip(samples[key], (wall * 1e6, (time.process_time() - cpu) * 1e6, py_cpu * 1e6,
                                                      resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults)):
                    into.append(value / calls)
        print(f"\n{name} (G={G}), {calls} calls per sample")
        if timed is not None:
            wall_ns, cpu_ns, count = timed.kernel_time()
            print(f"  the kernel call inside module_timed (in MindSpore's queue thread), mean over {count} calls: "
                  f"{wall_ns / max(count, 1) / 1e3:.1f} us wall, {cpu_ns / max(count, 1) / 1e3:.1f} us thread CPU")
        print(f"  {'':12s} {'wall median':>11s} {'wall min':>9s} {'cpu median':>10s} {'py-thread min':>13s} "
              f"{'faults':>7s}")
        for key, (wall, cpu, py_cpu, faults) in samples.items():
            print(f"  {key:12s} {statistics.median(wall):11.1f} {min(wall):9.1f} {statistics.median(cpu):10.1f} "
                  f"{min(py_cpu):13.1f} {statistics.median(faults):7.1f}")
        kernel_us, triad_us = (statistics.median(samples[key][0]) for key in ("kernel", "triad"))
        print(f"  kernel: distance to the limit (3 tensors: read dy and x, write dx): "
              f"{distance_text(kernel_us / 1e6, x.size, x.itemsize, 3, triad_us / 1e6)}")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
