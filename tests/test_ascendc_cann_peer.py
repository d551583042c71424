"""CANN's own 910B GroupNormGrad, run on our twin with the tiling CANN's own code computes (tests/cann_peer.py).

CANN's kernel is known to work on the 910B, so it is an oracle for the twin: every launch below must run
without a twin refusal and match float64 by CANN's ttk rule (|a - e| <= 1e-4 + 0.004 |e|, at most 0.4 % of
the elements outside), or the test names the twin rule or the CANN defect it hit. Shapes: our cost anchors,
CANN's own kernel UT cases (ops-nn norm/group_norm_grad/tests/ut/op_kernel/test_group_norm_grad.cpp, which
fill the tiling by hand and compare nothing) and the shapes of its ttk ST cases
(tests/st/arch35/ttk_kernel_group_norm_grad_st.csv), in fp32; and in fp16 and bf16 (keys 1, 2, 11, 12: one
type T for every array, rounded to it; the reference from the rounded values), where CANN's MODE_2 sets an
event flag a TQue still holds (test_cann_16_bit_mode_2_sets_a_flag_a_tque_still_holds).

Without the three checkouts (OPS_NN, METADEF, ASC_DEVKIT) every test that needs them skips with the reason.
"""
import ast
import csv
import re

import numpy as np
import pytest

import cann_peer
from ms_groupnorm import reference
from twin import TwinFault

ANCHORS = [(2, 64, 32 * 32, 32), (8, 320, 64 * 64, 32), (16, 128, 56 * 56, 32), (32, 32, 28 * 28, 8),
           (4, 1280, 8 * 8, 32), (1, 3, 224 * 224, 1), (3, 60, 17 * 19, 6)]  # scripts/ascendc_cost.py ANCHORS
MAX_ST_ELEMS = 1 << 21  # ST shapes above this many elements are left to the cost script (test time)
TTK_FAIL_FRACTION = cann_peer.TTK_FAIL_FRACTION


@pytest.fixture(scope="module")
def peer():
    return cann_peer.peer_checkouts()


def ut_cases(ops_nn, dtype="float32"):
    """(N, C, HxW, G, mode) of each active case of CANN's kernel UT of that data dtype (named by the
    test: ..._bf16, ..._fp16, else fp32): its shape and the mode it fills in by hand."""
    text = (ops_nn / cann_peer.OP_DIR / "tests/ut/op_kernel/test_group_norm_grad.cpp").read_text()
    suffix = {"float32": None, "bfloat16": "bf16", "float16": "fp16"}[dtype]
    cases = []
    for body in re.split(r"\nTEST_F\(", text)[1:]:
        name = re.match(r"\w+,\s*(\w+)\)", body).group(1)
        found = re.search(r"_(bf16|fp16)", name)
        if (found.group(1) if found else None) != suffix:
            continue
        dims = {k: eval(v, {}) for k, v in re.findall(r"uint32_t (N|C|HXW|G) = ([0-9* ]+);", body)}  # noqa: S307
        mode = re.search(r"->Tiling_key = (\d+);", body)
        if len(dims) == 4 and mode:
            cases.append((dims["N"], dims["C"], dims["HXW"], dims["G"], int(mode.group(1))))
    return cases


def st_cases(ops_nn, with_dtype=False):
    """(N, C, HxW, G) of CANN's ttk ST cases, and x's dtype with ``with_dtype`` (the cases are the 950's:
    16-bit x with float32 statistics, which the 910B kernel does not take; it runs them all in x's type)."""
    path = ops_nn / cann_peer.OP_DIR / "tests/st/arch35/ttk_kernel_group_norm_grad_st.csv"
    cases = set()
    with open(path, newline="") as f:
        for rec in csv.DictReader(f):
            x = ast.literal_eval(rec["input_shapes"])[3]
            G = ast.literal_eval(rec["attributes"])["num_groups"]
            HxW = int(np.prod(x[2:])) if len(x) > 2 else 1
            dtype = (ast.literal_eval(rec["input_dtypes"])[3],) if with_dtype else ()
            cases.add((x[0], x[1], HxW, G, *dtype))
    return sorted(cases)


def launch16(N, C, HxW, G, dtype, seed=0, **kwargs):
    """CANN's (dx, dgamma, dbeta) with every array in ``dtype`` and the float64 reference of the rounded
    inputs; mean and rstd are x's."""
    rng = np.random.default_rng(seed)
    a = {"x": rng.standard_normal((N, C, HxW)), "dy": rng.standard_normal((N, C, HxW)), "gamma": rng.standard_normal(C)}
    xg = a["x"].reshape(N, G, -1)
    a["mean"], a["rstd"] = xg.mean(-1), 1 / np.sqrt(xg.var(-1) + 1e-5)
    a = {k: v.astype(np.float32) for k, v in a.items()}
    e = {k: cann_peer.from_storage(cann_peer.to_storage(v, dtype), dtype).astype(np.float64) for k, v in a.items()}
    got = cann_peer.run_cann(a["dy"], a["mean"], a["rstd"], a["x"], a["gamma"], G, dtype=dtype, **kwargs)
    want = reference.backward(e["dy"], e["x"], e["mean"], e["rstd"], e["gamma"], G)[:3]
    return got, [w.reshape(g.shape) for g, w in zip(got, want)]


def launch(N, C, HxW, G, deterministic, seed=0, **kwargs):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((N, C, HxW)).astype(np.float32)
    dy = rng.standard_normal((N, C, HxW)).astype(np.float32)
    gamma = rng.standard_normal(C).astype(np.float32)
    xg = x.reshape(N, G, -1).astype(np.float64)
    mean, rstd = xg.mean(-1), 1 / np.sqrt(xg.var(-1) + 1e-5)
    got = cann_peer.run_cann(dy, mean.astype(np.float32), rstd.astype(np.float32), x, gamma, G, deterministic,
                             **kwargs)
    want = reference.backward(dy.astype(np.float64), x.astype(np.float64), mean.astype(np.float32).astype(np.float64),
                              rstd.astype(np.float32).astype(np.float64), gamma.astype(np.float64), G)[:3]
    return got, want


def assert_ttk_close(got, want):
    for name, a, e in zip(("dx", "dgamma", "dbeta"), got, want):
        frac = cann_peer.ttk_failures(a, e)
        assert frac <= TTK_FAIL_FRACTION, f"{name}: {frac:.2%} of elements outside the ttk rule"


# ---------------------------------------------------------------- without the checkouts too
def test_tiling_struct_generator_reads_the_registration():
    text = ("BEGIN_TILING_DATA_DEF(FooTiling)\nTILING_DATA_FIELD_DEF(uint64_t, a);\nTILING_DATA_FIELD_DEF(int64_t, b);\n"
            "END_TILING_DATA_DEF;\nREGISTER_TILING_DATA_CLASS(Foo, FooTiling)\n")
    header, name, fields = cann_peer.tiling_struct_header(text, "Foo")
    assert name == "FooTiling" and [n for n, _ in fields] == ["a", "b"]
    assert "uint64_t a;" in header and "GET_TILING_DATA(" in header


def test_tiling_struct_generator_spells_out_the_hosts_placeholders():
    """metadef's host side inserts a uint8_t placeholder before a field whose offset is not a multiple of
    its size, and pads the class to 8 bytes (TilingDefImpl::CheckAlignAndGenPlaceHolder); the generated
    struct names them, so each field lands at the host's offset (GroupNormSilu: a float epsilon between
    int64 fields). A narrower field after wider ones needs none before it."""
    text = ("BEGIN_TILING_DATA_DEF(FooTiling)\nTILING_DATA_FIELD_DEF(uint32_t, a);\nTILING_DATA_FIELD_DEF(int64_t, b);\n"
            "TILING_DATA_FIELD_DEF(float, c);\nEND_TILING_DATA_DEF;\nREGISTER_TILING_DATA_CLASS(Foo, FooTiling)\n")
    header, _, fields = cann_peer.tiling_struct_header(text, "Foo")
    assert fields == [("a", "uint32_t"), ("b", "int64_t"), ("c", "float")]
    body = header[header.index("struct FooTiling {"):header.index("};")]
    assert [line.strip() for line in body.splitlines()[1:]] == ["uint32_t a;", "uint8_t bPH[4];", "int64_t b;",
                                                                 "float c;", "uint8_t FooTilingPH[4];"]
    assert "sizeof(FooTiling) == 24" in header
    raw = np.zeros(24, np.uint8)
    raw[:4] = np.array([7], np.uint32).view(np.uint8)
    raw[8:16] = np.array([-3], np.int64).view(np.uint8)
    raw[16:20] = np.array([1.5], np.float32).view(np.uint8)
    assert cann_peer._decode_tiling(raw, fields) == {"a": 7, "b": -3, "c": 1.5}


def test_ttk_rule_has_teeth():
    e = np.ones(1000)
    assert cann_peer.ttk_failures(e * (1 + 0.0039), e) == 0.0
    assert cann_peer.ttk_failures(e * (1 + 0.0042), e) == 1.0
    assert cann_peer.ttk_failures(np.where(np.arange(1000) < 5, np.nan, 1.0), e) == 0.005


# ---------------------------------------------------------------- CANN's tiling, by CANN's code
def test_cann_tiling_parse_sees_the_910b(peer):
    t = cann_peer.cann_tiling(2, 32, 64, 8)
    # 48 vector cores; 16 MiB system workspace (GetLibApiWorkSpaceSize, 910B); UB 196608 less the 256 bytes
    # GetCoreMemSize keeps back on the 910B (LOCAL_RESERV_SIZE); 32-byte blocks
    info = t["compile_info"]
    assert (info["totalCoreNum"], info["sysWorkspaceSize"], info["ubSizePlatForm"], info["blockSize"]) == (
        48, 16 * 1024 * 1024, 196352, 32)
    assert t["workspace"] >= cann_peer.SYSTEM_WORKSPACE


def test_cann_tiling_picks_the_modes_its_unit_test_fills_in(peer):
    """CANN's kernel UT hand-fills a mode per case; for its six fp32 cases CANN's own tiling picks the same
    one (modes 0, 0, 1, 2, 3, 5), which also checks that our context is built as the framework builds it."""
    cases = ut_cases(peer["OPS_NN"])
    assert len(cases) >= 6
    for N, C, HxW, G, mode in cases:
        assert cann_peer.cann_tiling(N, C, HxW, G)["fields"]["Tiling_key"] == mode, (N, C, HxW, G)


def test_cann_bf16_unit_tests_fill_in_modes_its_tiling_never_picks(peer):
    """A CANN test defect, kept as evidence: test_case_mode1_bf16 (1x128x64, G 4) and test_case_mode3_bf16
    (32x64x1, G 2) hand-fill modes 1 and 3, but CANN's tiling gives those bf16 shapes modes 0 and 5. Those
    UT cases run launches that never happen (and compare nothing)."""
    picked = {(N, C, HxW, G): (mode, cann_peer.cann_tiling(N, C, HxW, G, "bfloat16")["fields"]["Tiling_key"])
              for N, C, HxW, G, mode in ut_cases(peer["OPS_NN"], "bfloat16")}
    mismatched = {shape: modes for shape, modes in picked.items() if modes[0] != modes[1]}
    assert mismatched == {(1, 128, 64, 4): (1, 0), (32, 64, 1, 2): (3, 5)}, picked


def test_cann_tiling_reports_success_for_a_shape_its_checks_refuse(peer):
    """A CANN defect, kept as evidence: TilingGroupNormGrad calls GroupNormGradTiling::Init() and drops its
    status (group_norm_grad_tiling.cpp: ``tilingObject.Init(); return tilingObject.SetKernelTiling();``), so
    a shape its own CheckInputShape refuses (C = 30 not a multiple of G = 8) is logged as an error and then
    answered with GRAPH_SUCCESS, block dim 0 and the unset mode 0xFFFFFFFF. (aclnnGroupNormBackward checks
    shapes before it, so the graph path is what reaches it.) The peer refuses such a tiling itself."""
    t = cann_peer.cann_tiling(2, 30, 64, 8)
    assert t["block_dim"] == 0 and t["fields"]["Tiling_key"] == 0xFFFFFFFF
    with pytest.raises(ValueError, match="block dim 0"):
        cann_peer.run_cann(*[np.zeros(s, np.float32) for s in ((2, 30, 64), (2, 8), (2, 8), (2, 30, 64), (30,))], 8)


# ---------------------------------------------------------------- CANN's kernel through the twin
def test_cann_tiling_key_follows_n_not_the_deterministic_flag(peer):
    """CANN's tiling sets its deterministic key (10-12: workspace rows and a stage 2 after SyncAll) when
    N > 2 and its atomic one (0-2: SetAtomicAdd into dgamma/dbeta) otherwise, whatever the context's
    Deterministic flag says (GroupNormGradTiling::Init: isDeterministicKey = n > 2): with N <= 2 the atomic
    adds of at most two samples are order-independent. So every launch below is what the device runs."""
    for N, key in ((2, 0), (3, 10)):
        assert {cann_peer.cann_tiling(N, 32, 64, 8, "float32", d)["tiling_key"] for d in (False, True)} == {key}


@pytest.mark.parametrize("case", ANCHORS, ids=cann_peer.case_ids(ANCHORS))
def test_cann_kernel_matches_float64_on_the_anchors(peer, case):
    assert_ttk_close(*launch(*case, False))


def test_cann_kernel_matches_float64_on_its_unit_test_cases(peer):
    failures = []
    for N, C, HxW, G, mode in ut_cases(peer["OPS_NN"]):
        if HxW == 1:
            continue  # MODE_5: see test_cann_hw_one_path_races_on_dgamma
        try:
            assert_ttk_close(*launch(N, C, HxW, G, False))
        except (AssertionError, TwinFault) as e:
            failures.append(f"{(N, C, HxW, G)}: {e}")
    assert not failures, "\n".join(failures)


def test_cann_kernel_matches_float64_on_its_st_shapes(peer):
    cases = [c for c in st_cases(peer["OPS_NN"]) if c[0] * c[1] * c[2] <= MAX_ST_ELEMS]
    assert len(cases) >= 40
    failures = []
    for N, C, HxW, G in cases:
        try:
            assert_ttk_close(*launch(N, C, HxW, G, False))
        except (AssertionError, TwinFault) as e:
            if "V->MTE3 synchronisation" in str(e) and HxW == 1:
                continue  # MODE_5, the race of test_cann_hw_one_path_races_on_dgamma
            failures.append(f"{(N, C, HxW, G)}: {e}")
    assert not failures, "\n".join(failures)


def test_cann_hw_one_path_races_on_dgamma(peer):
    """CANN's MODE_5 (HxW == 1) computes dgamma with a vector Mul and stores it with DataCopyPad on MTE3
    (fp32_dgamma_dbeta2GM), with only an S -> MTE3 flag in between. Nothing orders the store after the Mul:
    bisheng's --cce-auto-sync inserts V <-> S, MTE2 <-> S and MTE3 <-> S synchronisation only, not V -> MTE3
    (asc-devkit docs/zh/api/SIMD-API/基础API/同步控制/核内同步/关键特性说明.md, "支持的同步类型"), and the tensor
    comes from AllocTensor without EnQue/DeQue, so no TQue event either. The twin names the race; in program
    order (the race lost by MTE3) the numbers are right, so on hardware it shows only if MTE3 overtakes V."""
    with pytest.raises(TwinFault, match=r"MTE3 DataCopyPad UB->GM .* last written by V Mul .* no V->MTE3"):
        launch(32, 64, 1, 64, True)
    assert_ttk_close(*launch(32, 64, 1, 64, True, check_hazards=False))


def test_strict_twin_refuses_cann_where_the_docs_do(peer):
    """The relaxations for CANN's kernels are per launch: with the twin's defaults (what our kernels get),
    every CANN launch stops at its first InitOutput refill (tests/test_ascendc_twin_cann_api.py shows each
    relaxed rule on its own, strict and relaxed)."""
    with pytest.raises(TwinFault, match=r"pipe hazard: V InitOutput \(Duplicate\) .* still being read by MTE3"):
        launch(5, 30, 7, 3, True, cann_compat=False)
    assert_ttk_close(*launch(5, 30, 7, 3, True))


# ---------------------------------------------------------------- fp16 and bf16
SHAPES_16 = ANCHORS + [(1, 32, 576, 8), (2, 32, 16354, 8), (5, 30, 7, 3), (1, 40, 4096, 8), (32, 64, 1, 64)]


def test_cann_16_bit_keys_are_the_dtype_plus_ten_above_two_samples(peer):
    for N, offset in ((2, 0), (3, 10)):
        for dtype, key in (("float16", 1), ("bfloat16", 2)):
            assert cann_peer.cann_tiling(N, 32, 64, 8, dtype)["tiling_key"] == key + offset


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_cann_kernel_matches_float64_in_16_bit(peer, dtype):
    """The anchors, a few probe shapes and the UT cases of both 16-bit types, outside MODE_2 and MODE_5 (the
    two tests below): modes 0 and 3, atomic and deterministic keys."""
    cases = SHAPES_16 + [c[:4] for d in ("float16", "bfloat16") for c in ut_cases(peer["OPS_NN"], d)]
    modes = {c: cann_peer.cann_tiling(*c, dtype)["fields"]["Tiling_key"] for c in cases}
    run = [c for c in cases if modes[c] not in (2, 5)]
    assert {modes[c] for c in run} == {0, 3} and len(run) >= 10
    for case in run:
        got, want = launch16(*case, dtype)
        assert all(cann_peer.ttk_failures(g, w) <= TTK_FAIL_FRACTION for g, w in zip(got, want)), (case, dtype)


def test_cann_kernel_matches_float64_on_its_st_shapes_in_their_own_dtype(peer):
    """Every ST case in its x dtype (fp16 or bf16), every array in that type: all outside HxW = 1 pass; the
    HxW = 1 ones (MODE_5) stop at the race of test_cann_hw_one_path_races_on_dgamma or at the held flag of
    test_cann_16_bit_mode_2_sets_a_flag_a_tque_still_holds."""
    cases = [c for c in st_cases(peer["OPS_NN"], with_dtype=True) if c[0] * c[1] * c[2] <= MAX_ST_ELEMS]
    assert len(cases) >= 70 and {c[4] for c in cases} == {"float16", "bfloat16"}
    outcome = {}
    for case in cases:
        try:
            got, want = launch16(*case)
            outcome[case] = all(cann_peer.ttk_failures(g, w) <= TTK_FAIL_FRACTION for g, w in zip(got, want))
        except TwinFault as e:
            outcome[case] = "race" if "no V->MTE3" in str(e) else "flag" if "still set by a TQue" in str(e) else str(e)
    assert {c: o for c, o in outcome.items() if c[2] > 1 and o is not True} == {}
    assert {o for c, o in outcome.items() if c[2] == 1} == {"race", "flag"}


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_cann_16_bit_mode_2_sets_a_flag_a_tque_still_holds(peer, dtype):
    """A CANN defect, kept as evidence: in 16-bit MODE_2 (channel chunks) Custom_DataCopy_Out casts a chunk of
    dx down and stores it with a hard-coded SetFlag/WaitFlag<MTE3_V>(EVENT_ID0), while the VECOUT queues
    out_queue_dbeta/out_queue_dgamma, freed just before, hold MTE3_V flags from the same pool (asc-devkit
    kernel_tquebind_impl.h FreeBuffer: AllocEventID<MTE3_V>, then SetFlag; the next AllocTensor waits on it).
    SetFlag-WaitFlag.md (约束说明): a second SetFlag of the same pipes and id before its WaitFlag is undefined
    behaviour (a PipeBarrier<PIPE_ALL> after it hangs). The fp32 path stores without that flag and runs; the
    16-bit anchors 8x320x64x64 and 16x128x56x56 take this mode."""
    shape = (1, 40, 4096, 8)
    assert cann_peer.cann_tiling(*shape, dtype)["fields"]["Tiling_key"] == 2
    with pytest.raises(TwinFault, match=r"SetFlag<MTE3_V>\(0\) by the kernel while that flag is still set by a TQue"):
        launch16(*shape, dtype)
    got, want = launch16(*shape, "float32")
    assert all(cann_peer.ttk_failures(g, w) <= TTK_FAIL_FRACTION for g, w in zip(got, want))
    modes = {a: cann_peer.cann_tiling(*a, dtype)["fields"]["Tiling_key"] for a in ANCHORS}
    assert [a for a, m in modes.items() if m == 2] == [(8, 320, 64 * 64, 32), (16, 128, 56 * 56, 32)]


def test_cann_16_bit_hw_one_path_races_and_then_sets_the_held_flag(peer):
    """16-bit MODE_5 (HxW = 1) has fp32's race on dgamma (test_cann_hw_one_path_races_on_dgamma) and, run past
    it, MODE_2's second SetFlag<MTE3_V>(EVENT_ID0) while a TQue holds that flag."""
    with pytest.raises(TwinFault, match=r"MTE3 DataCopyPad UB->GM .* last written by V Mul .* no V->MTE3"):
        launch16(32, 64, 1, 64, "bfloat16")
    with pytest.raises(TwinFault, match=r"SetFlag<MTE3_V>\(0\) by the kernel while that flag is still set by a TQue"):
        launch16(32, 64, 1, 64, "bfloat16", check_hazards=False)


# ---------------------------------------------------------------- scripts/ascendc_cost.py --peer
SCRIPT = cann_peer.ASCENDC.parent.parent / "scripts" / "ascendc_cost.py"


def cost_script_lines(*args):
    """The stdout lines of scripts/ascendc_cost.py run with `args`, which must succeed."""
    import subprocess
    import sys
    result = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.stdout.splitlines()


def test_cost_script_peer_says_why_it_cannot_run(monkeypatch):
    import subprocess
    import sys
    env = {k: v for k, v in __import__("os").environ.items() if k not in cann_peer.ENVS}
    result = subprocess.run([sys.executable, str(SCRIPT), "--peer", "--shapes", "3x60x17x19:6"], env=env,
                            capture_output=True, text=True)
    assert result.returncode != 0 and "--peer: OPS_NN is unset" in result.stderr


def test_cost_script_peer_closing_line(peer):
    lines = cost_script_lines("--peer", "--shapes", "3x60x17x19:6,1x40x64x64:8", "--dtypes", "fp32,fp16,fp16/fp32")
    assert "(MODE_0, " in next(line for line in lines if "| 3x60x17x19 G6 | fp16 |" in line)
    assert next(line for line in lines if "| fp16/fp32 |" in line).endswith(" n/a | n/a |")  # one type T
    mode_2 = next(line for line in lines if "| 1x40x64x64 G8 | fp16 |" in line)
    assert mode_2.endswith(" refused by the twin (MODE_2, 8) | n/a |"), mode_2
    closing = re.fullmatch(r"peer worst=(\d+\.\d+) \((.*)\) geomean=(\d+\.\d+) correct=3/4", lines[-1])
    assert closing and float(closing.group(3)) <= float(closing.group(1)), lines[-1]


def test_cost_script_peer_takes_any_rank_and_says_which_launch_it_leaves_out(peer):
    """A 2-D input and a 3-D one run CANN's kernel too; a launch beyond PEER_MAX_ELEMS (which the twin
    would run whole, where ours runs fewer samples) is left out with its size, and counted."""
    lines = cost_script_lines("--peer", "--shapes", "49x11:11,2x8x9:2,5x1000x1000:5", "--dtypes", "fp32")
    assert "(MODE_5, " in next(line for line in lines if "| 49x11 G11 | fp32 |" in line)
    assert "(MODE_" in next(line for line in lines if "| 2x8x9 G2 | fp32 |" in line)
    big = next(line for line in lines if "| 5x1000x1000 G5 | fp32 |" in line)
    assert big.endswith(" not run (5,000,000 elements, beyond PEER_MAX_ELEMS) | n/a |"), big
    assert re.fullmatch(r"peer worst=\d+\.\d+ \(.*\) geomean=\d+\.\d+ correct=\d/2 not_run=1", lines[-1]), lines[-1]
