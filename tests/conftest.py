import mindspore as ms
import numpy as np
import pytest

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
