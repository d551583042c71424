"""The vectorised CPU fast paths: every ISA build of the row loops (portable, AVX2,
AVX-512; those this CPU runs) must give the same bits for any thread count and for
cached or streamed stores, on awkward sizes (vector tails, block tails, channel-wise
schedule, streamed outputs); the builds agree with each other to within a few
roundings (the AVX2 and AVX-512 builds fuse multiply-adds, the portable one cannot);
and the fp16/bf16 stores must round like numpy / IEEE (ties to even, subnormals,
overflow, inf, NaN)."""
from pathlib import Path

import numpy as np
import pytest

from ms_groupnorm.backends import cpu_kernels


def _lib():
    return cpu_kernels.cdll()


def _cpu_flags():
    text = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    for line in text.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return set()


def _expected_widest():
    flags = _cpu_flags()
    if {"avx512f", "avx512bw", "avx512vl"} <= flags:
        return "avx512"
    if "avx2" in flags and "f16c" in flags:
        return "avx2"
    return "portable"


def _available_isas():
    lib = _lib()
    before = lib.MsGroupNormActiveIsa()
    isas = [name for name in ("portable", "avx2", "avx512") if lib.MsGroupNormSelectIsa(name.encode()) == 0]
    lib.MsGroupNormSelectIsa(before)
    return isas


@pytest.fixture
def isa_control():
    """Selects builds and thread counts; restores the defaults afterwards. Every call may
    use all the threads it is given (no minimum size per thread), so that the small
    shapes below really run the multi-threaded schedules."""
    lib = _lib()
    before = lib.MsGroupNormActiveIsa()
    lib.MsGroupNormSetMinElementsPerThread(1)
    yield lib
    lib.MsGroupNormSelectIsa(before)
    lib.MsGroupNormSetNumThreads(0)
    lib.MsGroupNormSetMinElementsPerThread(0)
    lib.MsGroupNormSetStreamMinBytes(0)


def test_default_build_is_the_widest_the_cpu_supports(isa_control):
    assert isa_control.MsGroupNormActiveIsa().decode() == _expected_widest()
    assert "portable" in _available_isas()


def test_unknown_or_unsupported_build_is_refused(isa_control):
    before = isa_control.MsGroupNormActiveIsa()
    assert isa_control.MsGroupNormSelectIsa(b"sse9") == 1
    assert isa_control.MsGroupNormActiveIsa() == before


def _bf16(values):
    bits = np.ascontiguousarray(values, np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def _data(rng, shape, dtype):
    values = (rng.standard_normal(shape) * 3 + 1).astype(np.float32)
    if dtype == "float16":
        flat = values.reshape(-1)
        flat[::97] = 3e-6  # fp16 subnormals in the inputs
        flat[1::101] = -6e-8
        return values.astype(np.float16)
    if dtype == "bfloat16":
        return _bf16(values)
    return values


# (N, C, HxW, G): vector tails (HxW % 32 != 0), several 2048-blocks with a tail,
# HxW below one vector, the channel-wise schedule (N*G < threads), many tiny channels,
# rows that end with a single vector after the pairs of vectors (56 = 3 * 16 + 8 for
# AVX2, 32 + 16 + 8 for AVX-512), and rows with no tail at all (64: sums folded
# straight from the registers). HxW = 1 (2-D inputs): with N >= threads sample by sample,
# the C points of a sample in one vector loop with a tail (C = 76, 21); with N = 2 < 3
# threads group-wise, and with N * G = 2 < 3 channel-wise.
SIZES = [(2, 6, 37, 3), (1, 4, 4096 + 2048 + 19, 2), (3, 8, 5, 4), (1, 3, 1000, 1), (2, 64, 16, 32),
         (2, 8, 56, 4), (2, 8, 64, 2), (5, 76, 1, 19), (3, 21, 1, 1), (2, 40, 1, 8), (2, 6, 1, 1),
         (2, 4, 8, 1), (2, 66, 1, 2)]  # groups of 32 and 33 elements: either side of kSmallGroupMax
# Outputs of >= 24 MiB are written with non-temporal stores by default; the streaming
# test forces them on every size here and on this larger one too.
STREAMED = (1, 4, 1 << 19, 2)
DTYPES = ["float32", "float16", "bfloat16"]


def _run_all(lib, sizes, dtype, stat_dtype, seed=7):
    """forward and backward outputs as raw bytes, for one build/thread setting."""
    N, C, hxw, G = sizes
    rng = np.random.default_rng(seed)
    x = _data(rng, (N, C, hxw), dtype)
    dy = _data(rng, (N, C, hxw), dtype)
    stat = np.float32 if stat_dtype == "float32" else x.dtype
    gamma_f = (1 + 0.2 * rng.standard_normal(C)).astype(np.float32)
    beta_f = (0.3 * rng.standard_normal(C)).astype(np.float32)
    if stat_dtype == "bfloat16":
        gamma, beta = _bf16(gamma_f), _bf16(beta_f)
    else:
        gamma, beta = gamma_f.astype(stat), beta_f.astype(stat)
    y, mean, rstd = cpu_kernels.forward(x, gamma, beta, G, 1e-5, stat_dtype=stat_dtype, data_dtype=dtype)
    dx, dgamma, dbeta = cpu_kernels.backward(dy, x, mean, rstd, gamma, G, data_dtype=dtype, stat_dtype=stat_dtype)
    _, _, dbeta_only = cpu_kernels.backward(dy, x, mean, rstd, gamma, G, (False, False, True), data_dtype=dtype,
                                            stat_dtype=stat_dtype)
    return [a.tobytes() for a in (y, mean, rstd, dx, dgamma, dbeta, dbeta_only)]


OUTPUT_NAMES = ["y", "mean", "rstd", "dx", "dgamma", "dbeta", "dbeta only"]
STAT_OUTPUTS = {"mean", "rstd", "dgamma", "dbeta", "dbeta only"}


@pytest.mark.parametrize("dtype,stat_dtype", [("float32", "float32"), ("float16", "float16"),
                                               ("float16", "float32"), ("bfloat16", "bfloat16"),
                                               ("bfloat16", "float32")])
def test_each_build_gives_the_same_bits_for_any_thread_count(isa_control, dtype, stat_dtype):
    for isa in _available_isas():
        isa_control.MsGroupNormSelectIsa(isa.encode())
        for sizes in SIZES:
            results = {}
            for threads in (1, 2, 3):
                isa_control.MsGroupNormSetNumThreads(threads)
                results[threads] = _run_all(isa_control, sizes, dtype, stat_dtype)
            for threads, outputs in results.items():
                for name, got, want in zip(OUTPUT_NAMES, outputs, results[1]):
                    assert got == want, f"{isa}: {name} differs, {threads} vs 1 threads, sizes {sizes}, {dtype}"


def _as_float(raw, dtype):
    if dtype == "bfloat16":
        return (np.frombuffer(raw, np.uint16).astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return np.frombuffer(raw, {"float32": np.float32, "float16": np.float16}[dtype]).astype(np.float64)


# The builds differ only in rounding (fused multiply-adds in the vector builds): a few
# float32 roundings, or one step of the 16-bit output where a value lies near a
# rounding boundary. Normwise bounds: max |a - b| / max |b|.
BUILD_TOLERANCE = {"float32": 2e-6, "float16": 2.0 ** -10, "bfloat16": 2.0 ** -7}


@pytest.mark.parametrize("dtype,stat_dtype", [("float32", "float32"), ("float16", "float16"),
                                               ("bfloat16", "bfloat16"), ("bfloat16", "float32")])
def test_builds_agree_to_within_rounding(isa_control, dtype, stat_dtype):
    isas = _available_isas()
    if len(isas) < 2:
        pytest.skip("this CPU runs only the portable build")
    isa_control.MsGroupNormSetNumThreads(2)
    for sizes in SIZES:
        results = {}
        for isa in isas:
            isa_control.MsGroupNormSelectIsa(isa.encode())
            results[isa] = _run_all(isa_control, sizes, dtype, stat_dtype)
        for isa in isas[1:]:
            for name, got, want in zip(OUTPUT_NAMES, results[isa], results["portable"]):
                out_dtype = stat_dtype if name in STAT_OUTPUTS else dtype
                a, b = _as_float(got, out_dtype), _as_float(want, out_dtype)
                err = np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-30)
                assert err <= BUILD_TOLERANCE[out_dtype], f"{isa} vs portable: {name} {err:.3g}, {sizes}, {dtype}"


@pytest.mark.parametrize("dtype", DTYPES)
def test_streamed_outputs_agree_with_cached_stores(isa_control, dtype):
    """Non-temporal stores (forced here on every output, rows starting at any alignment)
    give the bits of the same build's plain stores, for 1 and 2 threads."""
    for isa in _available_isas():
        isa_control.MsGroupNormSelectIsa(isa.encode())
        for sizes in SIZES + [STREAMED]:
            isa_control.MsGroupNormSetNumThreads(1)
            isa_control.MsGroupNormSetStreamMinBytes(0)
            want = _run_all(isa_control, sizes, dtype, dtype, seed=3)
            isa_control.MsGroupNormSetStreamMinBytes(1)
            for threads in (1, 2):
                isa_control.MsGroupNormSetNumThreads(threads)
                got = _run_all(isa_control, sizes, dtype, dtype, seed=3)
                assert got == want, f"{isa}, {threads} threads, streamed, differs from cached ({sizes}, {dtype})"


# Values whose fp16 / bf16 rounding is delicate: ties (to even), just above/below
# ties, the largest finite, overflow to inf, the smallest normal, subnormals and
# their ties, values that round to zero, inf and NaN.
EDGE_VALUES = np.array([
    1.0, 1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11, 1.0 + 2.0 ** -11 + 2.0 ** -20, 65504.0, 65519.0, 65520.0, 1e6,
    2.0 ** -14, 2.0 ** -14 * (1 - 2.0 ** -11), 2.0 ** -24, 2.0 ** -25, 2.0 ** -25 * 1.0001, 3 * 2.0 ** -25,
    2.0 ** -26, 5.96e-8, 1e-9, -1.5 * 2.0 ** -24, -7.0, 1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8,
    1.0 + 2.0 ** -8 + 2.0 ** -16, 3.3895e38, -3.4e38, np.inf, -np.inf, np.nan,
], dtype=np.float32)


def _stores_through_forward(lib, values, dtype, hxw=37):
    """y = (x - mean) * 0 + beta with fp32 beta: every element of channel c is the
    kernel's float->dtype store of values[c] (vector body and scalar tail)."""
    C = values.size
    x = np.zeros((1, C, hxw), np.float16 if dtype == "float16" else np.uint16)
    gamma = np.zeros(C, np.float32)
    y, _, _ = cpu_kernels.forward(x, gamma, values, C, 1e-5, stat_dtype="float32", data_dtype=dtype)
    return y.view(np.uint16)


@pytest.mark.parametrize("isa", ["portable", "avx2", "avx512"])
def test_fp16_and_bf16_stores_round_to_nearest_even(isa_control, isa):
    if isa not in _available_isas():
        pytest.skip(f"this CPU cannot run the {isa} build")
    isa_control.MsGroupNormSelectIsa(isa.encode())
    half = _stores_through_forward(isa_control, EDGE_VALUES, "float16")
    with np.errstate(over="ignore"):  # overflow to inf is one of the cases
        want_half = EDGE_VALUES.astype(np.float16).view(np.uint16)
    nan = np.isnan(EDGE_VALUES)
    assert np.array_equal(half[0][~nan], np.broadcast_to(want_half[~nan, None], half[0][~nan].shape))
    assert np.all(np.isnan(half[0][nan].view(np.float16)))
    bf = _stores_through_forward(isa_control, EDGE_VALUES, "bfloat16")
    want_bf = _bf16(EDGE_VALUES)
    assert np.array_equal(bf[0][~nan], np.broadcast_to(want_bf[~nan, None], bf[0][~nan].shape))
    assert np.all(np.isnan((bf[0][nan].astype(np.uint32) << 16).view(np.float32)))
    # spot checks of the bf16 rule that do not lean on _bf16
    assert want_bf[EDGE_VALUES.tolist().index(1.0 + 2.0 ** -8)] == 0x3F80  # tie -> even (1.0)
    assert want_bf[EDGE_VALUES.tolist().index(1.0 + 3 * 2.0 ** -8)] == 0x3F82  # tie -> even (up)


def test_nan_bits_agree_across_builds(isa_control):
    """NaN payloads are truncated and quieted the same way by scalar and vector stores."""
    payloads = np.array([0x7FC00000, 0x7F800001, 0xFFC12345, 0x7FBFFFFF, 0x7FE00000], np.uint32).view(np.float32)
    outputs = {}
    for isa in _available_isas():
        isa_control.MsGroupNormSelectIsa(isa.encode())
        outputs[isa] = (_stores_through_forward(isa_control, payloads, "float16").tobytes(),
                        _stores_through_forward(isa_control, payloads, "bfloat16").tobytes())
    assert len(set(outputs.values())) == 1, outputs.keys()


@pytest.mark.parametrize("first", [np.inf, -np.inf, np.nan, 3e38])
def test_forward_mean_when_a_group_starts_with_inf_nan_or_a_huge_value(isa_control, first):
    """The forward sums x - x0 (x0 a rough mean of the group's first elements); a
    non-finite x0 must not turn an inf mean into NaN, nor a huge one overflow."""
    x = np.random.default_rng(5).standard_normal((2, 4, 50)).astype(np.float32)
    x[0, 0, 0] = first  # group 0 of sample 0 starts with it; the other groups stay finite
    want = x.reshape(2, 2, -1).astype(np.float64).mean(axis=2)
    for isa in _available_isas():
        isa_control.MsGroupNormSelectIsa(isa.encode())
        for threads in (1, 3):  # group-wise and block-wise schedules
            isa_control.MsGroupNormSetNumThreads(threads)
            _, mean, _ = cpu_kernels.forward(x, np.ones(4, np.float32), np.zeros(4, np.float32), 2, 1e-5)
            assert np.array_equal(np.isnan(mean), np.isnan(want)), (isa, threads, mean, want)
            finite = np.isfinite(want)
            assert np.array_equal(mean[~finite & ~np.isnan(want)], want[~finite & ~np.isnan(want)]), (isa, mean)
            np.testing.assert_allclose(mean[finite], want[finite], rtol=1e-6, atol=1e-6)


def _tail_case(rng, N, C, hxw, dtype):
    """x with a large-mean sample (its groups take the centred sums) and an inf in the last
    element of one row (a tail element, so the masked lanes beside it must stay untouched)."""
    x = (rng.standard_normal((N, C, hxw)) * 3 + 1).astype(np.float32)
    x[0] += 200.0
    dy = rng.standard_normal((N, C, hxw)).astype(np.float32)
    if N > 2:
        x[2, 0, -1] = np.inf
    if dtype == "bfloat16":
        return _bf16(x), _bf16(dy)
    return x.astype(dtype), dy.astype(dtype)


def test_avx512_and_avx2_partial_steps_give_the_same_bits(isa_control):
    """Both builds end a row (and a sample's points) with one partial step, of 16 lanes
    (AVX-512's masked moves) or of 8 (AVX2: masked float loads, 16-bit data from scalar
    loads), and store element-wise tails differently; both fuse multiply-adds and map the
    32 lanes alike, so every output must have the same bits, for every tail length of both
    widths, 2-D inputs with any C, and 1 and 2 threads."""
    isas = _available_isas()
    if "avx512" not in isas or "avx2" not in isas:
        pytest.skip("needs the AVX2 and AVX-512 builds")
    rng = np.random.default_rng(17)
    cases = [(3, 6, hxw, 3) for hxw in range(1, 50)] + [(4, 4, 2048 + 37, 2), (3, 12, 7, 12)]
    cases += [(5, C, 1, 1) for C in range(1, 40)] + [(6, 24, 1, 8), (64, 4, 2, 4), (4, 17, 37, 17)]
    for N, C, hxw, G in cases:
        for dtype in DTYPES:
            x, dy = _tail_case(rng, N, C, hxw, dtype)
            gamma = (1 + 0.2 * rng.standard_normal(C)).astype(np.float32)
            results = {}
            for isa in ("avx2", "avx512"):
                isa_control.MsGroupNormSelectIsa(isa.encode())
                for threads in (1, 2):
                    isa_control.MsGroupNormSetNumThreads(threads)
                    y, mean, rstd = cpu_kernels.forward(x, gamma, gamma, G, 1e-5, stat_dtype="float32",
                                                        data_dtype=dtype)
                    grads = cpu_kernels.backward(dy, x, mean, rstd, gamma, G, data_dtype=dtype, stat_dtype="float32")
                    results[isa, threads] = [a.tobytes() for a in (y, mean, rstd, *grads)]
            for key, outputs in results.items():
                for name, got, want in zip(OUTPUT_NAMES, outputs, results["avx2", 1]):
                    assert got == want, f"{key}: {name} differs from avx2 on 1 thread, {(N, C, hxw, G)}, {dtype}"
