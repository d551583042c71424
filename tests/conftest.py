import functools
import os
import tempfile

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


def pytest_report_header(config):
    reason = ascend_unavailable_reason()
    return f"ascend tests: {'skipped: ' + reason if reason else 'enabled'}"


def pytest_collection_modifyitems(config, items):
    reason = ascend_unavailable_reason()
    if reason is None:
        return
    skip = pytest.mark.skip(reason=reason)
    for item in items:
        if "ascend" in item.keywords:
            item.add_marker(skip)

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
