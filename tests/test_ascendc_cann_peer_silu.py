"""CANN's own 910B GroupNormSilu (GroupNorm + SiLU forward), run on our twin with the tiling CANN's own code
computes (tests/cann_peer.py, GROUP_NORM_SILU): the peer of our forward GroupNormSiluMs.

As for the backward peers, CANN's shipping kernel is an oracle for the twin: every launch must run without a
twin refusal and match the float64 reference (ms_groupnorm/reference.py silu_forward, or forward with
activate_silu off) by CANN's ttk rule (|a - e| <= 1e-4 + 0.004 |e|, at most 0.4 % of the elements outside)
on y, mean and rstd, or the test names the twin rule or the CANN defect it hit. The 910B kernel writes mean
and rstd in x's dtype (its OpDef's ascend910b config; only the 950 config has float statistics) and takes
gamma and beta either in x's dtype or in float32 (the "mixed" keys). It is built once per x dtype, as CANN
builds one binary per DTYPE_X. It needs one relaxation of the twin under cannCompat (a TQue deeper than it
is ever filled, test_ascendc_twin_cann_api.py) besides the backward peers'.

Shapes: our cost anchors, CANN's kernel UT cases (ops-nn norm/group_norm_silu/tests/ut/op_kernel/
test_group_norm_silu.cpp, which fill the tiling by hand) and its ST cases (tests/st/aclnnGroupNormSilu and
aclnnGroupNormSiluV2, inputs drawn from [-5, 5]), in fp32 and in the ST case's own dtype.

Without the three checkouts (OPS_NN, METADEF, ASC_DEVKIT) every test that needs them skips with the reason.
"""
import json
import re

import numpy as np
import pytest

import cann_peer
from ms_groupnorm import reference
from test_ascendc_cann_peer import ANCHORS
from twin import TwinFault

OP = cann_peer.GROUP_NORM_SILU
ST_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
DTYPE_PAIRS = [("float32", "float32"), ("float16", "float16"), ("bfloat16", "bfloat16"), ("float16", "float32"),
               ("bfloat16", "float32")]  # (x, gamma/beta): the 910B OpDef's five combinations


@pytest.fixture(scope="module")
def peer():
    return cann_peer.peer_checkouts(OP)


def ut_cases(ops_nn):
    """(N, C, HxW, G, dtype, param dtype, activate_silu, hand-filled key) of each case of CANN's kernel UT:
    the shape and dtypes it generates data for (gen_data.py N C H W dtype gamma_dtype), the groups, SiLU
    flag and key it fills into the tiling by hand."""
    text = (ops_nn / OP.op_dir / "tests/ut/op_kernel/test_group_norm_silu.cpp").read_text()
    cases = []
    for body in re.split(r"\nTEST_F\(", text)[1:]:
        args = re.search(r"gen_data\.py (\d+) (\d+) (\d+) (\d+) (\w+) (\w+)", body)
        groups = re.search(r"->numGroups = (\d+);", body)
        silu = re.search(r"->activateSilu = (\w+);", body)
        key = re.search(r"->tilingKey = (\d+);", body)
        if args and groups and silu and key:
            N, C, H, W = map(int, args.groups()[:4])
            cases.append((N, C, H * W, int(groups.group(1)), args.group(5), args.group(6),
                          silu.group(1) in ("true", "1"), int(key.group(1))))
    return cases


def ut_tiling_key(case):
    """The key CANN's tiling picks for a UT case, or "refused"."""
    N, C, HxW, G, dtype, param = case[:6]
    try:
        return cann_peer.operator_tiling(OP, N, C, HxW, G, dtype, tensor_dtypes={"gamma": param, "beta": param})[
            "tiling_key"]
    except ValueError:
        return "refused"


def st_cases(ops_nn):
    """(N, C, HxW, G, dtype, activate_silu) of CANN's ST cases (V1 always activates; V2 says)."""
    cases = set()
    for name in ("aclnnGroupNormSilu", "aclnnGroupNormSiluV2"):
        for case in json.loads((ops_nn / OP.op_dir / "tests" / "st" / name / f"atk_{name}.json").read_text()):
            inputs = {i["name"]: i for i in case["inputs"]}
            x = inputs["x"]["shape"]
            HxW = int(np.prod(x[2:])) if len(x) > 2 else 1
            silu = bool(inputs["activateSilu"]["range_values"]) if "activateSilu" in inputs else True
            cases.add((x[0], x[1], HxW, inputs["group"]["range_values"], ST_DTYPES[inputs["x"]["dtype"]], silu))
    return sorted(cases)


def launch(N, C, HxW, G, dtype="float32", param_dtype=None, eps=1e-5, activate_silu=True, data_seed=0, uniform=False,
           **kwargs):
    """CANN's (y, mean, rstd) and the float64 reference's, from inputs rounded to their dtypes."""
    rng = np.random.default_rng(data_seed)
    draw = (lambda *s: rng.uniform(-5, 5, s)) if uniform else (lambda *s: rng.standard_normal(s))
    x, gamma, beta = (draw(N, C, HxW).astype(np.float32), draw(C).astype(np.float32), draw(C).astype(np.float32))
    got = cann_peer.run_cann_silu(x, gamma, beta, G, eps, activate_silu, dtype, param_dtype, **kwargs)

    def exact(a, d):
        return cann_peer.from_storage(cann_peer.to_storage(a, d), d).astype(np.float64)
    p = param_dtype or dtype
    y, mean, rstd = reference.forward(exact(x, dtype), exact(gamma, p), exact(beta, p), G, eps)
    if activate_silu:
        y = reference.swish(y)
    return got, [w.reshape(g.shape) for g, w in zip(got, (y, mean, rstd))]


def failures(got, want):
    """{output: fraction outside the ttk rule} of the outputs over the limit."""
    return cann_peer.failures_over_limit(got, want, ("y", "mean", "rstd"))


# ---------------------------------------------------------------- CANN's tiling, by CANN's code
def test_cann_tiling_keys_follow_dtype_and_shape(peer):
    """Tiling4GroupNormSilu on the 910B: small (1xx2 for 16-bit), high-performance, basic and HxW = 1
    templates; 10x1 for 16-bit gamma, 10x2 for float32 gamma under 16-bit x; mean and rstd take x's dtype."""
    keys = {}
    for shape in ((2, 64, 1024, 32), (3, 60, 323, 6), (4, 64, 3, 8), (1, 3008, 1, 8)):
        for x, p in DTYPE_PAIRS:
            keys[(shape, x, p)] = cann_peer.operator_tiling(OP, *shape, x, tensor_dtypes={"gamma": p, "beta": p})[
                "tiling_key"]
    want = {(2, 64, 1024, 32): (102, 1011, 1012), (3, 60, 323, 6): (104, 1031, 1032),
            (4, 64, 3, 8): (106, 1051, 1052), (1, 3008, 1, 8): (108, 1071, 1072)}
    for (shape, x, p), key in keys.items():
        b32, b16, mixed = want[shape]
        assert key == (b32 if x == "float32" else mixed if p == "float32" else b16), (shape, x, p, key)


def test_cann_unit_test_fills_in_keys_and_groups_its_tiling_does_not_give(peer):
    """A CANN test defect, kept as evidence: the kernel UT hand-fills the tiling. For 1x3008x8x8 (752 groups)
    it fills key 106 (the basic template) where CANN's tiling picks 102 (the small-shape one: C plus groups
    per core is 3008 + 16 <= 4000, HxW a multiple of 8); its last case generates 10 channels of data and
    fills in 9000 groups of 9000 channels, which CANN's tiling refuses for the data's shape (C % G != 0)."""
    picked = {c[:7]: (c[7], ut_tiling_key(c)) for c in ut_cases(peer["OPS_NN"])}
    assert picked == {(3, 64, 4096, 32, "float32", "float32", True): (102, 102),
                      (1, 192, 4096, 32, "float32", "float32", False): (102, 102),
                      (3, 64, 16384, 32, "float32", "float32", True): (104, 104),
                      (1, 3008, 64, 752, "float32", "float32", False): (106, 102),
                      (1, 3008, 64, 752, "float32", "float32", True): (106, 102),
                      (1, 3008, 1, 752, "float32", "float32", True): (108, 108),
                      (1, 10, 1, 10, "float32", "float32", False): (108, 108),
                      (1, 10, 1, 9000, "float32", "float32", False): (108, "refused")}, picked


def test_epsilon_lands_after_its_placeholder(peer):
    """The float epsilon sits at offset 112 between int64 fields: the host's placeholder puts activateSilu at
    120, where the generated struct reads it."""
    t = cann_peer.operator_tiling(OP, 2, 64, 1024, 32, eps=0.25, activate_silu=False)
    assert t["fields"]["epsilon"] == 0.25 and t["fields"]["activateSilu"] == 0
    assert t["raw"][112:116].view(np.float32)[0] == 0.25 and t["raw"].size == 128


# ---------------------------------------------------------------- CANN's kernel through the twin
@pytest.mark.parametrize("dtypes", DTYPE_PAIRS, ids=["/".join(p) for p in DTYPE_PAIRS])
@pytest.mark.parametrize("case", ANCHORS, ids=cann_peer.case_ids(ANCHORS))
def test_cann_kernel_matches_float64_on_the_anchors(peer, case, dtypes):
    assert not failures(*launch(*case, *dtypes))


@pytest.mark.parametrize("eps, activate_silu", [(0.5, True), (1e-5, False), (1.0, False)])
def test_cann_kernel_follows_its_attributes(peer, eps, activate_silu):
    for shape in ((2, 64, 1024, 32), (3, 60, 323, 6), (4, 64, 3, 8), (1, 3008, 1, 8)):
        assert not failures(*launch(*shape, eps=eps, activate_silu=activate_silu)), shape


def test_cann_kernel_matches_float64_on_its_unit_test_cases(peer):
    """Every UT case CANN's tiling takes, with the UT's SiLU flag and the key CANN's tiling picks."""
    cases = [c for c in ut_cases(peer["OPS_NN"]) if ut_tiling_key(c) != "refused"]
    assert len(cases) == 7
    bad = {c: f for c in cases if (f := failures(*launch(*c[:4], c[4], c[5], activate_silu=c[6])))}
    assert not bad, bad


def test_cann_kernel_matches_float64_on_its_st_shapes(peer):
    """Every ST shape of both ST tables, in fp32 and in its own dtype, inputs from [-5, 5] as the ST draws
    them, eps 1e-5 (the low end of the ST's range)."""
    cases = st_cases(peer["OPS_NN"])
    assert len(cases) >= 390
    bad = {}
    for N, C, HxW, G, dtype, silu in cases:
        for run_dtype in dict.fromkeys(("float32", dtype)):
            try:
                if f := failures(*launch(N, C, HxW, G, run_dtype, activate_silu=silu, uniform=True)):
                    bad[(N, C, HxW, G, run_dtype, silu)] = f
            except TwinFault as e:
                bad[(N, C, HxW, G, run_dtype, silu)] = str(e)
    assert not bad, bad


def test_cann_variance_cancels_on_data_away_from_zero(peer):
    """A CANN accuracy limit, kept as evidence: the 910B kernel forms the variance in one pass as
    E[x^2] - mean^2 in fp32 (group_norm_silu_small_b32.h: rstd = 1 / sqrt(sum(x^2) / n - mean^2 + eps)),
    which cancels when |mean| is large against the spread. With x = 100 + N(0, 1) rstd is off by ~2e-3
    and 2.9 % of y falls outside the ttk rule; at 300, 2e-2 and most of rstd. GroupNormSiluMs (the twin's
    forward, the same inputs) keeps rstd within 1e-6 and every element inside the rule."""
    import twin
    N, C, HxW, G = 2, 64, 1024, 32
    for offset, worst in ((100, 1e-3), (300, 1e-2)):
        rng = np.random.default_rng(0)
        x = (offset + rng.standard_normal((N, C, HxW))).astype(np.float32)
        gamma, beta = rng.standard_normal(C).astype(np.float32), rng.standard_normal(C).astype(np.float32)
        y, mean, rstd = reference.silu_forward(x.astype(np.float64), gamma, beta, G)
        want = (y, mean, rstd)
        got = cann_peer.run_cann_silu(x, gamma, beta, G)
        assert np.max(np.abs(got[2] / rstd - 1)) > worst and "y" in failures(got, want), offset
        ours = twin.twin_forward(x, gamma, beta, G)[:3]
        assert np.max(np.abs(ours[2].reshape(N, G) / rstd - 1)) < 1e-6
        assert not failures(ours, [w.reshape(o.shape) for o, w in zip(ours, want)])


def test_strict_twin_refuses_cann_where_the_docs_do(peer):
    """With the twin's defaults (what our kernels get) the launch stops where CANN leaves the S -> MTE3 pair
    of its scalar SetValue of mean/rstd to bisheng's auto-sync; with hazards unchecked, at the x queue
    declared with depth 2 that never holds two tensors (TQue简介.md: not recommended). The relaxations are
    per launch."""
    with pytest.raises(TwinFault, match=r"pipe hazard: MTE3 DataCopyPad UB->GM .* last written by S SetValue"):
        launch(2, 64, 1024, 32, cann_compat=False)
    with pytest.raises(TwinFault, match=r"TQue of depth 2 never held more than 1 tensor"):
        launch(2, 64, 1024, 32, cann_compat=False, check_hazards=False)
    assert not failures(*launch(2, 64, 1024, 32))


def test_same_bits_for_every_block_order(peer):
    """Each block owns its groups (no atomics, no workspace): any block order gives the same bits."""
    runs = [launch(8, 320, 64, 32, "bfloat16", "float32", policy=p, seed=s)[0]
            for p, s in (("concurrent", 0), ("reverse", 0), ("shuffle", 3))]
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------- scripts/ascendc_cost.py --forward --peer
def test_cost_script_forward_peer_closing_line(peer):
    """Every row runs CANN's kernel, the mixed ones too (its float32-gamma keys 10x2)."""
    from test_ascendc_cann_peer import cost_script_lines
    lines = cost_script_lines("--forward", "--peer", "--shapes", "3x60x17x19:6", "--dtypes", "fp32,bf16,fp16/fp32")
    assert "(key 1032, 18) |" in next(line for line in lines if "| fp16/fp32 |" in line)
    assert "(key 1031, 18) |" in next(line for line in lines if "| bf16 |" in line)
    closing = re.fullmatch(r"peer worst=(\d+\.\d+) \(3x60x17x19 G6, (fp32|bf16|fp16/fp32)\) geomean=(\d+\.\d+) "
                           r"correct=3/3", lines[-1])
    assert closing and float(closing.group(3)) <= float(closing.group(1)), lines[-1]
