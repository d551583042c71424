"""The forward's accuracy against float64, next to the references a user would compare with:
  * a large mean with a small spread (|mean|/std from 1e6 to 1e7) in float32 data, where a
    float32 mean alone is off by a large part of the spread: GroupNorm, GroupNormSiLU and
    group_norm_forward stay within a few float32 roundings, as mindspore.nn.GroupNorm does;
  * fp16/bf16 data: y before its rounding to 16 bits is no less accurate than torch's float32
    group_norm, and the 16-bit outputs round differently from float64 no more often than
    torch's do."""
import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor, nn

import ms_groupnorm
from kernel_arrays import from_storage, to_storage
from ms_groupnorm import group_norm_forward, reference
from ms_groupnorm.backends import cpu_kernels

# (base, spread, shape, G): x = base + spread * N(0, 1) in float32
LARGE_MEAN_CASES = [
    pytest.param(1e4, 1e-2, (2, 8, 16, 16), 2, id="1e4+1e-2N"),
    pytest.param(3e3, 1e-3, (2, 8, 16, 16), 2, id="3e3+1e-3N"),
    pytest.param(1e4, 1e-3, (2, 8, 3, 3), 8, id="1e4+1e-3N-small-groups"),
    pytest.param(-3e3, 1e-3, (3, 6, 2, 2), 3, id="-3e3+1e-3N-tiny-groups"),
    pytest.param(1.0, 1e-7, (2, 8, 16, 16), 2, id="1+1e-7N"),
    # HxW = 1: the sample-by-sample schedule's point loops (2-D and (N, C, 1, 1) inputs)
    pytest.param(1e4, 1e-2, (64, 32), 4, id="2-D-1e4+1e-2N"),
    pytest.param(-3e3, 1e-3, (48, 24, 1, 1), 3, id="NC11-3e3+1e-3N"),
    pytest.param(1e4, 1e-3, (33, 257), 1, id="2-D-1e4+1e-3N-G1"),
]
EPS = 1e-12  # small next to the spreads, so y depends on them (eps 1e-5 would flatten 1e-3)


def large_mean_case(base, spread, shape, seed=0):
    rng = np.random.default_rng(seed)
    x = (base + spread * rng.standard_normal(shape)).astype(np.float32)
    gamma = rng.uniform(0.5, 1.5, shape[1]).astype(np.float32)
    beta = rng.uniform(-1, 1, shape[1]).astype(np.float32)
    return x, gamma, beta


def relative_errors(got, want):
    """(RMS, max) of got - want, relative to the RMS and max of want."""
    diff = np.asarray(got, np.float64) - want
    return (float(np.sqrt(np.mean(diff ** 2) / np.mean(want ** 2))),
            float(np.abs(diff).max() / np.abs(want).max()))


# The statistics carry the mean in double, y = (x - c) * scale + shift rounds scale, shift and
# y once each: a few float32 roundings (2^-24 = 6e-8) of y. Measured: RMS 3.4-4.6e-8, max
# 4.1-5.8e-8 (nn.GroupNorm: 2.1-2.5e-8 RMS); with a float32 mean it was 3e-2 to 2.4e-1.
FLOAT32_RMS, FLOAT32_MAX = 1.2e-7, 2.5e-7


@pytest.mark.parametrize("base,spread,shape,G", LARGE_MEAN_CASES)
def test_kernel_forward_with_large_mean_and_small_spread(base, spread, shape, G):
    x, gamma, beta = large_mean_case(base, spread, shape)
    want, want_mean, want_rstd = reference.forward(x.astype(np.float64), gamma, beta, G, EPS)
    y, mean, rstd = cpu_kernels.forward(x, gamma, beta, G, EPS)
    rms, worst = relative_errors(y, want)
    assert rms <= FLOAT32_RMS and worst <= FLOAT32_MAX, (rms, worst)
    # the stored statistics are the float32 roundings of the exact ones
    np.testing.assert_allclose(mean, want_mean.reshape(mean.shape), rtol=2 ** -24)
    np.testing.assert_allclose(rstd, want_rstd.reshape(rstd.shape), rtol=2 ** -23)
    z, _, _ = cpu_kernels.silu_forward(x, gamma, beta, G, EPS)
    rms, worst = relative_errors(z, reference.swish(want))
    assert rms <= 2 * FLOAT32_RMS and worst <= 2 * FLOAT32_MAX, (rms, worst)


@pytest.mark.parametrize("base,spread,shape,G", LARGE_MEAN_CASES[:3])
def test_layers_with_large_mean_and_small_spread_as_accurate_as_mindspore(mode, base, spread, shape, G):
    """GroupNorm, GroupNormSiLU and group_norm_forward next to mindspore.nn.GroupNorm on the
    same float32 inputs (which stays at 2e-8 there)."""
    x, gamma, beta = large_mean_case(base, spread, shape)
    want, _, _ = reference.forward(x.astype(np.float64), gamma, beta, G, EPS)

    def layer_output(cls):
        layer = cls(G, shape[1], eps=EPS)
        layer.gamma.set_data(Tensor(gamma))
        layer.beta.set_data(Tensor(beta))
        return layer(Tensor(x)).asnumpy()

    theirs = relative_errors(layer_output(nn.GroupNorm), want)
    N, C = shape[:2]
    y, _, _ = group_norm_forward(Tensor(x), Tensor(gamma), Tensor(beta), N, C, x[0, 0].size, G, EPS)
    outputs = {"GroupNorm": (layer_output(ms_groupnorm.GroupNorm), want),
               "group_norm_forward": (y.asnumpy(), want),
               "GroupNormSiLU": (layer_output(ms_groupnorm.GroupNormSiLU), reference.swish(want))}
    for name, (got, expected) in outputs.items():
        rms, worst = relative_errors(got, expected)
        bound = 2 if name == "GroupNormSiLU" else 1  # SiLU's own roundings come on top
        assert rms <= bound * max(FLOAT32_RMS, 2 * theirs[0]), (name, rms, theirs)
        assert worst <= bound * max(FLOAT32_MAX, 2 * theirs[1]), (name, worst, theirs)


# ---------------------------------------------------------------- fp16/bf16 data
SIXTEEN_BIT_SHAPE, SIXTEEN_BIT_GROUPS = (8, 32, 64, 64), 8


def sixteen_bit_case(dtype_name, mean, spread):
    """(x, gamma, beta) as float64 arrays of dtype_name values (rounded with torch)."""
    torch = pytest.importorskip("torch", reason="torch is not installed: the comparison with torch needs it")
    rng = np.random.default_rng(1)
    rounded = lambda a: torch.from_numpy(a).to(getattr(torch, dtype_name)).double().numpy()  # noqa: E731
    C = SIXTEEN_BIT_SHAPE[1]
    return (rounded(mean + spread * rng.standard_normal(SIXTEEN_BIT_SHAPE)), rounded(rng.uniform(0.5, 1.5, C)),
            rounded(rng.uniform(-1, 1, C)))


def torch_group_norm(x, gamma, beta, dtype_name):
    import torch
    t = lambda a: torch.from_numpy(a).to(getattr(torch, dtype_name))  # noqa: E731
    return torch.nn.functional.group_norm(t(x), SIXTEEN_BIT_GROUPS, t(gamma), t(beta), 1e-5).double().numpy()


@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
def test_sixteen_bit_forward_as_accurate_as_torch(dtype_name):
    """8x32x64x64 G8, data of mean 0 and 3 (spread 1 and 2). Measured: y before rounding has
    RMS 4.4-5.1e-8 (torch 6.2-9.5e-8; 7.3-9.8e-8 before the scale/shift form and the on-grid
    x0); fp16 mis-rounds 0.040 % of the outputs (torch 0.092 %, before 0.123 %), bf16 0.005 %
    (torch 0.015 %)."""
    dtype = {"float16": ms.float16, "bfloat16": ms.bfloat16}[dtype_name]
    ours_misrounded = torch_misrounded = 0
    for mean, spread in [(0.0, 1.0), (3.0, 2.0)]:
        x, gamma, beta = sixteen_bit_case(dtype_name, mean, spread)
        want, _, _ = reference.forward(x, gamma, beta, SIXTEEN_BIT_GROUPS, 1e-5)
        # y before its rounding to 16 bits: the same arithmetic on the same values held in float32
        ours, _, _ = cpu_kernels.forward(x.astype(np.float32), gamma.astype(np.float32), beta.astype(np.float32),
                                        SIXTEEN_BIT_GROUPS, 1e-5)
        theirs = torch_group_norm(x, gamma, beta, "float32")
        ours_err, theirs_err = np.abs(ours - want), np.abs(theirs - want)
        assert np.sqrt(np.mean(ours_err ** 2)) <= 1.2 * np.sqrt(np.mean(theirs_err ** 2)), mean
        assert ours_err.max() <= 1.2 * theirs_err.max(), mean
        # the 16-bit outputs against the correctly rounded float64 y
        correct = _rounded_like(want, dtype_name)
        y16, _, _ = cpu_kernels.forward(to_storage(x, dtype), to_storage(gamma, dtype), to_storage(beta, dtype),
                                       SIXTEEN_BIT_GROUPS, 1e-5, data_dtype=dtype_name, stat_dtype=dtype_name)
        ours_misrounded += int(np.count_nonzero(from_storage(y16, dtype) != correct))
        torch_misrounded += int(np.count_nonzero(torch_group_norm(x, gamma, beta, dtype_name) != correct))
    assert ours_misrounded <= torch_misrounded, (ours_misrounded, torch_misrounded)


def _rounded_like(values, dtype_name):
    import torch
    return torch.from_numpy(values).to(getattr(torch, dtype_name)).double().numpy()
