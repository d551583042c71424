"""jit_level O2 / the GE backend refused for graphs running the AscendC operators, each way
MindSpore lets a user ask for it (see ms_groupnorm.backends.ascend_jit), checked when the graph
is compiled. On CPU with ``$MS_GROUPNORM_BACKEND=ascend``: the refusal happens while the graph
compiler evaluates our op getter, before anything would reach a device."""
import mindspore as ms
import numpy as np
import pytest
from mindspore import Tensor, nn, ops
from mindspore import context as ms_context

import ms_groupnorm
from ms_groupnorm._compat import evaluated_by_graph_compiler
from ms_groupnorm.backends import ascend_jit
from ms_groupnorm.backends.ascend_jit import GraphJitLevelError
from ms_groupnorm.ops import routing

DEPRECATED = r"deprecated since MindSpore 2\.9: use jit_level O0 or O1"


@pytest.fixture
def context_restored(monkeypatch):
    """Restores the context's jit_level/jit_config, which set_context cannot set back to unset."""
    ctx = ms_context._context()  # pylint: disable=protected-access
    level = ctx.get_param(ms_context.ms_ctx_param.jit_level)
    config = dict(ctx.jit_config)
    monkeypatch.setenv(routing.BACKEND_ENV, "ascend")
    yield
    ctx.set_param(ms_context.ms_ctx_param.jit_level, level)
    ctx.jit_config = config
    ms.set_context(mode=ms.PYNATIVE_MODE)


class Net(nn.Cell):
    def __init__(self):
        super().__init__()
        self.norm = ms_groupnorm.GroupNorm(2, 4)

    def construct(self, x):
        return self.norm(x)


X = Tensor(np.ones((2, 4, 3, 3), np.float32))


def test_set_context_jit_level_o2_is_refused(context_restored):
    """jit_config stays {} with this spelling: only get_context("jit_level") says O2."""
    ms.set_context(mode=ms.GRAPH_MODE, jit_level="O2")
    assert not ms.get_context("jit_config")
    with pytest.raises(GraphJitLevelError, match=r'set_context\(jit_level="O2"\).*' + DEPRECATED):
        Net()(X)


def test_set_context_jit_config_o2_is_refused(context_restored):
    ms.set_context(mode=ms.GRAPH_MODE, jit_config={"jit_level": "O2"})
    with pytest.raises(GraphJitLevelError, match=r"jit_config=\{'jit_level': 'O2'\}.*" + DEPRECATED):
        Net()(X)


def test_cell_jit_config_o2_is_refused_at_compile(context_restored):
    """The Cell is built in a context at O0; its own JitConfig asks for O2 at compile."""
    ms.set_context(mode=ms.GRAPH_MODE, jit_level="O0")
    net = Net()
    net.set_jit_config(ms.JitConfig(jit_level="O2"))
    with pytest.raises(GraphJitLevelError, match=r"JitConfig of jit_level 'O2'.*" + DEPRECATED):
        net(X)


def test_jit_backend_ge_is_refused_at_compile(context_restored):
    """@ms.jit takes jit_level O0/O1 only: GE comes as backend="GE" with jit_level O0."""
    net = Net()

    @ms.jit(backend="GE")
    def step(x):
        return net(x)

    with pytest.raises(GraphJitLevelError, match=r"backend 'GE'.*" + DEPRECATED):
        step(X)


def test_a_cached_op_is_checked_again_at_the_next_compile(context_restored):
    """The op getter runs at every compile, so an op created for an O0 graph does not let a
    later O2 compile through."""
    ms.set_context(mode=ms.GRAPH_MODE, jit_level="O0")
    routing._op_backend()  # passes at O0  # pylint: disable=protected-access
    ms.set_context(jit_level="O2")
    with pytest.raises(GraphJitLevelError):
        Net()(X)


# ---- the reader itself, inside real compiles (no Ascend route involved)
SEEN = []


@evaluated_by_graph_compiler
def _probe():
    SEEN.append(ascend_jit.o2_requests())
    return ops.Identity()


def _compile_with(decorate):
    SEEN.clear()

    @decorate
    def step(x):
        return _probe()(x)

    try:
        step(X)
    except RuntimeError:
        pass  # a GE compile on CPU may fail after the probe ran; what it saw is what counts
    assert SEEN, "the probe did not run inside the compile"
    return SEEN[-1]


def test_reader_sees_the_compile_config_and_not_o0_o1(context_restored):
    """Negative cases first: O0/O1/default compiles report nothing; then GE does."""
    assert _compile_with(ms.jit) == []
    assert _compile_with(ms.jit(jit_level="O1")) == []
    assert _compile_with(ms.jit(backend="ms_backend")) == []
    seen = _compile_with(ms.jit(backend="GE"))
    assert len(seen) == 1 and "backend 'GE'" in seen[0]


def test_context_o0_o1_are_not_refused(context_restored):
    for level in ("O0", "O1"):
        ms.set_context(mode=ms.GRAPH_MODE, jit_level=level)
        ascend_jit.refuse_o2()
        ms.set_context(jit_config={"jit_level": level})
        ascend_jit.refuse_o2()
    assert ascend_jit.o2_requests() == []
