"""The fused GroupNorm + swish CPU kernels called directly (ctypes) against the float64
reference (ms_groupnorm/reference.py): every shape class of the shape table (ranks 2-8,
HxW = 1, G = 1, G = C) plus empty inputs, every dtype pair, masks, swish_scale != 1;
statistics bitwise those of the GroupNorm kernel; bit-identical for 1/2/3 threads, both
schedules and every ISA build this CPU runs; fp16/bf16 stores round to nearest even."""
import numpy as np
import pytest

import mindspore as ms
from cases import DTYPES, SHAPES, assert_close, make_inputs
from kernel_arrays import DTYPE_NAME, from_storage, to_storage
from ms_groupnorm.backends import cpu_kernels
from ms_groupnorm import reference
from test_kernel_simd import BUILD_TOLERANCE, STAT_OUTPUTS, _as_float, _available_isas, _bf16, _data, isa_control  # noqa: F401,E501  (fixture)

SWISH_SCALES = [1.0, 1.7, -0.5]


def run_forward(x, gamma, beta, G, data_dtype, stat_dtype, swish_scale=1.0, eps=1e-5):
    z, mean, rstd = cpu_kernels.silu_forward(
        to_storage(x, data_dtype), None if gamma is None else to_storage(gamma, stat_dtype),
        None if beta is None else to_storage(beta, stat_dtype), G, eps, swish_scale,
        data_dtype=DTYPE_NAME[data_dtype], stat_dtype=DTYPE_NAME[stat_dtype])
    return from_storage(z, data_dtype), from_storage(mean, stat_dtype), from_storage(rstd, stat_dtype)


def run_backward(dz, x, mean, rstd, gamma, beta, G, data_dtype, stat_dtype, mask=(True, True, True),
                 swish_scale=1.0):
    outputs = cpu_kernels.silu_backward(
        to_storage(dz, data_dtype), to_storage(x, data_dtype), to_storage(mean, stat_dtype),
        to_storage(rstd, stat_dtype), None if gamma is None else to_storage(gamma, stat_dtype),
        None if beta is None else to_storage(beta, stat_dtype), G, mask, swish_scale,
        data_dtype=DTYPE_NAME[data_dtype], stat_dtype=DTYPE_NAME[stat_dtype])
    dtypes = (data_dtype, stat_dtype, stat_dtype)
    return [None if out is None else from_storage(out, dt) for out, dt in zip(outputs, dtypes)]


def z_from_stats(x, gamma, beta, mean, rstd, G, swish_scale):
    """The exact z of the statistics the kernel returned (rounded to the stats dtype)."""
    y = reference.recompute_y(x, mean, rstd, gamma, beta, G)
    return reference.swish(y, swish_scale)


@pytest.mark.parametrize("data_dtype,stat_dtype", DTYPES)
@pytest.mark.parametrize("shape,G", SHAPES)
def test_forward_matches_reference(rng, shape, G, data_dtype, stat_dtype):
    x, _, gamma, beta, _, _ = make_inputs(rng, shape, G, data_dtype, stat_dtype)
    for swish_scale in SWISH_SCALES:
        z, mean, rstd = run_forward(x, gamma, beta, G, data_dtype, stat_dtype, swish_scale)
        want_z, want_mean, want_rstd = reference.silu_forward(x, gamma, beta, G, 1e-5, swish_scale)
        assert_close(mean, want_mean, stat_dtype, "mean")
        assert_close(rstd, want_rstd, stat_dtype, "rstd")
        if stat_dtype == ms.float32:  # z from float32 statistics: data-dtype accuracy
            assert_close(z, want_z, data_dtype, f"z (k={swish_scale})")
        else:  # the stored statistics are rounded; z used the float32 ones
            assert_close(z, want_z, stat_dtype, f"z (k={swish_scale})")


@pytest.mark.parametrize("data_dtype,stat_dtype", DTYPES)
@pytest.mark.parametrize("shape,G", SHAPES)
def test_backward_matches_reference(rng, shape, G, data_dtype, stat_dtype):
    x, dz, gamma, beta, mean, rstd = make_inputs(rng, shape, G, data_dtype, stat_dtype)
    for swish_scale in SWISH_SCALES:
        got = run_backward(dz, x, mean, rstd, gamma, beta, G, data_dtype, stat_dtype, swish_scale=swish_scale)
        want = reference.silu_backward(dz, x, mean, rstd, gamma, beta, G, swish_scale)
        for out, ref, dtype, name in zip(got, want, (data_dtype, stat_dtype, stat_dtype), ("dx", "dgamma", "dbeta")):
            assert_close(out, ref, dtype, f"{name} (k={swish_scale})")


def test_swish_scale_enters_the_gradient(rng):
    """swish_scale != 1 changes dx/dgamma/dbeta by the k*y*s*(1-s) term (CANN's
    GroupNormSwishGrad once dropped that factor): compare with the gradient k = 1 would give."""
    shape, G = (2, 6, 7), 3
    x, dz, gamma, beta, mean, rstd = make_inputs(rng, shape, G, ms.float32, ms.float32)
    got = run_backward(dz, x, mean, rstd, gamma, beta, G, ms.float32, ms.float32, swish_scale=2.5)
    right = reference.silu_backward(dz, x, mean, rstd, gamma, beta, G, 2.5)
    # the gradient with the scale missing from the derivative's second term
    y = reference.recompute_y(x, mean, rstd, gamma, beta, G)
    s = reference.sigmoid(2.5 * y)
    wrong = reference.backward(dz * (s + y * s * (1 - s)), x, mean, rstd, gamma, G)
    for out, ok, bad, name in zip(got, right, wrong, ("dx", "dgamma", "dbeta")):
        assert_close(out, ok, ms.float32, name)
        assert np.abs(ok - bad).max() > 1e-2 * np.abs(ok).max(), name  # the test can tell them apart


@pytest.mark.parametrize("mask", [(True, False, False), (False, True, False), (False, False, True),
                                  (False, True, True), (True, True, False), (False, False, False)])
@pytest.mark.parametrize("data_dtype,stat_dtype", [DTYPES[0], DTYPES[4]])
def test_output_mask(rng, mask, data_dtype, stat_dtype):
    shape, G = (3, 6, 5, 4), 3
    x, dz, gamma, beta, mean, rstd = make_inputs(rng, shape, G, data_dtype, stat_dtype)
    got = run_backward(dz, x, mean, rstd, gamma, beta, G, data_dtype, stat_dtype, mask, swish_scale=1.3)
    want = reference.silu_backward(dz, x, mean, rstd, gamma, beta, G, 1.3)
    for bit, out, ref, dtype, name in zip(mask, got, want, (data_dtype, stat_dtype, stat_dtype),
                                          ("dx", "dgamma", "dbeta")):
        if bit:
            assert_close(out, ref, dtype, name)
        else:
            assert out is None


@pytest.mark.parametrize("with_gamma,with_beta", [(False, False), (True, False), (False, True)])
def test_absent_gamma_beta_mean_ones_and_zeros(rng, with_gamma, with_beta):
    shape, G = (2, 6, 9), 2
    x, dz, gamma, beta, _, _ = make_inputs(rng, shape, G, ms.bfloat16, ms.float32)
    gamma, beta = (gamma if with_gamma else None), (beta if with_beta else None)
    z, mean, rstd = run_forward(x, gamma, beta, G, ms.bfloat16, ms.float32)
    assert_close(z, reference.silu_forward(x, gamma, beta, G)[0], ms.bfloat16, "z")
    got = run_backward(dz, x, mean, rstd, gamma, beta, G, ms.bfloat16, ms.float32)
    for out, ref, dtype, name in zip(got, reference.silu_backward(dz, x, mean, rstd, gamma, beta, G),
                                     (ms.bfloat16, ms.float32, ms.float32), ("dx", "dgamma", "dbeta")):
        assert_close(out, ref, dtype, name)


@pytest.mark.parametrize("shape", [(0, 6, 4), (2, 6, 0), (3, 6, 2, 0), (2, 0, 3)])
def test_empty_inputs(shape):
    x = np.zeros(shape, np.float32)
    G = 3 if shape[1] else 1
    gamma = np.ones(shape[1], np.float32)
    z, mean, rstd = cpu_kernels.silu_forward(x, gamma, gamma, G)
    assert z.shape == shape and mean.shape == (shape[0], G)
    if shape[0] * shape[1]:
        assert not mean.any() and np.isnan(rstd).all()  # as GroupNorm: mean 0, rstd NaN
    dx, dgamma, dbeta = cpu_kernels.silu_backward(x, x, mean, rstd, gamma, gamma, G)
    assert dx.shape == shape and not dgamma.any() and not dbeta.any()


def test_group_too_large_for_the_scratch(rng):
    """A group of more than 1 MiB of g: the group-wise backward recomputes g for dx."""
    shape, G = (2, 2, 70000), 1
    x, dz, gamma, beta, mean, rstd = make_inputs(rng, shape, G, ms.float32, ms.float32)
    got = run_backward(dz, x, mean, rstd, gamma, beta, G, ms.float32, ms.float32, swish_scale=0.9)
    for out, ref, name in zip(got, reference.silu_backward(dz, x, mean, rstd, gamma, beta, G, 0.9),
                              ("dx", "dgamma", "dbeta")):
        assert_close(out, ref, ms.float32, name)


def test_statistics_are_those_of_the_group_norm_kernel(rng):
    for shape, G, dtype in [((3, 15, 7, 11), 5, np.float32), ((2, 8, 64, 33), 4, np.float16)]:
        x = (rng.standard_normal(shape) * 2 + 3).astype(dtype)
        gamma = rng.standard_normal(shape[1]).astype(np.float32)
        name = "float32" if dtype == np.float32 else "float16"
        _, mean, rstd = cpu_kernels.silu_forward(x, gamma, gamma, G, data_dtype=name)
        _, want_mean, want_rstd = cpu_kernels.forward(x, gamma, gamma, G, data_dtype=name)
        assert mean.tobytes() == want_mean.tobytes() and rstd.tobytes() == want_rstd.tobytes()


def test_bad_arguments_get_a_status_not_a_crash():
    x = np.zeros((2, 6, 4), np.float64)
    with pytest.raises(cpu_kernels.KernelError, match="returned 4"):  # float64: unfused pair only
        cpu_kernels.silu_forward(x, None, None, 3)
    with pytest.raises(cpu_kernels.KernelError, match="returned 5"):  # C % group != 0
        cpu_kernels.silu_forward(x.astype(np.float32), None, None, 4)
    x32 = x.astype(np.float32)
    stats = np.zeros((2, 3), np.float32)
    with pytest.raises(cpu_kernels.KernelError, match="returned 4"):  # fp32 data with fp16 stats
        cpu_kernels.silu_backward(x32, x32, stats.astype(np.float16), stats.astype(np.float16), None, None, 3)


# (N, C, HxW, G) as in test_kernel_simd.SIZES: vector and block tails, HxW below a
# vector, the channel-wise schedule (N*G < threads; it recomputes g where the group-wise
# one keeps a group's g in scratch), many tiny channels, HxW = 1 (by sample where N >= threads,
# group-wise below).
# Rows of 2-64 take the short-row sums in every schedule: (2, 128, 37, 2) spans several of
# their chunks a call, (1, 8, 2, 1) splits by channel (one row a call) from 2 threads on.
# The forward runs a group's short rows as one flat run (NormalizeSiluFlat) but one row a call
# row by row: (1, 12, 9, 1) and (1, 6, 49, 2) take both as the thread count changes. Groups of
# up to 4 short rows run a sample per call (1-2 threads) or a group per call (3 threads, N < 3):
# (2, 8, 5, 4) and (2, 12, 9, 3).
SIZES = [(2, 6, 37, 3), (1, 4, 4096 + 2048 + 19, 2), (3, 8, 5, 4), (1, 3, 1000, 1), (2, 64, 16, 32), (2, 8, 56, 4),
         (2, 64, 1, 4), (1, 48, 1, 3), (2, 128, 37, 2), (1, 8, 2, 1), (3, 16, 64, 8), (1, 12, 9, 1), (1, 6, 49, 2),
         (2, 8, 5, 4), (2, 12, 9, 3)]


def _run_all(sizes, dtype, stat_dtype, swish_scale, seed=7):
    N, C, hxw, G = sizes
    rng = np.random.default_rng(seed)
    x = _data(rng, (N, C, hxw), dtype)
    dz = _data(rng, (N, C, hxw), dtype)
    gamma_f = (1 + 0.2 * rng.standard_normal(C)).astype(np.float32)
    beta_f = (0.3 * rng.standard_normal(C)).astype(np.float32)
    if stat_dtype == "bfloat16":
        gamma, beta = _bf16(gamma_f), _bf16(beta_f)
    else:
        stat = np.float32 if stat_dtype == "float32" else x.dtype
        gamma, beta = gamma_f.astype(stat), beta_f.astype(stat)
    kw = dict(data_dtype=dtype, stat_dtype=stat_dtype)
    z, mean, rstd = cpu_kernels.silu_forward(x, gamma, beta, G, 1e-5, swish_scale, **kw)
    grads = cpu_kernels.silu_backward(dz, x, mean, rstd, gamma, beta, G, swish_scale=swish_scale, **kw)
    _, _, dbeta_only = cpu_kernels.silu_backward(dz, x, mean, rstd, gamma, beta, G, (False, False, True),
                                                 swish_scale, **kw)
    return [a.tobytes() for a in (z, mean, rstd, *grads, dbeta_only)]


@pytest.mark.parametrize("dtype,stat_dtype", [("float32", "float32"), ("float16", "float16"),
                                               ("float16", "float32"), ("bfloat16", "bfloat16"),
                                               ("bfloat16", "float32")])
def test_builds_and_thread_counts_agree_bit_for_bit(isa_control, dtype, stat_dtype):  # noqa: F811
    """Bit-identical across thread counts (both schedules) within each ISA build; the
    builds agree with each other to within rounding (the AVX2 and AVX-512 builds fuse
    multiply-adds, the portable one cannot; see test_kernel_simd)."""
    isas = _available_isas()
    names = ["z", "mean", "rstd", "dx", "dgamma", "dbeta", "dbeta only"]
    for sizes in SIZES:
        for swish_scale in (1.0, 0.7):
            results = {}
            for isa in isas:
                isa_control.MsGroupNormSelectIsa(isa.encode())
                for threads in (1, 2, 3):
                    isa_control.MsGroupNormSetNumThreads(threads)
                    results[(isa, threads)] = _run_all(sizes, dtype, stat_dtype, swish_scale)
            for (isa, threads), outputs in results.items():
                for name, got, want in zip(names, outputs, results[(isa, 1)]):
                    assert got == want, f"{name} differs: {isa}, {threads} vs 1 threads, sizes {sizes}, {dtype}"
                for name, got, want in zip(names, outputs, results[("portable", 1)]):
                    out_dtype = stat_dtype if name in STAT_OUTPUTS else dtype
                    a, b = _as_float(got, out_dtype), _as_float(want, out_dtype)
                    err = np.max(np.abs(a - b), initial=0.0) / max(np.max(np.abs(b), initial=0.0), 1e-30)
                    assert err <= BUILD_TOLERANCE[out_dtype], f"{isa} vs portable: {name} {err:.3g}, {sizes}, {dtype}"


def test_omp_num_threads_1_and_2_give_the_same_bits(tmp_path):
    """The same through $OMP_NUM_THREADS in fresh processes (the default thread count)."""
    import os
    import subprocess
    import sys
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    script = ("import hashlib, sys; sys.path[:0] = [%r, %r]\n"
              "from test_silu_kernel import _run_all\n"
              "from ms_groupnorm.backends import cpu_kernels\n"
              "cpu_kernels.cdll().MsGroupNormSetMinElementsPerThread(1)\n"
              "h = hashlib.sha256()\n"
              "for s in [(2, 6, 37, 3), (1, 3, 1000, 1), (4, 32, 256, 8), (1, 48, 1, 3)]:\n"
              "    for d in ('float32', 'bfloat16'):\n"
              "        for b in _run_all(s, d, 'float32', 1.0): h.update(b)\n"
              "print(h.hexdigest())\n") % (root, os.path.join(root, "tests"))
    digests = []
    for threads in ("1", "2"):
        env = dict(os.environ, OMP_NUM_THREADS=threads)
        out = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True,
                             cwd=tmp_path)
        digests.append(out.stdout.strip().splitlines()[-1])
    assert digests[0] == digests[1]


EDGE = np.array([1.0, 1.0 + 2.0 ** -10, 1.0 + 3 * 2.0 ** -10, 65504.0 * 2, 131040.0, 2.0 ** -13, 2.0 ** -23,
                 2.0 ** -24, 3 * 2.0 ** -24, 1.0 + 2.0 ** -7, 1.0 + 3 * 2.0 ** -7, -14.0, 3.3895e38, np.inf, -np.inf,
                 np.nan], np.float32)


@pytest.mark.parametrize("isa", ["portable", "avx2", "avx512"])
def test_fp16_and_bf16_stores_round_to_nearest_even(isa_control, isa):  # noqa: F811
    """swish_scale 0 makes z = y * sigmoid(0) = y / 2 exactly, and gamma 0 makes y = beta: every
    element of channel c is the store of EDGE[c] / 2 (vector body and padded tail)."""
    if isa not in _available_isas():
        pytest.skip(f"this CPU cannot run the {isa} build")
    isa_control.MsGroupNormSelectIsa(isa.encode())
    C, hxw = EDGE.size, 37
    halved = EDGE * np.float32(0.5)
    nan = np.isnan(EDGE)
    for dtype in ("float16", "bfloat16"):
        x = np.zeros((1, C, hxw), np.float16 if dtype == "float16" else np.uint16)
        z, _, _ = cpu_kernels.silu_forward(x, np.zeros(C, np.float32), EDGE, C, 1e-5, 0.0, data_dtype=dtype,
                                           stat_dtype="float32")
        bits = z.view(np.uint16)[0]
        with np.errstate(over="ignore"):
            want = halved.astype(np.float16).view(np.uint16) if dtype == "float16" else _bf16(halved)
        assert np.array_equal(bits[~nan], np.broadcast_to(want[~nan, None], bits[~nan].shape)), dtype
        as_float = bits[nan].view(np.float16) if dtype == "float16" else (bits[nan].astype(np.uint32) << 16).view(
            np.float32)
        assert np.isnan(as_float).all(), dtype


@pytest.mark.parametrize("sizes", [(2, 8, 5, 4), (2, 12, 9, 3), (2, 6, 3, 6), (2, 96, 49, 32), (2, 17, 37, 17)])
@pytest.mark.parametrize("dz_kind", ["ordinary", "inf"])
def test_sample_rows_give_the_bits_of_group_by_group(isa_control, sizes, dz_kind):  # noqa: F811
    """Short rows in small groups: a sample's rows in one call (1 thread, N >= threads) and a
    group's rows per call (3 threads, N < threads) give the same bits, forward (groups of up
    to 4 rows; each group's own c: groups of a large mean with a small spread, c = the mean,
    beside ordinary ones, c = 0) and backward (every row length of 2-64 in small groups: dz of
    a large mean, as CANN's test data; "inf": one group's sums are not finite, so its sample
    goes group by group, and the other samples must not change)."""
    N, C, hxw, G = sizes
    rng = np.random.default_rng(2)
    x = (rng.standard_normal((N, C, hxw)) * 2 + 1).astype(np.float32)
    D = C // G
    for g in range(0, G, 2):
        x[:, g * D:(g + 1) * D] = 1e4 + 1e-2 * rng.standard_normal((N, D, hxw))
    dz = rng.normal(60.0, 10.0, (N, C, hxw)).astype(np.float32)
    if dz_kind == "inf":
        dz[0, C - 1, 0] = np.inf
    gamma = rng.uniform(0.5, 1.5, C).astype(np.float32)
    beta = rng.uniform(-1, 1, C).astype(np.float32)
    for isa in _available_isas():
        isa_control.MsGroupNormSelectIsa(isa.encode())
        outputs = []
        for threads in (1, 3):
            isa_control.MsGroupNormSetNumThreads(threads)
            z, mean, rstd = cpu_kernels.silu_forward(x, gamma, beta, G, 1e-5, 0.7)
            grads = cpu_kernels.silu_backward(dz, x, mean, rstd, gamma, beta, G, swish_scale=0.7)
            outputs.append([a.tobytes() for a in (z, mean, rstd, *grads)])
        names = ("z", "mean", "rstd", "dx", "dgamma", "dbeta")
        differ = [name for name, one, two in zip(names, *outputs) if one != two]
        assert not differ, f"{isa}: a sample per call and a group per call differ in {differ}, {sizes}"
