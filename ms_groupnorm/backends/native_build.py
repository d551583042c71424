"""Building and caching the CustomOpBuilder (pyboost) modules of the PyNative routes: the
CPU fast path (``cpu_pyboost``) and the Ascend module (``ascend_pyboost``).

Both build once per user and MindSpore version (plus the sources, and what each links or
compiles against), on first use, with a message on stderr, into ``$MS_GROUPNORM_CACHE`` or
``~/.cache/ms_groupnorm`` (``$XDG_CACHE_HOME`` honoured): never into the installed package,
so ``pip uninstall`` removes everything it installed. Later processes only load the module
(no lock, no ninja re-check: a module built and loaded once leaves a marker next to
it). ``$MS_GROUPNORM_PYBOOST=0`` opts out of the CPU fast path.
"""
import contextlib
import fcntl
import functools
import hashlib
import importlib.util
import logging
import os
import shutil
import sys
import threading
import time
from pathlib import Path

ENABLE_ENV = "MS_GROUPNORM_PYBOOST"
CACHE_ENV = "MS_GROUPNORM_CACHE"
NATIVE_DIR = Path(__file__).resolve().parent.parent / "_native"  # shipped as package data
# Included by every module's source (found next to it); part of every build key.
ORDERING_HEADER = NATIVE_DIR / "pyboost_ordering.h"
# Included by every module's source too: second-order gradients through its autograd nodes.
SECOND_ORDER_HEADER = NATIVE_DIR / "second_order.h"
# How long a process waits for another one's build before it says so on stderr.
WAIT_NOTICE_SECONDS = 2.0
LOCK_NAME = "ms_groupnorm.lock"  # ours, next to MindSpore's build.lock
MINDSPORE_LOCK_NAME = "build.lock"
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


def once(function):
    """``function()``, computed once per process also when several threads ask at the same
    time (``functools.lru_cache`` alone may run it in each), then read without the lock.
    ``cache_clear()`` forgets the value."""
    lock = threading.Lock()
    unset = object()
    state = [unset]

    @functools.wraps(function)
    def cached():
        value = state[0]
        if value is unset:
            with lock:
                if state[0] is unset:
                    state[0] = function()
                value = state[0]
        return value

    def cache_clear():
        with lock:
            state[0] = unset

    cached.cache_clear = cache_clear
    return cached


class SecondOrderHook:
    """What a module's autograd node's Backward calls while it is itself differentiated
    (second-order gradients; _native/second_order.h): ``function(name, tensors, attrs,
    mask) -> (dx, dgamma, dbeta)``, set by ops.routing, which knows the operators (backends
    do not import ops)."""

    def __init__(self):
        self.function = None

    def __call__(self, name, tensors, attrs, mask):
        if self.function is None:
            raise RuntimeError(f"ms_groupnorm: a gradient of {name}'s gradient needs the hook ms_groupnorm.ops.routing "
                               "sets; import ms_groupnorm first")
        return self.function(name, tensors, attrs, mask)


def _load_extension(module_name, path):
    """Imports the built extension module at ``path`` (what CustomOpBuilder.load does once
    its build is done)."""
    spec = importlib.util.spec_from_file_location(module_name, str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _complete_marker(build_dir, module_name):
    """Written once a build of ``module_name`` loaded: the module file is whole and current
    (its name carries the build key, see build_key)."""
    return build_dir / f"{module_name}.complete"


_IN_PROCESS = threading.RLock()  # one builder at a time per process; the flock orders processes


@contextlib.contextmanager
def build_lock(build_dir, what):
    """Held while a module is built in ``build_dir``: an flock on ``ms_groupnorm.lock``, which
    the kernel releases when its holder dies, so a dead builder never blocks the next one.
    The holder's pid is written in it. A waiter says on stderr, after WAIT_NOTICE_SECONDS,
    what it waits for and where the lock is. Once held, a MindSpore ``build.lock`` in the
    directory belongs to no live builder (every builder holds this lock first) and is removed:
    MindSpore's builder would otherwise wait for it forever, silently."""
    path = build_dir / LOCK_NAME
    with _IN_PROCESS, open(path, "a+") as lock:
        start = time.monotonic()
        told = False
        while True:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not told and time.monotonic() - start >= WAIT_NOTICE_SECONDS:
                    lock.seek(0)
                    owner = lock.read().strip() or "unknown"
                    sys.stderr.write(f"ms_groupnorm: waiting for another process (pid {owner}) that builds {what}; "
                                     f"lock: {path}\n")
                    sys.stderr.flush()
                    told = True
                time.sleep(0.1)
        lock.seek(0)
        lock.truncate()
        lock.write(str(os.getpid()))
        lock.flush()
        left = build_dir / MINDSPORE_LOCK_NAME
        if left.exists():
            left.unlink()
            logger.warning("ms_groupnorm: removed %s, left by a build that did not finish", left)
        try:
            yield
        finally:
            lock.seek(0)
            lock.truncate()


def build_module(module_name, sources, build_dir, announce, done, **builder_options):
    """Builds (or loads) and returns the CustomOpBuilder module ``module_name`` of
    ``sources`` in ``build_dir``. A module built before (its complete marker is there) is
    loaded without any lock or build step. Otherwise it is built under build_lock; when it
    compiles, ``announce`` goes to stderr first and ``done`` (formatted with the seconds
    taken) after. The module name carries the build key: MindSpore caches loaded modules by
    name, and the extension's init symbol must match the file name."""
    library = build_dir / f"{module_name}.so"
    marker = _complete_marker(build_dir, module_name)
    if marker.is_file() and library.is_file():
        return _load_extension(module_name, library)
    from mindspore import ops

    build_dir.mkdir(parents=True, exist_ok=True)
    with build_lock(build_dir, f"the module {module_name}"):
        if marker.is_file() and library.is_file():  # built by the process we waited for
            return _load_extension(module_name, library)
        compiling = not library.is_file()
        if compiling:
            sys.stderr.write(announce + "\n")
            sys.stderr.flush()
        start = time.monotonic()
        loaded = ops.CustomOpBuilder(module_name, [str(s) for s in sources], build_dir=str(build_dir),
                                     **builder_options).load()
        marker.write_text(module_name + "\n")
    if compiling:
        sys.stderr.write(done.format(seconds=time.monotonic() - start) + "\n")
    return loaded
