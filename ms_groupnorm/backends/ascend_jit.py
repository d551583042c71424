"""Refuses jit_level O2 (the GE backend) for graphs that run ms_groupnorm's AscendC operators,
whichever way it was asked for.

Why: MindSpore runs aclnn custom operators as kernels at jit_level O0 or O1. At O2 (whole-graph
sink through GE) a custom operator takes tensors only, and ours pass num_groups, eps and the
output mask as scalar arguments. MindSpore 2.9 deprecated both O2 and the GE backend
(``JitConfig``'s and ``jit``'s docstrings in ``mindspore/graph/jit_config.py`` and
``mindspore/graph/api.py``), so the way forward is O0/O1 or PYNATIVE_MODE, not a GE port.

The spellings, MindSpore 2.7.1 to 2.10 (read in each wheel's ``context.py``, ``jit_config.py``
and ``api.py``):

* ``set_context(jit_config={"jit_level": "O2"})``: ``get_context("jit_config")`` holds it;
* ``set_context(jit_level="O2")``: ``get_context("jit_config")`` stays ``{}`` and only
  ``get_context("jit_level")`` says "O2" (both spellings write that context parameter);
* ``Cell.set_jit_config(JitConfig(jit_level="O2"))``: JitConfig adds ``backend="GE"``; the
  dict travels to the compile call only, not into the context;
* ``@ms.jit(backend="GE")``: ``jit`` takes jit_level O0/O1 only, so the dict says
  ``{"jit_level": "O0", "backend": "GE"}``.

The last two exist only as the ``jit_config_dict`` argument of the compile in progress
(``_CellGraphExecutor.compile`` / ``_JitExecutor.compile`` in ``mindspore.common.api``, 2.7-2.8,
or ``mindspore.graph.api``, 2.9+; the executor offers ``set_jit_config`` but no getter). Our
op getters run inside that compile (``_compat.evaluated_by_graph_compiler``), so the stack
holds the frame and this module reads the dict from it. Any of the four refuses: a compile
that names O0 while the context says O2 is refused too, since which wins is MindSpore's C++
and a wrong guess would mean a kernel that cannot run.
"""
import sys

DEPRECATED = "jit_level O2 and the GE backend are deprecated since MindSpore 2.9"
INSTEAD = ('use jit_level O0 or O1 (ms.set_context(jit_level="O0"), or ms.JitConfig(jit_level="O0") on the '
           'Cell, or @ms.jit(jit_level="O0") with the default backend "ms_backend"), or PYNATIVE_MODE')
_API_MODULES = ("mindspore.graph.api", "mindspore.common.api")
_COMPILE_CONFIG = "jit_config_dict"


class GraphJitLevelError(RuntimeError):
    """A graph that runs our AscendC operators is compiled at jit_level O2 / with the GE backend."""


def _asks_for_o2(config):
    return isinstance(config, dict) and (config.get("jit_level") == "O2" or config.get("backend") == "GE")


def compile_configs():
    """The ``jit_config_dict`` of each MindSpore compile in progress on this thread, innermost first."""
    frame = sys._getframe(1)  # pylint: disable=protected-access
    configs = []
    while frame is not None:
        if frame.f_globals.get("__name__") in _API_MODULES:
            config = frame.f_locals.get(_COMPILE_CONFIG)
            if isinstance(config, dict):
                configs.append(config)
        frame = frame.f_back
    return configs


def _context_value(key):
    import mindspore as ms
    try:
        return ms.get_context(key)
    except (ValueError, KeyError):  # a key this MindSpore does not know
        return None


def o2_requests():
    """How O2/GE was asked for, one phrase per spelling found (empty: it was not)."""
    found = []
    for config in compile_configs():
        if config.get("backend") == "GE" and config.get("jit_level") != "O2":
            found.append("the graph is compiled with backend 'GE' (@ms.jit(backend=\"GE\"), or a JitConfig "
                         "with backend=\"GE\")")
        elif _asks_for_o2(config):
            found.append("the graph is compiled with a JitConfig of jit_level 'O2' "
                         "(Cell.set_jit_config(ms.JitConfig(jit_level=\"O2\")))")
    context_config = _context_value("jit_config") or {}
    if _asks_for_o2(context_config):
        found.append(f"ms.set_context(jit_config={context_config!r})")
    elif _context_value("jit_level") == "O2":
        found.append("ms.set_context(jit_level=\"O2\")")
    return found


def refuse_o2(what="ms_groupnorm's AscendC operators"):
    """Raises GraphJitLevelError when the graph being compiled (or the context) asks for O2/GE."""
    found = o2_requests()
    if found:
        raise GraphJitLevelError(
            f"ms_groupnorm: {what} cannot run in a graph compiled at jit_level O2 / with the GE backend "
            f"(asked for by: {'; '.join(found)}). They take num_groups, eps and the output mask as scalar "
            f"arguments, which O2 does not pass to aclnn custom operators; {DEPRECATED}: {INSTEAD}.")
