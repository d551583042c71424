"""The docs and the code speak to users: no reference to this project's internal work items.

A reader of the README, docs/ or a code comment cannot look up "the goals of issue 16",
"before issue 10" or "issue 14 item 3": those are entries in the project's own tracker,
not something a user has. Such a place must say the content instead: what changed and why.
This test scans the README, every Markdown page and every source file (comments,
docstrings and the text the scripts print alike) for the patterns below.

A legitimate mention (say, an upstream project's bug tracker) goes into ALLOWED, with the
reason; an entry that no longer matches anything fails too, so the list cannot go stale.
"""
import re
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SELF = Path(__file__).resolve()  # this file spells the patterns out, as examples

# What counts as a reference to an internal work item (case-insensitive).
PATTERNS = {
    # "issue 16", "Issue #11", "issues 9, 10", "issue11_targets"
    "an issue number": r"\bissues?[\s_#-]*\d+",
    # "item 2 of the goals", "goal (item 3)", "targets of item 4", "issue 14 item 3"
    "an item of an issue or goal": r"\b(?:issues?|goals?|targets?|tasks?)\b[^.\n]{0,40}?\bitems?\s+\d+"
                                   r"|\bitems?\s+\d+(?:\s*[-–,]\s*\d+)*\s+of\s+(?:the\s+|this\s+)?"
                                   r"(?:issue|goals?|targets?|task)\b",
    # "(item 1)", "(items 1-4)", a comment or bullet that starts with "Item 2:" / "* item 4, ..."
    "an item label": r"\(\s*items?\s+\d+(?:\s*[-–,]\s*\d+)*\s*[),;]|^[\s#*/>-]*items?\s+\d+\s*[:,.]",
    # "noted last round", "as in the previous round": the project's work rounds, not benchmark rounds
    "a work round": r"\b(?:noted|left|fixed|done|measured|changed|found)\s+(?:in\s+)?(?:the\s+)?"
                    r"(?:last|previous|earlier)\s+round\b",
    # 'the "speed where users feel it" issue', "the measurement"
    "a named issue": r"\"[^\"\n]{3,80}\"\s+issue\b|\bthe\s+issue's\b",
}
COMPILED = {name: re.compile(pattern, re.I | re.M) for name, pattern in PATTERNS.items()}

# (path relative to the repository, text on the matching line, why it may stay)
ALLOWED = []

DOC_SUFFIXES = {".md"}
CODE_SUFFIXES = {".py", ".cc", ".h", ".cpp", ".c", ".sh", ".cfg", ".toml", ".in", ".txt"}
CODE_DIRS = ("ms_groupnorm", "kernels", "scripts", "tests", ".ci")
SKIP_DIRS = {".git", "build", "__pycache__", "_lib", ".pytest_cache", "custom_kernel_meta", "kernel_meta"}


def candidates(root):
    """The files of the checkout: git's list (tracked, and untracked but not ignored, so that
    ignored benchmark output such as scripts/results/quick/ is left out), or every file."""
    try:
        listing = subprocess.run(["git", "-C", str(root), "ls-files", "-co", "--exclude-standard"],
                                 capture_output=True, text=True, check=True, timeout=60).stdout
        top = subprocess.run(["git", "-C", str(root), "rev-parse", "--show-toplevel"],
                             capture_output=True, text=True, check=True, timeout=60).stdout.strip()
        if Path(top).resolve() == root.resolve():
            return sorted(root / line for line in listing.splitlines() if line)
    except (OSError, subprocess.SubprocessError):
        pass
    return sorted(root.rglob("*"))


def scanned_files(root=REPO):
    """The README and every Markdown page, and every source file of the package, kernels,
    scripts, tests and CI, below ``root``."""
    files = [root / "setup.py"]
    for path in candidates(root):
        relative = path.relative_to(root)
        if not path.is_file() or SKIP_DIRS.intersection(relative.parts) or path.resolve() == SELF:
            continue
        if path.suffix in DOC_SUFFIXES:
            files.append(path)
        elif relative.parts[0] in CODE_DIRS and (path.suffix in CODE_SUFFIXES or relative.as_posix() == ".ci/run"):
            files.append(path)
    return [path for path in files if path.is_file()]


def references(text):
    """(line number, pattern name, matched text, line) of every work-item reference in ``text``."""
    found = []
    for name, pattern in COMPILED.items():
        for match in pattern.finditer(text):
            line_no = text.count("\n", 0, match.start()) + 1
            line = text.splitlines()[line_no - 1] if text else ""
            found.append((line_no, name, match.group(0).strip(), line))
    return sorted(found)


def allowed(relative, line):
    return any(relative == path and snippet in line for path, snippet, _ in ALLOWED)


def tree_references(root=REPO):
    """'path:line: [pattern] match' for every reference below ``root`` that ALLOWED does not cover."""
    out = []
    for path in scanned_files(root):
        relative = path.relative_to(root).as_posix()
        text = path.read_text(encoding="utf-8", errors="replace")
        for line_no, name, match, line in references(text):
            if not allowed(relative, line):
                out.append(f"{relative}:{line_no}: [{name}] {match!r}")
    return out


def test_no_internal_work_item_references():
    found = tree_references()
    assert not found, ("internal work-item references; say what changed and why instead:\n  "
                       + "\n  ".join(found))


def test_the_scan_covers_readme_docs_and_code():
    names = {path.relative_to(REPO).as_posix() for path in scanned_files()}
    assert "README.md" in names
    assert any(name.startswith("docs/") and name.endswith(".md") for name in names)
    for expected in ("ms_groupnorm/__init__.py", "scripts/bench_group_norm.py", "tests/conftest.py"):
        assert expected in names
    assert any(name.startswith("kernels/cpu/") and name.endswith(".cc") for name in names)


CRAFTED_REFERENCES = [
    "Same-run ratios (goals of issue 16):",
    "Before issue 10 this layer rounded mean/rstd to the input dtype.",
    "its own GroupNorm forward on Ascend (issue 14 item 3: float32 statistics)",
    "// Issue #11: the per-call cost",
    "## Goals (issue 17, item 2) and where they stand",
    "# Item 4: kernel-only backward vs torch",
    "* item 1, 1T, 2x8x4 G=4, layer forward: ours costs 0.77x",
    "percall (item 1), graph_ops (item 2)",
    "Sections besides the per-shape tables (items 1-4, reported side by side)",
    "the fixed costs per call were noted last round and left",
    'Targets of the "speed where users feel it" issue, as printed',
    '"vae" is the shape of the issue\'s measurement',
    "def issue11_targets(summary):",
    "a goal of the round, item 2, was missed",
]

LEGITIMATE_TEXT = [
    "the load of item i + 2 is issued as soon as item i is taken",
    "mode 3 always issues the gamma and beta row loads",
    "Issue(pipe, name, reads, writes)",
    "see https://github.com/pytorch/pytorch/issues/12345 for torch's behaviour",
    "each round times every variant; the last round of timings is kept",
    "3 rounds, 5 samples; item sizes 2 and 4 bytes",
    "the targets: geo-mean >= 1.5x, every shape >= 1x",
]


def test_patterns_catch_crafted_references():
    missed = [text for text in CRAFTED_REFERENCES if not references(text)]
    assert not missed, f"not caught: {missed}"


def test_patterns_leave_ordinary_text_alone():
    flagged = {text: references(text) for text in LEGITIMATE_TEXT if references(text)}
    assert not flagged, f"flagged although legitimate: {flagged}"


def test_a_reference_planted_in_a_tree_is_found(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "scripts").mkdir()
    (tmp_path / "README.md").write_text("# x\n\nFast (goals of issue 16).\n", encoding="utf-8")
    (tmp_path / "docs" / "page.md").write_text("Plain text.\n", encoding="utf-8")
    (tmp_path / "scripts" / "run.py").write_text("x = 1  # before issue 10 this was 2\n", encoding="utf-8")
    found = tree_references(tmp_path)
    assert [line.split(":")[0] for line in found] == ["README.md", "scripts/run.py"], found


def test_every_allowed_entry_still_matches_and_has_a_reason():
    for path, snippet, reason in ALLOWED:
        assert reason.strip(), f"{path}: an allowed mention needs its reason"
        text = (REPO / path).read_text(encoding="utf-8")
        lines = [line for line in text.splitlines() if snippet in line]
        assert any(references(line) for line in lines), f"{path}: {snippet!r} is allowed but no longer matches"
