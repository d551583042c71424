"""The three AscendC kernels at Ascend 950's platform values, on the CPU twin, against float64.

What is checked here and what is not (docs/ascend-mindspore.md, "Chips"): the host tilings and
the kernels run at 950's sizes, 248 KiB of UB (asc-devkit's TOTAL_UB_SIZE for arch 3510; also
2 KiB less, the area WholeReduceSum/Div/Exp/Sqrt reserve there) and 64 or 56 vector cores (the
counts ops-nn's 950 tests use), and their results match float64 within the per-dtype
tolerances. The twin keeps the A2 semantics of every instruction: it does not model the
dav_3510 ReduceSum summation order, its reserved UB or the flushing of subnormals in
Exp/Div/Sqrt, and nothing here was compiled with bisheng for 950 or run on one.
"""
import numpy as np
import pytest

from ms_groupnorm import reference
import twin

UB_950 = 248 * 1024
PLATFORMS = {  # (UB bytes, vector cores)
    "950-64cores": (UB_950, 64),
    "950-56cores": (UB_950, 56),
    "950-56cores-reserved-ub": (UB_950 - 2048, 56),
}
# (N, C, HxW, G): shapes whose split differs between the A2's (192 KiB, 48) and 950's sizes,
# and one of each of the tiling's modes (group-resident, by channel, HxW chunks).
SHAPES = {
    "resident_across_n": (8, 64, 784, 32),
    "channel_split": (2, 32, 4096, 4),
    "chunks": (2, 8, 40000, 2),
    "one_group_per_core": (64, 32, 64, 8),
    "sd_block": (4, 320, 1024, 32),
    "unaligned": (3, 60, 323, 6),
}
TOL = {"float32": 2e-5, "float16": 2e-3}  # relative to the largest reference value (tests/cases.py)
OPERATORS = ("GroupNormGradMs", "GroupNormSiluGradMs", "GroupNormSiluMs")


def _inputs(shape, dtype):
    N, C, HxW, G = shape
    rng = np.random.default_rng(950)
    x = (rng.standard_normal((N, C, HxW)) * 1.5 + 0.75).astype(dtype)
    dy = rng.standard_normal((N, C, HxW)).astype(dtype)
    gamma = (rng.standard_normal(C) + 1.0).astype(np.float32)
    beta = rng.standard_normal(C).astype(np.float32)
    _, mean, rstd = reference.forward(x.astype(np.float64), None, None, G)
    return x, dy, gamma, beta, mean.reshape(N, G).astype(np.float32), rstd.reshape(N, G).astype(np.float32)


def _run(operator, shape, dtype, ub, cores):
    """(got, want, tiling) for one launch at (ub, cores)."""
    G = shape[3]
    x, dy, gamma, beta, mean, rstd = _inputs(shape, dtype)
    f = lambda a: a.astype(np.float64)  # noqa: E731
    if operator == "GroupNormSiluMs":
        z, m, r, tiling = twin.twin_forward(x, gamma, beta, G, swish_scale=0.8, param_dtype="float32",
                                                    ub_bytes=ub, core_num=cores)
        want = reference.silu_forward(f(x), f(gamma), f(beta), G, 1e-5, 0.8)
        want = (want[0], want[1].reshape(m.shape), want[2].reshape(r.shape))
        return (z, m, r), want, tiling
    if operator == "GroupNormSiluGradMs":
        *got, tiling = twin.twin_silu_backward(dy, x, mean, rstd, gamma, beta, G, swish_scale=0.8,
                                                       stat_dtype="float32", ub_bytes=ub, core_num=cores)
        want = reference.silu_backward(f(dy), f(x), f(mean), f(rstd), f(gamma), f(beta), G, 0.8)
        return got, want, tiling
    *got, tiling = twin.twin_backward(dy, x, mean, rstd, gamma, G, stat_dtype="float32", ub_bytes=ub,
                                              core_num=cores)
    return got, reference.backward(f(dy), f(x), f(mean), f(rstd), f(gamma), G), tiling


@pytest.mark.default_sample(operator=["GroupNormGradMs", "GroupNormSiluGradMs", "GroupNormSiluMs"],
                            shape=["sd_block", "chunks", "resident_across_n"],
                            platform=["950-64cores", "950-56cores-reserved-ub", "950-56cores"],
                            dtype=["float32", "float16", "float32"])
@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("platform", list(PLATFORMS))
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("operator", OPERATORS)
def test_kernels_at_950_sizes_match_float64(operator, shape, platform, dtype):
    ub, cores = PLATFORMS[platform]
    got, want, tiling = _run(operator, SHAPES[shape], dtype, ub, cores)
    assert tiling.get("blockDim", 1) <= cores
    for name, g, w in zip(("out", "dgamma/mean", "dbeta/rstd"), got, want):
        w = np.asarray(w, np.float64)
        scale = max(float(np.abs(w).max()), 1e-30)
        err = float(np.abs(g.astype(np.float64) - w).max()) / scale
        assert err <= TOL[dtype], f"{operator} {shape} {platform} {dtype}: {name} relative error {err:.3g}"


def test_950_sizes_change_the_split_the_tilings_choose():
    """The cases above are not the A2 runs again: at 950's sizes the tiling chooses other
    blocks (64/56 cores, larger chunks with the larger UB)."""
    def split(shape, ub, cores):
        t = twin.twin_tiling(*shape, "float32", "float32", ub, cores)
        return tuple(t.get(k) for k in ("mode", "groupAcrossN", "chunkElems", "blockDim"))
    a2 = {name: split(s, twin.UB_910B, 48) for name, s in SHAPES.items()}
    for ub, cores in PLATFORMS.values():
        changed = [name for name, s in SHAPES.items() if split(s, ub, cores) != a2[name]]
        assert len(changed) >= 3, (ub, cores, changed)


def test_the_twin_holds_a_tiling_to_the_ub_it_was_made_for():
    """The stand-in's rule that makes the sizes above mean something: a launch whose tiling was
    planned for 950's UB does not fit the A2's 192 KiB and is refused, not run."""
    N, C, HxW, G = SHAPES["chunks"]
    x, dy, gamma, _, mean, rstd = _inputs(SHAPES["chunks"], "float32")
    tiling = twin.twin_tiling(N, C, HxW, G, "float32", "float32", UB_950, 56)
    dx, dgamma, dbeta = np.zeros_like(x), np.zeros(C, np.float32), np.zeros(C, np.float32)
    with pytest.raises(twin.TwinFault, match="UB overflow.*above the 196608-byte unified buffer"):
        twin.twin_launch([dy, mean, rstd, x, gamma, dx, dgamma, dbeta, None], tiling,
                                 twin.UB_910B, 56)
    twin.twin_launch([dy, mean, rstd, x, gamma, dx, dgamma, dbeta, None], tiling, UB_950, 56)
    assert np.isfinite(dx).all() and np.abs(dx).max() > 0
