"""Names that docs and comments give for this repository's own things exist: a path under one
of its folders, a dotted ``ms_groupnorm.`` name, a ``backends.`` module, and a count of a
test table's rows ("the 13 tiling cases of `test_ascendc_twin.CASES`"). A rename or a grown
table that leaves an old name or number behind fails here. CHANGELOG.md is history and keeps
the names of its day."""
import importlib
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TEXT_SUFFIXES = {".md", ".py", ".h", ".cc", ".cpp", ".sh", ".cfg", ".toml"}
HISTORY = {"CHANGELOG.md"}
# Tests that make up packages and files to test their own checks.
MADE_UP = {"tests/test_package_structure.py", "tests/test_public_surface.py", "tests/test_no_work_item_refs.py"}
# Other repositories' folders, quoted as their sources (asc-devkit's docs/zh and tests/api,
# ops-nn's tests/st and tests/ut): this repository has none of them.
FOREIGN_PREFIXES = ("docs/zh/", "tests/st/", "tests/ut/", "tests/api/")
# Names built at run time or written as a pattern: a build's extension module, a lock file,
# placeholders (NAME, test_x, a prefix ending in "_").
NOT_MODULES = {"ms_groupnorm._lib.libms_groupnorm_cpu", "ms_groupnorm.lock"}
PLACEHOLDER = re.compile(r"/[A-Z]+\.|/test_x\.|_$")

PATH = re.compile(r"(?<![\w/.-])((?:ms_groupnorm|tests|scripts|kernels|docs|\.ci)/[\w./-]*\w)")
DOTTED = re.compile(r"(?<![\w.])(ms_groupnorm(?:\.[A-Za-z_]\w*)+)")
BACKEND_MODULE = re.compile(r"(?<![\w.])backends\.([a-z_]\w*)")
COUNTED = re.compile(r"\b(\d+) [\w -]{0,40}?\b(?:cases|rows|shapes)\b[^`\n]{0,20}`(test_\w+)(?:\.py)?(?:\.|::)([A-Z_]+)`")


def _tracked_text_files():
    names = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout.split()
    return [ROOT / n for n in names if Path(n).suffix in TEXT_SUFFIXES and Path(n).name not in HISTORY
            and (ROOT / n).is_file() and n not in MADE_UP and n != "tests/test_doc_references.py"]


def _ignored(path):
    """Outputs the code writes (results, builds) are named before they exist."""
    return any(subprocess.run(["git", "check-ignore", "-q", "--no-index", name], cwd=ROOT).returncode == 0
               for name in (path, path + "/"))


def _path_exists(ref):
    ref = ref.rstrip(".")
    if ref.startswith(FOREIGN_PREFIXES) or PLACEHOLDER.search(ref) or (ROOT / ref).exists() or _ignored(ref):
        return True
    # a family written as a prefix (`scripts/bench_*`, `kernels/cpu/silu_rows*`, `..._tiling.{h,cpp}`)
    return any(ROOT.glob(ref + "*")) if not ref.endswith("/") else False


def _resolves(dotted):
    if dotted in NOT_MODULES:
        return True
    parts = dotted.split(".")
    for end in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:end]))
        except ImportError:
            continue
        for attr in parts[end:]:
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def _references(paths):
    """(where, kind, reference) for every reference in the files ``paths``."""
    for path in paths:
        for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            where = f"{path.name}:{number}" if ROOT not in path.parents else f"{path.relative_to(ROOT)}:{number}"
            for match in PATH.finditer(line):
                yield where, "path", match.group(1)
            for match in DOTTED.finditer(line):
                yield where, "name", match.group(1)
            for match in BACKEND_MODULE.finditer(line):
                yield where, "name", "ms_groupnorm.backends." + match.group(1)
            for match in COUNTED.finditer(line):
                yield where, "count", match.groups()


def _broken(kind, ref):
    if kind == "path":
        return not _path_exists(ref)
    if kind == "name":
        return not _resolves(ref)
    count, module, table = ref
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        rows = getattr(importlib.import_module(module), table, None)
    finally:
        sys.path.pop(0)
    return rows is None or len(rows) != int(count)


def test_every_reference_to_our_own_things_exists():
    broken = [f"{where}: {kind} {ref}" for where, kind, ref in _references(_tracked_text_files()) if _broken(kind, ref)]
    assert not broken, "\n".join(broken)


@pytest.mark.parametrize("text, broken", [
    ("see ms_groupnorm/backends/ascend_graph.py", True),
    ("see ms_groupnorm/backends/ascend.py", False),
    ("``ms_groupnorm.ops.routing.forward_op_for``", False),
    ("``ms_groupnorm.ascendc_twin.STAT_FIELDS``", True),
    ("``backends.ascend_pynative``", True),
    ("the 2 cases of `test_doc_references.SAMPLE`", True),
    ("the 3 cases of `test_doc_references.SAMPLE`", False),
])
def test_the_check_finds_what_it_looks_for(tmp_path, text, broken):
    """One reference in a made-up file: the check can fail, and passes what exists."""
    doc = tmp_path / "doc.md"
    doc.write_text(text + "\n")
    found = [(kind, ref) for _, kind, ref in _references([doc])]
    assert found, text
    assert any(_broken(kind, ref) for kind, ref in found) == broken


SAMPLE = (1, 2, 3)  # the table the made-up counts above refer to


def test_the_testing_guide_maps_every_test_file():
    """docs/testing.md's behaviour -> file table names each test file, and only existing ones."""
    listed = set(re.findall(r"`(test_\w+\.py)`", (ROOT / "docs" / "testing.md").read_text()))
    present = {path.name for path in (ROOT / "tests").glob("test_*.py")}
    assert present - listed == set(), "not in docs/testing.md's table"
    assert listed - present == set(), "named in docs/testing.md, but no such file"
