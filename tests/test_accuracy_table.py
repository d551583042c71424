"""The accuracy table of docs/accuracy.md (scripts/accuracy_table.py) as a test: GroupNorm's y, mean,
rstd, dx, dgamma and dbeta against float64, the CPU kernel next to torch float32 on the same inputs,
over ATK-style backward inputs, value ranges, |mean| >> std and G = 1 / HxW = 1 / C/G = 1 shapes.

* The CPU kernel: RMS and max error within 1.2x torch's on every case and output, except the gaps
  listed in KNOWN_GAPS (each still bounded, so it cannot grow unseen), and no worse than torch in
  the geometric mean over the whole table.
* The AscendC kernels on their twin: every output within float32 accuracy of float64 (1e-4
  relative): they do not meet torch's accuracy everywhere yet (docs/accuracy.md gives the table)."""
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


@pytest.fixture(scope="module")
def table():
    return accuracy_table.measure(implementations=("CPU kernel", "AscendC twin", "torch float32"))


def test_cpu_kernel_as_accurate_as_torch_on_every_case(table):
    failures = []
    for case, row in table.items():
        for out in accuracy_table.OUTPUTS:
            allowed = KNOWN_GAPS.get((case, out), GOAL)
            for which, (ours, theirs) in enumerate(zip(row["CPU kernel"][out], row["torch float32"][out])):
                if ours > allowed * theirs:
                    failures.append(f"{case} {out} {('RMS', 'max')[which]}: {ours:.3g} vs torch {theirs:.3g}")
    assert not failures, "\n".join(failures)


def test_known_gaps_are_still_gaps(table):
    """A gap that closed must leave KNOWN_GAPS (so the list stays the truth)."""
    for (case, out) in KNOWN_GAPS:
        ours, theirs = table[case]["CPU kernel"][out], table[case]["torch float32"][out]
        assert max(o / t for o, t in zip(ours, theirs)) > GOAL, (case, out, ours, theirs)


def test_cpu_kernel_no_worse_than_torch_in_the_geometric_mean(table):
    logs = [math.log(o / t) for row in table.values() for out in accuracy_table.OUTPUTS
            for o, t in zip(row["CPU kernel"][out], row["torch float32"][out])]
    assert math.exp(sum(logs) / len(logs)) <= 1.0, math.exp(sum(logs) / len(logs))


def test_twin_within_float32_accuracy(table):
    for case, row in table.items():
        for out, errors in row["AscendC twin"].items():
            assert max(errors) <= 1e-4, (case, out, errors)
