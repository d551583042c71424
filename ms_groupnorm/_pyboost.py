"""PyNative fast path: GroupNorm through MindSpore's CustomOpBuilder (pyboost), on by default.

Why: in PYNATIVE_MODE every ``ops.Custom(func_type="aot")`` call pays ~130-150 us of
main-thread CPU in MindSpore's generic single-op path (several times the built-in
GroupNorm/GroupNormGrad call); a pyboost module function only queues the work (~4 us of
main-thread CPU, ~30 us wall per call), about half the built-in call. The module
(ms_groupnorm/_native/group_norm_pyboost.cc) calls the plain C API of
libms_groupnorm_cpu.so, so results are bitwise identical to the aot ops.

How it is built: once per user and MindSpore version, on first use in PYNATIVE_MODE,
with a message on stderr (the compile takes ~35 s of CPU, a minute or more of wall time
on a busy machine, and needs g++, ninja and MindSpore's C++ headers), into
``$MS_GROUPNORM_CACHE`` or ``~/.cache/ms_groupnorm`` (``$XDG_CACHE_HOME`` honoured), never
into the installed package: ``pip uninstall`` then removes everything it installed.
The cache key covers the MindSpore version, the source and the kernel library's path;
later processes only load it (a ninja re-check). ``$MS_GROUPNORM_PYBOOST=0`` opts out.
If the build fails, ``module()`` logs one warning and returns None, and callers keep
using the aot ops.

Caveats the callers (``_ops.py``) take care of:
* a pyboost function called inside a differentiated function WITHOUT a bprop yields zero
  gradients silently, so while autograd records, the forward is the module's
  ``group_norm_autograd``, which records its own backward node (C++ Function API); the
  plain module forward runs only when no gradient is recorded;
* a kernel error surfaces asynchronously (RuntimeError at the next synchronisation), so
  arguments are checked in Python before the call (``_checks.py``);
* GRAPH_MODE keeps the aot ops (``@ms.jit`` inside PYNATIVE_MODE runs the pyboost backward);
* the module launches its kernel in order with MindSpore's other CPU ops, and its autograd
  forward returns only once its backward node is recorded (see _native/pyboost_ordering.h:
  on MindSpore 2.8/2.9 the next op otherwise missed the node and gradients were zero).
"""
import functools
import hashlib
import logging
import os
import shutil
import sys
import time
from pathlib import Path

ENABLE_ENV = "MS_GROUPNORM_PYBOOST"
CACHE_ENV = "MS_GROUPNORM_CACHE"
SOURCE = Path(__file__).resolve().parent / "_native" / "group_norm_pyboost.cc"  # shipped as package data
# Included by every module's source (found next to it); part of every build key.
ORDERING_HEADER = Path(__file__).resolve().parent / "_native" / "pyboost_ordering.h"
# A build lock left by a killed build would make MindSpore's builder wait forever; a real
# build takes about a minute, so a lock this old is stale.
STALE_LOCK_SECONDS = 15 * 60
_OFF_VALUES = ("0", "false", "no", "off")

_logger = logging.getLogger("ms_groupnorm")


def enabled():
    """False only when $MS_GROUPNORM_PYBOOST opts out (0/false/no/off); on by default."""
    return os.environ.get(ENABLE_ENV, "").strip().lower() not in _OFF_VALUES


# MindSpore's C++ Function API (autograd nodes with a C++ Backward), as the installed wheel
# ships it. 2.8 and later ship include/mindspore/ccsrc/include/pynative/backward/function.h;
# the 2.7 wheels ship an earlier one at include/mindspore/ccsrc/pynative/backward/function.h,
# with which PyNative autograd through our three-output node (y, mean, rstd) raises
# "flatten outputs size should be same as grad_node output size, but got: 1 vs 3"
# (measured on 2.7.1). The fast path is off on such a wheel; the aot ops run instead.
FUNCTION_API_HEADER = Path("include", "mindspore", "ccsrc", "include", "pynative", "backward", "function.h")
EARLIER_FUNCTION_API_HEADER = Path("include", "mindspore", "ccsrc", "pynative", "backward", "function.h")


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


def missing_tools():
    """The build tools not found on PATH (the compiler is $CXX, as MindSpore's builder uses)."""
    compiler = (os.environ.get("CXX") or "g++").split()[0]
    return [tool for tool in (compiler, "ninja") if shutil.which(tool) is None]


def cache_root():
    """Where built modules live: $MS_GROUPNORM_CACHE, else the user's cache directory
    (never the installed package, which pip owns)."""
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "ms_groupnorm"


def _build_key(source, library):
    import mindspore

    digest = hashlib.sha256()
    for part in (mindspore.__version__, source.read_bytes(), ORDERING_HEADER.read_bytes(), library):
        digest.update(part if isinstance(part, bytes) else str(part).encode())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def _remove_stale_lock(build_dir):
    lock = build_dir / "build.lock"
    try:
        if time.time() - lock.stat().st_mtime > STALE_LOCK_SECONDS:
            lock.unlink()
            _logger.warning("ms_groupnorm: removed a stale pyboost build lock %s", lock)
    except FileNotFoundError:
        pass


def build_cpu_module(source, name, what):
    """Builds (or re-checks) and loads the CPU CustomOpBuilder module of ``source``, linked
    against the kernel library; raises on any failure. ``name`` prefixes the module and
    its cache directory; ``what`` names it in the messages. Says on stderr when it
    compiles, and how long that took."""
    from mindspore import ops

    from . import _kernel_lib

    if not source.is_file():
        raise FileNotFoundError(f"ms_groupnorm: pyboost source {source} is not installed")
    reason = off_reason()
    if reason:
        raise RuntimeError(f"ms_groupnorm: the PyNative fast path is off: {reason}")
    missing = missing_tools()
    if missing:
        raise RuntimeError(f"ms_groupnorm: building the pyboost module needs {', '.join(missing)} on PATH")
    library = Path(_kernel_lib.library_path()).resolve()
    key = _build_key(source, library)
    module_name = f"{name}_{key}"
    build_dir = cache_root() / "pyboost" / module_name
    build_dir.mkdir(parents=True, exist_ok=True)
    _remove_stale_lock(build_dir)
    compiling = not (build_dir / f"{module_name}.so").is_file()
    if compiling:
        sys.stderr.write(
            f"ms_groupnorm: compiling {what} once for this MindSpore version (about a minute; "
            f"cached in {build_dir}; set {ENABLE_ENV}=0 to skip it and use the slower aot ops)...\n")
        sys.stderr.flush()
    start = time.monotonic()
    # The module name carries the key: MindSpore caches loaded modules by name, and the
    # Python extension's init symbol must match the file name.
    builder = ops.CustomOpBuilder(
        module_name, [str(source)], backend="CPU",
        # -l: links the exact file name; the rpath lets the module find the library at load.
        ldflags=f"-L{library.parent} -l:{library.name} -Wl,-rpath,{library.parent}",
        build_dir=str(build_dir))
    loaded = builder.load()
    if compiling:
        sys.stderr.write(f"ms_groupnorm: {what} built in {time.monotonic() - start:.0f} s\n")
    return loaded


def build():
    """Builds (or re-checks) and loads the GroupNorm pyboost module; raises on any failure."""
    return build_cpu_module(SOURCE, "ms_groupnorm_pyboost", "the PyNative fast path")


@functools.lru_cache(maxsize=None)
def module():
    """The loaded pyboost module, or None (one warning) when it cannot be built."""
    try:
        return build()
    except Exception as error:  # any failure: fall back to the aot ops
        _logger.warning("ms_groupnorm: the PyNative fast path is unavailable, using the aot ops instead "
                        "(set $%s=0 to silence this): %s: %s", ENABLE_ENV, type(error).__name__,
                        str(error).strip()[:2000])
        return None


@functools.lru_cache(maxsize=None)
def backward(group, mask):
    """``(dy, x, mean, rstd, gamma) -> (dx, dgamma, dbeta)`` through pyboost, or None
    when the module is unavailable. Masked-off outputs are empty (0,), as in the aot op."""
    mod = module()
    if mod is None:
        return None
    grad = mod.group_norm_grad
    dx_mask, dgamma_mask, dbeta_mask = (bool(m) for m in mask)
    group = int(group)

    def group_norm_backward(dy, x, mean, rstd, gamma):
        return grad(dy, x, mean, rstd, gamma, group, dx_mask, dgamma_mask, dbeta_mask)

    return group_norm_backward


def _bound_forward(function_name, group, eps):
    """The module's forward ``function_name`` with group and eps bound, or None."""
    mod = module()
    if mod is None:
        return None
    run = getattr(mod, function_name)
    group, eps = int(group), float(eps)

    def group_norm_forward(x, gamma, beta):
        return run(x, gamma, beta, group, eps)

    return group_norm_forward


@functools.lru_cache(maxsize=None)
def forward(group, eps):
    """``(x, gamma, beta) -> (y, mean, rstd)`` through pyboost, or None. Not differentiable
    by itself: use it only where no gradient is recorded (zero-gradient trap)."""
    return _bound_forward("group_norm", group, eps)


@functools.lru_cache(maxsize=None)
def autograd_forward(group, eps):
    """``(x, gamma, beta) -> (y, mean, rstd)`` through pyboost, recorded for PyNative
    autograd by the module itself (MindSpore's C++ Function API: the backward kernel runs
    without a Python bprop), or None. Gradients flow from y only; mean and rstd are saved
    statistics."""
    return _bound_forward("group_norm_autograd", group, eps)
