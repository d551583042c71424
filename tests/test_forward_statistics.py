"""The CPU forward's rstd against float64, group by group, on data whose rounding is delicate.

The statistics sum x - x0 and the squares in one pass where x0 (a mean of the group's first
elements) lies close to the group's mean, and take a second pass about the mean elsewhere
(group_statistics.h). Both paths must be as accurate as the second pass alone was: within about
two float32 ulps per group, and without a systematic sign. Squares of 16-bit values about a point
of their own grid all rounded the same way (rstd up to 3.3e-7 off, bias 5e-8); integer data; a
group whose first elements lie far from its mean (the cancellation the second pass avoids); a
large mean with a small spread."""
import numpy as np
import pytest

from ms_groupnorm.backends import cpu_kernels

torch = pytest.importorskip("torch", reason="torch rounds the 16-bit data")

SHAPE, GROUPS = (4, 64, 32 * 32), 16  # 64 groups of 4096 elements


def _as(values, dtype):
    return torch.from_numpy(values).to(dtype).float().numpy()


def _data(kind, rng):
    n = rng.standard_normal(SHAPE)
    if kind == "float32":
        return (0.5 + 2 * n).astype(np.float32)
    if kind in ("bfloat16", "float16"):
        return _as(n, getattr(torch, kind))
    if kind.endswith("mean 3"):
        return _as(3 + 2 * n, getattr(torch, kind.split()[0]))
    if kind == "integers":
        return rng.integers(0, 256, SHAPE).astype(np.float32)
    if kind == "first elements 8 std up":
        n[..., :64] += 8.0
        return n.astype(np.float32)
    assert kind == "1e4 + 1e-2 N"
    return (1e4 + 1e-2 * n).astype(np.float32)


KINDS = ["float32", "bfloat16", "float16", "bfloat16 mean 3", "float16 mean 3", "integers", "first elements 8 std up",
         "1e4 + 1e-2 N"]


@pytest.mark.parametrize("kind", KINDS)
def test_rstd_within_two_ulps_and_unbiased(kernel_lib, kind):
    x = _data(kind, np.random.default_rng(3))
    groups = x.reshape(-1, x.size // (SHAPE[0] * GROUPS)).astype(np.float64)
    want = 1 / np.sqrt(groups.var(axis=1) + 1e-5)
    for isa in kernel_lib.isas:
        kernel_lib.MsGroupNormSelectIsa(isa.encode())
        for threads in (1, 2):
            kernel_lib.MsGroupNormSetNumThreads(threads)
            _, _, rstd = cpu_kernels.forward(x, None, None, GROUPS, 1e-5)
            rel = (rstd.reshape(-1).astype(np.float64) - want) / want
            where = f"{kind}, {isa}, {threads} threads"
            assert np.abs(rel).max() <= 1.2e-7, where
            assert np.sqrt(np.mean(rel ** 2)) <= 4e-8, where
            assert abs(rel.mean()) <= 1.2e-8, where


# Groups of at most 32 elements (kSmallGroupMax, row_kernels.h) take their mean and rstd in double,
# by the formula of the double loops (wide_range_rows.h): sums in index order, then
# rstd = 1 / sqrt(squares / m + eps). Stored as float32, they are those doubles rounded once.
SMALL_GROUPS = [((64, 32, 1), 32), ((33, 12, 1), 4), ((8, 6, 5), 2), ((5, 16, 2), 1), ((40, 32, 1), 1)]
SMALL_KINDS = ["mean near 0", "1e4 + 1e-2 N", "float16"]


def _index_order_statistics(x, G, eps):
    groups = x.reshape(x.shape[0] * G, -1).astype(np.float64)
    total = np.zeros(len(groups))
    for i in range(groups.shape[1]):
        total = total + groups[:, i]
    mean = total / groups.shape[1]
    squares = np.zeros(len(groups))
    for i in range(groups.shape[1]):
        squares = squares + (groups[:, i] - mean) * (groups[:, i] - mean)
    return mean.astype(np.float32), (1.0 / np.sqrt(squares / groups.shape[1] + eps)).astype(np.float32)


@pytest.mark.parametrize("kind", SMALL_KINDS)
@pytest.mark.parametrize("shape, G", SMALL_GROUPS)
def test_small_groups_store_the_double_statistics_rounded_once(kernel_lib, kind, shape, G):
    rng = np.random.default_rng(11)
    n = rng.standard_normal(shape)
    x = {"mean near 0": (1e-3 + 5 * n).astype(np.float32), "1e4 + 1e-2 N": (1e4 + 1e-2 * n).astype(np.float32),
         "float16": (3 * n).astype(np.float16)}[kind]
    want_mean, want_rstd = _index_order_statistics(x, G, float(np.float32(1e-5)))  # eps reaches the kernel as float32
    kernel_lib.MsGroupNormSetMinElementsPerThread(1)  # two threads split even these calls
    try:
        for isa in kernel_lib.isas:
            kernel_lib.MsGroupNormSelectIsa(isa.encode())
            for threads in (1, 2, 3):
                kernel_lib.MsGroupNormSetNumThreads(threads)
                _, mean, rstd = cpu_kernels.forward(x, None, None, G, 1e-5, stat_dtype="float32")
                where = f"{kind}, {shape} G{G}, {isa}, {threads} threads"
                np.testing.assert_array_equal(mean.reshape(-1).view(np.uint32), want_mean.view(np.uint32), where)
                np.testing.assert_array_equal(rstd.reshape(-1).view(np.uint32), want_rstd.view(np.uint32), where)
    finally:
        kernel_lib.MsGroupNormSetMinElementsPerThread(0)
