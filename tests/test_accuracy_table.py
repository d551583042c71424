"""The accuracy table of docs/accuracy.md (scripts/accuracy_table.py) as a test: GroupNorm's y, mean,
rstd, dx, dgamma and dbeta against float64, the CPU kernel and the AscendC twin next to torch float32
and MindSpore's own nn.GroupNorm (CPU) on the same inputs, over ATK-style backward inputs, value
ranges, |mean| >> std and G = 1 / HxW = 1 / C/G = 1 shapes.

The bar of a cell (case, output; RMS and max apart) is the better of torch float32 and nn.GroupNorm
there (torch's alone where nn.GroupNorm has no value for that cell).

* The CPU kernel: RMS and max error within 1.2x the bar on every case and output, except the gaps
  listed in KNOWN_GAPS (each bounded, so it cannot grow unseen, and explained), and no worse than
  the bar in the geometric mean over the whole table.
* The AscendC kernels on their twin: the same rule, with their own gaps (TWIN_KNOWN_GAPS), a
  geometric mean within TWIN_GEOMETRIC_MEAN of the bar (and no worse than torch's alone), and every
  output within float32 accuracy of float64 (1e-4 relative).
* 16-bit outputs (the same cases in float16 and bfloat16): y and dx differ from float64's answer
  rounded to the dtype no more often than torch's do, summed over the cases where torch's own rate is
  sound (below UNSOUND_RATE); on every case, below that rate. The twin's gap is MISROUNDING_GAPS."""
import math
import os
import sys

import pytest

pytest.importorskip("torch", reason="torch is not installed: the table compares with torch")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
import accuracy_table  # noqa: E402  (the measurement docs/accuracy.md shows)

sys.path.pop(0)

GOAL = 1.2
REFERENCES = ("torch float32", "nn.GroupNorm")

# Why the CPU kernel is behind the bar. nn.GroupNorm's CPU forward is double throughout (Welford
# mean and variance, y = x * scale + bias in double, each output rounded once): its y, mean and
# rstd are float32 roundings of float64. Its dx is formed in double too. Groups of at most 32
# elements get their mean and rstd in double here as well (HxW 1's groups of 8: no gap left).
_Y = "y: scale, shift rounded to float32, then one FMA; nn.GroupNorm rounds once from double"
_MEAN_NEAR_0 = "mean near 0: float32 lane sums of x - x0, relative to a small mean (error/std ~1e-10)"
_MEAN = "mean: float32 lane sums of x - x0 against nn.GroupNorm's double Welford mean"
_RSTD = "rstd: squares summed in float32 lanes, against nn.GroupNorm's double variance"
_DX = "dx: float32 sums and a * dy + b * (x - mean) + c in float32; nn.GroupNorm: double"
# (case, output): (the largest ratio to the bar (RMS or max) allowed there, why). Measured ratio
# in the comment.
KNOWN_GAPS = {
    ("ATK U(-5,5), dy N(100,25)", "y"): (2.6, _Y),  # 2.2
    ("ATK U(-5,5), dy N(100,25)", "mean"): (20.0, _MEAN_NEAR_0),  # 16
    ("ATK U(-5,5), dy N(100,25)", "rstd"): (1.4, _RSTD),  # 1.2 (its groups take the one-pass sums)
    ("ATK U(-5,5), dy N(100,25)", "dx"): (2.0, _DX),  # 1.7
    ("ATK U(-5,5), dy N(-60,5), G1", "y"): (2.5, _Y),  # 2.2
    ("ATK U(-5,5), dy N(-60,5), G1", "mean"): (170.0, _MEAN_NEAR_0),  # 147 (15x torch's)
    ("ATK U(-5,5), dy N(-60,5), G1", "dx"): (2.0, _DX),  # 1.7
    ("ATK 10^U(-6,6), dy N(40,1)", "y"): (3.3, _Y),  # 2.8
    ("ATK 10^U(-6,6), dy N(40,1)", "mean"): (20.0, _MEAN_NEAR_0),  # 14
    ("ATK 10^U(-6,6), dy N(40,1)", "rstd"): (2.7, _RSTD),  # 2.3 (1.9x torch's)
    ("ATK 10^U(-6,6), dy N(40,1)", "dx"): (2.2, _DX),  # 1.9
    ("range +-0.1", "y"): (2.2, _Y),  # 1.9
    ("range +-0.1", "mean"): (20.0, _MEAN_NEAR_0),  # 14
    ("range +-0.1", "rstd"): (1.5, _RSTD),  # 1.3
    ("range +-0.1", "dx"): (1.7, _DX),  # 1.4
    ("range +-100", "y"): (2.0, _Y),  # 1.7
    ("range +-100", "mean"): (9.0, _MEAN_NEAR_0),  # 7.8
    ("range +-100", "dx"): (1.6, _DX),  # 1.3
    ("range (-50,100)", "y"): (2.9, _Y),  # 2.5
    ("range (-50,100)", "mean"): (1.6, _MEAN),  # 1.3
    ("range (-50,100)", "rstd"): (1.6, _RSTD),  # 1.4
    ("range (-50,100)", "dx"): (1.5, _DX),  # 1.3
    ("range fp16 +-65504", "y"): (2.5, _Y),  # 2.1
    ("range fp16 +-65504", "mean"): (20.0, _MEAN_NEAR_0),  # 13
    ("range fp16 +-65504", "rstd"): (1.6, _RSTD),  # 1.4
    ("range fp16 +-65504", "dx"): (1.5, _DX),  # 1.3
    ("data 1e4+1e-2N", "y"): (1.7, _Y),  # 1.4 (torch: 1e6x worse)
    ("HxW 1", "y"): (2.4, _Y),  # 2.1
    ("HxW 1", "dx"): (1.9, _DX),  # 1.6
    ("C/G 1", "y"): (2.5, _Y),  # 2.2
    ("C/G 1", "dx"): (1.8, _DX),  # 1.5
}

# The AscendC kernels on their twin (GroupNormSiluMs with SiLU off, GroupNormGradMs), as KNOWN_GAPS.
# Their vector units have no double, so nn.GroupNorm's CPU forward (double throughout) is a bar
# they are not built to reach; against torch alone the largest ratios are those in the comments.
_T_Y = "y: x * a + b in two float32 roundings (torch fuses them; nn.GroupNorm: double)"
_T_Y_G1 = "y of a group that does not fit in UB: chunked sums of x and x^2 (ChunkedShift)"
_T_MEAN = "mean: one float32 ReduceSum of x per group or chunk"
_T_MEAN_G1 = "mean of a chunked group: x and x^2 summed chunk by chunk in float32"
_T_MEAN_HXW1 = "mean of 8-element groups: two-pass statistics of x - shift in float32"
_T_RSTD = "rstd: var = sum x^2 / M - mean^2 in float32 (torch: Welford; nn.GroupNorm: double)"
_T_RSTD_G1 = "rstd over two groups: the last rounding of 1 / sqrt(var + eps), 0.7 ulp"
_T_DX = "dx: a_c dy - b xhat - e in four float32 roundings (no fused multiply-add)"
_T_DGAMMA = "dgamma of data spanning 10^-6..10^6: float32 per-channel sums (1.21x torch's)"
TWIN_KNOWN_GAPS = {
    ("ATK U(-5,5), dy N(100,25)", "y"): (6.0, _T_Y),  # 5.2 (torch 1.4)
    ("ATK U(-5,5), dy N(100,25)", "mean"): (6.9, _T_MEAN),  # 5.9 (torch 1.0)
    ("ATK U(-5,5), dy N(100,25)", "rstd"): (3.6, _T_RSTD),  # 3.1 (torch 1.7)
    ("ATK U(-5,5), dy N(100,25)", "dx"): (3.3, _T_DX),  # 2.8 (torch 1.3)
    ("ATK U(-5,5), dy N(-60,5), G1", "y"): (4.9, _T_Y_G1),  # 4.2 (torch 1.8)
    ("ATK U(-5,5), dy N(-60,5), G1", "mean"): (20.0, _T_MEAN_G1),  # 17 (torch 1.8)
    ("ATK U(-5,5), dy N(-60,5), G1", "rstd"): (2.9, _T_RSTD_G1),  # 2.5 (torch 2.5)
    ("ATK U(-5,5), dy N(-60,5), G1", "dx"): (3.1, _T_DX),  # 2.7 (torch 1.0)
    ("ATK 10^U(-6,6), dy N(40,1)", "y"): (3.4, _T_Y),  # 2.9 (torch 1.3)
    ("ATK 10^U(-6,6), dy N(40,1)", "mean"): (4.6, _T_MEAN),  # 3.9 (torch 0.7)
    ("ATK 10^U(-6,6), dy N(40,1)", "rstd"): (2.2, _T_RSTD),  # 1.8 (torch 1.5)
    ("ATK 10^U(-6,6), dy N(40,1)", "dx"): (4.7, _T_DX),  # 4.1 (torch 1.4)
    ("ATK 10^U(-6,6), dy N(40,1)", "dgamma"): (1.4, _T_DGAMMA),  # 1.2 (torch 1.2)
    ("range +-0.1", "y"): (5.2, _T_Y),  # 4.5 (torch 1.5)
    ("range +-0.1", "mean"): (5.9, _T_MEAN),  # 5.1 (torch 1.1)
    ("range +-0.1", "rstd"): (2.5, _T_RSTD),  # 2.2 (torch 1.3)
    ("range +-0.1", "dx"): (2.0, _T_DX),  # 1.7 (torch 1.4)
    ("range +-100", "y"): (4.6, _T_Y),  # 4.0 (torch 1.3)
    ("range +-100", "mean"): (5.3, _T_MEAN),  # 4.5 (torch 1.2)
    ("range +-100", "rstd"): (2.8, _T_RSTD),  # 2.4 (torch 1.4)
    ("range +-100", "dx"): (1.9, _T_DX),  # 1.6 (torch 1.4)
    ("range (-50,100)", "y"): (5.0, _T_Y),  # 4.3 (torch 1.6)
    ("range (-50,100)", "mean"): (3.7, _T_MEAN),  # 3.1 (torch 1.4)
    ("range (-50,100)", "rstd"): (2.6, _T_RSTD),  # 2.2 (torch 1.4)
    ("range (-50,100)", "dx"): (1.7, _T_DX),  # 1.4 (torch 1.2)
    ("range fp16 +-65504", "y"): (5.2, _T_Y),  # 4.5 (torch 1.5)
    ("range fp16 +-65504", "mean"): (5.3, _T_MEAN),  # 4.6 (torch 0.9)
    ("range fp16 +-65504", "rstd"): (3.7, _T_RSTD),  # 3.1 (torch 1.5)
    ("range fp16 +-65504", "dx"): (1.7, _T_DX),  # 1.5 (torch 1.2)
    ("data 1e4+1e-2N", "y"): (3.4, _T_Y),  # 3.0 (torch: 1e6x worse)
    ("data 1e4+1e-2N", "rstd"): (2.2, _T_RSTD),  # 1.9 (torch: 1e5x worse)
    ("HxW 1", "y"): (4.1, _T_Y),  # 3.6 (torch 1.3)
    ("HxW 1", "mean"): (7.0, _T_MEAN_HXW1),  # 6.1 (torch 2.5)
    ("HxW 1", "rstd"): (2.9, _T_RSTD),  # 2.5 (torch 1.9)
    ("HxW 1", "dx"): (3.3, _T_DX),  # 2.8 (torch 0.8)
    ("C/G 1", "y"): (4.4, _T_Y),  # 3.7 (torch 1.4)
    ("C/G 1", "mean"): (2.5, _T_MEAN),  # 2.1 (torch 0.9)
    ("C/G 1", "rstd"): (2.0, _T_RSTD),  # 1.7 (torch 1.2)
    ("C/G 1", "dx"): (3.3, _T_DX),  # 2.8 (torch 0.4)
}
# The twin's geometric mean of its ratios to the bar: 1.11 (0.39 against torch's alone). Its y,
# mean and rstd are 2-6x nn.GroupNorm's double-precision forward on nearly every case.
TWIN_GEOMETRIC_MEAN = 1.2


# 16-bit mis-rounding. torch float32 mis-rounds nearly every y of "data 1e4+1e-2N" held in 16 bits
# (the spread is below the dtype's ulp, so every x of a group is equal and the variance must be 0;
# torch's is not): such a case is no bar, and each implementation must stay below this rate on it.
UNSOUND_RATE = 0.01
# (implementation, dtype, output): (the largest ratio to torch's count allowed, why). Measured ratio
# in the comment.
MISROUNDING_GAPS = {
    ("AscendC twin", "float16", "y"): (1.6, _T_Y),  # 1.36: 72 of 247,808 against torch's 53
}


def _bar(row, out):
    """(RMS, max) the implementations are held to: the better of the references that have a value."""
    have = [row[r][out] for r in REFERENCES if r in row and row[r][out] is not None]
    return tuple(min(errors[which] for errors in have) for which in (0, 1))


def _ratios(row, name, out):
    return [ours / bar for ours, bar in zip(row[name][out], _bar(row, out))]


def _beyond(table, name, gaps):
    """(case, output, RMS/max) where `name`'s error is above its allowed multiple of the bar."""
    failures = []
    for case, row in table.items():
        for out in accuracy_table.OUTPUTS:
            allowed = gaps[(case, out)][0] if (case, out) in gaps else GOAL
            for which, (ours, bar) in enumerate(zip(row[name][out], _bar(row, out))):
                if ours > allowed * bar:
                    failures.append(f"{case} {out} {('RMS', 'max')[which]}: {ours:.3g} vs the bar {bar:.3g}")
    return failures


def _closed_gaps(table, name, gaps):
    return [(case, out) for (case, out) in gaps if max(_ratios(table[case], name, out)) <= GOAL]


def _geometric_mean_ratio(table, name, references=REFERENCES):
    logs = []
    for row in table.values():
        for out in accuracy_table.OUTPUTS:
            bar = _bar({r: row[r] for r in references}, out)
            logs += [math.log(ours / b) for ours, b in zip(row[name][out], bar)]
    return math.exp(sum(logs) / len(logs))


@pytest.fixture(scope="module")
def table():
    return accuracy_table.measure(implementations=("CPU kernel", "AscendC twin") + REFERENCES)


IMPLEMENTATIONS = pytest.mark.parametrize("name, gaps", [("CPU kernel", KNOWN_GAPS), ("AscendC twin", TWIN_KNOWN_GAPS)],
                                          ids=["cpu", "twin"])


@IMPLEMENTATIONS
def test_as_accurate_as_the_better_reference_on_every_case(table, name, gaps):
    failures = _beyond(table, name, gaps)
    assert not failures, "\n".join(failures)


@IMPLEMENTATIONS
def test_known_gaps_are_still_gaps(table, name, gaps):
    """A gap that closed must leave its list (so the list stays the truth)."""
    assert not _closed_gaps(table, name, gaps)


@IMPLEMENTATIONS
def test_every_gap_is_explained(name, gaps):
    for (case, out), (bound, reason) in gaps.items():
        assert case in accuracy_table.CASES and out in accuracy_table.OUTPUTS, (case, out)
        assert bound > GOAL and reason.strip(), (case, out)


def test_cpu_kernel_no_worse_than_the_better_reference_in_the_geometric_mean(table):
    assert _geometric_mean_ratio(table, "CPU kernel") <= 1.0


def test_twin_geometric_mean(table):
    assert _geometric_mean_ratio(table, "AscendC twin") <= TWIN_GEOMETRIC_MEAN
    assert _geometric_mean_ratio(table, "AscendC twin", references=("torch float32",)) <= 1.0


def test_twin_within_float32_accuracy(table):
    for case, row in table.items():
        for out, errors in row["AscendC twin"].items():
            assert max(errors) <= 1e-4, (case, out, errors)


@pytest.fixture(scope="module")
def misrounded():
    return accuracy_table.misrounded()


def _misrounded_totals(counts, name, dtype, out):
    """(ours, torch's) counts summed over the cases of `dtype` where torch's rate is sound."""
    rows = [row for (_, d), row in counts.items() if d == dtype
            and row["torch float32"][out] < UNSOUND_RATE * row["elements"]]
    return sum(r[name][out] for r in rows), sum(r["torch float32"][out] for r in rows)


@pytest.mark.parametrize("name", ["CPU kernel", "AscendC twin"], ids=["cpu", "twin"])
@pytest.mark.parametrize("dtype", accuracy_table.SIXTEEN_BIT_DTYPES)
@pytest.mark.parametrize("out", accuracy_table.SIXTEEN_BIT_OUTPUTS)
def test_sixteen_bit_outputs_round_no_worse_than_torch(misrounded, name, dtype, out):
    ours, torch_count = _misrounded_totals(misrounded, name, dtype, out)
    allowed = MISROUNDING_GAPS.get((name, dtype, out), (1.0,))[0]
    assert torch_count > 0, "no mis-rounding to compare with: the cases are too easy"
    assert ours <= allowed * torch_count, (ours, torch_count)
    if (name, dtype, out) in MISROUNDING_GAPS:  # a closed gap leaves the list
        assert ours > torch_count, (ours, torch_count)
    for (case, d), row in misrounded.items():
        if d == dtype:
            assert row[name][out] < UNSOUND_RATE * row["elements"], (case, row[name][out])


def test_an_unsound_torch_case_is_left_out_of_the_sums(misrounded):
    """The rule above is only as good as the cases it sums: most must count."""
    for dtype in accuracy_table.SIXTEEN_BIT_DTYPES:
        rows = [row for (_, d), row in misrounded.items() if d == dtype]
        sound = [r for r in rows if r["torch float32"]["y"] < UNSOUND_RATE * r["elements"]]
        assert len(rows) - len(sound) <= 1 and len(sound) >= 8, (dtype, len(rows), len(sound))
