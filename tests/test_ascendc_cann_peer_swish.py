"""CANN's own 910B GroupNormSwishGrad (the fused GroupNorm + swish backward), run on our twin with the tiling
CANN's own code computes (tests/cann_peer.py, GROUP_NORM_SWISH_GRAD): the peer of GroupNormSiluGradMs.

As for GroupNormGrad (test_ascendc_cann_peer.py), CANN's shipping kernel is an oracle for the twin: every
launch must run without a twin refusal and match the float64 reference of GroupNorm + swish backward
(ms_groupnorm/reference.py silu_backward, with CANN's swish_scale attribute as its swish_scale) by CANN's ttk
rule (|a - e| <= 1e-4 + 0.004 |e|, at most 0.4 % of the elements outside), or the test names the twin rule
or the CANN defect it hit. The kernel needs two relaxations of the twin under cannCompat (a TBuf::Get past
the buffer and a second DeQue of a held depth-1 buffer, test_ascendc_twin_cann_api.py) besides
GroupNormGrad's. Shapes: our cost anchors, the shapes of CANN's kernel UT (ops-nn
norm/group_norm_swish_grad/tests/ut/op_kernel/test_group_norm_swish_grad.cpp, which fill the tiling by hand
and compare nothing) and of its ST cases (tests/st/aclnnGroupNormSwishGrad/atk_aclnnGroupNormSwishGrad.json),
in fp32 and in the ST case's own dtype. The statistics are those of x (the ST draws them at random), so a
group of one element has rstd = 1 / sqrt(eps).

Without the three checkouts (OPS_NN, METADEF, ASC_DEVKIT) every test that needs them skips with the reason.
"""
import json
import re

import numpy as np
import pytest

import cann_peer
import twin
from ms_groupnorm import reference
from test_ascendc_cann_peer import ANCHORS, cost_script_lines
from twin import TwinFault

OP = cann_peer.GROUP_NORM_SWISH_GRAD
ST_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16"}
MAX_ST_ELEMS = 1 << 20  # ST shapes above this many elements are left out (test time); none is today


@pytest.fixture(scope="module")
def peer():
    return cann_peer.peer_checkouts(OP)


def ut_cases(ops_nn):
    """(N, C, HxW, G, dtype, hand-filled Tiling_key) of each case of CANN's kernel UT, from the gen_data.py
    arguments it runs (its data dtype: float or float16) and the mode it fills in by hand."""
    text = (ops_nn / OP.op_dir / "tests/ut/op_kernel/test_group_norm_swish_grad.cpp").read_text()
    cases = []
    for body in re.split(r"\nTEST_F\(", text)[1:]:
        args = re.search(r"gen_data\.py (\d+) (\d+) (\d+) (\d+) (\w+)", body)
        mode = re.search(r"->Tiling_key = (\d+);", body)
        if args and mode:
            N, C, HxW, G = map(int, args.groups()[:4])
            cases.append((N, C, HxW, G, {"float": "float32", "float16": "float16"}[args.group(5)], int(mode.group(1))))
    return cases


def st_cases(ops_nn):
    """(N, C, HxW, G, dtype) of CANN's ST cases."""
    path = ops_nn / OP.op_dir / "tests/st/aclnnGroupNormSwishGrad/atk_aclnnGroupNormSwishGrad.json"
    cases = set()
    for case in json.loads(path.read_text()):
        inputs = {i["name"]: i for i in case["inputs"]}
        x = inputs["x"]["shape"]
        HxW = int(np.prod(x[2:])) if len(x) > 2 else 1
        cases.add((x[0], x[1], HxW, inputs["numGroups"]["range_values"], ST_DTYPES[inputs["x"]["dtype"]]))
    return sorted(cases)


def launch(N, C, HxW, G, swish_scale=1.0, dtype="float32", deterministic=False, data_seed=0, **kwargs):
    a, e = cann_peer.seeded_inputs(N, C, HxW, G, dtype, data_seed)
    got = cann_peer.run_cann_swish(a["dy"], a["mean"], a["rstd"], a["x"], a["gamma"], a["beta"], G, swish_scale,
                                   deterministic, dtype=dtype, **kwargs)
    want = reference.silu_backward(e["dy"], e["x"], e["mean"], e["rstd"], e["gamma"], e["beta"], G, swish_scale)[:3]
    return got, [w.reshape(g.shape) for g, w in zip(got, want)]


def failures(got, want):
    """{output: fraction outside the ttk rule} of the outputs over the limit."""
    return cann_peer.failures_over_limit(got, want, ("dx", "dgamma", "dbeta"))


# ---------------------------------------------------------------- CANN's tiling, by CANN's code
def test_cann_tiling_key_is_dtype_plus_ten_when_deterministic_and_n_above_two(peer):
    """GroupNormSwishGradTiling::Init on the 910B: key = dtype (0 fp32, 1 fp16, 2 bf16), plus 10 (workspace
    rows and a stage 2) only when the context asks for determinism and N > 2 (with at most two samples the
    atomic adds are order-independent); unlike GroupNormGrad, the flag decides, not N alone."""
    for N, deterministic, offset in ((2, False, 0), (2, True, 0), (3, False, 0), (3, True, 10)):
        for dtype, key in (("float32", 0), ("float16", 1), ("bfloat16", 2)):
            assert cann_peer.operator_tiling(OP, N, 32, 64, 8, dtype, deterministic)["tiling_key"] == key + offset


def test_swish_scale_reaches_the_kernels_tiling_struct(peer):
    """The float attribute lands in the struct's last field (a float after 25 uint64 fields, generated without
    a placeholder): the bytes the kernel reads hold it."""
    t = cann_peer.operator_tiling(OP, 2, 32, 64, 8, swish_scale=1.7)
    assert t["fields"]["swish_scale"] == np.float32(1.7)
    assert t["raw"][200:204].view(np.float32)[0] == np.float32(1.7)


def test_cann_unit_test_fills_in_modes_its_tiling_never_picks(peer):
    """A CANN test defect, kept as evidence: the kernel UT hand-fills Tiling_key (the mode) 1 or 2 for every
    case, while CANN's tiling picks 0 for the 576- and 566-element rows and 3 for the longer ones; and the
    kernel's Process has no MODE_2 branch, so the cases filled with 2 run no computation (and the UT compares
    nothing)."""
    cases = ut_cases(peer["OPS_NN"])
    picked = {c[:5]: (c[5], cann_peer.operator_tiling(OP, *c[:4], c[4])["fields"]["Tiling_key"]) for c in cases}
    assert picked == {(1, 32, 576, 8, "float32"): (1, 0), (1, 32, 566, 8, "float32"): (2, 0),
                      (1, 32, 8192, 8, "float32"): (1, 3), (1, 32, 16384, 8, "float32"): (2, 3),
                      (1, 32, 576, 8, "float16"): (2, 0), (1, 32, 8192, 8, "float16"): (2, 3)}, picked
    kernel = (peer["OPS_NN"] / OP.op_dir / "op_kernel/group_norm_swish_grad.h").read_text()
    process = kernel[kernel.index("void Process()"):kernel.index("pipe.Reset();")]
    assert "MODE_2" not in process and "MODE_3" in process


# ---------------------------------------------------------------- CANN's kernel through the twin
@pytest.mark.parametrize("case", ANCHORS, ids=cann_peer.case_ids(ANCHORS))
def test_cann_kernel_matches_float64_on_the_anchors(peer, case):
    assert not failures(*launch(*case))


@pytest.mark.parametrize("swish_scale, deterministic", [(1.7, True), (-0.5, False), (0.1, True)])
def test_cann_kernel_follows_swish_scale_in_every_mode(peer, swish_scale, deterministic):
    """Modes 0, 1 and 3 (group resident, channel resident, channel chunks), with the deterministic stage 2."""
    shapes = [(3, 60, 323, 6), (16, 128, 3136, 32), (3, 32, 16384, 8)]
    modes = {cann_peer.operator_tiling(OP, *s, "float32", deterministic)["fields"]["Tiling_key"] for s in shapes}
    assert modes == {0, 1, 3}
    for shape in shapes:
        assert not failures(*launch(*shape, swish_scale, deterministic=deterministic)), shape


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_cann_kernel_matches_float64_in_16_bit(peer, dtype):
    """One T for every array (keys 1, 2, 11, 12); inputs rounded to it, the reference from the rounded values."""
    for shape, deterministic in (((3, 60, 323, 6), True), ((2, 64, 1024, 32), False), ((1, 3, 50176, 1), False)):
        assert not failures(*launch(*shape, 1.3, dtype, deterministic)), (shape, dtype)


def test_cann_kernel_matches_float64_on_its_unit_test_cases(peer):
    bad = {c: f for c in ut_cases(peer["OPS_NN"]) if (f := failures(*launch(*c[:4], 1.0, c[4])))}
    assert not bad, bad


def test_cann_kernel_matches_float64_on_its_st_shapes(peer):
    """Every ST shape, in fp32 and in its own dtype, swish_scale 1.3 (the ST draws it from [0.1, 2]); the one
    fp32 exception is test_cann_dx_is_cancellation_noise_for_one_element_groups."""
    cases = [c for c in st_cases(peer["OPS_NN"]) if c[0] * c[1] * c[2] <= MAX_ST_ELEMS]
    assert len(cases) >= 150
    bad = {}
    for N, C, HxW, G, dtype in cases:
        for run_dtype in dict.fromkeys(("float32", dtype)):
            if (N, C, HxW, G, run_dtype) == ONE_ELEMENT_GROUPS:
                continue
            try:
                if f := failures(*launch(N, C, HxW, G, 1.3, run_dtype)):
                    bad[(N, C, HxW, G, run_dtype)] = f
            except TwinFault as e:
                bad[(N, C, HxW, G, run_dtype)] = str(e)
    assert not bad, bad


ONE_ELEMENT_GROUPS = (256, 106, 1, 106, "float32")  # an ST shape: C = G, HxW = 1


def test_cann_dx_is_cancellation_noise_for_one_element_groups(peer):
    """A CANN accuracy limit, kept as evidence: with one element per group, x = mean, rstd = 1/sqrt(eps) ~ 316
    and the exact dx is 0. CANN forms dx as rstd * gamma * g' - rstd * (c1 * xhat + c2) with c1, c2 group sums
    taken separately, so fp32 rounding of g' and c2 is multiplied by 316: 0.4 % of dx lands above the 1e-4
    floor (up to 2.4e-4). dgamma and dbeta are right; GroupNormSiluGradMs gives dx = 0 exactly here."""
    N, C, HxW, G, dtype = ONE_ELEMENT_GROUPS
    got, want = launch(N, C, HxW, G, 1.3, dtype)
    assert np.all(want[0] == 0) and set(failures(got, want)) == {"dx"}
    assert 1e-4 < np.abs(got[0]).max() < 1e-3
    a, _ = cann_peer.seeded_inputs(N, C, HxW, G, dtype)
    ours = twin.twin_silu_backward(a["dy"], a["x"], a["mean"], a["rstd"], a["gamma"], a["beta"], G, 1.3)
    assert np.all(ours[0] == 0) and not failures(ours[:3], want)


def test_strict_twin_refuses_cann_where_the_docs_do(peer):
    """With the twin's defaults (what our kernels get) the launch stops at InitOutput's refill, as
    GroupNormGrad's does; the relaxations are per launch."""
    with pytest.raises(TwinFault, match=r"pipe hazard: V InitOutput \(Duplicate\) .* still being read by MTE3"):
        launch(1, 32, 576, 8, cann_compat=False)
    assert not failures(*launch(1, 32, 576, 8))


def test_same_bits_for_every_block_order(peer):
    """The deterministic key (stage 2 over workspace rows after SyncAll) gives the same bits whatever order
    the twin runs the blocks in."""
    runs = [launch(5, 32, 576, 8, 1.3, deterministic=True, policy=p, seed=s)[0]
            for p, s in (("concurrent", 0), ("reverse", 0), ("shuffle", 3))]
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            np.testing.assert_array_equal(a, b)


# ---------------------------------------------------------------- scripts/ascendc_cost.py --silu-grad --peer
def test_cost_script_silu_grad_peer_closing_line(peer):
    lines = cost_script_lines("--silu-grad", "--peer", "--shapes", "3x60x17x19:6", "--dtypes", "fp32,bf16,fp16/fp32")
    mixed = [line for line in lines if "| fp16/fp32 |" in line]
    assert mixed and mixed[0].endswith(" n/a | n/a |")  # CANN's 910B kernel takes one type for every array
    assert "(MODE_0, " in next(line for line in lines if "| bf16 |" in line)
    closing = re.fullmatch(r"peer worst=(\d+\.\d+) \(3x60x17x19 G6, (fp32|bf16)\) geomean=(\d+\.\d+) correct=2/2",
                           lines[-1])
    assert closing and float(closing.group(3)) <= float(closing.group(1)), lines[-1]
