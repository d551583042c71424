"""The ctypes wrapper sizes its outputs from the statistics dtype it asks the kernel for.

A bfloat16 input travels as uint16; with gamma=None and stat_dtype="float32" the kernel writes
4-byte statistics, so buffers sized from the input's 2-byte storage would be overrun."""
import mindspore as ms
import numpy as np
import pytest

from kernel_arrays import to_storage
from ms_groupnorm import reference
from ms_groupnorm.backends import cpu_kernels


@pytest.mark.parametrize("dtype", [ms.float16, ms.bfloat16], ids=["float16", "bfloat16"])
def test_forward_float32_statistics_without_gamma(dtype, rng):
    N, C, HxW, G = 3, 8, 5, 4
    values = rng.integers(-64, 64, size=(N, C, HxW)) / 8.0 + 1.0  # exact in float16 and bfloat16
    x = to_storage(values, dtype)
    name = "bfloat16" if dtype == ms.bfloat16 else "float16"
    _, mean, rstd = cpu_kernels.forward(x, None, None, G, 1e-5, stat_dtype="float32", data_dtype=name)
    assert mean.dtype == np.float32 and rstd.dtype == np.float32
    assert mean.shape == (N, G) and rstd.shape == (N, G)
    _, ref_mean, ref_rstd = reference.forward(values, None, None, G, 1e-5)
    np.testing.assert_allclose(mean, np.reshape(ref_mean, (N, G)), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(rstd, np.reshape(ref_rstd, (N, G)), rtol=1e-5)
