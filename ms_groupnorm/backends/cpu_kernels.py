"""The compiled CPU kernel library (kernels/cpu): where it is, and its plain C API called
with ctypes for both operators (GroupNorm and the fused GroupNorm + swish).

MindSpore loads the library itself through ``ops.Custom("<path>:<function>")``
(``backends.cpu_aot``); ctypes is used only for kernel-only calls (tests and benchmarks),
which bypass the framework entirely. bfloat16 travels as uint16 bit patterns.
"""
import ctypes
import functools
import os
from pathlib import Path

import numpy as np

LIBRARY_NAME = "libms_groupnorm_cpu.so"
ENV_OVERRIDE = "MS_GROUPNORM_CPU_LIB"

# Status codes returned by every exported entry point (kernels/cpu/aot_status.h).
STATUS_NAMES = {
    0: "ok",
    1: "bad parameter count or null argument arrays",
    2: "null tensor pointer",
    3: "bad rank",
    4: "bad dtype",
    5: "inconsistent shapes or group",
    6: "missing or invalid attribute",
    7: "kernel fault (AscendC twin)",
    8: "num_groups/eps read at run time is invalid (num_groups must be > 0 and divide C)",
}


@functools.lru_cache(maxsize=None)
def library_path():
    """Absolute path of the CPU kernel library: $MS_GROUPNORM_CPU_LIB, else the packaged one."""
    override = os.environ.get(ENV_OVERRIDE)
    if override:
        path = Path(override)
    else:
        path = Path(__file__).resolve().parent.parent / "_lib" / LIBRARY_NAME
    if not path.is_file():
        raise ImportError(
            f"ms_groupnorm: the CPU kernel library {path} is missing. Install the package with "
            f"`pip install .` (or `pip install -e .` in a checkout), which compiles kernels/cpu/, "
            f"or point ${ENV_OVERRIDE} at a built {LIBRARY_NAME}."
        )
    return str(path)


def aot_func(name):
    """The ``func`` string of ``ops.Custom(func_type="aot")`` for an exported kernel."""
    return f"{library_path()}:{name}"


def load_library(path):
    """The kernel library at ``path`` loaded with ctypes, argument types declared.

    Run-time controls (kernels/cpu/runtime_controls.cc) that an older build lacks are
    left undeclared, so benchmarks can load such a build as a baseline."""
    lib = ctypes.CDLL(str(path))
    ptr, i64, cstr = ctypes.c_void_p, ctypes.c_int64, ctypes.c_char_p
    lib.MsGroupNormBackward.restype = ctypes.c_int
    lib.MsGroupNormBackward.argtypes = [ptr] * 8 + [i64] * 4 + [cstr, cstr] + [ctypes.c_int] * 3
    lib.MsGroupNormForward.restype = ctypes.c_int
    lib.MsGroupNormForward.argtypes = [ptr] * 6 + [i64] * 4 + [ctypes.c_float, cstr, cstr]
    declare_silu(lib)
    controls = {  # name: (argtypes, restype)
        "MsGroupNormSetNumThreads": ([ctypes.c_int], None),
        "MsGroupNormGetNumThreads": ([], ctypes.c_int),
        "MsGroupNormSetMinElementsPerThread": ([i64], None),
        "MsGroupNormSetStreamMinBytes": ([i64], None),
        "MsGroupNormActiveIsa": ([], ctypes.c_char_p),
        "MsGroupNormSelectIsa": ([cstr], ctypes.c_int),
    }
    for name, (argtypes, restype) in controls.items():
        if hasattr(lib, name):
            function = getattr(lib, name)
            function.argtypes, function.restype = argtypes, restype
    return lib


def declare_silu(lib):
    """Declares the fused GroupNorm + swish entry points' argument types on a loaded library
    (a baseline build without them is left as it is)."""
    if not hasattr(lib, "MsGroupNormSiluForward"):
        return lib
    ptr, i64, cstr, f32, cint = ctypes.c_void_p, ctypes.c_int64, ctypes.c_char_p, ctypes.c_float, ctypes.c_int
    lib.MsGroupNormSiluForward.restype = cint
    lib.MsGroupNormSiluForward.argtypes = [ptr] * 6 + [i64] * 4 + [f32, f32, cstr, cstr]
    lib.MsGroupNormSiluBackward.restype = cint
    lib.MsGroupNormSiluBackward.argtypes = [ptr] * 9 + [i64] * 4 + [f32, cstr, cstr] + [cint] * 3
    return lib


@functools.lru_cache(maxsize=None)
def _cdll():
    return load_library(library_path())


def cdll():
    """The library loaded with ctypes, argument types declared."""
    return _cdll()


class KernelError(RuntimeError):
    def __init__(self, function, status):
        super().__init__(f"{function} returned {status} ({STATUS_NAMES.get(status, 'unknown status')})")
        self.status = status


def _dtype_name(array):
    """MindSpore's dtype string for a numpy array (bfloat16 travels as uint16 bit patterns)."""
    if array.dtype == np.float32:
        return "float32"
    if array.dtype == np.float16:
        return "float16"
    if array.dtype == np.float64:
        return "float64"  # the layers' float64 path (the aclnn contract itself rejects it)
    raise TypeError(f"unsupported numpy dtype {array.dtype}")


def _ptr(array):
    return None if array is None else array.ctypes.data


# numpy storage of each dtype the C API names (bfloat16 as uint16 bit patterns)
_STORAGE = {"float32": np.float32, "float16": np.float16, "bfloat16": np.uint16, "float64": np.float64}


def _sizes(x):
    """(N, C, HxW) of a contiguous (N, C, *) array."""
    return x.shape[0], x.shape[1], int(np.prod(x.shape[2:], dtype=np.int64))


def _contiguous(*arrays):
    return tuple(None if a is None else np.ascontiguousarray(a) for a in arrays)


def _parameter_gradients(C, mean, output_mask):
    """The dgamma/dbeta buffers a backward writes, None where masked off."""
    return (np.empty((C,), mean.dtype) if output_mask[1] else None,
            np.empty((C,), mean.dtype) if output_mask[2] else None)


def backward(dy, x, mean, rstd, gamma, group, output_mask=(True, True, True), data_dtype=None, stat_dtype=None):
    """Kernel-only backward on contiguous numpy arrays of shape (N, C, *).

    ``data_dtype``/``stat_dtype`` default to the arrays' dtypes; pass "bfloat16" with
    uint16 arrays holding bf16 bit patterns. Returns (dx, dgamma, dbeta), None where masked.
    """
    x, dy, mean, rstd, gamma = _contiguous(x, dy, mean, rstd, gamma)
    N, C, hxw = _sizes(x)
    data_dtype = data_dtype or _dtype_name(x)
    stat_dtype = stat_dtype or _dtype_name(mean)
    dx = np.empty_like(x) if output_mask[0] else None
    dgamma, dbeta = _parameter_gradients(C, mean, output_mask)
    status = cdll().MsGroupNormBackward(
        _ptr(dy), _ptr(x), _ptr(mean), _ptr(rstd), _ptr(gamma), _ptr(dx), _ptr(dgamma), _ptr(dbeta),
        N, C, hxw, group, data_dtype.encode(), stat_dtype.encode(), *[int(bool(m)) for m in output_mask])
    if status:
        raise KernelError("MsGroupNormBackward", status)
    return dx, dgamma, dbeta


def forward(x, gamma, beta, group, eps=1e-5, stat_dtype=None, data_dtype=None):
    """Kernel-only forward on a contiguous numpy array of shape (N, C, *): (y, mean, rstd)."""
    x, gamma, beta = _contiguous(x, gamma, beta)
    N, C, hxw = _sizes(x)
    data_dtype = data_dtype or _dtype_name(x)
    if stat_dtype is None:
        stat_np = x.dtype if gamma is None else gamma.dtype
        stat_dtype = _dtype_name(np.empty(0, stat_np))
    else:  # the buffers must hold what the kernel writes: 4 bytes per float32 statistic
        stat_np = _STORAGE[stat_dtype]
    y = np.empty_like(x)
    mean = np.empty((N, group), stat_np)
    rstd = np.empty((N, group), stat_np)
    status = cdll().MsGroupNormForward(
        _ptr(x), _ptr(gamma), _ptr(beta), _ptr(y), _ptr(mean), _ptr(rstd), N, C, hxw, group, eps,
        data_dtype.encode(), stat_dtype.encode())
    if status:
        raise KernelError("MsGroupNormForward", status)
    return y, mean, rstd


def _check_storage(stat_dtype, **arrays):
    """The buffers the kernel reads must have the size it assumes for ``stat_dtype``."""
    for name, array in arrays.items():
        if array is not None and array.dtype != _STORAGE[stat_dtype]:
            raise TypeError(f"{name} must be stored as {_STORAGE[stat_dtype]} for stat_dtype={stat_dtype}")


def silu_forward(x, gamma, beta, group, eps=1e-5, swish_scale=1.0, data_dtype=None, stat_dtype=None):
    """Kernel-only fused forward: (z, mean, rstd) for a contiguous (N, C, *) array
    (pass data_dtype="bfloat16" with uint16 bits). mean/rstd take gamma's numpy dtype (x's
    without gamma)."""
    x, gamma, beta = _contiguous(x, gamma, beta)
    N, C, hxw = _sizes(x)
    data_dtype = data_dtype or _dtype_name(x)
    if stat_dtype is None:
        stat_np = x.dtype if gamma is None else gamma.dtype
        stat_dtype = "bfloat16" if data_dtype == "bfloat16" and stat_np == np.uint16 else _dtype_name(
            np.empty(0, stat_np))
    _check_storage(stat_dtype, gamma=gamma, beta=beta)
    z = np.empty_like(x)
    mean = np.empty((N, group), _STORAGE[stat_dtype])
    rstd = np.empty((N, group), _STORAGE[stat_dtype])
    status = cdll().MsGroupNormSiluForward(_ptr(x), _ptr(gamma), _ptr(beta), _ptr(z), _ptr(mean), _ptr(rstd), N, C,
                                           hxw, group, eps, swish_scale, data_dtype.encode(), stat_dtype.encode())
    if status:
        raise KernelError("MsGroupNormSiluForward", status)
    return z, mean, rstd


def silu_backward(dz, x, mean, rstd, gamma, beta, group, output_mask=(True, True, True), swish_scale=1.0,
                  data_dtype=None, stat_dtype=None):
    """Kernel-only fused backward: (dx, dgamma, dbeta), None where masked; dtypes as in
    ``silu_forward``."""
    x, dz, mean, rstd, gamma, beta = _contiguous(x, dz, mean, rstd, gamma, beta)
    N, C, hxw = _sizes(x)
    data_dtype = data_dtype or _dtype_name(x)
    stat_dtype = stat_dtype or _dtype_name(mean)
    dx = np.empty_like(x) if output_mask[0] else None
    _check_storage(stat_dtype, mean=mean, rstd=rstd, gamma=gamma, beta=beta)
    dgamma, dbeta = _parameter_gradients(C, mean, output_mask)
    status = cdll().MsGroupNormSiluBackward(
        _ptr(dz), _ptr(x), _ptr(mean), _ptr(rstd), _ptr(gamma), _ptr(beta), _ptr(dx), _ptr(dgamma), _ptr(dbeta),
        N, C, hxw, group, swish_scale, data_dtype.encode(), stat_dtype.encode(), *[int(bool(m)) for m in output_mask])
    if status:
        raise KernelError("MsGroupNormSiluBackward", status)
    return dx, dgamma, dbeta
