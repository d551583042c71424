"""The fused AscendC backward GroupNormSiluGradMs (KernelGroupNormGradMs<T, U, SILU = true>),
run on the CPU twin, against the float64 reference (ms_groupnorm/reference.py): every
tiling mode and work split x the five dtype pairs x swish_scale in {1, 1.7, -0.5}, all eight
output masks, empty inputs, ranks > 3, immediate and deferred pipe execution; bit-identical
across block schedules and core counts; equal (to rounding) to GroupNormGradMs fed with the
explicitly computed swish gradient g; finite for exp overflow in both overflow modes; and
broken copies of the fused kernel and tiling caught by the twin."""
import itertools
import shutil
import subprocess

import numpy as np
import pytest

import twin
from ms_groupnorm import reference
from test_ascendc_twin import ACROSS_N, CASES, DTYPES, PER_MODE, as_float64, make_inputs, relative_error, storage

SWISH_SCALES = [1.0, 1.7, -0.5]


def silu_inputs(shape, G, dtype_key, seed=7, beta_scale=1.0):
    """Kernel storage arrays and their exact float64 values, with a beta."""
    data_dtype, stat_dtype, _, _ = DTYPES[dtype_key]
    arrays, exact = make_inputs(shape, G, data_dtype, stat_dtype, seed)
    beta = np.random.default_rng(seed + 100).standard_normal(shape[1]) * beta_scale
    arrays["beta"] = storage(beta, stat_dtype)
    exact["beta"] = as_float64(arrays["beta"], stat_dtype)
    return arrays, exact


def run_silu(arrays, G, dtype_key, swish_scale, **kwargs):
    data_dtype, stat_dtype, _, _ = DTYPES[dtype_key]
    return twin.twin_silu_backward(arrays["dy"], arrays["x"], arrays["mean"], arrays["rstd"], arrays["gamma"],
                                           arrays["beta"], G, swish_scale, data_dtype=data_dtype,
                                           stat_dtype=stat_dtype, **kwargs)


def expected(exact, G, swish_scale):
    return reference.silu_backward(exact["dy"], exact["x"], exact["mean"], exact["rstd"], exact["gamma"],
                                   exact["beta"], G, swish_scale)


def errors(got, want, dtype_key, mask=(True, True, True)):
    """Relative errors (vs max(1, max|ref|)) of the outputs the mask asks for; checks the others are absent."""
    data_dtype, stat_dtype, _, _ = DTYPES[dtype_key]
    out = {}
    for name, o, ref, dtype, wanted in zip(("dx", "dgamma", "dbeta"), got, want,
                                           (data_dtype, stat_dtype, stat_dtype), mask):
        if not wanted:
            assert o is None, name
            continue
        out[name] = relative_error(o, ref.reshape(o.shape), dtype)
    return out


def check(got, want, dtype_key, mask=(True, True, True)):
    _, _, tol_dx, tol_stat = DTYPES[dtype_key]
    for name, err in errors(got, want, dtype_key, mask).items():
        tol = tol_dx if name == "dx" else tol_stat
        assert err <= tol, f"{name}: relative error {err:.3g} > {tol:g}"


# ---------------------------------------------------------------- every mode x dtype x scale
@pytest.mark.default_sample(case=PER_MODE, dtype_key=list(DTYPES), swish_scale=SWISH_SCALES,
                             execution=["immediate", "deferred"])
@pytest.mark.parametrize("execution", ["immediate", "deferred"])
@pytest.mark.parametrize("swish_scale", SWISH_SCALES)
@pytest.mark.parametrize("dtype_key", list(DTYPES))
@pytest.mark.parametrize("case", list(CASES))
def test_every_mode_dtype_and_scale_matches_reference(case, dtype_key, swish_scale, execution):
    N, C, HxW, G, cores, mode, split = CASES[case]
    arrays, exact = silu_inputs((N, C, HxW), G, dtype_key)
    got = run_silu(arrays, G, dtype_key, swish_scale, core_num=cores, execution=execution)
    tiling = got[3]
    # the fused variant's larger UB footprint leaves every case in GroupNormGradMs's mode and split
    assert twin.MODE_NAMES[tiling["mode"]] == mode
    assert tiling["splitByChannel"] == split
    assert tiling["groupAcrossN"] == (case in ACROSS_N)
    assert tiling["silu"] == 1 and tiling["swish_scale"] == np.float32(swish_scale)
    check(got[:3], expected(exact, G, swish_scale), dtype_key)


ALL_MASKS = list(itertools.product([True, False], repeat=3))


@pytest.mark.default_sample(mask=ALL_MASKS, case=PER_MODE, execution=["immediate", "deferred"])
@pytest.mark.parametrize("execution", ["immediate", "deferred"])
@pytest.mark.parametrize("mask", ALL_MASKS, ids=lambda m: "".join("1" if b else "0" for b in m))
@pytest.mark.parametrize("case", ["resident_unaligned_hw", "resident_workspace_n8", "channel_two_pass", "channel_rows",
                                  "channel_split_n47", "channel_split_rows", "hw_chunks_unaligned_n3",
                                  "hw_chunks_channel_split", "hw_slices", "hw_one", "hw_one_groups_workspace",
                                  "hw_one_samples", "group_rows", "group_rows_across_n"])
def test_every_output_mask(case, mask, execution):
    """gamma and beta are loaded for every task, also when only dgamma or dbeta is asked for."""
    N, C, HxW, G, cores, _, _ = CASES[case]
    arrays, exact = silu_inputs((N, C, HxW), G, "bf16_fp32")
    got = twin.twin_silu_backward(arrays["dy"], arrays["x"], arrays["mean"], arrays["rstd"],
                                          arrays["gamma"], arrays["beta"], G, 1.7, mask=mask,
                                          data_dtype="bfloat16", stat_dtype="float32", core_num=cores,
                                          execution=execution)
    check(got[:3], expected(exact, G, 1.7), "bf16_fp32", mask)


# G = 1 and G = C in every mode that has them (the CASES hold G = 1 channel split, G = C
# resident and HxW = 1), more shapes of the shape table: ranks 4-5 (HxW is the product),
# HxW = 1 with many groups.
EXTRA_SHAPES = {
    "rank4_G1": ((2, 6, 5, 7), 1, 4),
    "rank5_GC": ((2, 4, 3, 2, 5), 4, 4),
    "rank4_hw1": ((3, 32, 1, 1), 8, 48),
    "hw_one_G1": ((2, 40, 1), 1, 48),
    "rank4_channel_G_eq_C": ((2, 8, 40, 40), 8, 4),
}


@pytest.mark.default_sample(name=list(EXTRA_SHAPES), dtype_key=list(DTYPES))
@pytest.mark.parametrize("dtype_key", list(DTYPES))
@pytest.mark.parametrize("name", list(EXTRA_SHAPES))
def test_more_shapes(name, dtype_key):
    shape, G, cores = EXTRA_SHAPES[name]
    arrays, exact = silu_inputs(shape, G, dtype_key, seed=11)
    for swish_scale in SWISH_SCALES:
        got = run_silu(arrays, G, dtype_key, swish_scale, core_num=cores)
        check(got[:3], expected(exact, G, swish_scale), dtype_key)


@pytest.mark.parametrize("shape", [(0, 4, 5), (2, 4, 0), (0, 4, 1)], ids=["N0", "HxW0", "N0_hw1"])
def test_empty_input_gives_zero_dgamma_dbeta(shape):
    data = {k: np.zeros(s, np.float32) for k, s in
            {"x": shape, "dy": shape, "mean": (shape[0], 2), "rstd": (shape[0], 2), "gamma": (4,),
             "beta": (4,)}.items()}
    dx, dgamma, dbeta, _ = twin.twin_silu_backward(data["dy"], data["x"], data["mean"], data["rstd"],
                                                           data["gamma"], data["beta"], 2, 1.7)
    assert dx.size == 0
    np.testing.assert_array_equal(dgamma, 0.0)
    np.testing.assert_array_equal(dbeta, 0.0)


def test_gamma_beta_none_mean_ones_and_zeros():
    arrays, exact = silu_inputs((2, 6, 10), 3, "fp32")
    got = twin.twin_silu_backward(arrays["dy"], arrays["x"], arrays["mean"], arrays["rstd"], None, None, 3,
                                          1.7)
    want = reference.silu_backward(exact["dy"], exact["x"], exact["mean"], exact["rstd"], None, None, 3, 1.7)
    check(got[:3], want, "fp32")


def test_swish_scale_enters_the_gradient():
    """The k * y * s * (1 - s) term carries k (CANN's GroupNormSwishGrad once dropped it)."""
    from ms_groupnorm import reference as plain
    arrays, exact = silu_inputs((2, 6, 7), 3, "fp32")
    got = run_silu(arrays, 3, "fp32", 2.5, core_num=4)
    y = reference.recompute_y(exact["x"], exact["mean"], exact["rstd"], exact["gamma"], exact["beta"], 3)
    s = reference.sigmoid(2.5 * y)
    wrong = plain.backward(exact["dy"] * (s + y * s * (1 - s)), exact["x"], exact["mean"], exact["rstd"],
                           exact["gamma"], 3)
    right = expected(exact, 3, 2.5)
    check(got[:3], right, "fp32")
    for ok, bad in zip(right, wrong):
        assert np.abs(ok - bad).max() > 1e-2 * np.abs(ok).max()  # the check can tell them apart


# ---------------------------------------------------------------- determinism
SCHEDULES = [("concurrent", 0, "immediate"), ("forward", 0, "immediate"), ("reverse", 0, "deferred"),
             ("shuffle", 1, "immediate"), ("shuffle", 2, "deferred"), ("interleave", 3, "immediate"),
             ("interleave", 4, "deferred")]


@pytest.mark.default_sample(case=["hw_one_groups_workspace", "channel_split_n47", "hw_slices_c_per_g_1"],
                             dtype_key=["fp32", "bf16_fp32"])
@pytest.mark.parametrize("case", ["resident_unaligned_hw", "resident_workspace_n8", "across_n_small",
                                  "channel_split_n47", "hw_chunks_channel_split", "hw_chunks_unaligned_n3",
                                  "hw_one_groups_workspace", "hw_slices", "hw_slices_c_per_g_1", "hw_slices_chunks",
                                  "group_rows", "group_rows_across_n"])
@pytest.mark.parametrize("dtype_key", ["fp32", "bf16_fp32"])
def test_bit_identical_across_block_schedules(case, dtype_key):
    N, C, HxW, G, cores, _, _ = CASES[case]
    if case != "channel_split_n47":  # with 8 cores it is one group-across-N block
        cores = min(cores, 8)  # few blocks keep the interleaved runs quick
    arrays, _ = silu_inputs((N, C, HxW), G, dtype_key)
    results = []
    for policy, seed, execution in SCHEDULES:
        got = run_silu(arrays, G, dtype_key, -0.5, core_num=cores, policy=policy, seed=seed, execution=execution)
        results.append([o.tobytes() for o in got[:3]])
    assert got[3]["blockDim"] > 1
    for schedule, result in zip(SCHEDULES[1:], results[1:]):
        assert result == results[0], f"{schedule} differs from the concurrent run"


# Core counts that keep the mode and work split of the case (a different split changes the
# order of the dx arithmetic, as for GroupNormGradMs): tasks per core and stage-2 slices change.
CORE_COUNTS = {"resident_workspace_n8": [4, 5, 7, 16], "across_n_n8": [1, 2, 3], "channel_two_pass": [1, 2, 4],
               "channel_split_n47": [48, 60, 94], "hw_chunks_unaligned_n3": [1, 2, 3, 6],
               "hw_one_groups_workspace": [1, 2, 5, 48], "hw_one_samples": [1, 3, 41],
               # the HxW split: its slices do not depend on the core count
               "hw_slices": [48, 40, 7, 1], "hw_slices_chunks": [48, 40, 7, 1],
               # mode 0's batches of one-channel groups (groupRows: 8 down to 4 rows), and across N
               "group_rows": [2, 7, 48], "group_rows_across_n": [1, 2, 3, 5]}


@pytest.mark.default_sample(case=["hw_one_groups_workspace", "channel_two_pass", "hw_slices"])
@pytest.mark.parametrize("case", list(CORE_COUNTS))
def test_bit_identical_across_core_counts(case):
    N, C, HxW, G, _, _, _ = CASES["resident_workspace_n8" if case == "across_n_n8" else case]
    arrays, _ = silu_inputs((N, C, HxW), G, "fp16_fp32")
    results, splits = [], set()
    for cores in CORE_COUNTS[case]:
        got = run_silu(arrays, G, "fp16_fp32", 1.7, core_num=cores)
        t = got[3]
        splits.add((t["mode"], t["splitByChannel"], t["groupAcrossN"]))
        results.append((t["blockDim"], [o.tobytes() for o in got[:3]]))
    assert len(splits) == 1
    assert len({b for b, _ in results}) > 1  # the launches really differ in block count
    for blocks, result in results[1:]:
        assert result == results[0][1], f"{blocks} blocks differ from {results[0][0]}"


# ---------------------------------------------------------------- the fused kernel is GroupNormGradMs on g
def swish_gradient_f32(exact, G, k):
    """g = dz * s * (1 + t (1 - s)) in float32 in the kernel's operation order."""
    f = np.float32
    x, dz = exact["x"].astype(f), exact["dy"].astype(f)
    N, C = x.shape[:2]
    D = C // G
    xs = x.reshape(N, G, D, -1)
    xhat = (xs - exact["mean"].astype(f).reshape(N, G, 1, 1)) * exact["rstd"].astype(f).reshape(N, G, 1, 1)
    gk = (exact["gamma"].astype(f) * f(k)).reshape(1, G, D, 1)
    bk = (exact["beta"].astype(f) * f(k)).reshape(1, G, D, 1)
    t = xhat * gk + bk
    with np.errstate(over="ignore"):
        s = f(1) / (np.exp(-t) + f(1))
    g = (dz.reshape(xs.shape) * s) * ((f(1) - s) * t + f(1))
    return g.reshape(x.shape)


@pytest.mark.default_sample(case=["resident_unaligned_hw", "channel_split_n47", "hw_one"], swish_scale=[1.0, -0.5])
@pytest.mark.parametrize("case", ["resident_unaligned_hw", "resident_workspace_n8", "channel_two_pass",
                                  "channel_split_n47", "channel_split_rows", "hw_chunks_unaligned_n3", "hw_one"])
@pytest.mark.parametrize("swish_scale", [1.0, -0.5])
def test_equals_group_norm_grad_of_the_explicit_swish_gradient(case, swish_scale):
    N, C, HxW, G, cores, _, _ = CASES[case]
    arrays, exact = silu_inputs((N, C, HxW), G, "fp32")
    fused = run_silu(arrays, G, "fp32", swish_scale, core_num=cores)
    g = swish_gradient_f32(exact, G, swish_scale)
    plain = twin.twin_backward(g, arrays["x"], arrays["mean"], arrays["rstd"], arrays["gamma"], G,
                                       core_num=cores)
    for name, a, b in zip(("dx", "dgamma", "dbeta"), fused[:3], plain[:3]):
        scale = max(1.0, float(np.abs(b).max()))
        # libm exp vs numpy's and the fp32 rounding of g: a few ulps of g, summed over a group
        assert float(np.abs(a.astype(np.float64) - b).max()) / scale < 2e-6, name


# ---------------------------------------------------------------- exp overflow
@pytest.mark.default_sample(case=["resident_unaligned_hw", "channel_two_pass", "channel_split_n47",
                                   "hw_chunks_unaligned_n3", "hw_one"],
                             dtype_key=["fp32", "bf16_fp32", "fp16"], overflow=["inf_nan", "saturation"])
@pytest.mark.parametrize("overflow", ["inf_nan", "saturation"])
@pytest.mark.parametrize("dtype_key", ["fp32", "bf16_fp32", "fp16"])
@pytest.mark.parametrize("case", ["resident_unaligned_hw", "channel_two_pass", "channel_split_n47",
                                  "hw_chunks_unaligned_n3", "hw_one"])
def test_large_y_overflows_exp_without_nan(case, dtype_key, overflow):
    """|y| of several hundred: exp(-t) is inf (or FLT_MAX when saturating) for t < -88.7,
    s = 0 and g = 0 there, with no inf/inf or 0 * inf; t > 88.7 gives s = 1, g = dz."""
    N, C, HxW, G, cores, _, _ = CASES[case]
    data_dtype, stat_dtype, _, _ = DTYPES[dtype_key]
    arrays, exact = silu_inputs((N, C, HxW), G, dtype_key)
    beta = np.where(np.arange(C) % 2 == 0, 300.0, -300.0)  # y about +-300 in every other channel
    arrays["beta"] = storage(beta, stat_dtype)
    exact["beta"] = as_float64(arrays["beta"], stat_dtype)
    for swish_scale in (1.0, -0.5):
        got = run_silu(arrays, G, dtype_key, swish_scale, core_num=cores, overflow=overflow)
        for out, dtype in zip(got[:3], (data_dtype, stat_dtype, stat_dtype)):
            assert np.isfinite(as_float64(out, dtype)).all()
        check(got[:3], expected(exact, G, swish_scale), dtype_key)


# ---------------------------------------------------------------- broken copies are caught
FLAGS = ["-std=c++17", "-O0", "-fPIC", "-shared", "-pthread", "-D_GLIBCXX_USE_CXX11_ABI=0", "-fvisibility=hidden"]


def build_mutant(tmp_path, path, old, new):
    """The twin library with `old` replaced by `new` in kernels/ascendc/`path` (which must hold it once)."""
    root = twin.ascendc_dir()
    copy = tmp_path / "ascendc"
    for sub in ("op_kernel", "op_host", "twin"):
        shutil.copytree(root / sub, copy / sub)
    shutil.copytree(root.parent / "cpu", tmp_path / "cpu")  # the twin's shim includes ../../cpu headers
    text = (root / path).read_text()
    assert text.count(old) == 1, old
    (copy / path).write_text(text.replace(old, new))
    library = tmp_path / "libtwin_mutant.so"
    subprocess.run(["g++", *FLAGS, f"-I{copy / 'twin'}", f"-I{copy / 'op_kernel'}",
                    *[str(copy / s) for s in twin.BACKWARD_SOURCES], "-o", str(library)], check=True,
                   capture_output=True)
    return str(library)


def with_library(library, fn):
    original = twin.twin_library_path
    twin._twin_cdll.cache_clear()
    twin.twin_library_path = lambda: library
    try:
        return fn()
    finally:
        twin.twin_library_path = original
        twin._twin_cdll.cache_clear()


@pytest.mark.slow
@pytest.mark.exhaustive
@pytest.mark.parametrize("path,sync,shape,cores,mask,on_path", [
    ("op_kernel/group_norm_grad_ms_stream.h",
     "  Sync<HardEvent::V_S>();  // AffineT and ChannelDx read gamma/beta with GetValue\n", (1, 8, 9), 8,
     (True, False, False), {"splitByChannel": 1, "groupAcrossN": 0}),
    ("op_kernel/group_norm_grad_ms_channels.h",
     "        Sync<HardEvent::V_S>();  // TakeAffine's casts, before AffineT's GetValue reads\n", (2, 32, 81), 2,
     (True, True, True), {"affineAhead": 1, "groupRows": 0})],
    ids=["LoadAffine", "TakeAffine"])
def test_a_missing_sync_of_the_fused_path_is_refused(tmp_path, path, sync, shape, cores, mask, on_path):
    """LoadAffine (the channel split: 2 groups on 8 cores, dx only, so not groupAcrossN) or
    TakeAffine's casts (modes 0-2 with affineAhead; mode 0 with rows longer than 64 floats, since
    shorter ones read gamma/beta on the vector unit only, tiling bcastElems) without their V -> S
    synchronisation: the scalar unit would read gamma/beta before the vector unit has written them.
    Only the fused kernel has this path. (2, 32, 81): D = 16 is past groupRows (D <= 8), which
    reads gamma/beta once for all groups; on_path, checked on the good build, keeps each shape on
    its path when the tiling changes."""
    library = build_mutant(tmp_path, path, sync, "")
    arrays, _ = silu_inputs(shape, 2, "fp32")

    def fused():
        return run_silu(arrays, 2, "fp32", 1.0, core_num=cores, mask=mask)

    tiling = fused()[3]
    assert {key: tiling[key] for key in on_path} == on_path, tiling

    def plain():
        return twin.twin_backward(arrays["dy"], arrays["x"], arrays["mean"], arrays["rstd"], arrays["gamma"],
                                          2, core_num=cores, mask=mask)

    with pytest.raises(twin.TwinFault, match=r"pipe hazard"):
        with_library(library, fused)
    with_library(library, plain)  # GroupNormGradMs does not take that path


@pytest.mark.slow
@pytest.mark.exhaustive
def test_a_tiling_that_forgets_the_beta_array_overflows_the_ub(tmp_path):
    """Phase1Bytes without the fused variant's beta array: the host plans less UB than the
    kernel's InitBuffer calls take, and in a layout that fills the UB the twin refuses it."""
    library = build_mutant(tmp_path, "op_host/group_norm_grad_ms_ub.h",
                           "((l.acrossN ? 5 : 3) + (l.silu ? 1 : 0)) * l.statElems * 4",
                           "(l.acrossN ? 5 : 3) * l.statElems * 4")
    shape, G, ub = (1, 512, 3000), 1, 65536
    arrays, exact = silu_inputs(shape, G, "fp32")

    def fused():
        return run_silu(arrays, G, "fp32", 1.0, core_num=8, ub_bytes=ub)

    got = fused()  # the good tiling fits
    assert twin.MODE_NAMES[got[3]["mode"]] == "hw_chunks"
    check(got[:3], expected(exact, G, 1.0), "fp32")
    with pytest.raises(twin.TwinFault, match=r"UB overflow"):
        with_library(library, fused)


def test_the_fused_kernel_needs_the_compilers_vector_barriers():
    """The swish gradient is a chain of dependent vector instructions: without --cce-auto-sync
    (and without PipeBarrier<PIPE_V> in the source) the twin refuses it on 2201."""
    arrays, _ = silu_inputs((2, 8, 9), 2, "fp32")
    with pytest.raises(twin.TwinFault):
        run_silu(arrays, 2, "fp32", 1.0, core_num=2, auto_sync=False)


# ---------------------------------------------------------------- the aot shim through MindSpore
def silu_grad_custom(func, group, swish_scale, mask):
    """ops.Custom of an aot GroupNormSiluGrad entry, with the CPU fused op's reg info."""
    from mindspore import ops
    from ms_groupnorm.backends import cpu_aot
    reg = cpu_aot.reg_info("GroupNormSiluGradMs", ["dz", "x", "mean", "rstd", "gamma", "beta"],
                         ["dx", "dgamma", "dbeta"],
                         [("group", "int", group), ("swish_scale", "float", swish_scale),
                          ("dx_is_require", "bool", mask[0]), ("dgamma_is_require", "bool", mask[1]),
                          ("dbeta_is_require", "bool", mask[2])])
    return ops.Custom(func, out_shape=None, out_dtype=None, func_type="aot", reg_info=reg)


# the (data, stat) lists are the real pairs, walked in step with the modes and masks
@pytest.mark.default_sample(data=["float32", "float16", "bfloat16", "float16"],
                             stat=["float32", "float32", "float32", "float16"], mode=["graph", "pynative"],
                             mask=[(True, True, True), (False, True, True), (True, False, False)])
@pytest.mark.parametrize("mask", [(True, True, True), (False, True, True), (True, False, False)],
                         ids=["111", "011", "100"])
@pytest.mark.parametrize("data,stat", [("float32", "float32"), ("float16", "float32"), ("bfloat16", "float32"),
                                       ("float16", "float16")])
def test_aot_shim_matches_the_cpu_fused_op(mode, monkeypatch, data, stat, mask):
    """twin_aot_func("GroupNormSiluGrad") is a drop-in for kernels/cpu's GroupNormSiluGrad
    behind ops.Custom: same parameters, attributes and outputs, in GRAPH and PYNATIVE."""
    import mindspore as ms
    from ms_groupnorm.backends import cpu_kernels
    monkeypatch.setenv("MS_GROUPNORM_TWIN_CORES", "8")
    ms_dtype = {"float32": ms.float32, "float16": ms.float16, "bfloat16": ms.bfloat16}
    shape, G, k = (2, 6, 5, 7), 3, 1.7
    key = {("float32", "float32"): "fp32", ("float16", "float32"): "fp16_fp32",
           ("bfloat16", "float32"): "bf16_fp32", ("float16", "float16"): "fp16"}[(data, stat)]
    _, exact = silu_inputs(shape, G, key, seed=5)
    tensors = [ms.Tensor(exact[name].astype(np.float32), ms_dtype[data if name in ("dy", "x") else stat])
               for name in ("dy", "x", "mean", "rstd", "gamma", "beta")]
    on_twin = silu_grad_custom(twin.twin_aot_func("GroupNormSiluGrad"), G, k, mask)
    cpu = silu_grad_custom(cpu_kernels.aot_func("GroupNormSiluGrad"), G, k, mask)
    got = [o.astype(ms.float32).asnumpy().astype(np.float64) for o in on_twin(*tensors)]
    want_cpu = [o.astype(ms.float32).asnumpy().astype(np.float64) for o in cpu(*tensors)]
    want = expected(exact, G, k)
    _, _, tol_dx, tol_stat = DTYPES[key]
    for name, bit, o, c, ref, tol in zip(("dx", "dgamma", "dbeta"), mask, got, want_cpu, want,
                                         (tol_dx, tol_stat, tol_stat)):
        if not bit:
            assert o.shape == (0,) and c.shape == (0,), name
            continue
        scale = max(1.0, float(np.abs(ref).max()))
        assert o.shape == c.shape == ref.shape, name
        assert float(np.abs(o - ref).max()) / scale <= tol, name
        assert float(np.abs(o - c).max()) / scale <= 2 * tol, name  # the CPU op is as close to the reference


def test_aot_shim_empty_gamma_beta_mean_ones_and_zeros(mode, monkeypatch):
    import mindspore as ms
    monkeypatch.setenv("MS_GROUPNORM_TWIN_CORES", "4")
    shape, G, k = (2, 6, 10), 3, -0.5
    _, exact = silu_inputs(shape, G, "fp32", seed=9)
    empty = ms.Tensor(np.zeros((0,), np.float32))
    tensors = [ms.Tensor(exact[n].astype(np.float32)) for n in ("dy", "x", "mean", "rstd")] + [empty, empty]
    got = silu_grad_custom(twin.twin_aot_func("GroupNormSiluGrad"), G, k, (True, True, True))(*tensors)
    want = reference.silu_backward(exact["dy"], exact["x"], exact["mean"], exact["rstd"], None, None, G, k)
    for o, ref in zip(got, want):
        assert float(np.abs(o.asnumpy() - ref).max()) / max(1.0, float(np.abs(ref).max())) < 2e-5
