"""Seeded fuzzing of group_norm_backward in PyNative: random valid and invalid parameter
combinations. Every valid call must match the float64 reference, every invalid call must
raise the documented error, and the process must survive all of them."""

import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor

from cases import assert_close, rounded
from ms_groupnorm import ParamInvalidError, ParamNullptrError, group_norm_backward, reference

CASES = 1000
DATA_STATS = [(ms.float32, ms.float32), (ms.float16, ms.float16), (ms.bfloat16, ms.bfloat16),
              (ms.float16, ms.float32), (ms.bfloat16, ms.float32)]


def random_shape(rng, N, C, HxW):
    """An (N, C, *) shape of rank 2-8 whose trailing dims multiply to HxW."""
    dims = [HxW] if HxW != 1 or rng.random() < 0.5 else []
    while len(dims) < 6 and rng.random() < 0.3:
        dims.insert(int(rng.integers(0, len(dims) + 1)), 1)
    return (N, C, *dims)


def random_case(rng):
    """(arguments, expected error class or None)."""
    G = int(rng.integers(1, 5))
    C = G * int(rng.integers(1, 5))
    N = int(rng.integers(0, 4)) if rng.random() < 0.1 else int(rng.integers(1, 5))
    HxW = int(rng.choice([0, 1, 2, 3, 7, 16, 33])) if rng.random() < 0.3 else int(rng.integers(1, 40))
    data, stat = DATA_STATS[int(rng.integers(len(DATA_STATS)))]
    case = dict(shape=random_shape(rng, N, C, HxW), N=N, C=C, HxW=HxW, G=G, data=data, stat=stat,
                mean_shape=(N, G), gamma=rng.random() < 0.8, mask=tuple(bool(b) for b in rng.random(3) < 0.8),
                dy_shape=None, none=None)
    error = None
    if rng.random() < 0.4:  # break exactly one rule
        rule = int(rng.integers(7))
        if rule == 0:
            case["none"] = str(rng.choice(["grad_out", "input", "mean", "rstd"]))
            error = ParamNullptrError
        elif rule == 1:
            case["G"] = int(rng.choice([0, -1, C + 1 if C % (C + 1) else 0]))
            error = ParamInvalidError
        elif rule == 2:
            case["dy_shape"] = (N, C, HxW + 1)
            error = ParamInvalidError
        elif rule == 3:
            case["mean_shape"] = (N + 1, G)
            error = ParamInvalidError
        elif rule == 4:
            case["mask"] = (True,) * int(rng.choice([0, 2, 4]))
            error = ParamInvalidError
        elif rule == 5:
            case["data"], case["stat"] = ms.float32, ms.float16
            error = ParamInvalidError
        else:
            case["C_arg"] = C + G  # the N, C, HxW parameters disagree with the tensors
            error = ParamInvalidError
    return case, error


def run_case(rng, case):
    shape, data, stat, G = case["shape"], case["data"], case["stat"], case["G"]
    C = case.get("C_arg", case["C"])
    x = rounded(rng.standard_normal(shape), data)
    dy = rounded(rng.standard_normal(case["dy_shape"] or shape), data)
    gamma = rounded(rng.standard_normal(case["C"]), stat) if case["gamma"] else None
    mean = rounded(rng.standard_normal(case["mean_shape"]) * 0.1, stat)
    rstd = rounded(rng.random(case["mean_shape"]) + 0.5, stat)
    tensors = dict(grad_out=Tensor(dy.astype(np.float32), data), input=Tensor(x.astype(np.float32), data),
                   mean=Tensor(mean.astype(np.float32), stat), rstd=Tensor(rstd.astype(np.float32), stat))
    if case["none"]:
        tensors[case["none"]] = None
    gamma_t = None if gamma is None else Tensor(gamma.astype(np.float32), stat)
    got = group_norm_backward(tensors["grad_out"], tensors["input"], tensors["mean"], tensors["rstd"], gamma_t,
                              case["N"], C, case["HxW"], G, case["mask"])
    return got, (dy, x, mean, rstd, gamma)


def test_fuzz_group_norm_backward():
    ms.set_context(mode=ms.PYNATIVE_MODE)
    rng = np.random.default_rng(20261129)
    counts = {"valid": 0, "invalid": 0}
    for index in range(CASES):
        case, error = random_case(rng)
        context = f"case {index}: {case}"
        if error is not None:
            with pytest.raises(error) as info:
                run_case(rng, case)
            assert info.value.code == error.code, context
            assert str(info.value).startswith(f"{error.status} ({error.code}): "), context
            counts["invalid"] += 1
            continue
        got, (dy, x, mean, rstd, gamma) = run_case(rng, case)
        N, C, G = case["N"], case["C"], case["G"]
        x3 = x.reshape(N, C, case["HxW"])
        want = reference.backward(dy.reshape(x3.shape), x3, mean, rstd, gamma, G)
        for bit, out, ref, dtype, name in zip(case["mask"], got, want, (case["data"], case["stat"], case["stat"]),
                                              ("dx", "dgamma", "dbeta")):
            if not bit:
                assert out is None, context
                continue
            assert out.dtype == dtype, context
            got_values = out.astype(ms.float32).asnumpy().reshape(ref.shape) if out.size else np.zeros(ref.shape)
            assert_close(got_values, ref, dtype, f"{name} in {context}")
        counts["valid"] += 1
    assert counts["valid"] + counts["invalid"] == CASES
    assert counts["valid"] > 400 and counts["invalid"] > 300, counts
    print(f"fuzz: {counts['valid']} valid, {counts['invalid']} invalid, 0 crashes")
