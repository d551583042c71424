"""Which MindSpore versions ms_groupnorm supports, checked once at import, and the few
MindSpore internals whose home moved between those versions.

Why a range, not one version: on an Ascend machine each MindSpore release is built for one
CANN, so the user's MindSpore is not a free choice; installing ms_groupnorm must keep it
(setup.cfg's ``install_requires`` states the same range) and importing it with a version
outside the range must fail once, clearly, instead of deep inside a kernel call.
"""
import functools
import importlib
import re
import sys

# Keep in step with setup.cfg's install_requires and the README's version table.
OLDEST = (2, 7, 1)   # the first release whose CustomOpBuilder, Function API and aot ABI we use
NEWEST_EXCLUDED = (2, 11)  # not yet checked against
SUPPORTED_RANGE = "mindspore>=2.7.1,<2.11"


class UnsupportedMindSporeError(ImportError):
    """The installed MindSpore is outside SUPPORTED_RANGE."""


def parse_version(text):
    """The leading numeric release of a version string: "2.10.0rc1" -> (2, 10, 0)."""
    match = re.match(r"\s*(\d+(?:\.\d+)*)", str(text))
    if match is None:
        raise UnsupportedMindSporeError(
            f"ms_groupnorm needs {SUPPORTED_RANGE}; cannot read the MindSpore version {text!r}")
    return tuple(int(part) for part in match.group(1).split("."))


def is_supported(version_text):
    release = parse_version(version_text)
    padded = release + (0,) * (3 - len(release))
    return OLDEST <= padded and padded[:2] < NEWEST_EXCLUDED


def installed_mindspore_version():
    """The installed MindSpore's version, from its package metadata (so that an unsupported
    MindSpore is refused before it is imported), else from the module itself."""
    from importlib import metadata
    try:
        return metadata.version("mindspore")
    except metadata.PackageNotFoundError:
        import mindspore  # a source tree without metadata: ask the module
        return mindspore.__version__


def check_mindspore_version(version_text=None):
    """Raises UnsupportedMindSporeError naming the supported range when the installed (or
    given) MindSpore version is outside it."""
    version_text = installed_mindspore_version() if version_text is None else version_text
    if not is_supported(version_text):
        raise UnsupportedMindSporeError(
            f"ms_groupnorm supports {SUPPORTED_RANGE}, but MindSpore {version_text} is installed. "
            f"Install a supported one (pip install \"{SUPPORTED_RANGE}\"), choosing the release "
            f"that pairs with your CANN on Ascend (README, 'Supported MindSpore versions').")


def _api_module():
    # MindSpore 2.9 moved mindspore.common.api to mindspore.graph.api and logs a deprecation
    # warning when the old name is imported; the new home, where it exists, keeps import silent.
    try:
        return importlib.import_module("mindspore.graph.api")
    except ImportError:
        return importlib.import_module("mindspore.common.api")


def pynative_executor():
    """MindSpore's PyNative executor object (``_pynative_executor``), from where this version keeps it."""
    return _api_module()._pynative_executor  # pylint: disable=protected-access


# The graph compiler evaluates callables it cannot parse (our op getters, see
# evaluated_by_graph_compiler) through this function of its parser module, whose home
# moved in 2.9 (mindspore._extends.parse.parser -> mindspore.graph._parse.parser).
_PARSER_EVAL = "eval_script"
_PARSER_MODULES = ("mindspore._extends.parse.parser", "mindspore.graph._parse.parser")
# Our getter is called from the compiler's eval within a few frames: 7 from eval_script to
# here on the longest route today (forward_op -> forward_op_for -> ... -> eager_pynative);
# 10 leaves room, for ~1 us. tests/test_ascend_jit_level.py fails if a route grows past it.
_FRAMES_TO_LOOK_AT = 10


def compiling_graph():
    """True while MindSpore's graph compiler (``@ms.jit`` in PYNATIVE_MODE, or GRAPH_MODE)
    calls the caller, i.e. the op it returns becomes a graph node instead of running now.
    MindSpore has no public query for this, so the call stack is read: a few frames, ~1 us."""
    frame = sys._getframe(1)  # pylint: disable=protected-access
    for _ in range(_FRAMES_TO_LOOK_AT):
        frame = frame.f_back
        if frame is None:
            return False
        if frame.f_code.co_name == _PARSER_EVAL and frame.f_globals.get("__name__") in _PARSER_MODULES:
            return True
    return False


def evaluated_by_graph_compiler(function):
    """``function``, wrapped so that MindSpore's graph compiler calls it in Python while
    compiling instead of parsing its body.

    The op getters of ``ops.routing`` are called inside functions that MindSpore compiles
    (``functional.py`` in GRAPH_MODE, ``@ms.jit``). Their bodies read the environment and
    the context, which graph syntax cannot express; but MindSpore treats a callable
    implemented in C as opaque and calls it with the (constant) arguments at compile time,
    using the op it returns as a graph node. ``functools.lru_cache`` is the standard
    library's C-implemented wrapper around a Python function; ``maxsize=0`` makes it cache
    nothing, because the answer depends on the backend and mode at each call (the ops
    themselves are cached per backend)."""
    return functools.lru_cache(maxsize=0)(function)


@functools.lru_cache(maxsize=None)
def _executor():
    return pynative_executor()


def reset_mixed_precision():
    """Ends a Cell's ``to_float`` scope in PyNative, as MindSpore does when construct returns
    (``Cell._call_post_process``); see layers.PynativeMixedPrecision for when we need it."""
    from mindspore._c_expression import MixedPrecisionType

    _executor().set_mixed_precision_type(MixedPrecisionType.NOTSET, False)


def recording_gradient():
    """True while PyNative autograd records the ops being run (inside ms.grad,
    value_and_grad, a training step...); ~2 us."""
    return _executor().requires_grad()
