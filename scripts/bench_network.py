#!/usr/bin/env python
"""A GroupNorm-heavy training step, timed with nn.GroupNorm, ms_groupnorm.GroupNorm and
no normalisation at all (the ceiling of any GroupNorm speed-up), in one process.

The network is written here after the shape of a latent-diffusion VAE (encoder and
decoder ResNet blocks with GroupNorm(32, C) and SiLU, a mid block with self-attention):

    conv_in -> Res(C) -> Down -> Res(C, 2C) -> Down -> [Res(2C), Attn(2C), Res(2C)]
            -> Up -> Res(2C, C) -> Up -> Res(C) -> GroupNorm -> SiLU -> conv_out

14 GroupNorm layers; the attention runs at a quarter of the input's side. One training
step = value_and_grad of the mean squared error against the input + an SGD update.

Each round times every variant back to back (interleaved), so each round gives a
same-run fraction of the possible gain, (t_nn - t_ours) / (t_nn - t_identity); the
report gives its median over rounds and the spread (half the interquartile range).
The identity step is this benchmark's limit: the same network with no normalisation,
the fastest any GroupNorm could make it; "gain taken" is the distance to it. (A
bandwidth triad says little here: the step's time is mostly convolutions and MindSpore.)

    python scripts/bench_network.py                      # all configurations
    python scripts/bench_network.py --modes pynative --dtypes float32 --rounds 3
"""
import argparse
import statistics
import sys
import time

import numpy as np

# name -> (batch, channels, side): "vae" has a latent-diffusion VAE's block sizes (batch 2,
# 32-64 channels at 32x32), where PyNative per-call costs once ate most of the kernel's
# gain; "wide" has few channels at a large side, where GroupNorm weighs more next to the
# convolutions.
SIZES = {"vae": (2, 32, 32), "wide": (2, 32, 64)}
MODES = ("graph", "pynative")
DTYPES = ("float32", "float16")
VARIANTS = ("nn", "ours", "identity")
GAIN_GOAL = 0.9        # fraction of the possible gain to take ...
CEILING_MIN = 1.1      # ... wherever the ceiling t_nn / t_identity is at least this


def build_network(norm, channels, seed=0):
    """The VAE-like network with ``norm(num_groups, num_channels)`` as its normalisation."""
    import mindspore as ms
    from mindspore import nn, ops

    groups = 32

    def conv(cin, cout, k=3, stride=1):
        return nn.Conv2d(cin, cout, k, stride=stride, pad_mode="same" if stride == 1 else "pad",
                         padding=0 if stride == 1 else 1, has_bias=True)

    class ResBlock(nn.Cell):
        def __init__(self, cin, cout):
            super().__init__()
            self.norm1, self.conv1 = norm(groups, cin), conv(cin, cout)
            self.norm2, self.conv2 = norm(groups, cout), conv(cout, cout)
            self.act = nn.SiLU()
            self.skip = conv(cin, cout, 1) if cin != cout else None

        def construct(self, x):
            h = self.conv1(self.act(self.norm1(x)))
            h = self.conv2(self.act(self.norm2(h)))
            return h + (x if self.skip is None else self.skip(x))

    class AttnBlock(nn.Cell):
        def __init__(self, c):
            super().__init__()
            self.norm = norm(groups, c)
            self.q, self.k, self.v, self.proj = (conv(c, c, 1) for _ in range(4))
            self.scale = c ** -0.5

        def construct(self, x):
            b, c, h, w = x.shape
            y = self.norm(x)
            q = self.q(y).reshape(b, c, h * w).transpose(0, 2, 1)
            k = self.k(y).reshape(b, c, h * w)
            v = self.v(y).reshape(b, c, h * w)
            attn = ops.softmax(ops.bmm(q, k) * self.scale, axis=-1)
            out = ops.bmm(v, attn.transpose(0, 2, 1)).reshape(b, c, h, w)
            return x + self.proj(out)

    class Up(nn.Cell):
        def __init__(self, c):
            super().__init__()
            self.conv = conv(c, c)

        def construct(self, x):
            b, c, h, w = x.shape
            return self.conv(ops.interpolate(x, size=(h * 2, w * 2), mode="nearest"))

    class VAELike(nn.Cell):
        def __init__(self, c):
            super().__init__()
            self.body = nn.SequentialCell([
                conv(3, c), ResBlock(c, c), conv(c, c, 3, 2), ResBlock(c, 2 * c), conv(2 * c, 2 * c, 3, 2),
                ResBlock(2 * c, 2 * c), AttnBlock(2 * c), ResBlock(2 * c, 2 * c),
                Up(2 * c), ResBlock(2 * c, c), Up(c), ResBlock(c, c),
                norm(groups, c), nn.SiLU(), conv(c, 3)])

        def construct(self, x):
            return self.body(x)

    ms.set_seed(seed)
    return VAELike(channels)


def identity_norm(num_groups, num_channels):
    from mindspore import nn

    return nn.Identity()


def norm_factory(variant):
    from mindspore import nn

    import ms_groupnorm

    return {"nn": nn.GroupNorm, "ours": ms_groupnorm.GroupNorm, "identity": identity_norm}[variant]


def train_step(variant, size, dtype, mode):
    """A callable running one training step of the network (synchronised)."""
    import mindspore as ms
    from mindspore import Tensor, nn

    batch, channels, side = SIZES[size]
    net = build_network(norm_factory(variant), channels)
    if dtype == "float16":
        net.to_float(ms.float16)  # fp16 activations, float32 parameters (mixed precision)
    loss_fn = nn.MSELoss()
    optimizer = nn.SGD(net.trainable_params(), learning_rate=1e-4)

    def loss(x):
        return loss_fn(net(x).astype(ms.float32), x)

    grad_fn = ms.value_and_grad(loss, None, optimizer.parameters)

    def step(x):
        loss, grads = grad_fn(x)
        optimizer(grads)
        return loss

    if mode == "graph":
        step = ms.jit(step)
    x = Tensor(np.random.default_rng(1).standard_normal((batch, 3, side, side)).astype(np.float32))

    def run():
        return step(x).asnumpy()  # asnumpy: waits for the step, also in PyNative

    return run


def time_call(fn, min_seconds, calls_min=2):
    """Median of per-call times over at least ``calls_min`` calls and ``min_seconds``."""
    times, spent = [], 0.0
    while len(times) < calls_min or spent < min_seconds:
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
        spent += times[-1]
    return statistics.median(times)


def configurations(modes, dtypes, sizes):
    return [(mode, dtype, size) for mode in modes for dtype in dtypes for size in sizes]


def run(modes=MODES, dtypes=DTYPES, sizes=tuple(SIZES), rounds=5, min_seconds=0.3, threads=None, log=print):
    """{(mode, dtype, size): {variant: [seconds per round]}}; the variants of a
    configuration are timed back to back within each round."""
    import mindspore as ms

    steps = {}
    for mode, dtype, size in configurations(modes, dtypes, sizes):
        ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
        for variant in VARIANTS:
            start = time.perf_counter()
            fn = train_step(variant, size, dtype, mode)
            fn()  # compile (GRAPH) / warm up
            fn()
            steps[(mode, dtype, size, variant)] = fn
            log(f"  network {mode} {dtype} {size} {variant}: ready in {time.perf_counter() - start:.1f} s")
    if threads is not None:
        from ms_groupnorm.backends import cpu_kernels

        cpu_kernels.cdll().MsGroupNormSetNumThreads(threads)
    times = {}
    for rnd in range(rounds):
        for mode, dtype, size in configurations(modes, dtypes, sizes):
            ms.set_context(mode=ms.GRAPH_MODE if mode == "graph" else ms.PYNATIVE_MODE)
            order = VARIANTS if rnd % 2 == 0 else VARIANTS[::-1]  # no variant always goes first
            for variant in order:
                seconds = time_call(steps[(mode, dtype, size, variant)], min_seconds)
                times.setdefault((mode, dtype, size), {}).setdefault(variant, []).append(seconds)
        log(f"  network round {rnd + 1}/{rounds} done")
    ms.set_context(mode=ms.PYNATIVE_MODE)
    return times


def summarize(variant_times):
    """Median times, the ceiling and the per-round fraction of the possible gain."""
    nn_t, ours_t, id_t = (variant_times[v] for v in VARIANTS)
    fractions = [(a - b) / (a - c) for a, b, c in zip(nn_t, ours_t, id_t) if a - c > 0]
    quartiles = statistics.quantiles(fractions, n=4) if len(fractions) >= 2 else [None, None, None]
    speedups = [a / b for a, b in zip(nn_t, ours_t)]
    return {
        "nn_ms": statistics.median(nn_t) * 1e3,
        "ours_ms": statistics.median(ours_t) * 1e3,
        "identity_ms": statistics.median(id_t) * 1e3,
        "ceiling": statistics.median(a / c for a, c in zip(nn_t, id_t)),
        "speedup": statistics.median(speedups),
        "fraction": statistics.median(fractions) if fractions else None,
        "spread": None if quartiles[0] is None else (quartiles[2] - quartiles[0]) / 2,
        "rounds": len(nn_t),
    }


def fraction_text(s):
    if s["fraction"] is None:
        return "—"
    if s["spread"] is None:
        return f"{s['fraction']:.0%} (one round: no spread)"
    return f"{s['fraction']:.0%} ± {s['spread']:.0%}"


def verdict_line(key, s):
    mode, dtype, size = key
    batch, channels, side = SIZES[size]
    name = f"{mode.upper()} {dtype} {size} ({batch}x{channels}x{side}x{side})"
    slower = s["speedup"] < 1.0
    if s["ceiling"] >= CEILING_MIN:
        ok = s["fraction"] is not None and s["fraction"] >= GAIN_GOAL and not slower
        goal = f"goal >= {GAIN_GOAL:.0%} of the possible gain and never slower"
    else:
        ok = not slower
        goal = f"ceiling below {CEILING_MIN}x: goal never slower"
    fraction = fraction_text(s)
    pace = f"{s['speedup']:.2f}× faster" if not slower else f"{1 / s['speedup']:.2f}× slower"
    unstable = s["spread"] is not None and s["spread"] > 0.1 and s["ceiling"] >= CEILING_MIN
    return (f"* network step {name}: ours {pace} than nn.GroupNorm; ceiling (identity) {s['ceiling']:.2f}×; "
            f"gain taken {fraction} ({goal}): {'met' if ok else 'NOT met'}"
            f"{' (spread above ±10 %: run more --network-rounds)' if unstable else ''}")


def table(times):
    lines = ["| mode | dtype | size (N×C×H×W) | nn.GroupNorm ms | ours ms | identity ms (the limit) | ceiling | "
             "ours vs nn | gain taken (± half IQR) | rounds |", "|---|---|---|---|---|---|---|---|---|---|"]
    for key, variant_times in times.items():
        s = summarize(variant_times)
        mode, dtype, size = key
        batch, channels, side = SIZES[size]
        fraction = fraction_text(s)
        pace = f"{s['speedup']:.2f}× faster" if s["speedup"] >= 1 else f"{1 / s['speedup']:.2f}× slower"
        lines.append(f"| {mode.upper()} | {dtype} | {batch}×{channels}×{side}×{side} | {s['nn_ms']:.1f} | "
                     f"{s['ours_ms']:.1f} | {s['identity_ms']:.1f} | {s['ceiling']:.2f}× | {pace} | {fraction} | "
                     f"{s['rounds']} |")
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--modes", default=",".join(MODES), help="comma list of graph,pynative")
    parser.add_argument("--dtypes", default=",".join(DTYPES), help="comma list of float32,float16")
    parser.add_argument("--sizes", default=",".join(SIZES), help=f"comma list of {','.join(SIZES)}")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (default 5)")
    parser.add_argument("--min-seconds", type=float, default=0.3,
                        help="time each variant for at least this long per round (default 0.3)")
    args = parser.parse_args(argv)
    times = run(args.modes.split(","), args.dtypes.split(","), args.sizes.split(","), args.rounds,
                args.min_seconds)
    print("\n".join(table(times)))
    print("\n".join(verdict_line(key, summarize(t)) for key, t in times.items()))


if __name__ == "__main__":
    sys.exit(main())
