"""The two test tiers (docs/testing.md): tests marked ``exhaustive``, and the cases of a
``default_sample`` matrix outside its sample, skip with a one-line reason in the default run
and run with ``--exhaustive`` (or MS_GROUPNORM_EXHAUSTIVE=1); a sample naming a parameter or
value the test does not have is refused rather than leaving its default tier empty."""
import configparser
import pathlib

import pytest

pytest_plugins = ["pytester"]

TESTS = pathlib.Path(__file__).parent

MATRIX = """
import pytest

@pytest.mark.default_sample(case=["a", "c"], dtype=["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("execution", ["immediate", "deferred"])
@pytest.mark.parametrize("dtype", ["fp32", "fp16", "bf16"])
@pytest.mark.parametrize("case", ["a", "b", "c"])
def test_matrix(case, dtype, execution):
    pass

@pytest.mark.exhaustive
def test_whole_test_is_exhaustive():
    pass

def test_plain():
    pass
"""


@pytest.fixture
def tiers(pytester, monkeypatch):
    """A scratch project with this suite's conftest and its [tool:pytest] markers."""
    monkeypatch.delenv("MS_GROUPNORM_EXHAUSTIVE", raising=False)
    pytester.makeconftest((TESTS / "conftest.py").read_text())
    config = configparser.ConfigParser()
    config.read(TESTS.parent / "setup.cfg")
    pytester.makeini("[pytest]\nmarkers =" + config["tool:pytest"]["markers"] + "\n")
    return pytester


# Each in-process run re-imports what it loads; hypothesis's plugin (when installed) is
# the heaviest of those and plays no part here.
QUIET = ("-p", "no:cacheprovider", "-p", "no:hypothesispytest")


def outcomes(result):
    return {name: count for name, count in result.parseoutcomes().items() if name in ("passed", "skipped")}


def test_default_run_skips_the_exhaustive_cases_with_the_reason(tiers):
    tiers.makepyfile(test_m=MATRIX)
    result = tiers.runpytest_inprocess(*QUIET, "-rs", "-v")
    # the sample walks case and dtype in step: (a, fp32), (c, fp16), (a, bf16), both executions each
    for kept in ("a-fp32", "c-fp16", "a-bf16"):
        for execution in ("immediate", "deferred"):
            result.stdout.fnmatch_lines([f"*test_matrix[[]{kept}-{execution}[]] PASSED*"])
    result.stdout.fnmatch_lines(["*test_matrix[[]b-fp32-immediate[]] SKIPPED*",
                                 "*exhaustive tier: run with --exhaustive*"])
    assert outcomes(result) == {"passed": 6 + 1, "skipped": 18 - 6 + 1}


@pytest.mark.parametrize("switch", [["--exhaustive"], ["env"]])
def test_the_switch_runs_everything(tiers, monkeypatch, switch):
    tiers.makepyfile(test_m=MATRIX)
    if switch == ["env"]:
        monkeypatch.setenv("MS_GROUPNORM_EXHAUSTIVE", "1")
        switch = []
    assert outcomes(tiers.runpytest_inprocess(*QUIET, *switch)) == {"passed": 18 + 2}


def test_exhaustive_selection_runs_only_the_other_tier(tiers):
    """CI's second step: nothing of the default tier runs twice."""
    tiers.makepyfile(test_m=MATRIX)
    result = tiers.runpytest_inprocess(*QUIET, "--exhaustive", "-m", "exhaustive")
    assert result.parseoutcomes()["passed"] == 18 - 6 + 1
    assert result.parseoutcomes()["deselected"] == 6 + 1


@pytest.mark.parametrize("sample, words", [('case=["a", "z"]', "case='z'"), ('kase=["a"]', "'kase'"),
                                           ('case=["a", "b"], dtype=["fp16", "fp32"]', "'case': 'a', 'dtype': 'fp16'")])
def test_a_sample_that_names_nothing_is_refused(tiers, sample, words):
    tiers.makepyfile(test_m=f"""
import pytest

@pytest.mark.default_sample({sample})
@pytest.mark.parametrize("case,dtype", [("a", "fp32"), ("b", "fp16")])
def test_matrix(case, dtype):
    pass
""")
    result = tiers.runpytest_inprocess(*QUIET)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*default_sample*{words}*"])


def test_cases_named_on_the_command_line_run_without_the_whole_matrix(tiers):
    """Picking cases of a sampled matrix by node id collects only those: no usage error, and
    each picked case keeps its tier."""
    tiers.makepyfile(test_m=MATRIX)
    picked = ("test_m.py::test_matrix[a-fp32-immediate]", "test_m.py::test_matrix[b-fp32-immediate]")
    assert outcomes(tiers.runpytest_inprocess(*QUIET, *picked)) == {"passed": 1, "skipped": 1}
    assert outcomes(tiers.runpytest_inprocess(*QUIET, "--exhaustive", *picked)) == {"passed": 2}
