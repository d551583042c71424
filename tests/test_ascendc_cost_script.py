"""scripts/ascendc_cost.py: each of its tables (GroupNormGradMs, --forward GroupNormSiluMs,
--silu-grad GroupNormSiluGradMs) ends with one line
`worst_over_bound=R (shape, dtype) geomean_over_bound=G` over the rows it printed, and that line
agrees with the rows. Run on the smallest anchor in fp32 (the full tables take minutes)."""
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "ascendc_cost.py"
CLOSING = re.compile(r"^worst_over_bound=(\d+\.\d+) \((\S+ G\d+), (\S+)\) geomean_over_bound=(\d+\.\d+)$")


def run_script(*args):
    env = dict(os.environ, PYTHONPATH=str(SCRIPT.parent.parent))
    result = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env,
                            timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    return [line for line in result.stdout.splitlines() if line.strip()]


def column_of(lines, name):
    """The table rows and the float values of their column `name`."""
    header = next(line for line in lines if line.startswith("| shape |"))
    column = [c.strip() for c in header.split("|")].index(name)
    rows = [line for line in lines if line.startswith("| ") and not line.startswith(("| shape", "|---"))]
    return rows, [float(row.split("|")[column]) for row in rows]


@pytest.mark.parametrize("flag", [None, "--forward", "--silu-grad"])
def test_each_table_ends_with_its_closing_line(flag):
    lines = run_script(*([flag] if flag else []), "--shapes", "3x60x17x19:6,2x64x32x32:32", "--dtypes", "fp32")
    match = CLOSING.match(lines[-1])
    assert match, lines[-1]
    worst, shape, dtype, geomean = float(match[1]), match[2], match[3], float(match[4])
    rows, ratios = column_of(lines, "est./bound")
    assert len(rows) == 2 and dtype == "fp32"
    assert worst == max(ratios) and shape in rows[ratios.index(worst)]
    # two decimals: the line's own rounding, and each row's (0.005 / r relative, averaged in the geomean)
    exact = math.exp(sum(map(math.log, ratios)) / len(ratios))
    assert abs(geomean - exact) <= 0.0051 + 0.005 * exact / min(ratios)
    assert sum(1 for line in lines if line.startswith("worst_over_bound=")) == 1
    # the vector pipe's busy time is a floor of the core's time: never above the estimate, never zero
    _, vector = column_of(lines, "vector µs")
    _, estimate = column_of(lines, "est. µs")
    assert all(0 < v <= e + 0.05 for v, e in zip(vector, estimate)), (vector, estimate)


def test_an_unknown_anchor_is_refused():
    result = subprocess.run([sys.executable, str(SCRIPT), "--shapes", "1x2x3x4:5"], capture_output=True, text=True,
                            env=dict(os.environ, PYTHONPATH=str(SCRIPT.parent.parent)), timeout=300)
    assert result.returncode != 0 and "unknown anchor shapes" in result.stderr
