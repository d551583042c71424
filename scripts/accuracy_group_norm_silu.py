"""Accuracy of the fused GroupNorm + SiLU with float16/bfloat16 data against float64, side
by side with MindSpore's own pair (``mindspore.nn.GroupNorm`` followed by ``ops.silu``) and,
when installed, torch's ``group_norm`` + ``silu``, on the same inputs.

Every implementation gets the same inputs, already rounded to the low-precision dtype (x,
gamma, beta and the upstream gradient dz), so the float64 reference of those exact values
is the truth each is measured against. Parameters are in the data dtype for every
implementation (nn.GroupNorm casts them to it anyway); ``ms_groupnorm.GroupNormSiLU (fp32
params)`` is our layer with float32 parameters, the mixed precision it supports.
Data: standard normal around mean 0 and around mean 100 (|mean| >> std).

Printed per dtype and data mean: the largest |error| of z, dx, dgamma, dbeta.

    python scripts/accuracy_group_norm_silu.py [--shape 4,32,16,16 --groups 8]

Runs in GRAPH_MODE: mindspore.nn.GroupNorm has no bfloat16 CPU kernel in PyNative (2.10).
"""
import argparse

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn, ops

import ms_groupnorm
from ms_groupnorm import reference

DTYPES = {"float16": ms.float16, "bfloat16": ms.bfloat16}
NAMES = ("z", "dx", "dgamma", "dbeta")


def rounded(array, dtype):
    return Tensor(np.asarray(array, np.float32)).astype(dtype).astype(ms.float32).asnumpy().astype(np.float64)


def make_case(shape, dtype, mean, seed=0):
    rng = np.random.default_rng(seed)
    C = shape[1]
    x = rounded(rng.standard_normal(shape) + mean, dtype)
    gamma = rounded(rng.uniform(0.5, 1.5, C), dtype)
    beta = rounded(rng.uniform(-0.5, 0.5, C), dtype)
    dz = rounded(rng.standard_normal(shape), dtype)
    return x, gamma, beta, dz


def expected(case, groups, eps=1e-5):
    x, gamma, beta, dz = case
    z, mean, rstd = reference.silu_forward(x, gamma, beta, groups, eps)
    return (z,) + reference.silu_backward(dz, x, mean, rstd, gamma, beta, groups)


class MindSporePair(nn.Cell):
    """mindspore.nn.GroupNorm, then ops.silu: the unfused baseline."""

    def __init__(self, groups, channels, dtype):
        super().__init__()
        self.norm = nn.GroupNorm(groups, channels, dtype=dtype)
        self.gamma, self.beta = self.norm.gamma, self.norm.beta

    def construct(self, x):
        return ops.silu(self.norm(x))


class _Loss(nn.Cell):
    def __init__(self, layer, dz):
        super().__init__()
        self.layer, self.dz = layer, dz

    def construct(self, x):
        # float32 sum: dz holds dtype values, so the cast's gradient hands the layer exactly dz
        return (self.layer(x).astype(ms.float32) * self.dz).sum()


def run_layer(make_layer, case, param_dtype, data_dtype):
    x, gamma, beta, dz = case
    layer = make_layer(param_dtype)
    layer.gamma.set_data(Tensor(gamma.astype(np.float32)).astype(param_dtype))
    layer.beta.set_data(Tensor(beta.astype(np.float32)).astype(param_dtype))
    x_t = Tensor(x.astype(np.float32)).astype(data_dtype)
    z = layer(x_t)
    dx, (dgamma, dbeta) = ms.grad(_Loss(layer, Tensor(dz.astype(np.float32))), grad_position=0,
                                  weights=[layer.gamma, layer.beta])(x_t)
    return tuple(t.astype(ms.float32).asnumpy().astype(np.float64) for t in (z, dx, dgamma, dbeta))


def run_torch(case, groups, dtype_name, eps=1e-5):
    import torch
    tdtype = getattr(torch, dtype_name)
    x, gamma, beta, dz = (torch.tensor(a, dtype=torch.float64).to(tdtype) for a in case)
    for t in (x, gamma, beta):
        t.requires_grad_(True)
    z = torch.nn.functional.silu(torch.nn.functional.group_norm(x, groups, gamma, beta, eps))
    z.backward(dz)
    return tuple(t.detach().to(torch.float64).numpy() for t in (z, x.grad, gamma.grad, beta.grad))


def implementations(shape, groups, dtype, dtype_name, with_torch):
    C = shape[1]
    impls = [
        ("ms_groupnorm.GroupNormSiLU", lambda case: run_layer(
            lambda p: ms_groupnorm.GroupNormSiLU(groups, C, dtype=p), case, dtype, dtype)),
        ("ms_groupnorm.GroupNormSiLU (fp32 params)", lambda case: run_layer(
            lambda p: ms_groupnorm.GroupNormSiLU(groups, C, dtype=p), case, ms.float32, dtype)),
        ("nn.GroupNorm + ops.silu", lambda case: run_layer(
            lambda p: MindSporePair(groups, C, p), case, dtype, dtype)),
    ]
    if with_torch:
        impls.append(("torch group_norm + silu", lambda case: run_torch(case, groups, dtype_name)))
    return impls


def measure(shape=(4, 32, 16, 16), groups=8, means=(0.0, 100.0), with_torch=True, dtypes=DTYPES, only=None):
    """[(dtype name, data mean, implementation, {metric: max |error|} or 'failed: ...')];
    ``only``: {dtype name: implementation names} to measure (default: all)."""
    rows = []
    for dtype_name in dtypes:
        dtype = DTYPES[dtype_name]
        for mean in means:
            case = make_case(shape, dtype, mean)
            want = expected(case, groups)
            for name, run in implementations(shape, groups, dtype, dtype_name, with_torch):
                if only is not None and name not in only[dtype_name]:
                    continue
                try:
                    got = run(case)
                    rows.append((dtype_name, mean, name,
                                 {n: float(np.max(np.abs(g - w))) for n, g, w in zip(NAMES, got, want)}))
                except Exception as error:  # pylint: disable=broad-except  (reported in the table)
                    lines = [line for line in str(error).splitlines() if line.strip() and "---" not in line]
                    reason = next((line for line in lines if "Unsupported op" in line), lines[0] if lines else "")
                    rows.append((dtype_name, mean, name, f"failed: {type(error).__name__}: {reason.strip()[:90]}"))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shape", default="4,32,16,16", help="input shape N,C,... (default: 4,32,16,16)")
    parser.add_argument("--groups", type=int, default=8, help="number of groups (default: 8)")
    args = parser.parse_args()
    ms.set_context(mode=ms.GRAPH_MODE)
    try:
        import torch  # noqa: F401  pylint: disable=unused-import
        with_torch = True
    except ImportError:
        with_torch = False
    shape = tuple(int(v) for v in args.shape.split(","))
    print(f"shape {shape}, G={args.groups}; max |error| against float64 of the same rounded inputs")
    print("| dtype | data mean | implementation | " + " | ".join(NAMES) + " |")
    print("|---|---|---|" + "---|" * len(NAMES))
    for dtype_name, mean, name, result in measure(shape, args.groups, with_torch=with_torch):
        cells = [result] if isinstance(result, str) else [f"{result[n]:.3g}" for n in NAMES]
        print(f"| {dtype_name} | {mean:g} | {name} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
