"""The CPU PyNative fast path: the operators' functions through one MindSpore CustomOpBuilder
(pyboost) module, on by default (``$MS_GROUPNORM_PYBOOST=0`` opts out).

Why: in PYNATIVE_MODE every ``ops.Custom(func_type="aot")`` call pays ~130-150 us of
main-thread CPU in MindSpore's generic single-op path (several times the built-in
GroupNorm/GroupNormGrad call); a pyboost module function only queues the work (~4 us of
main-thread CPU, ~30 us wall per call), about half the built-in call. The module
(``_native/cpu_pyboost.cc``: each operator's part is ``_native/<operator>_pyboost.h``, all in
one translation unit so that MindSpore's headers compile once) calls the plain C API of
libms_groupnorm_cpu.so, so results are bitwise identical to the aot ops.

Every operator has the same three functions in it, named by its description
(``ops.descriptions``): ``<name>(tensors..., attrs...)``, ``<name>_autograd`` (the same,
recorded for PyNative autograd with the C++ Function API) and ``<name>_grad(tensors...,
attrs..., mask...)``; this file binds the attributes once per configuration.

How it is built: once per user and MindSpore version, on first use in PYNATIVE_MODE,
with a message on stderr (``native_build``: where it is cached, and why never in the
package). If the build fails, ``module()`` logs one warning and returns None, and callers
keep using the aot ops.

Caveats the callers (``ops.routing``) take care of:
* a pyboost function called inside a differentiated function WITHOUT a bprop yields zero
  gradients silently, so while autograd records, the forward is the module's
  ``*_autograd``, which records its own backward node (C++ Function API); the plain module
  forward runs only when no gradient is recorded;
* a kernel error surfaces asynchronously (RuntimeError at the next synchronisation), so
  arguments are checked in Python before the call (``ops.checks``);
* GRAPH_MODE keeps the aot ops (``@ms.jit`` inside PYNATIVE_MODE runs the pyboost backward);
* the module launches its kernel in order with MindSpore's other CPU ops, and its autograd
  forward returns only once its backward node is recorded (see _native/pyboost_ordering.h:
  on MindSpore 2.8/2.9 the next op otherwise missed the node and gradients were zero).
"""
import functools
from pathlib import Path

from . import cpu_kernels
from .native_build import (CACHE_ENV, ENABLE_ENV, NATIVE_DIR, ORDERING_HEADER, SECOND_ORDER_HEADER, build_key,
                           build_module, cache_root, enabled, logger, missing_tools, once, SecondOrderHook)

OP_CACHE_SIZE = 256  # bound functions kept per getter, as ops.routing.OP_CACHE_SIZE

MODULE_PREFIX = "ms_groupnorm_pyboost"  # + the build key
SOURCE = NATIVE_DIR / "cpu_pyboost.cc"  # the module's one translation unit


def source(name):
    """The part of operator ``name`` (its description's name), which SOURCE includes."""
    return NATIVE_DIR / f"{name}_pyboost.h"


# MindSpore's C++ Function API (autograd nodes with a C++ Backward), as the installed wheel
# ships it. 2.8 and later ship include/mindspore/ccsrc/include/pynative/backward/function.h;
# the 2.7 wheels ship an earlier one at include/mindspore/ccsrc/pynative/backward/function.h,
# with which PyNative autograd through our three-output node (y, mean, rstd) raises
# "flatten outputs size should be same as grad_node output size, but got: 1 vs 3"
# (measured on 2.7.1). The fast path is off on such a wheel; the aot ops run instead.
FUNCTION_API_HEADER = Path("include", "mindspore", "ccsrc", "include", "pynative", "backward", "function.h")
EARLIER_FUNCTION_API_HEADER = Path("include", "mindspore", "ccsrc", "pynative", "backward", "function.h")
SHARED_HEADERS = (ORDERING_HEADER, SECOND_ORDER_HEADER, NATIVE_DIR / "cpu_pyboost_common.h")  # part of the build key


def off_reason():
    """Why the installed MindSpore cannot run the CPU fast path, or None when it can."""
    import mindspore

    root = Path(mindspore.__file__).resolve().parent
    if (root / FUNCTION_API_HEADER).is_file():
        return None
    if (root / EARLIER_FUNCTION_API_HEADER).is_file():
        return (f"MindSpore {mindspore.__version__} ships the earlier C++ Function API "
                f"({EARLIER_FUNCTION_API_HEADER}), with which autograd through the module's "
                "three-output node fails")
    return f"MindSpore {mindspore.__version__} ships no C++ Function API header ({FUNCTION_API_HEADER})"


def _module_sources():
    """SOURCE and every file it includes from _native/ (the build key covers them all)."""
    return [SOURCE, *sorted(NATIVE_DIR.glob("*_pyboost.h")), *SHARED_HEADERS]


def build():
    """Builds (or re-checks) and loads the CPU module, linked against the kernel library;
    raises on any failure."""
    sources = _module_sources()
    for path in sources:
        if not path.is_file():
            raise FileNotFoundError(f"ms_groupnorm: pyboost source {path} is not installed")
    reason = off_reason()
    if reason:
        raise RuntimeError(f"ms_groupnorm: the PyNative fast path is off: {reason}")
    missing = missing_tools()
    if missing:
        raise RuntimeError(f"ms_groupnorm: building the pyboost module needs {', '.join(missing)} on PATH")
    library = Path(cpu_kernels.library_path()).resolve()
    module_name = f"{MODULE_PREFIX}_{build_key(*[path.read_bytes() for path in sources], library)}"
    build_dir = cache_root() / "pyboost" / module_name
    return build_module(
        module_name, [SOURCE], build_dir,
        f"ms_groupnorm: compiling the PyNative fast path once for this MindSpore version (about a minute; cached "
        f"in {build_dir}; set {ENABLE_ENV}=0 to skip it and use the slower aot ops)...",
        "ms_groupnorm: the PyNative fast path built in {seconds:.0f} s",
        backend="CPU",
        # -l: links the exact file name; the rpath lets the module find the library at load.
        ldflags=f"-L{library.parent} -l:{library.name} -Wl,-rpath,{library.parent}")


second_order_hook = SecondOrderHook()  # set by ops.routing


@once
def module():
    """The loaded module, or None (one warning) when it cannot be built."""
    try:
        loaded = build()
        loaded.set_differentiable_backward(second_order_hook)
        return loaded
    except Exception as error:  # any failure: fall back to the aot ops
        logger.warning("ms_groupnorm: the PyNative fast path is unavailable, using the aot ops instead (set $%s=0 "
                       "to silence this): %s: %s", ENABLE_ENV, type(error).__name__, str(error).strip()[:2000])
        return None


def _bind(function, attrs):
    """``function`` with the trailing scalar arguments ``attrs`` bound."""
    def bound(*tensors):
        return function(*tensors, *attrs)
    return bound


@functools.lru_cache(maxsize=OP_CACHE_SIZE)  # bounded: eps is part of attrs
def forwards(name, attrs):
    """(plain, differentiable) ``(x, gamma, beta) -> (out, mean, rstd)`` of operator ``name``
    with its attributes ``attrs`` bound, or None. The plain one is not differentiable by
    itself: use it only where no gradient is recorded (zero-gradient trap); the other is
    recorded for PyNative autograd by the module itself (the backward kernel runs without
    a Python bprop; gradients flow from out only, mean and rstd are saved statistics)."""
    mod = module()
    if mod is None:
        return None
    return _bind(getattr(mod, name), attrs), _bind(getattr(mod, f"{name}_autograd"), attrs)


@functools.lru_cache(maxsize=OP_CACHE_SIZE)
def backward(name, attrs, mask):
    """``(dy, x, mean, rstd, gamma[, beta]) -> (dx, dgamma, dbeta)`` of operator ``name``, or
    None. Masked-off outputs are empty (0,), as in the aot op."""
    mod = module()
    if mod is None:
        return None
    return _bind(getattr(mod, f"{name}_grad"), tuple(attrs) + tuple(bool(m) for m in mask))


__all__ = ["CACHE_ENV", "ENABLE_ENV", "MODULE_PREFIX", "SOURCE", "backward", "build", "cache_root", "enabled", "forwards",
           "missing_tools", "module", "off_reason", "source"]
