import functools
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import mindspore as ms
import numpy as np
import pytest

REQUIRE_ASCEND_ENV = "MS_GROUPNORM_REQUIRE_ASCEND"  # set by check_on_ascend.sh: never skip there

# MindSpore compiles custom-op helpers (the aclnn callback on Ascend) into
# $MS_COMPILER_CACHE_PATH, default ./custom_kernel_meta, and remembers them by that path;
# every test below runs in its own directory, so the path must be absolute.
if not os.path.isabs(os.environ.get("MS_COMPILER_CACHE_PATH", "")):
    os.environ["MS_COMPILER_CACHE_PATH"] = (os.path.abspath(os.environ["MS_COMPILER_CACHE_PATH"])
                                            if os.environ.get("MS_COMPILER_CACHE_PATH")
                                            else tempfile.mkdtemp(prefix="ms_groupnorm_kernel_meta_"))


@functools.lru_cache(maxsize=None)
def ascend_unavailable_reason():
    """Why tests marked ``ascend`` cannot run here, or None when they can."""
    if os.environ.get(REQUIRE_ASCEND_ENV) == "1":
        return None
    if not os.environ.get("ASCEND_CUSTOM_OPP_PATH"):
        return ("no Ascend device/CANN here (ASCEND_CUSTOM_OPP_PATH is unset); "
                "on an Ascend 910B run: bash kernels/ascendc/check_on_ascend.sh")
    try:
        from mindspore import hal
        available = hal.is_available("Ascend")
    except Exception as error:  # noqa: BLE001 (any failure to probe means: no device)
        return f"no usable Ascend device (mindspore.hal.is_available('Ascend') failed: {error})".splitlines()[0]
    if not available:
        return "MindSpore reports no usable Ascend device (mindspore.hal.is_available('Ascend') is False)"
    return None


EXHAUSTIVE_ENV = "MS_GROUPNORM_EXHAUSTIVE"  # =1: the same as --exhaustive
EXHAUSTIVE_SKIP_REASON = "exhaustive tier: run with --exhaustive (CI runs it)"


def pytest_addoption(parser):
    parser.addoption("--exhaustive", action="store_true", default=False,
                     help="also run the tests marked exhaustive (the full parameter matrices); "
                          f"{EXHAUSTIVE_ENV}=1 does the same")


def exhaustive_enabled(config):
    return config.getoption("--exhaustive") or os.environ.get(EXHAUSTIVE_ENV) == "1"


def pytest_report_header(config):
    reason = ascend_unavailable_reason()
    return [f"ascend tests: {'skipped: ' + reason if reason else 'enabled'}",
            f"exhaustive tests: {'enabled' if exhaustive_enabled(config) else 'skipped (run with --exhaustive)'}"]


def _default_combinations(marker):
    """The parameter combinations a ``default_sample`` marker keeps: its axes walked in step
    (the i-th combination takes value i modulo each axis's length), so every listed value runs
    at least once with as few cases as the longest axis."""
    axes = marker.kwargs
    length = max(len(values) for values in axes.values())
    return [{name: values[i % len(values)] for name, values in axes.items()} for i in range(length)]


def _selected_by_case(config):
    """Node ids (without the case) of the tests the command line names by one of their cases
    (``tests/test_x.py::test_y[case]``): only those cases are collected, so the sample's values
    cannot all be among them."""
    selected = set()
    for arg in config.args:
        path, sep, rest = arg.partition("::")
        if sep and "[" in rest:
            relative = os.path.relpath(os.path.abspath(path), str(config.rootpath)).replace(os.sep, "/")
            selected.add(f"{relative}::{rest.split('[', 1)[0]}")
    return selected


def _mark_outside_default_sample_exhaustive(items, partly_collected=()):
    """A test parametrised over a matrix carries ``@pytest.mark.default_sample(axis=[values], ...)``:
    its cases outside the sample are marked exhaustive. Parameters the marker does not name are
    kept whole. A listed name, value or combination the test does not have is an error, not a
    silently smaller default tier (not checked for a test of which the command line picked cases)."""
    tests = {}  # one entry per test function: its marker, a node id, the parameters of its cases
    for item in items:
        marker = item.get_closest_marker("default_sample")
        if marker is None:
            continue
        params = getattr(getattr(item, "callspec", None), "params", {})
        tests.setdefault((item.path, item.originalname), (marker, item.nodeid, []))[2].append(params)
        if not any(all(params.get(name) == value for name, value in combination.items())
                   for combination in _default_combinations(marker)):
            item.add_marker(pytest.mark.exhaustive)
    for marker, nodeid, cases in tests.values():
        if nodeid.split("[", 1)[0] in partly_collected:
            continue
        for name, values in marker.kwargs.items():
            present = [params[name] for params in cases if name in params]
            if not present:
                raise pytest.UsageError(f"{nodeid}: default_sample names {name!r}, which is not a parameter")
            for value in values:
                if value not in present:
                    raise pytest.UsageError(f"{nodeid}: default_sample lists {name}={value!r}, "
                                            "which is not among the test's parameters")
        for combination in _default_combinations(marker):
            if not any(all(params.get(name) == value for name, value in combination.items()) for params in cases):
                raise pytest.UsageError(f"{nodeid}: default_sample's combination {combination!r} is no case "
                                        "of the test (parameters given together are walked in step)")


# tryfirst: the exhaustive marks must be on the items before `-m exhaustive` selects by them.
@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    _mark_outside_default_sample_exhaustive(items, _selected_by_case(config))
    if _background_builds_wanted(config):
        items.sort(key=lambda item: item.path.name not in NEED_NO_BUILT_MODULE)  # stable: file order kept
    if not exhaustive_enabled(config):
        skip = pytest.mark.skip(reason=EXHAUSTIVE_SKIP_REASON)
        for item in items:
            if "exhaustive" in item.keywords:
                item.add_marker(skip)
    reason = ascend_unavailable_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if "ascend" in item.keywords:
            item.add_marker(skip)


# ---- background builds: a fresh clone's compiles overlap the test run -----------------------
# The fast-path module and the twin libraries take most of a first run's CPU (3 compiles of
# 30-60 s each). A whole-suite run builds them in two background processes (one per kind,
# tests/warm_build_caches.py) while the tests run; a test that needs one before it is ready
# waits for it on the build's lock (MindSpore's builder for the modules, backends.twin_build.build_lock
# for the twins). With parallel workers (pytest-xdist) only the controlling process starts them.
# A run of chosen files builds on first use, as before.
WARM_UP_ENV = "MS_GROUPNORM_TEST_WARM_UP"  # =0: no background builds
WARM_UP_SCRIPT = Path(__file__).resolve().parent / "warm_build_caches.py"
_warm_ups = {}  # kind -> (process, log path)


def _whole_suite(config):
    tests_dir = WARM_UP_SCRIPT.parent
    return all(Path(arg.split("::")[0]).resolve() in (tests_dir, Path(config.rootpath).resolve())
               for arg in config.args)


def _background_builds_wanted(config):
    return (os.environ.get(WARM_UP_ENV, "1") != "0" and not config.option.collectonly and WARM_UP_SCRIPT.is_file()
            and _whole_suite(config))


def pytest_sessionstart(session):
    if "PYTEST_XDIST_WORKER" in os.environ or not _background_builds_wanted(session.config):
        return  # a parallel worker: its controller started them
    work = Path(tempfile.mkdtemp(prefix="ms_groupnorm_warm_up_"))
    # The builds must import the package this run tests, not whatever their working directory finds.
    from cases import env_importing_this_package
    env = env_importing_this_package()
    for kind in ("pyboost", "twin"):
        log = work / f"{kind}.log"
        with open(log, "w") as out:  # its own session: a Ctrl-C of the run lets a started build finish
            process = subprocess.Popen([sys.executable, str(WARM_UP_SCRIPT), kind], cwd=work, stdout=out,
                                       stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                                       env=env)
        _warm_ups[kind] = (process, log)


# Test files that use only the kernel library (ctypes) and source checks: with background builds
# running they go first, so that the first fast-path module is built before a test needs it
# (it is ~20 s into the run otherwise, and takes ~60 s to build).
NEED_NO_BUILT_MODULE = ("test_tiers.py", "test_no_work_item_refs.py", "test_reference.py", "test_silu_reference.py",
                        "test_kernel.py", "test_kernel_extremes.py", "test_kernel_simd.py", "test_silu_kernel.py",
                        "test_kernel_lib_buffers.py", "test_ascendc_real_headers.py")


def pytest_terminal_summary(terminalreporter, exitstatus):
    for kind, (process, log) in _warm_ups.items():
        if exitstatus != pytest.ExitCode.INTERRUPTED:
            process.wait()  # never leave a build (and its lock) behind a finished run
        if process.poll() not in (None, 0):  # not a test failure: the tests built it themselves
            terminalreporter.write_line(f"background build of the {kind} caches failed (exit {process.returncode}); "
                                        f"its log: {log}")


MODES = {"graph": ms.GRAPH_MODE, "pynative": ms.PYNATIVE_MODE}


@pytest.fixture(params=list(MODES), ids=list(MODES))
def mode(request):
    """Runs a test once in GRAPH_MODE and once in PYNATIVE_MODE."""
    ms.set_context(mode=MODES[request.param])
    yield request.param
    ms.set_context(mode=ms.PYNATIVE_MODE)


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


@pytest.fixture(autouse=True)
def _graph_dumps_in_tmp(tmp_path, monkeypatch):
    # MindSpore writes rank_0/ analysis dumps into the working directory on graph errors.
    monkeypatch.chdir(tmp_path)


TWIN_CORES = 8  # the twin device of the backend tests: fewer simulated cores than a 910B's 48, faster


@pytest.fixture
def twin_backend(monkeypatch):
    """MS_GROUPNORM_BACKEND=ascendc_twin on a twin device of TWIN_CORES cores. The op caches
    are per backend, so nothing made for another backend is reused."""
    monkeypatch.setenv("MS_GROUPNORM_BACKEND", "ascendc_twin")
    monkeypatch.setenv("MS_GROUPNORM_TWIN_CORES", str(TWIN_CORES))
    return "ascendc_twin"


@pytest.fixture(params=["cpu", "ascendc_twin"])
def backend(request, monkeypatch):
    """Runs a test on the CPU kernels and on the AscendC kernels' twins (as twin_backend)."""
    monkeypatch.setenv("MS_GROUPNORM_BACKEND", request.param)
    monkeypatch.setenv("MS_GROUPNORM_TWIN_CORES", str(TWIN_CORES))
    return request.param


@pytest.fixture
def kernel_lib():
    """The CPU kernels' library (ctypes) with its run-time controls restored afterwards: the ISA
    build, the thread count and the streaming threshold. ``kernel_lib.isas`` lists the builds this
    CPU runs."""
    from ms_groupnorm.backends import cpu_kernels

    lib = cpu_kernels.cdll()
    before = lib.MsGroupNormActiveIsa()
    lib.isas = [name for name in ("portable", "avx2", "avx512") if lib.MsGroupNormSelectIsa(name.encode()) == 0]
    lib.MsGroupNormSelectIsa(before)
    yield lib
    lib.MsGroupNormSelectIsa(before)
    lib.MsGroupNormSetNumThreads(0)
    lib.MsGroupNormSetStreamMinBytes(0)


@pytest.fixture(params=["group_norm", "group_norm_silu"])
def operator(request):
    """Runs a test for each operator, given as its forward description (ops.descriptions)."""
    from ms_groupnorm.ops import descriptions

    return descriptions.BY_NAME[request.param]


@pytest.fixture(scope="module")
def pyboost_module():
    """Builds the module once. Missing build tools skip (the fast path then simply stays
    off for users too); any other build failure fails the tests that need it."""
    from ms_groupnorm.backends import cpu_pyboost

    if cpu_pyboost.off_reason():  # off by design on this MindSpore, with a notice (tests/test_versions.py)
        pytest.skip(cpu_pyboost.off_reason())
    missing = cpu_pyboost.missing_tools()
    if missing:
        pytest.skip(f"building the pyboost module needs {', '.join(missing)}, not installed here")
    try:
        return cpu_pyboost.build()
    except Exception as error:  # surfaced as a failure, never a skip
        pytest.fail(f"the pyboost module failed to build: {type(error).__name__}: {error}")


@pytest.fixture
def fast_path(pyboost_module, monkeypatch):
    """PYNATIVE_MODE with the fast path on; yields a function that switches it
    ($MS_GROUPNORM_PYBOOST unset = on, "0" = off)."""
    from ms_groupnorm.backends import cpu_pyboost

    ms.set_context(mode=ms.PYNATIVE_MODE)

    def switch(on):
        if on:
            monkeypatch.delenv(cpu_pyboost.ENABLE_ENV, raising=False)
        else:
            monkeypatch.setenv(cpu_pyboost.ENABLE_ENV, "0")

    switch(True)
    yield switch
    ms.set_context(mode=ms.PYNATIVE_MODE)
