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


def cost_module():
    if str(SCRIPT.parent) not in sys.path:
        sys.path.insert(0, str(SCRIPT.parent))
    import ascendc_cost
    return ascendc_cost


@pytest.mark.parametrize("text", ["1x2x3x4", "1x6x3:4", "7:1", "1x0x3:1", "2x4x3:0", "ax4:2"])
def test_a_bad_shape_is_refused_with_its_rule(text):
    with pytest.raises(SystemExit, match=f"shape {text!r}: .*(expected|must)"):
        cost_module().parse_shapes(f"2x4x3:2,{text}")


def test_the_command_line_refuses_a_bad_shape_before_running_any():
    result = subprocess.run([sys.executable, str(SCRIPT), "--shapes", "2x4x3:2,1x6x3:4"], capture_output=True,
                            text=True, env=dict(os.environ, PYTHONPATH=str(SCRIPT.parent.parent)), timeout=300)
    assert result.returncode != 0 and "shape '1x6x3:4'" in result.stderr and not result.stdout, result.stderr[-500:]


def test_any_rank_runs_and_a_table_closes_per_dtype(tmp_path, monkeypatch):
    """A 2-D shape (HxW = 1) and a rank-5 shape run; --table reads scripts/shapes/NAME.txt and closes with one
    line per dtype before the line over all rows."""
    lines = run_script("--shapes", "49x11:11,1x4x2x3x3:2", "--dtypes", "fp32")
    rows, ratios = column_of(lines, "est./bound")
    assert [r.split("|")[1].strip() for r in rows] == ["49x11 G11", "1x4x2x3x3 G2"] and all(r > 0 for r in ratios)
    ascendc_cost = cost_module()
    table = ascendc_cost.read_table("every_shape")
    assert (4096, 512, 32) in table and (1, 320, 16, 32, 32, 32) in table and len(table) == len(set(table)) >= 100
    monkeypatch.setattr(ascendc_cost, "TABLES", tmp_path)
    (tmp_path / "two.txt").write_text("# a note\n49x11:11  2-D\n1x4x3x3:2  tiny\n")
    assert ascendc_cost.read_table("two") == [(49, 11, 11), (1, 4, 3, 3, 2)]
    (tmp_path / "bad.txt").write_text("49x11:11 no two spaces\n")
    with pytest.raises(SystemExit, match="two spaces"):
        ascendc_cost.read_table("bad")
    rows = [{"shape": "a G1", "dtype": d, "over_bound": r} for d, r in (("fp32", 2.0), ("fp16", 8.0), ("fp32", 4.0))]
    closing = ascendc_cost.closing_lines(rows, per_dtype=True)
    assert closing == ["fp32: worst_over_bound=4.00 (a G1, fp32) geomean_over_bound=2.83",
                       "fp16: worst_over_bound=8.00 (a G1, fp16) geomean_over_bound=8.00",
                       "worst_over_bound=8.00 (a G1, fp16) geomean_over_bound=4.00"]


def test_a_sample_beyond_host_memory_is_listed_not_run():
    """CANN's tiling UT shape 1x2130x1664x1664 (5.9G elements a sample) cannot be held by the twin: it is named
    as not run, out of the closing line, instead of the script dying of a 44 GiB allocation."""
    lines = run_script("--shapes", "1x2130x1664x1664:71,2x64x32x32:32", "--dtypes", "fp32")
    rows, _ = column_of(lines, "est./bound")
    assert len(rows) == 1 and "2x64x32x32 G32" in rows[0]
    assert any(line.startswith("not run: 1x2130x1664x1664 G71") for line in lines), lines[-3:]
    assert CLOSING.match(lines[-1]) and "2x64x32x32 G32" in lines[-1]
