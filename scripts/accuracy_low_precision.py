"""Accuracy of GroupNorm with float16/bfloat16 parameters against float64, side by side:
ms_groupnorm.GroupNorm, mindspore.nn.GroupNorm and (when installed) torch's group_norm.

Every implementation gets the same inputs, already rounded to the low-precision dtype (x,
gamma, beta and the upstream gradient dy), so the float64 reference of those exact values
is the truth each one is measured against. Data: standard normal around mean 0 and around
mean 100 (|mean| >> std, where rounding a statistic to float16/bfloat16 shows most).

Printed per dtype and data mean: the largest |error| of y, dx, dgamma, dbeta, and the share
of y that is not the correctly rounded reference (the best a low-precision output can do
is 0 %: y rounded once from the exact value).

    python scripts/accuracy_low_precision.py [--mode graph|pynative] [--shape 4,32,16,16 --groups 8]

mindspore.nn.GroupNorm with bfloat16 input fails on CPU in PYNATIVE_MODE (MindSpore 2.10),
so its bfloat16 rows are measured in GRAPH_MODE (the default).
"""
import argparse

import mindspore as ms
import numpy as np
from mindspore import Tensor, nn

import ms_groupnorm
from ms_groupnorm import reference

DTYPES = {"float16": ms.float16, "bfloat16": ms.bfloat16}
NAMES = ("y", "dx", "dgamma", "dbeta")


def rounded(array, dtype):
    """``array`` rounded to the MindSpore ``dtype`` and back to float64."""
    return Tensor(np.asarray(array, np.float32)).astype(dtype).astype(ms.float32).asnumpy().astype(np.float64)


def make_case(shape, groups, dtype, mean, seed=0):
    """(x, gamma, beta, dy) as float64 arrays holding exactly representable values."""
    rng = np.random.default_rng(seed)
    C = shape[1]
    x = rounded(rng.standard_normal(shape) + mean, dtype)
    gamma = rounded(rng.uniform(0.5, 1.5, C), dtype)
    beta = rounded(rng.uniform(-0.5, 0.5, C), dtype)
    dy = rounded(rng.standard_normal(shape), dtype)
    return x, gamma, beta, dy


def expected(case, groups, eps=1e-5):
    """float64 (y, dx, dgamma, dbeta) of the exact inputs."""
    x, gamma, beta, dy = case
    y, mean, rstd = reference.forward(x, gamma, beta, groups, eps)
    return (y,) + reference.backward(dy, x, mean, rstd, gamma, groups)


class _Loss(nn.Cell):
    def __init__(self, layer, dy):
        super().__init__()
        self.layer, self.dy = layer, dy

    def construct(self, x):
        # float32 sum (CPU has no bfloat16 ReduceSum in PyNative); dy holds dtype values,
        # so the cast's gradient hands the layer exactly dy.
        return (self.layer(x).astype(ms.float32) * self.dy).sum()


def run_mindspore_layer(layer_cls, case, groups, dtype):
    """(y, dx, dgamma, dbeta) as float64 from a GroupNorm layer with ``dtype`` parameters."""
    x, gamma, beta, dy = case
    layer = layer_cls(groups, x.shape[1], dtype=dtype)
    layer.gamma.set_data(Tensor(gamma.astype(np.float32)).astype(dtype))
    layer.beta.set_data(Tensor(beta.astype(np.float32)).astype(dtype))
    x_t = Tensor(x.astype(np.float32)).astype(dtype)
    dy_t = Tensor(dy.astype(np.float32))
    y = layer(x_t)
    dx, (dgamma, dbeta) = ms.grad(_Loss(layer, dy_t), grad_position=0, weights=[layer.gamma, layer.beta])(x_t)
    return tuple(t.astype(ms.float32).asnumpy().astype(np.float64) for t in (y, dx, dgamma, dbeta))


def run_torch(case, groups, dtype_name, eps=1e-5):
    """The same with torch.nn.functional.group_norm on CPU (parameters in the input's dtype)."""
    import torch
    tdtype = getattr(torch, dtype_name)
    x, gamma, beta, dy = (torch.tensor(a, dtype=torch.float64).to(tdtype) for a in case)
    x.requires_grad_(True)
    gamma.requires_grad_(True)
    beta.requires_grad_(True)
    y = torch.nn.functional.group_norm(x, groups, gamma, beta, eps)
    y.backward(dy)
    return tuple(t.detach().to(torch.float64).numpy() for t in (y, x.grad, gamma.grad, beta.grad))


def errors(got, want, dtype):
    """{name: max |error|} plus the share of y not correctly rounded."""
    result = {name: float(np.max(np.abs(g - w))) for name, g, w in zip(NAMES, got, want)}
    result["y not correctly rounded"] = float(np.mean(got[0] != rounded(want[0], dtype)))
    return result


def measure(shape=(4, 32, 16, 16), groups=8, means=(0.0, 100.0), with_torch=True):
    """[(dtype name, data mean, implementation, {metric: value})]."""
    rows = []
    for dtype_name, dtype in DTYPES.items():
        for mean in means:
            case = make_case(shape, groups, dtype, mean)
            want = expected(case, groups)
            impls = [("ms_groupnorm.GroupNorm", lambda: run_mindspore_layer(ms_groupnorm.GroupNorm, case, groups,
                                                                             dtype)),
                     ("mindspore.nn.GroupNorm", lambda: run_mindspore_layer(nn.GroupNorm, case, groups, dtype))]
            if with_torch:
                impls.append(("torch group_norm", lambda: run_torch(case, groups, dtype_name)))
            for name, run in impls:
                try:
                    rows.append((dtype_name, mean, name, errors(run(), want, dtype)))
                except Exception as error:  # pylint: disable=broad-except  (reported in the table)
                    rows.append((dtype_name, mean, name, f"failed: {type(error).__name__}: {str(error).strip().splitlines()[0][:80]}"))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mode", choices=["graph", "pynative"], default="graph",
                        help="MindSpore execution mode (default: graph; nn.GroupNorm has no bf16 CPU kernel in "
                             "PyNative)")
    parser.add_argument("--shape", default="4,32,16,16", help="input shape N,C,... (default: 4,32,16,16)")
    parser.add_argument("--groups", type=int, default=8, help="number of groups (default: 8)")
    args = parser.parse_args()
    ms.set_context(mode=ms.GRAPH_MODE if args.mode == "graph" else ms.PYNATIVE_MODE)
    try:
        import torch  # noqa: F401  pylint: disable=unused-import
        with_torch = True
    except ImportError:
        with_torch = False
        print("torch is not installed: its column is left out")
    shape = tuple(int(d) for d in args.shape.split(","))
    rows = measure(shape, args.groups, with_torch=with_torch)
    print(f"max |error| against float64, shape {shape}, {args.groups} groups, parameters in the input's dtype, "
          f"{args.mode} mode")
    print("| dtype | data mean | implementation | y | dx | dgamma | dbeta | y not correctly rounded |")
    print("|---|---|---|---|---|---|---|---|")
    for dtype_name, mean, name, result in rows:
        if isinstance(result, str):
            print(f"| {dtype_name} | {mean:g} | {name} | {result} | | | | |")
            continue
        cells = " | ".join(f"{result[k]:.3g}" for k in NAMES)
        print(f"| {dtype_name} | {mean:g} | {name} | {cells} | {result['y not correctly rounded']:.1%} |")


if __name__ == "__main__":
    main()
