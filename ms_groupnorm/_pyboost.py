"""Opt-in PyNative fast path: GroupNorm through MindSpore's CustomOpBuilder (pyboost).

Why: in PYNATIVE_MODE every ``ops.Custom(func_type="aot")`` call pays ~130-150 us of
main-thread CPU in MindSpore's generic single-op path, synchronously; a pyboost module
function only queues the work (~4 us of main-thread CPU, ~30 us wall per call). The module (ms_groupnorm/_native/group_norm_pyboost.cc) calls
the plain C API of libms_groupnorm_cpu.so, so results are bitwise identical.

Why opt-in ($MS_GROUPNORM_PYBOOST=1): the first build takes ~35 s of CPU (a minute or more
of wall time on a busy machine) and needs g++, ninja and MindSpore's C++ headers. The
build is done once, lazily, into a cache directory keyed by the MindSpore version, the
source and the kernel library's path; later processes only re-check it (ninja).
If the build fails, ``module()`` logs one warning and returns None, and callers keep
using the aot ops.

What it buys (measured, tiny shapes, busy 2-core machine; README has the numbers): a
direct ``group_norm_backward`` call is ~5x cheaper in wall time. Inside a training step
(``forward_op``'s bprop) it pays off at moderate sizes (8 layers of (4, 32, 16, 16): 0.7x
the aot step) but NOT for tiny tensors (8 layers of (2, 8, 4): ~1.5x), where autograd's
waits on the asynchronous queue cost more than the aot op's synchronous overhead.

Caveats the callers (``_ops.py``) take care of:
* a pyboost function called inside a differentiated function WITHOUT a bprop yields zero
  gradients silently, so the forward is only used through an op that has a bprop;
* a kernel error surfaces asynchronously (RuntimeError at the next synchronisation), so
  arguments are checked in Python before the call (``_checks.py``);
* GRAPH_MODE keeps the aot ops (``@ms.jit`` inside PYNATIVE_MODE runs the pyboost ones);
* the module launches its kernel in order with MindSpore's other CPU ops (see
  InlineLaunchRunner in the .cc: the default deferred launch let consumers read outputs
  before they were written).
"""
import functools
import hashlib
import logging
import os
import shutil
import time
from pathlib import Path

ENABLE_ENV = "MS_GROUPNORM_PYBOOST"
CACHE_ENV = "MS_GROUPNORM_CACHE"
SOURCE = Path(__file__).resolve().parent / "_native" / "group_norm_pyboost.cc"  # shipped as package data
# A build lock left by a killed build would make MindSpore's builder wait forever; a real
# build takes about a minute, so a lock this old is stale.
STALE_LOCK_SECONDS = 15 * 60

_logger = logging.getLogger("ms_groupnorm")


def enabled():
    """True when $MS_GROUPNORM_PYBOOST asks for the fast path (1/true/yes/on)."""
    return os.environ.get(ENABLE_ENV, "").strip().lower() in ("1", "true", "yes", "on")


def missing_tools():
    """The build tools not found on PATH (the compiler is $CXX, as MindSpore's builder uses)."""
    compiler = (os.environ.get("CXX") or "g++").split()[0]
    return [tool for tool in (compiler, "ninja") if shutil.which(tool) is None]


def _cache_root():
    override = os.environ.get(CACHE_ENV)
    if override:
        return Path(override)
    packaged = Path(__file__).resolve().parent / "_lib" / "pyboost"
    try:
        packaged.mkdir(parents=True, exist_ok=True)
        if os.access(packaged, os.W_OK):
            return packaged
    except OSError:
        pass
    # A read-only install (site-packages owned by root): use the user's cache instead.
    return Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ms_groupnorm" / "pyboost"


def _build_key(library):
    import mindspore

    digest = hashlib.sha256()
    for part in (mindspore.__version__, SOURCE.read_bytes(), library):
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


def build():
    """Builds (or re-checks) and loads the pyboost module; raises on any failure."""
    from mindspore import ops

    from . import _kernel_lib

    if not SOURCE.is_file():
        raise FileNotFoundError(f"ms_groupnorm: pyboost source {SOURCE} is not installed")
    missing = missing_tools()
    if missing:
        raise RuntimeError(f"ms_groupnorm: building the pyboost module needs {', '.join(missing)} on PATH")
    library = Path(_kernel_lib.library_path()).resolve()
    key = _build_key(library)
    build_dir = _cache_root() / key
    build_dir.mkdir(parents=True, exist_ok=True)
    _remove_stale_lock(build_dir)
    # The module name carries the key: MindSpore caches loaded modules by name, and the
    # Python extension's init symbol must match the file name.
    builder = ops.CustomOpBuilder(
        f"ms_groupnorm_pyboost_{key}", [str(SOURCE)], backend="CPU",
        # -l: links the exact file name; the rpath lets the module find the library at load.
        ldflags=f"-L{library.parent} -l:{library.name} -Wl,-rpath,{library.parent}",
        build_dir=str(build_dir))
    return builder.load()


@functools.lru_cache(maxsize=None)
def module():
    """The loaded pyboost module, or None (one warning) when it cannot be built."""
    try:
        return build()
    except Exception as error:  # any failure: fall back to the aot ops
        _logger.warning("ms_groupnorm: the PyNative fast path ($%s=1) is unavailable, using the aot ops "
                        "instead: %s: %s", ENABLE_ENV, type(error).__name__, str(error).strip()[:2000])
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


@functools.lru_cache(maxsize=None)
def forward(group, eps):
    """``(x, gamma, beta) -> (y, mean, rstd)`` through pyboost, or None. Not differentiable
    by itself: use it only inside something with a bprop (zero-gradient trap)."""
    mod = module()
    if mod is None:
        return None
    run = mod.group_norm
    group, eps = int(group), float(eps)

    def group_norm_forward(x, gamma, beta):
        return run(x, gamma, beta, group, eps)

    return group_norm_forward
