"""The CPU kernel library called directly (ctypes, no framework) against the float64
reference, over the shape table, every dtype combination and output masks; plus
determinism: bit-identical outputs over repeated calls and for 1 vs 2 and 3 OpenMP threads (4 in the
exhaustive tier)."""
import functools
import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import mindspore as ms
import numpy as np
import pytest

from cases import DTYPES, SHAPES, assert_close, make_inputs
from kernel_arrays import DTYPE_NAME, from_storage, to_storage
from ms_groupnorm import reference
from ms_groupnorm.backends import cpu_kernels


def run_backward(x, dy, gamma, mean, rstd, G, data_dtype, stat_dtype, mask=(True, True, True)):
    outputs = cpu_kernels.backward(
        to_storage(dy, data_dtype), to_storage(x, data_dtype), to_storage(mean, stat_dtype),
        to_storage(rstd, stat_dtype), None if gamma is None else to_storage(gamma, stat_dtype), G, mask,
        data_dtype=DTYPE_NAME[data_dtype], stat_dtype=DTYPE_NAME[stat_dtype])
    dtypes = (data_dtype, stat_dtype, stat_dtype)
    return [None if out is None else from_storage(out, dt) for out, dt in zip(outputs, dtypes)]


def run_forward(x, gamma, beta, G, eps, data_dtype, stat_dtype):
    y, mean, rstd = cpu_kernels.forward(
        to_storage(x, data_dtype), None if gamma is None else to_storage(gamma, stat_dtype),
        None if beta is None else to_storage(beta, stat_dtype), G, eps,
        data_dtype=DTYPE_NAME[data_dtype], stat_dtype=DTYPE_NAME[stat_dtype])
    return from_storage(y, data_dtype), from_storage(mean, stat_dtype), from_storage(rstd, stat_dtype)


@pytest.mark.parametrize("data_dtype,stat_dtype", DTYPES)
@pytest.mark.parametrize("shape,G", SHAPES)
def test_backward_matches_reference(rng, shape, G, data_dtype, stat_dtype):
    x, dy, gamma, _, mean, rstd = make_inputs(rng, shape, G, data_dtype, stat_dtype)
    dx, dgamma, dbeta = run_backward(x, dy, gamma, mean, rstd, G, data_dtype, stat_dtype)
    want = reference.backward(dy, x, mean, rstd, gamma, G)
    assert_close(dx, want[0], data_dtype, "dx")
    assert_close(dgamma, want[1], stat_dtype, "dgamma")
    assert_close(dbeta, want[2], stat_dtype, "dbeta")


@pytest.mark.parametrize("data_dtype,stat_dtype", DTYPES)
@pytest.mark.parametrize("shape,G", SHAPES)
def test_forward_matches_reference(rng, shape, G, data_dtype, stat_dtype):
    x, _, gamma, beta, _, _ = make_inputs(rng, shape, G, data_dtype, stat_dtype)
    y, mean, rstd = run_forward(x, gamma, beta, G, 1e-5, data_dtype, stat_dtype)
    want_y, want_mean, want_rstd = reference.forward(x, gamma, beta, G, 1e-5)
    assert_close(mean, want_mean, stat_dtype, "mean")
    assert_close(rstd, want_rstd, stat_dtype, "rstd")
    # y is computed from the mean/rstd the kernel returned (rounded to the stats dtype).
    assert_close(y, reference_y_from_stats(x, gamma, beta, mean, rstd, G), data_dtype, "y")
    assert_close(y, want_y, stat_dtype if stat_dtype != ms.float32 else data_dtype, "y vs exact")


def reference_y_from_stats(x, gamma, beta, mean, rstd, G):
    N, C = x.shape[:2]
    xg = x.reshape(N, G, -1)
    xhat = ((xg - mean[..., None]) * rstd[..., None]).reshape(N, C, -1)
    return (xhat * gamma[None, :, None] + beta[None, :, None]).reshape(x.shape)


@pytest.mark.parametrize("mask", [(True, False, False), (False, True, False), (False, False, True),
                                  (False, True, True), (True, True, False), (False, False, False)])
@pytest.mark.parametrize("data_dtype,stat_dtype", [DTYPES[0], DTYPES[4]])
def test_output_mask_computes_only_what_is_asked(rng, mask, data_dtype, stat_dtype):
    shape, G = (3, 6, 5, 4), 3
    x, dy, gamma, _, mean, rstd = make_inputs(rng, shape, G, data_dtype, stat_dtype)
    got = run_backward(x, dy, gamma, mean, rstd, G, data_dtype, stat_dtype, mask)
    want = reference.backward(dy, x, mean, rstd, gamma, G)
    for bit, out, ref, dtype, name in zip(mask, got, want, (data_dtype, stat_dtype, stat_dtype),
                                          ("dx", "dgamma", "dbeta")):
        if bit:
            assert_close(out, ref, dtype, name)
        else:
            assert out is None


def test_gamma_none_is_ones(rng):
    shape, G = (2, 8, 3, 3), 4
    x, dy, _, _, mean, rstd = make_inputs(rng, shape, G, ms.float16, ms.float32)
    got = run_backward(x, dy, None, mean, rstd, G, ms.float16, ms.float32)
    want = reference.backward(dy, x, mean, rstd, np.ones(8), G)
    for out, ref, dtype, name in zip(got, want, (ms.float16, ms.float32, ms.float32), ("dx", "dgamma", "dbeta")):
        assert_close(out, ref, dtype, name)


@pytest.mark.parametrize("shape", [(0, 4, 3), (2, 4, 0), (2, 4, 0, 5)])
def test_empty_input_gives_zero_parameter_grads(shape):
    x = np.zeros(shape, np.float32)
    mean = np.zeros((shape[0], 2), np.float32)
    dx, dgamma, dbeta = cpu_kernels.backward(x, x, mean, mean, np.ones(4, np.float32), 2)
    assert dx.shape == shape
    np.testing.assert_array_equal(dgamma, np.zeros(4))
    np.testing.assert_array_equal(dbeta, np.zeros(4))


@pytest.mark.parametrize("shape", [(2, 0, 3), (0, 0), (3, 0, 2, 2)])
def test_no_channels_gives_empty_outputs(shape):
    """C = 0 (so D = C/G = 0) is an empty input too: the kernel returns without dividing by D."""
    x = np.zeros(shape, np.float32)
    mean = np.zeros((shape[0], 1), np.float32)
    dx, dgamma, dbeta = cpu_kernels.backward(x, x, mean, mean, None, 1)
    assert dx.shape == shape and dgamma.shape == (0,) and dbeta.shape == (0,)


def test_large_mean_does_not_cancel(rng):
    """x = 1000 + noise: the backward centres x on the saved mean, so dgamma keeps its digits."""
    shape, G = (2, 4, 64, 64), 2
    x = rounded32(1000.0 + rng.standard_normal(shape))
    dy = rounded32(rng.standard_normal(shape))
    gamma = rounded32(rng.standard_normal(4))
    _, mean, rstd = reference.forward(x, gamma, None, G)
    mean, rstd = rounded32(mean), rounded32(rstd)
    dx, dgamma, dbeta = run_backward(x, dy, gamma, mean, rstd, G, ms.float32, ms.float32)
    want = reference.backward(dy, x, mean, rstd, gamma, G)
    assert_close(dgamma, want[1], ms.float32, "dgamma")
    assert_close(dx, want[0], ms.float32, "dx")


def rounded32(a):
    return np.asarray(a, np.float32).astype(np.float64)


# ---------------------------------------------------------------- determinism
DETERMINISM_SCRIPT = textwrap.dedent("""
    import hashlib, numpy as np
    from ms_groupnorm.backends import cpu_kernels as cpu_kernels
    digest = hashlib.sha256()
    # Once with every call free to use all threads (minimum 1 element per thread), so the
    # small shapes run the threaded schedules too, then with the default minimum.
    for minimum in (1, 0):
        cpu_kernels.cdll().MsGroupNormSetMinElementsPerThread(minimum)
        rng = np.random.default_rng(5)
        # (1,3,...,1) and (1,4,512,512): one group, so 2 threads split by channel while
        # 1 thread goes group-wise. One sample with rows of 2-15 elements: 1 thread runs the
        # backward's sample step (its short-row kernels; 16-bit samples widened to floats),
        # more threads the group-wise schedule; offset 30 takes the centred sums. 130 x 5 and
        # 200 x 9: the sums across rows in several chunks of rows, the last one partial; 24 x 37:
        # rows of 16-64 elements in small groups, which the sample step takes too.
        for shape, G, offset in [((1, 3, 224, 224), 1, 1), ((3, 60, 17, 19), 6, 1), ((8, 32, 40, 40), 4, 1),
                               ((2, 6, 5000), 3, 1), ((1, 4, 512, 512), 1, 1), ((1, 8, 2), 4, 1),
                               ((1, 512, 2), 16, 1), ((1, 64, 3, 3), 8, 30), ((1, 48, 14), 16, 1),
                               ((1, 130, 5), 10, 1), ((1, 200, 9), 8, 1), ((1, 24, 37), 8, 1)]:
            for dt in (np.float32, np.float16):
                x = (rng.standard_normal(shape) * 2 + offset).astype(dt)
                dy = rng.standard_normal(shape).astype(dt)
                gamma = rng.standard_normal(shape[1]).astype(np.float32)
                y, mean, rstd = cpu_kernels.forward(x, gamma, gamma, G, data_dtype=None)
                for out in (y, mean, rstd) + cpu_kernels.backward(dy, x, mean, rstd, gamma, G):
                    digest.update(out.tobytes())
    print(digest.hexdigest())
""")


@functools.lru_cache(maxsize=None)  # the 1-thread digest, once per worker process
def _digest_with_threads(threads):
    # The child imports ms_groupnorm from this checkout, installed or not.
    root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ, OMP_NUM_THREADS=str(threads),
               PYTHONPATH=os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")])))
    result = subprocess.run([sys.executable, "-c", DETERMINISM_SCRIPT], env=env, capture_output=True, text=True,
                            timeout=300, check=True)
    return result.stdout.strip()


# 3 and 4 threads oversubscribe a 2-core machine: the schedule still splits the work by
# group, channel or block only, so the bits must not move.
@pytest.mark.parametrize("threads", [2, 3, pytest.param(4, marks=pytest.mark.exhaustive)])
def test_bit_identical_for_1_and_more_threads(threads):
    one, more = _digest_with_threads(1), _digest_with_threads(threads)
    assert len(one) == 64 and one == more


def test_bit_identical_over_repeated_calls(rng):
    shape, G = (4, 32, 30, 30), 8
    x = rng.standard_normal(shape).astype(np.float32)
    dy = rng.standard_normal(shape).astype(np.float32)
    gamma = rng.standard_normal(32).astype(np.float32)
    _, mean, rstd = cpu_kernels.forward(x, gamma, None, G)
    first = cpu_kernels.backward(dy, x, mean, rstd, gamma, G)
    digests = {hashlib.sha256(b"".join(o.tobytes() for o in cpu_kernels.backward(dy, x, mean, rstd, gamma, G)))
               .hexdigest() for _ in range(5)}
    assert digests == {hashlib.sha256(b"".join(o.tobytes() for o in first)).hexdigest()}
