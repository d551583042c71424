#!/usr/bin/env python
"""GroupNorm's outputs against float64, for the CPU kernel, the AscendC kernels on their CPU twin,
torch's float32 CPU GroupNorm and MindSpore's own `mindspore.nn.GroupNorm` (CPU, PYNATIVE_MODE),
all on the same inputs.

Every implementation gets the same float32 x, gamma, beta and dy. The backward of each gets the
float64 statistics rounded to float32, so its error is its own and not its forward's; the
float64 reference backward uses those same rounded statistics. The exception is nn.GroupNorm,
measured as a user gets it: its backward is `mindspore.grad` of the layer with dy as the
sensitivity, so it runs from its own forward's statistics (float32 roundings of double ones, the
same values but for an occasional last bit). nn.GroupNorm returns y only; its mean and rstd are
those of the primitive it calls (`ops.auto_generate.group_norm_op`, which returns all three).
Errors are relative: RMS of the error over RMS of the reference, and max |error| over max
|reference|. Every case is float32 (the float16 range is held in float32).

Cases (what CANN's ATK data and the hard regimes look like):
  * ATK-style backward inputs: x ~ U(-5, 5) or sign * 10^U(-6, 6), dy ~ N(mu, sigma) with
    mu in [-100, 100] and sigma in [1, 25];
  * value ranges +-0.1, +-100, (-50, 100), and float16's +-65504 (held in float32);
  * |mean| >> std: data 1e4 + 1e-2 N(0, 1) (the forward), a dy of mean 100 (the backward);
  * shapes with G = 1, HxW = 1 and C/G = 1.

The same cases in float16 and bfloat16 (x and dy rounded to the dtype, gamma, beta and the statistics
float32, the mixed pair a layer with float32 parameters runs): how many of the 16-bit outputs y and dx
differ from float64's answer rounded to the dtype, for the CPU kernel, the twin and torch.

    python scripts/accuracy_table.py            # the tables, markdown
    python scripts/accuracy_table.py --no-twin  # without the twin (it builds on first use)
"""
import argparse
import sys
from pathlib import Path

import numpy as np

# the twin's ctypes harness lives beside the twin (kernels/ascendc/twin/twin.py), not in the package
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "kernels" / "ascendc" / "twin"))

OUTPUTS = ("y", "mean", "rstd", "dx", "dgamma", "dbeta")
EPS = 1e-5


def _signed_powers(rng, shape, low, high):
    return rng.choice([-1.0, 1.0], shape) * 10.0 ** rng.uniform(low, high, shape)


# name: (shape (N, C, HxW), G, x(rng, shape), dy(rng, shape))
CASES = {
    "ATK U(-5,5), dy N(100,25)": ((4, 32, 256), 4, lambda r, s: r.uniform(-5, 5, s), lambda r, s: r.normal(100, 25, s)),
    "ATK U(-5,5), dy N(-60,5), G1": ((2, 64, 512), 1, lambda r, s: r.uniform(-5, 5, s),
                                     lambda r, s: r.normal(-60, 5, s)),
    "ATK 10^U(-6,6), dy N(40,1)": ((4, 32, 256), 8, lambda r, s: _signed_powers(r, s, -6, 6),
                                   lambda r, s: r.normal(40, 1, s)),
    "range +-0.1": ((4, 32, 256), 8, lambda r, s: r.uniform(-0.1, 0.1, s), lambda r, s: r.normal(0, 1, s)),
    "range +-100": ((4, 32, 256), 8, lambda r, s: r.uniform(-100, 100, s), lambda r, s: r.normal(0, 1, s)),
    "range (-50,100)": ((4, 32, 256), 8, lambda r, s: r.uniform(-50, 100, s), lambda r, s: r.normal(0, 1, s)),
    "range fp16 +-65504": ((4, 32, 256), 8, lambda r, s: r.uniform(-65504, 65504, s), lambda r, s: r.normal(0, 1, s)),
    "data 1e4+1e-2N": ((4, 32, 64), 8, lambda r, s: 1e4 + 1e-2 * r.standard_normal(s),
                       lambda r, s: r.normal(0, 1, s)),
    "HxW 1": ((64, 32, 1), 4, lambda r, s: r.standard_normal(s), lambda r, s: r.normal(10, 3, s)),
    "C/G 1": ((4, 16, 256), 16, lambda r, s: r.standard_normal(s) + 2, lambda r, s: r.normal(10, 3, s)),
}


def make_inputs(case, seed=0):
    (N, C, hxw), G, x_of, dy_of = CASES[case]
    rng = np.random.default_rng(seed)
    x = x_of(rng, (N, C, hxw)).astype(np.float32)
    dy = dy_of(rng, (N, C, hxw)).astype(np.float32)
    gamma = rng.uniform(0.5, 1.5, C).astype(np.float32)
    beta = rng.uniform(-1, 1, C).astype(np.float32)
    return x, dy, gamma, beta, G


def truth(x, dy, gamma, beta, G):
    """float64 (y, mean, rstd) and the backward (dx, dgamma, dbeta) from float32-rounded statistics."""
    from ms_groupnorm import reference
    f = lambda a: a.astype(np.float64)  # noqa: E731
    y, mean, rstd = reference.forward(f(x), f(gamma), f(beta), G, EPS)
    mean32, rstd32 = mean.astype(np.float32), rstd.astype(np.float32)
    grads = reference.backward(f(dy), f(x), f(mean32), f(rstd32), f(gamma), G)
    return (y, mean, rstd) + tuple(grads), (mean32, rstd32)


def run_cpu_kernel(x, dy, gamma, beta, G, stats):
    from ms_groupnorm.backends import cpu_kernels
    y, mean, rstd = cpu_kernels.forward(x, gamma, beta, G, EPS)
    return (y, mean, rstd) + tuple(cpu_kernels.backward(dy, x, *stats, gamma, G))


def run_twin(x, dy, gamma, beta, G, stats):
    import twin
    y, mean, rstd, _ = twin.twin_forward(x, gamma, beta, G, EPS, activate_silu=False)
    return (y, mean, rstd) + tuple(twin.twin_backward(dy, x, *stats, gamma, G)[:3])


def run_torch(x, dy, gamma, beta, G, stats):
    import torch
    N, C, hxw = x.shape
    t = torch.from_numpy
    y, mean, rstd = torch.ops.aten.native_group_norm(t(x), t(gamma), t(beta), N, C, hxw, G, EPS)
    grads = torch.ops.aten.native_group_norm_backward(t(dy), t(x), t(stats[0]), t(stats[1]), t(gamma), N, C, hxw, G,
                                                      [True, True, True])
    return tuple(a.numpy() for a in (y, mean, rstd) + tuple(grads))


def _mindspore_loss(layer, dy):
    """A cell whose gradient hands `layer` exactly dy: d(sum(y * dy))/dy = dy."""
    from mindspore import nn

    class Loss(nn.Cell):
        def __init__(self):
            super().__init__()
            self.layer, self.dy = layer, dy

        def construct(self, x):
            return (self.layer(x) * self.dy).sum()

    return Loss()


def run_mindspore_nn(x, dy, gamma, beta, G, stats):
    """mindspore.nn.GroupNorm on CPU in PYNATIVE_MODE; the context's mode is put back after."""
    import mindspore as ms
    from mindspore import Tensor, nn
    from mindspore.ops.auto_generate import group_norm_op  # what nn.GroupNorm calls; it returns y, mean, rstd
    previous_mode = ms.get_context("mode")
    ms.set_context(mode=ms.PYNATIVE_MODE)
    try:
        layer = nn.GroupNorm(G, x.shape[1], eps=EPS)
        layer.gamma.set_data(Tensor(gamma))
        layer.beta.set_data(Tensor(beta))
        x_t = Tensor(x)
        y = layer(x_t)
        _, mean, rstd = group_norm_op(x_t, G, Tensor(gamma), Tensor(beta), EPS)
        dx, (dgamma, dbeta) = ms.grad(_mindspore_loss(layer, Tensor(dy)), grad_position=0,
                                      weights=[layer.gamma, layer.beta])(x_t)
    finally:
        ms.set_context(mode=previous_mode)
    return tuple(t.asnumpy() for t in (y, mean, rstd, dx, dgamma, dbeta))


IMPLEMENTATIONS = {"CPU kernel": run_cpu_kernel, "AscendC twin": run_twin, "torch float32": run_torch,
                   "nn.GroupNorm": run_mindspore_nn}


def errors(got, want):
    """(relative RMS, relative max) of got against want."""
    got = np.asarray(got, np.float64).reshape(want.shape)
    diff = got - want
    return (float(np.sqrt(np.mean(diff ** 2) / max(np.mean(want ** 2), 1e-300))),
            float(np.abs(diff).max() / max(np.abs(want).max(), 1e-300)))


def measure(cases=tuple(CASES), implementations=tuple(IMPLEMENTATIONS)):
    """{case: {implementation: {output: (rms, max)}}}"""
    table = {}
    for case in cases:
        x, dy, gamma, beta, G = make_inputs(case)
        want, stats = truth(x, dy, gamma, beta, G)
        table[case] = {}
        for name in implementations:
            got = IMPLEMENTATIONS[name](x, dy, gamma, beta, G, stats)
            table[case][name] = {out: errors(g, w) for out, g, w in zip(OUTPUTS, got, want)}
    return table


SIXTEEN_BIT_DTYPES = ("float16", "bfloat16")
SIXTEEN_BIT_OUTPUTS = ("y", "dx")
SIXTEEN_BIT_IMPLEMENTATIONS = ("CPU kernel", "AscendC twin", "torch float32")


def _sixteen_bit(values, dtype):
    """float32 values -> (torch tensor of `dtype`, the kernels' storage array, its float64 values)."""
    import torch
    t = torch.from_numpy(np.ascontiguousarray(values, np.float32)).to(getattr(torch, dtype))
    storage = t.numpy() if dtype == "float16" else t.view(torch.int16).numpy().view(np.uint16)
    return t, storage, t.double().numpy()


def _as_float64(array, dtype):
    if dtype == "bfloat16":  # bit patterns in uint16
        return (np.asarray(array).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return np.asarray(array, np.float64)


def _rounded_to(values, dtype):
    """float64 values rounded once to `dtype` (nearest, ties to even), back in float64."""
    import torch
    return torch.from_numpy(values).to(getattr(torch, dtype)).double().numpy()


def _sixteen_bit_outputs(name, x, dy, gamma, beta, G, stats, dtype):
    """(y, dx) of implementation `name` as float64 values; x, dy are (tensor, storage, values)."""
    if name == "torch float32":
        import torch
        N, C, hxw = x[2].shape
        t = torch.from_numpy
        y = torch.ops.aten.native_group_norm(x[0], t(gamma), t(beta), N, C, hxw, G, EPS)[0]
        dx = torch.ops.aten.native_group_norm_backward(dy[0], x[0], t(stats[0]), t(stats[1]), t(gamma), N, C, hxw, G,
                                                       [True, False, False])[0]
        return y.double().numpy(), dx.double().numpy()
    if name == "CPU kernel":
        from ms_groupnorm.backends import cpu_kernels
        y = cpu_kernels.forward(x[1], gamma, beta, G, EPS, data_dtype=dtype, stat_dtype="float32")[0]
        dx = cpu_kernels.backward(dy[1], x[1], *stats, gamma, G, data_dtype=dtype, stat_dtype="float32")[0]
    else:
        import twin
        y = twin.twin_forward(x[1], gamma, beta, G, EPS, activate_silu=False, data_dtype=dtype,
                              param_dtype="float32")[0]
        dx = twin.twin_backward(dy[1], x[1], *stats, gamma, G, data_dtype=dtype, stat_dtype="float32")[0]
    return _as_float64(y, dtype), _as_float64(dx, dtype)


def misrounded(cases=tuple(CASES), implementations=SIXTEEN_BIT_IMPLEMENTATIONS):
    """{(case, dtype): {"elements": n, implementation: {output: count}}}: how many 16-bit outputs differ
    from float64's answer rounded to the dtype. Cases whose data the dtype cannot hold are left out."""
    from ms_groupnorm import reference
    counts = {}
    for case in cases:
        x32, dy32, gamma, beta, G = make_inputs(case)
        for dtype in SIXTEEN_BIT_DTYPES:
            x, dy = _sixteen_bit(x32, dtype), _sixteen_bit(dy32, dtype)
            if not (np.isfinite(x[2]).all() and np.isfinite(dy[2]).all()):
                continue  # e.g. 10^6 in float16
            f = lambda a: a.astype(np.float64)  # noqa: E731
            y, mean, rstd = reference.forward(x[2], f(gamma), f(beta), G, EPS)
            stats = (mean.astype(np.float32), rstd.astype(np.float32))
            dx = reference.backward(dy[2], x[2], f(stats[0]), f(stats[1]), f(gamma), G)[0]
            want = {"y": _rounded_to(y, dtype), "dx": _rounded_to(dx, dtype)}
            row = counts[(case, dtype)] = {"elements": x32.size}
            for name in implementations:
                got = dict(zip(SIXTEEN_BIT_OUTPUTS, _sixteen_bit_outputs(name, x, dy, gamma, beta, G, stats, dtype)))
                row[name] = {out: int(np.count_nonzero(got[out].reshape(want[out].shape) != want[out]))
                             for out in SIXTEEN_BIT_OUTPUTS}
    return counts


def misrounded_markdown(counts):
    names = [n for n in next(iter(counts.values())) if n != "elements"]
    lines = ["| case | dtype | elements | " + " | ".join(f"{n} y / dx" for n in names) + " |",
             "|---|---|---|" + "---|" * len(names)]
    for (case, dtype), row in counts.items():
        cells = [" / ".join(str(row[n][out]) for out in SIXTEEN_BIT_OUTPUTS) for n in names]
        lines.append(f"| {case} | {dtype} | {row['elements']} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def markdown(table):
    names = list(next(iter(table.values())))
    lines = ["| case | output | " + " | ".join(f"{n} RMS / max" for n in names) + " |",
             "|---|---|" + "---|" * len(names)]
    for case, row in table.items():
        for out in OUTPUTS:
            cells = [f"{row[n][out][0]:.2g} / {row[n][out][1]:.2g}" for n in names]
            lines.append(f"| {case} | {out} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-twin", action="store_true", help="leave the AscendC twin out")
    args = parser.parse_args()
    names = [n for n in IMPLEMENTATIONS if not (args.no_twin and n == "AscendC twin")]
    print(markdown(measure(implementations=names)))
    print()
    print(misrounded_markdown(misrounded(implementations=[n for n in SIXTEEN_BIT_IMPLEMENTATIONS if n in names])))


if __name__ == "__main__":
    main()
