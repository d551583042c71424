"""Building the CPU twins of the AscendC kernels (the "ascendc_twin" backend loads their aot shims;
the tests' ctypes harness, kernels/ascendc/twin/twin.py, calls the rest).

kernels/ascendc/op_kernel compiled unmodified with g++ against kernels/ascendc/twin's AscendC
stand-in, with the host tiling and input checks, into three libraries (one loader,
``library_path``, cached by a hash of every file of twin/, op_kernel/, op_host/ and the
kernels/cpu headers they include, so no header list needs keeping):

* "backward": GroupNormGradMs and the fused GroupNormSiluGradMs (same kernel class, swish
  gradient on; twin/twin_launch.cc's part of twin/twin_c_api.h), and an aot shim with the CPU kernels' ABI
  (``twin_aot_func("GroupNormGrad")``, ``twin_aot_func("GroupNormSiluGrad")``);
* "forward": GroupNormSiluMs (twin/twin_forward.cc's part of twin/twin_c_api.h) and its aot shims ``GroupNormSilu``
  (SiLU on) and ``GroupNorm`` (SiLU off: GroupNorm's forward, as the Ascend route runs it)
  (``forward_aot_func``).

What MS_GROUPNORM_BACKEND=ascendc_twin runs is ``backends.cpu_aot`` with these aot shims.
Concurrent builders of one library (parallel test workers, the test run's background build)
take turns on a file lock: the first compiles, the others find its result.
"""
import contextlib
import fcntl
import functools
import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

ASCENDC_DIR_ENV = "MS_GROUPNORM_ASCENDC_DIR"
TWIN_CACHE_ENV = "MS_GROUPNORM_TWIN_CACHE"
# The translation units of each library (relative to kernels/ascendc); headers are found
# by the compiler and hashed by directory (HASHED_DIRS).
_RUNTIME = ("twin/twin_runtime.cc", "twin/twin_pipes.cc", "twin/twin_c_api.cc")
BACKWARD_SOURCES = _RUNTIME + ("twin/twin_launch.cc", "twin/twin_aot.cc", "twin/twin_host_checks.cc",
                               "op_kernel/group_norm_grad_ms.cpp", "op_kernel/group_norm_silu_grad_ms.cpp",
                               "op_host/group_norm_grad_ms_tiling.cpp")
FORWARD_SOURCES = _RUNTIME + ("twin/twin_forward.cc", "twin/twin_forward_aot.cc", "op_kernel/group_norm_silu_ms.cpp",
                              "op_host/group_norm_silu_ms_tiling.cpp")
# The probe kernels that break one twin rule each: for the tests only, so not in the libraries
# the "ascendc_twin" backend loads.
PROBE_SOURCES = _RUNTIME + ("twin/twin_probes.cc", "twin/twin_probes_buffers.cc", "twin/twin_probes_sync.cc",
                            "twin/twin_probes_vector.cc", "twin/twin_probes_strided.cc",
                            "twin/twin_probes_common.cc", "twin/twin_probes_math.cc")
LIBRARIES = {"backward": ("libms_groupnorm_ascendc_twin", BACKWARD_SOURCES),
             "forward": ("libms_groupnorm_ascendc_forward_twin", FORWARD_SOURCES),
             "probes": ("libms_groupnorm_ascendc_twin_probes", PROBE_SOURCES)}
# Every file here is part of every library's build key (the twins include the CPU kernels'
# half types and aot ABI helpers from ../cpu).
HASHED_DIRS = ("twin", "op_kernel", "op_host", "../cpu")
_HASHED_SUFFIXES = (".h", ".cc", ".cpp")
_TWIN_FLAGS = ("-std=c++17", "-O2", "-fPIC", "-shared", "-pthread", "-D_GLIBCXX_USE_CXX11_ABI=0",
               "-fvisibility=hidden", "-Wall", "-Wextra")


def ascendc_dir():
    """kernels/ascendc of the source checkout (the twin is built from source)."""
    override = os.environ.get(ASCENDC_DIR_ENV)
    path = Path(override) if override else Path(__file__).resolve().parents[2] / "kernels" / "ascendc"
    if not (path / "op_kernel" / "group_norm_grad_ms.cpp").is_file():
        raise ImportError(f"ms_groupnorm: the AscendC sources are not at {path}; the CPU twin needs a source "
                          f"checkout (or ${ASCENDC_DIR_ENV} pointing at kernels/ascendc).")
    return path


def _cache_dir():
    override = os.environ.get(TWIN_CACHE_ENV)
    candidates = [Path(override)] if override else []
    candidates += [Path(__file__).resolve().parent.parent / "_lib",
                   Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ms_groupnorm"]
    for path in candidates:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(path, os.W_OK):
            return path
    return Path(tempfile.gettempdir())


def _source_digest(root, sources):
    digest = hashlib.sha256(" ".join(_TWIN_FLAGS).encode())
    hashed = set(sources)
    for directory in HASHED_DIRS:
        suffixes = (".h",) if directory.startswith("..") else _HASHED_SUFFIXES  # of kernels/cpu, only headers
        hashed |= {f"{directory}/{p.name}" for p in (root / directory).iterdir() if p.suffix in suffixes}
    for name in sorted(hashed):
        digest.update(name.encode())
        digest.update((root / name).read_bytes())
    return digest.hexdigest()[:16]


@functools.lru_cache(maxsize=None)
def library_path(which):
    """Path of the twin library ``which`` ("backward", "forward" or "probes"), compiled with g++
    on first use and cached by source hash."""
    root = ascendc_dir()
    prefix, sources = LIBRARIES[which]
    target = _cache_dir() / f"{prefix}-{_source_digest(root, sources)}.so"
    with build_lock(target):
        if not target.is_file():
            _compile(which, root, sources, prefix, target)
    return str(target)


@contextlib.contextmanager
def build_lock(target):
    """Held while ``target`` is built, so that another process building it waits for that build
    instead of compiling the same file again."""
    with open(f"{target}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released on close, also when the holder dies
        yield


def _compile(which, root, sources, prefix, target):
    scratch = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    command = ["g++", *_TWIN_FLAGS, f"-I{root / 'twin'}", f"-I{root / 'op_kernel'}",
               *[str(root / s) for s in sources], "-o", str(scratch)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"ms_groupnorm: building the AscendC CPU twin ({which} library) failed:\n"
                           + " ".join(command) + "\n" +
                           result.stderr[-4000:])
    os.replace(scratch, target)  # atomic: a reader never sees a half-written file
    for stale in [*target.parent.glob(f"{prefix}-*.so"), *target.parent.glob(f"{prefix}-*.so.lock")]:
        if not stale.name.startswith(target.name):  # builds of older sources, and their locks
            try:
                stale.unlink()
            except OSError:
                pass


def twin_library_path():
    """Path of the backward twin library (GroupNormGradMs, GroupNormSiluGradMs)."""
    return library_path("backward")


def forward_library_path():
    """Path of the forward twin library (GroupNormSiluMs)."""
    return library_path("forward")


def twin_aot_func(name="GroupNormGrad"):
    """``func`` string of ``ops.Custom(func_type="aot")`` for an entry point of the backward twin."""
    return f"{twin_library_path()}:{name}"


def forward_aot_func(name="GroupNormSilu"):
    """``func`` string of ``ops.Custom(func_type="aot")`` for an aot entry point of the forward twin."""
    return f"{forward_library_path()}:{name}"
