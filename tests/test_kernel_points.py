"""The CPU kernel on 2-D (N, C) inputs (HxW = 1: the sample-by-sample schedule and its
point loops) and on short rows (PoolFormer-style G = 1 over 7x7, odd row lengths, tiny
launches, many small groups): forward and backward against the float64 reference in every
dtype pair (mixed fp16/bf16 data with float32 statistics included), and the same bits on 1 and 2 threads in
every ISA build this CPU runs. The shapes cover each branch of the schedule: N >= threads
(by sample), N = 1 < threads (group-wise or channel-wise), C = G (one channel per group),
C not a multiple of any vector width (the point loops' scalar tails)."""
import mindspore as ms
import numpy as np
import pytest

from cases import DTYPES, TOLERANCE, assert_close, make_inputs, rounded
from kernel_arrays import DTYPE_NAME, from_storage, to_storage
from ms_groupnorm import reference
from ms_groupnorm.backends import cpu_kernels
from test_kernel_simd import isa_control  # noqa: F401  (the fixture)

# (shape, G): why each row is here
POINT_SHAPES = [
    pytest.param((4096, 512), 32, id="4096x512-G32"),     # a 2-D MLP head: 2M points by sample
    pytest.param((1023, 257), 1, id="1023x257-G1"),       # odd C, one group per sample
    pytest.param((49, 11), 11, id="49x11-G11"),           # C = G, C below one vector
    pytest.param((37, 21), 3, id="37x21-G3"),             # a vector and a 5-point tail
    pytest.param((5, 76), 19, id="5x76-G19"),             # 4 channels per group, tail of 12
    pytest.param((9, 40, 1), 8, id="9x40x1-G8"),          # rank 3 with HxW = 1
    pytest.param((1, 96), 96, id="N1-C=G"),               # N = 1 < 2 threads: not by sample
    pytest.param((1, 300), 4, id="N1-G4"),
    pytest.param((2, 33), 33, id="N2-C=G"),
]
SHORT_ROW_SHAPES = [
    pytest.param((16, 512, 7, 7), 1, id="16x512x7x7-G1"),  # PoolFormer's last stage (batch 16)
    pytest.param((8, 512, 15), 2, id="8x512x15-G2"),       # rows shorter than a vector pair
    pytest.param((4, 96, 3, 5), 32, id="4x96x3x5-G32"),
    pytest.param((1, 4, 3, 3), 2, id="1x4x3x3-G2"),        # tiny launches
    pytest.param((3, 6, 5), 3, id="3x6x5-G3"),
    pytest.param((2, 8, 2), 8, id="2x8x2-C=G"),
    # small groups, their backward steps a batch of groups at a time; last batches partial
    pytest.param((18, 17, 37), 17, id="18x17x37-G17"),
    pytest.param((40, 8, 5), 4, id="40x8x5-G4"),
    pytest.param((5, 12, 3, 3), 4, id="5x12x3x3-G4"),
    # groups of 65 to 1024 elements: the forward's statistics a batch of groups at a time too
    pytest.param((6, 96, 7, 7), 32, id="6x96x7x7-G32"),
    pytest.param((3, 20, 50), 4, id="3x20x50-G4"),
]
THREADS = (1, 2)


@pytest.fixture
def lib(isa_control):
    """test_kernel_simd's control of builds and threads: every call may use every thread it
    is given, so that the small shapes run the two-thread schedules; defaults come back after."""
    return isa_control


def _isas(lib):
    before = lib.MsGroupNormActiveIsa()
    isas = [name for name in ("portable", "avx2", "avx512") if lib.MsGroupNormSelectIsa(name.encode()) == 0]
    lib.MsGroupNormSelectIsa(before)
    return isas


def _run(x, dy, gamma, beta, G, data_dtype, stat_dtype, mask=(True, True, True)):
    """forward (y, mean, rstd) then backward from the kernel's own statistics, in storage form."""
    d, s = DTYPE_NAME[data_dtype], DTYPE_NAME[stat_dtype]
    xs = to_storage(x, data_dtype)
    y, mean, rstd = cpu_kernels.forward(xs, to_storage(gamma, stat_dtype), to_storage(beta, stat_dtype), G, 1e-5,
                                        data_dtype=d, stat_dtype=s)
    grads = cpu_kernels.backward(to_storage(dy, data_dtype), xs, mean, rstd, to_storage(gamma, stat_dtype), G,
                                 mask, data_dtype=d, stat_dtype=s)
    return (y, mean, rstd) + tuple(grads)


def _check_against_reference(outputs, x, dy, gamma, beta, G, data_dtype, stat_dtype):
    y, mean, rstd, dx, dgamma, dbeta = outputs
    mean, rstd = from_storage(mean, stat_dtype), from_storage(rstd, stat_dtype)
    want_y, want_mean, want_rstd = reference.forward(x, gamma, beta, G, 1e-5)
    assert_close(mean, want_mean, stat_dtype, "mean")
    assert_close(rstd, want_rstd, stat_dtype, "rstd")
    # y and the gradients against the reference fed the statistics the kernel returned
    N, C = x.shape[:2]
    per_channel = lambda a: np.repeat(a, C // G, axis=1).reshape((N, C) + (1,) * (x.ndim - 2))  # noqa: E731
    bshape = (1, C) + (1,) * (x.ndim - 2)
    want_from_stats = (x - per_channel(mean)) * per_channel(rstd) * gamma.reshape(bshape) + beta.reshape(bshape)
    assert_close(from_storage(y, data_dtype), want_from_stats, data_dtype, "y")
    assert_close(from_storage(y, data_dtype), want_y, stat_dtype if stat_dtype != ms.float32 else data_dtype,
                 "y vs exact")
    want = reference.backward(dy, x, mean, rstd, gamma, G)
    # dx is a sum of terms as large as rstd * gamma * dy, which cancel exactly where a group
    # holds one element (C = G): its rounding is relative to those terms, not to dx
    terms = np.abs(dy * per_channel(rstd) * gamma.reshape(bshape)).max(initial=0.0)
    got_dx, scale = from_storage(dx, data_dtype), np.abs(want[0]).max(initial=0.0)
    if scale > 1e-3 * terms:
        assert_close(got_dx, want[0], data_dtype, "dx")
    else:
        err = np.abs(got_dx - want[0]).max(initial=0.0)
        assert err <= TOLERANCE[data_dtype] * terms, f"dx: max |err| {err:.3g} against terms of {terms:.3g}"
    # dgamma likewise: where a group holds one element, x - mean is exactly 0 and so is dgamma,
    # but a group with |mean| * rstd <= 1 (rstd ~ 1/sqrt(eps) there) sums dy * x and subtracts
    # mean * sum dy (CentredSums, as PyTorch does): the rounding of those terms remains
    axes = (0,) + tuple(range(2, x.ndim))
    terms_dg = np.abs(dy * x * per_channel(rstd)).sum(axis=axes).max(initial=0.0)
    got_dg = from_storage(dgamma, stat_dtype)
    if np.abs(want[1]).max(initial=0.0) > 1e-3 * terms_dg:
        assert_close(got_dg, want[1], stat_dtype, "dgamma")
    else:
        err = np.abs(got_dg - want[1]).max(initial=0.0)
        assert err <= TOLERANCE[stat_dtype] * terms_dg, f"dgamma: max |err| {err:.3g} against terms of {terms_dg:.3g}"
    assert_close(from_storage(dbeta, stat_dtype), want[2], stat_dtype, "dbeta")


@pytest.mark.parametrize("data_dtype,stat_dtype", DTYPES)
@pytest.mark.parametrize("shape,G", POINT_SHAPES + SHORT_ROW_SHAPES)
def test_matches_reference_on_one_and_two_threads(lib, rng, shape, G, data_dtype, stat_dtype):
    x, dy, gamma, beta, _, _ = make_inputs(rng, shape, G, data_dtype, stat_dtype)
    results = {}
    for threads in THREADS:
        lib.MsGroupNormSetNumThreads(threads)
        results[threads] = _run(x, dy, gamma, beta, G, data_dtype, stat_dtype)
        _check_against_reference(results[threads], x, dy, gamma, beta, G, data_dtype, stat_dtype)
    for one, two in zip(results[1], results[2]):
        assert one.tobytes() == two.tobytes(), "1 and 2 threads differ"


# The bits on 1 and 2 threads in each build; the mask (dbeta alone) skips ds and dx.
BIT_SHAPES = [p for p in POINT_SHAPES if p.id != "4096x512-G32"] + SHORT_ROW_SHAPES


@pytest.mark.parametrize("data_dtype,stat_dtype", [(ms.float32, ms.float32), (ms.float16, ms.float32),
                                                   (ms.bfloat16, ms.bfloat16)], ids=["fp32", "fp16-fp32", "bf16"])
@pytest.mark.parametrize("mask", [(True, True, True), (False, False, True), (False, True, False)],
                         ids=["all", "dbeta", "dgamma"])
def test_every_build_gives_the_same_bits_on_one_and_two_threads(lib, rng, data_dtype, stat_dtype, mask):
    for isa in _isas(lib):
        lib.MsGroupNormSelectIsa(isa.encode())
        for param in BIT_SHAPES:
            shape, G = param.values
            x, dy, gamma, beta, _, _ = make_inputs(np.random.default_rng(11), shape, G, data_dtype, stat_dtype)
            results = {}
            for threads in THREADS:
                lib.MsGroupNormSetNumThreads(threads)
                results[threads] = [b"-" if a is None else a.tobytes()
                                    for a in _run(x, dy, gamma, beta, G, data_dtype, stat_dtype, mask)]
            assert results[1] == results[2], f"{isa}: {shape} G{G} differs on 1 and 2 threads"


def test_a_two_d_input_gets_the_bits_of_its_one_element_rows(lib):
    """(N, C) and (N, C, 1, 1) are the same data: both go by sample and must agree bit for bit
    with the group-wise path, which a single sample (N = 1 < 2 threads) takes."""
    rng = np.random.default_rng(3)
    C, G = 76, 19
    x = (rng.standard_normal((6, C)) * 2 + 1).astype(np.float32)
    dy = rng.standard_normal((6, C)).astype(np.float32)
    gamma = rng.standard_normal(C).astype(np.float32)
    for isa in _isas(lib):
        lib.MsGroupNormSelectIsa(isa.encode())
        lib.MsGroupNormSetNumThreads(2)
        y, mean, rstd = cpu_kernels.forward(x, gamma, gamma, G)
        dx, dg, db = cpu_kernels.backward(dy, x, mean, rstd, gamma, G)
        y4, mean4, rstd4 = cpu_kernels.forward(x.reshape(6, C, 1, 1), gamma, gamma, G)
        assert y4.reshape(6, C).tobytes() == y.tobytes() and mean4.tobytes() == mean.tobytes()
        for n in range(6):  # one sample at a time: N = 1, the group-wise schedule
            y1, mean1, rstd1 = cpu_kernels.forward(x[n:n + 1], gamma, gamma, G)
            dx1, _, _ = cpu_kernels.backward(dy[n:n + 1], x[n:n + 1], mean1, rstd1, gamma, G)
            assert y1.tobytes() == y[n:n + 1].tobytes(), (isa, n)
            assert mean1.tobytes() == mean[n:n + 1].tobytes() and rstd1.tobytes() == rstd[n:n + 1].tobytes()
            assert dx1.tobytes() == dx[n:n + 1].tobytes(), (isa, n)


@pytest.mark.parametrize("data_dtype,stat_dtype", DTYPES)
@pytest.mark.parametrize("silu", [False, True], ids=["group_norm", "silu"])
@pytest.mark.parametrize("shape", [(6, 40), (3, 8, 1, 1), (1, 33)], ids=["6x40", "3x8x1x1", "1x33"])
def test_one_element_groups_give_an_exact_zero_dx(lib, shape, silu, data_dtype, stat_dtype):
    """C = G with HxW = 1 and the forward's statistics: xhat is 0 and dx = rstd * (g - mean of g) is exactly 0 (nn.GroupNorm
    gives 0; torch float32 up to an ulp of rstd * gamma * dy). With eps = 1e-8 (rstd 1e4, within fp16) a
    rounded a * dy + c0 left up to 2.6e-3. +0 on every build and thread count; NaN where dy is."""
    rng = np.random.default_rng(4)
    C = shape[1]
    d, s = DTYPE_NAME[data_dtype], DTYPE_NAME[stat_dtype]
    x = to_storage(rounded(rng.standard_normal(shape) * 3 + 2, data_dtype), data_dtype)
    dy = rounded(rng.standard_normal(shape), data_dtype)
    dy.reshape(-1)[-1] = np.nan
    dy = to_storage(dy, data_dtype)
    gamma = to_storage(rounded(rng.standard_normal(C) + 1, stat_dtype), stat_dtype)
    beta = to_storage(rounded(rng.standard_normal(C), stat_dtype), stat_dtype)
    for isa in _isas(lib):
        lib.MsGroupNormSelectIsa(isa.encode())
        for threads in THREADS:
            lib.MsGroupNormSetNumThreads(threads)
            _, mean, rstd = cpu_kernels.forward(x, gamma, beta, C, 1e-8, data_dtype=d, stat_dtype=s)
            if silu:
                dx = cpu_kernels.silu_backward(dy, x, mean, rstd, gamma, beta, C, data_dtype=d, stat_dtype=s)[0]
            else:
                dx = cpu_kernels.backward(dy, x, mean, rstd, gamma, C, data_dtype=d, stat_dtype=s)[0]
            dx = from_storage(dx, data_dtype).reshape(-1)
            assert np.isnan(dx[-1]), (isa, threads)
            assert np.all(dx[:-1] == 0) and not np.any(np.signbit(dx[:-1])), (isa, threads, np.abs(dx[:-1]).max())
    # statistics a caller gives (the aclnn contract takes any) leave x != mean, and dx is not 0 there
    shifted = to_storage(rounded(from_storage(mean, stat_dtype) + 0.5, stat_dtype), stat_dtype)
    rstd1 = to_storage(np.ones(from_storage(rstd, stat_dtype).shape), stat_dtype)
    finite_dy = to_storage(np.nan_to_num(from_storage(dy, data_dtype)), data_dtype)
    if silu:
        got = cpu_kernels.silu_backward(finite_dy, x, shifted, rstd1, gamma, beta, C, data_dtype=d, stat_dtype=s)[0]
        want = reference.silu_backward(from_storage(finite_dy, data_dtype), from_storage(x, data_dtype),
                                       from_storage(shifted, stat_dtype), from_storage(rstd1, stat_dtype),
                                       from_storage(gamma, stat_dtype), from_storage(beta, stat_dtype), C, 1.0)[0]
    else:
        got = cpu_kernels.backward(finite_dy, x, shifted, rstd1, gamma, C, data_dtype=d, stat_dtype=s)[0]
        want = reference.backward(from_storage(finite_dy, data_dtype), from_storage(x, data_dtype),
                                  from_storage(shifted, stat_dtype), from_storage(rstd1, stat_dtype),
                                  from_storage(gamma, stat_dtype), C)[0]
    assert np.abs(want).max() > 0.01
    assert_close(from_storage(got, data_dtype), want, data_dtype, "dx with given statistics")


@pytest.mark.parametrize("with_gamma", [True, False], ids=["gamma", "no-gamma"])
def test_a_sample_with_a_double_group_keeps_the_others_right(lib, with_gamma):
    """Group 0 of every sample has a gradient so small (1e-38) that its dx coefficients are
    float32 subnormals: that sample's dx goes group by group, the small group in double and
    the others with their coefficients in the thread's own room. Against the reference, and
    the same bits on 1 and 2 threads in every build (many samples, so that a coefficient
    written outside its room would reach other samples' data)."""
    rng = np.random.default_rng(8)
    N, C, G = 64, 40, 8
    x = (rng.standard_normal((N, C)) * 2 + 1).astype(np.float32)
    dy = rng.standard_normal((N, C)).astype(np.float32)
    dy[:, :C // G] *= np.float32(1e-38)
    gamma = (1 + 0.2 * rng.standard_normal(C)).astype(np.float32) if with_gamma else None
    ref_gamma = np.ones(C) if gamma is None else gamma.astype(np.float64)
    for isa in _isas(lib):
        lib.MsGroupNormSelectIsa(isa.encode())
        results = []
        for threads in THREADS:
            lib.MsGroupNormSetNumThreads(threads)
            _, mean, rstd = cpu_kernels.forward(x, gamma, None, G, stat_dtype="float32", data_dtype="float32")
            grads = cpu_kernels.backward(dy, x, mean, rstd, gamma, G)
            results.append([a.tobytes() for a in grads])
            want = reference.backward(dy, x, mean, rstd, ref_gamma, G)
            for got, exp, name in zip(grads, want, ("dx", "dgamma", "dbeta")):
                assert_close(got.astype(np.float64), exp, ms.float32, f"{name} ({isa}, {threads} threads)")
            small = np.abs(want[0][:, :C // G]).max()
            np.testing.assert_allclose(grads[0][:, :C // G], want[0][:, :C // G], rtol=1e-4, atol=1e-6 * small,
                                       err_msg=f"the small group's dx ({isa})")
        assert results[0] == results[1], f"{isa}: 1 and 2 threads differ"


def _centred_mix(rng, N, C, G):
    """Groups of every kind CentredSums tells apart: ordinary (|mean| * rstd <= 1), large mean
    with a small spread (the centred sums and the forward's c = mean), and a mean near the
    spread, side by side in each sample."""
    x = (rng.standard_normal((N, C)) * 2 + 1).astype(np.float64)
    D = C // G
    for g in range(G):
        kind = g % 3
        if kind == 1:
            x[:, g * D:(g + 1) * D] = 1e4 + 1e-2 * rng.standard_normal((N, D))
        elif kind == 2:
            x[:, g * D:(g + 1) * D] = -3.0 + 2.0 * rng.standard_normal((N, D))
    return x.astype(np.float32)


@pytest.mark.parametrize("data_dtype,stat_dtype", [(ms.float32, ms.float32), (ms.float16, ms.float32),
                                                   (ms.bfloat16, ms.bfloat16)], ids=["fp32", "fp16-fp32", "bf16"])
@pytest.mark.parametrize("data", ["ordinary", "mixed", "large-mean"])
@pytest.mark.parametrize("C,G", [(76, 19), (64, 32)], ids=["4-channel-groups", "2-channel-groups"])
@pytest.mark.parametrize("op", ["group_norm", "group_norm_silu"])
def test_by_sample_gives_the_bits_of_the_row_path(lib, op, data, data_dtype, stat_dtype, C, G):
    """The whole batch by sample (1 thread: N >= threads) and by the row loops (8 threads for
    6 samples: N < threads, the group-wise or channel-wise schedule) give the same bits for
    every output, dgamma and dbeta included, in every build, for GroupNorm and the fused
    GroupNorm + SiLU: the point loops take each group's form of the sums and of the forward's
    c and shift exactly as the row loops do (the forms chosen per point without a branch: with
    2-channel groups they mix at random)."""
    rng = np.random.default_rng(5)
    N = 6
    if data == "ordinary":
        x = (rng.standard_normal((N, C)) * 2 + 1).astype(np.float32)
    elif data == "mixed":
        x = _centred_mix(rng, N, C, G)
    else:  # 16-bit data keep the large mean; their spread is then a few units of the last place
        x = (1e4 + 1e-2 * rng.standard_normal((N, C))).astype(np.float32)
    d, s = DTYPE_NAME[data_dtype], DTYPE_NAME[stat_dtype]
    storage = lambda a, dtype: to_storage(rounded(a, dtype), dtype)  # noqa: E731
    xs, dys = storage(x, data_dtype), storage(rng.normal(80.0, 5.0, (N, C)), data_dtype)
    gamma, beta = storage(rng.uniform(0.5, 1.5, C), stat_dtype), storage(rng.uniform(-1, 1, C), stat_dtype)
    for isa in _isas(lib):
        lib.MsGroupNormSelectIsa(isa.encode())
        results = []
        for threads in (1, 8):
            lib.MsGroupNormSetNumThreads(threads)
            if op == "group_norm":
                y, mean, rstd = cpu_kernels.forward(xs, gamma, beta, G, 1e-5, data_dtype=d, stat_dtype=s)
                grads = cpu_kernels.backward(dys, xs, mean, rstd, gamma, G, (True, True, True), data_dtype=d,
                                             stat_dtype=s)
            else:
                y, mean, rstd = cpu_kernels.silu_forward(xs, gamma, beta, G, 1e-5, data_dtype=d, stat_dtype=s)
                grads = cpu_kernels.silu_backward(dys, xs, mean, rstd, gamma, beta, G, (True, True, True),
                                                  data_dtype=d, stat_dtype=s)
            results.append([a.tobytes() for a in (y, mean, rstd) + tuple(grads)])
        names = ("y", "mean", "rstd", "dx", "dgamma", "dbeta")
        differ = [name for name, one, two in zip(names, *results) if one != two]
        assert not differ, f"{isa}: by sample and by rows differ in {differ}"
