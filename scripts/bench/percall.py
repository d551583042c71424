"""The per-call cost of the PyNative calls a user makes, on a tiny shape, against
MindSpore's built-in calls; one process per thread count (MindSpore's thread count is set once per
process), which the entry point starts with its hidden --percall-worker flag."""
import json
import subprocess
import sys
from pathlib import Path

import numpy as np

from .common import TINY
from .timing import Timer, pause, pynative_sync

ENTRY_POINT = Path(__file__).resolve().parent.parent / "bench_group_norm.py"
PERCALL_MARK = "PERCALL-JSON "  # marks the worker's JSON line on its stdout


def percall_worker(threads, rounds):
    """The per-call section in this process, at ``threads`` threads for MindSpore and ours:
    per-call times of the PyNative calls a user makes on a tiny shape, interleaved.
    Returns {impl: [seconds per round]}."""
    import mindspore as ms
    from mindspore import Tensor, nn
    from mindspore.device_context.cpu import op_tuning
    from mindspore.ops.auto_generate import group_norm_grad_op

    import ms_groupnorm
    from ms_groupnorm import functional as F
    from ms_groupnorm.backends import cpu_kernels

    op_tuning.threads_num(threads)
    cpu_kernels.cdll().MsGroupNormSetNumThreads(threads)
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
    command = [sys.executable, str(ENTRY_POINT), "--percall-worker", str(threads), "--rounds", str(rounds)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=900)
    for line in result.stdout.splitlines():
        if line.startswith(PERCALL_MARK):
            return json.loads(line[len(PERCALL_MARK):])
    print(f"  per-call worker ({threads} threads) failed:\n{result.stdout[-1500:]}\n{result.stderr[-3000:]}")
    return {}

