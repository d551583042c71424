"""Building and caching the CustomOpBuilder (pyboost) modules of the PyNative routes: the
CPU fast path (``cpu_pyboost``) and the Ascend module (``ascend_pyboost``).

Both build once per user and MindSpore version (plus the sources, and what each links or
compiles against), on first use, with a message on stderr, into ``$MS_GROUPNORM_CACHE`` or
``~/.cache/ms_groupnorm`` (``$XDG_CACHE_HOME`` honoured): never into the installed package,
so ``pip uninstall`` removes everything it installed. Later processes only load the module
(a ninja re-check). ``$MS_GROUPNORM_PYBOOST=0`` opts out of the CPU fast path.
"""
import hashlib
import logging
import os
import shutil
import sys
import time
from pathlib import Path

ENABLE_ENV = "MS_GROUPNORM_PYBOOST"
CACHE_ENV = "MS_GROUPNORM_CACHE"
NATIVE_DIR = Path(__file__).resolve().parent.parent / "_native"  # shipped as package data
# Included by every module's source (found next to it); part of every build key.
ORDERING_HEADER = NATIVE_DIR / "pyboost_ordering.h"
# A build lock left by a killed build would make MindSpore's builder wait forever; a real
# build takes about a minute, so a lock this old is stale.
STALE_LOCK_SECONDS = 15 * 60
_OFF_VALUES = ("0", "false", "no", "off")

logger = logging.getLogger("ms_groupnorm")


def enabled():
    """False only when $MS_GROUPNORM_PYBOOST opts out (0/false/no/off); on by default."""
    return os.environ.get(ENABLE_ENV, "").strip().lower() not in _OFF_VALUES


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


def build_key(*parts):
    """16 hex digits over the MindSpore version and ``parts`` (bytes, or anything str() names)."""
    import mindspore

    digest = hashlib.sha256()
    for part in (mindspore.__version__,) + parts:
        digest.update(part if isinstance(part, bytes) else str(part).encode())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def remove_stale_lock(build_dir):
    lock = build_dir / "build.lock"
    try:
        if time.time() - lock.stat().st_mtime > STALE_LOCK_SECONDS:
            lock.unlink()
            logger.warning("ms_groupnorm: removed a stale pyboost build lock %s", lock)
    except FileNotFoundError:
        pass


def build_module(module_name, sources, build_dir, announce, done, **builder_options):
    """Builds (or re-checks) and loads the CustomOpBuilder module ``module_name`` of
    ``sources`` in ``build_dir``. When it compiles, writes ``announce`` to stderr first and
    ``done`` (formatted with the seconds taken) after. The module name carries the build key:
    MindSpore caches loaded modules by name, and the extension's init symbol must match the
    file name."""
    from mindspore import ops

    build_dir.mkdir(parents=True, exist_ok=True)
    remove_stale_lock(build_dir)
    compiling = not (build_dir / f"{module_name}.so").is_file()
    if compiling:
        sys.stderr.write(announce + "\n")
        sys.stderr.flush()
    start = time.monotonic()
    loaded = ops.CustomOpBuilder(module_name, [str(s) for s in sources], build_dir=str(build_dir),
                                 **builder_options).load()
    if compiling:
        sys.stderr.write(done.format(seconds=time.monotonic() - start) + "\n")
    return loaded
