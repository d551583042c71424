"""Shared test tables: shapes (with the reason for each row), dtypes and tolerances,
and helpers to move data between numpy and MindSpore with exact low-precision inputs."""
import os
from pathlib import Path

import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor

# (shape (N, C, *), G, reason)
SHAPES = [
    pytest.param((1, 1, 3), 1, id="minimal"),
    pytest.param((2, 8, 5, 3), 8, id="G==C"),
    pytest.param((2, 6, 4, 5), 1, id="G==1"),
    pytest.param((4, 12), 3, id="HxW==1-rank2"),
    pytest.param((3, 15, 7, 11), 5, id="unaligned-sizes"),
    pytest.param((2, 4, 9), 2, id="rank3"),
    pytest.param((2, 4, 2, 3, 2), 2, id="rank5"),
    pytest.param((2, 4, 2, 1, 3, 1, 2, 2), 4, id="rank8"),
    pytest.param((11, 6, 3, 3), 3, id="N>8"),
    pytest.param((2, 32, 48, 40), 4, id="large"),
]

# data dtype, stats dtype (mean/rstd/gamma/dgamma/dbeta), tolerance relative to the
# largest reference value. float32: float32 arithmetic (~1e-6) with margin; float16:
# half an ulp of the rounded output is 4.9e-4; bfloat16: half an ulp is 3.9e-3.
DTYPES = [
    pytest.param(ms.float32, ms.float32, id="fp32"),
    pytest.param(ms.float16, ms.float16, id="fp16"),
    pytest.param(ms.bfloat16, ms.bfloat16, id="bf16"),
    pytest.param(ms.float16, ms.float32, id="fp16-fp32stats"),
    pytest.param(ms.bfloat16, ms.float32, id="bf16-fp32stats"),
]
TOLERANCE = {ms.float32: 2e-5, ms.float16: 2e-3, ms.bfloat16: 1.6e-2}


def tensor(array, dtype):
    return Tensor(np.asarray(array, np.float32), dtype=dtype)


def to_numpy(t):
    """A MindSpore tensor as float64 numpy (bfloat16 has no numpy dtype)."""
    if t.dtype == ms.bfloat16:
        t = t.astype(ms.float32)
    return t.asnumpy().astype(np.float64)


def rounded(array, dtype):
    """``array`` rounded to ``dtype`` and back: the exact values a kernel will see."""
    return to_numpy(tensor(array, dtype))


def assert_close(got, want, dtype, name):
    """|got - want| <= tol * (max|want| + |want|) with tol stated per dtype in TOLERANCE."""
    got = to_numpy(got) if not isinstance(got, np.ndarray) else got.astype(np.float64)
    want = np.asarray(want, np.float64)
    assert got.shape == want.shape, f"{name}: shape {got.shape} != {want.shape}"
    tol = TOLERANCE[dtype]
    scale = max(np.abs(want).max(initial=0.0), 1e-30)
    err = np.abs(got - want)
    bound = tol * (scale + np.abs(want))
    worst = np.unravel_index(np.argmax(err - bound), err.shape) if err.size else ()
    assert np.all(err <= bound), (
        f"{name}: max |err| {err.max():.3g} (relative to scale {scale:.3g}: {err.max() / scale:.3g}) "
        f"exceeds tol {tol} at {worst}: got {got[worst]}, want {want[worst]}")
    return float(err.max(initial=0.0) / scale)


def make_inputs(rng, shape, G, data_dtype, stat_dtype, offset=0.5):
    """Random (x, dy, gamma, beta, mean, rstd) rounded to their dtypes, as float64 numpy,
    with mean/rstd from the reference forward of the rounded x."""
    from ms_groupnorm import reference
    C = shape[1]
    x = rounded(rng.standard_normal(shape) * 1.5 + offset, data_dtype)
    dy = rounded(rng.standard_normal(shape), data_dtype)
    gamma = rounded(rng.standard_normal(C), stat_dtype)
    beta = rounded(rng.standard_normal(C), stat_dtype)
    _, mean, rstd = reference.forward(x, gamma, beta, G)
    return x, dy, gamma, beta, rounded(mean, stat_dtype), rounded(rstd, stat_dtype)


def env_importing_this_package():
    """os.environ with the root this run imports ms_groupnorm from first on PYTHONPATH, so a
    subprocess tests the same package (a checkout under `python -m pytest`, or the installed one)."""
    import ms_groupnorm
    env = dict(os.environ)
    root = str(Path(ms_groupnorm.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    return env
