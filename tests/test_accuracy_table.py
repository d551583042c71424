"""The accuracy table of docs/accuracy.md (scripts/accuracy_table.py) as a test: GroupNorm's y, mean,
rstd, dx, dgamma and dbeta against float64, the CPU kernel next to torch float32 on the same inputs,
over ATK-style backward inputs, value ranges, |mean| >> std and G = 1 / HxW = 1 / C/G = 1 shapes.

* The CPU kernel: RMS and max error within 1.2x torch's on every case and output, except the gaps
  listed in KNOWN_GAPS (each still bounded, so it cannot grow unseen), and no worse than torch in
  the geometric mean over the whole table.
* The AscendC kernels on their twin: the same rule, with their own gaps (TWIN_KNOWN_GAPS, each
  bounded and explained there and in docs/accuracy.md), and every output within float32 accuracy of
  float64 (1e-4 relative)."""
import math
import os
import sys

import pytest

pytest.importorskip("torch", reason="torch is not installed: the table compares with torch")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
import accuracy_table  # noqa: E402  (the measurement docs/accuracy.md shows)

sys.path.pop(0)

GOAL = 1.2
# (case, output): the largest ratio to torch's error (RMS or max) allowed there, and why.
# The mean of a group whose mean is near 0 (uniform or sign-symmetric data): the kernel sums
# x - x0 in float32 lanes; relative to that small mean its error is 2-15x torch's, though
# against the spread (what y sees) it is 1e-10. rstd of data spanning 10^-6..10^6: 1.5-2x;
# of groups of 8 elements (HxW = 1): its max over 256 groups, 1.3x.
KNOWN_GAPS = {
    ("HxW 1", "rstd"): 2.0,
    ("ATK U(-5,5), dy N(100,25)", "mean"): 4.0,
    ("ATK U(-5,5), dy N(-60,5), G1", "mean"): 25.0,
    ("ATK 10^U(-6,6), dy N(40,1)", "mean"): 4.0,
    ("ATK 10^U(-6,6), dy N(40,1)", "rstd"): 3.0,
    ("range +-0.1", "mean"): 4.0,
    ("range +-100", "mean"): 2.5,
    ("range fp16 +-65504", "mean"): 4.0,
}

# The AscendC kernels on their twin (GroupNormSiluMs with SiLU off, GroupNormGradMs), as KNOWN_GAPS.
# * The G1 row (a group that does not fit in UB: chunked): y 1.8x, the mean 1.8x (x and x^2 summed
#   chunk by chunk, ChunkedShift); rstd 2.4x is the last rounding of 1 / sqrt(var + eps) over two
#   groups (0.7 ulp against torch's 0.3).
# * y: x * a + b in two roundings; torch's vectorised loop fuses them (1.3-1.8x).
# * mean and rstd: one ReduceSum each of x and x^2 (a group's, or a chunk's), and var = sum x^2 /
#   M - mean^2 (torch: Welford-style moments): mean up to 1.4x, rstd up to 1.6x.
# * HxW = 1 (8-element groups, gamma along the row): the two-pass statistics of x - shift and
#   y = ((x - mean) * rstd) * gamma + beta in four roundings: mean 2.5x, rstd 1.9x, y 1.3x.
# * dx: a_c dy - b xhat - e in four roundings (Muls, Muls, Sub, Adds; the kernel's vector API
#   has no fused multiply-add): 1.2-1.4x. dgamma of data spanning 10^-6..10^6: 1.21x.
TWIN_KNOWN_GAPS = {
    ("ATK U(-5,5), dy N(100,25)", "y"): 1.7,
    ("ATK U(-5,5), dy N(100,25)", "rstd"): 1.9,
    ("ATK U(-5,5), dy N(100,25)", "dx"): 1.5,
    ("ATK U(-5,5), dy N(-60,5), G1", "y"): 2.1,
    ("ATK U(-5,5), dy N(-60,5), G1", "mean"): 2.1,
    ("ATK U(-5,5), dy N(-60,5), G1", "rstd"): 2.9,
    ("ATK 10^U(-6,6), dy N(40,1)", "y"): 1.6,
    ("ATK 10^U(-6,6), dy N(40,1)", "rstd"): 1.8,
    ("ATK 10^U(-6,6), dy N(40,1)", "dx"): 1.7,
    ("ATK 10^U(-6,6), dy N(40,1)", "dgamma"): 1.4,
    ("range +-0.1", "y"): 1.7,
    ("range +-0.1", "rstd"): 1.5,
    ("range +-0.1", "dx"): 1.7,
    ("range +-100", "y"): 1.5,
    ("range +-100", "mean"): 1.4,
    ("range +-100", "rstd"): 1.6,
    ("range +-100", "dx"): 1.7,
    ("range (-50,100)", "y"): 1.9,
    ("range (-50,100)", "mean"): 1.7,
    ("range (-50,100)", "rstd"): 1.7,
    ("range fp16 +-65504", "y"): 1.7,
    ("range fp16 +-65504", "rstd"): 1.8,
    ("range fp16 +-65504", "dx"): 1.5,
    ("HxW 1", "y"): 1.6,
    ("HxW 1", "mean"): 2.9,
    ("HxW 1", "rstd"): 2.2,
    ("C/G 1", "y"): 1.6,
    ("C/G 1", "rstd"): 1.5,
}


def _beyond(table, name, gaps):
    """(case, output, RMS/max) where `name`'s error is above its allowed multiple of torch's."""
    failures = []
    for case, row in table.items():
        for out in accuracy_table.OUTPUTS:
            allowed = gaps.get((case, out), GOAL)
            for which, (ours, theirs) in enumerate(zip(row[name][out], row["torch float32"][out])):
                if ours > allowed * theirs:
                    failures.append(f"{case} {out} {('RMS', 'max')[which]}: {ours:.3g} vs torch {theirs:.3g}")
    return failures


def _closed_gaps(table, name, gaps):
    return [(case, out) for (case, out) in gaps
            if max(o / t for o, t in zip(table[case][name][out], table[case]["torch float32"][out])) <= GOAL]


def _geometric_mean_ratio(table, name):
    logs = [math.log(o / t) for row in table.values() for out in accuracy_table.OUTPUTS
            for o, t in zip(row[name][out], row["torch float32"][out])]
    return math.exp(sum(logs) / len(logs))


@pytest.fixture(scope="module")
def table():
    return accuracy_table.measure(implementations=("CPU kernel", "AscendC twin", "torch float32"))


IMPLEMENTATIONS = pytest.mark.parametrize("name, gaps", [("CPU kernel", KNOWN_GAPS), ("AscendC twin", TWIN_KNOWN_GAPS)],
                                          ids=["cpu", "twin"])


@IMPLEMENTATIONS
def test_as_accurate_as_torch_on_every_case(table, name, gaps):
    failures = _beyond(table, name, gaps)
    assert not failures, "\n".join(failures)


@IMPLEMENTATIONS
def test_known_gaps_are_still_gaps(table, name, gaps):
    """A gap that closed must leave its list (so the list stays the truth)."""
    assert not _closed_gaps(table, name, gaps)


@pytest.mark.parametrize("name", ["CPU kernel", "AscendC twin"], ids=["cpu", "twin"])
def test_no_worse_than_torch_in_the_geometric_mean(table, name):
    assert _geometric_mean_ratio(table, name) <= 1.0


def test_twin_within_float32_accuracy(table):
    for case, row in table.items():
        for out, errors in row["AscendC twin"].items():
            assert max(errors) <= 1e-4, (case, out, errors)
