"""Kernel-only (ctypes) calls of the fused GroupNorm + SiLU entry points of the CPU kernel
library, for tests and benchmarks; the library and its other entry points: _kernel_lib."""
import ctypes

import numpy as np

from . import _kernel_lib


def declare(lib):
    """Declares the fused entry points' argument types on a loaded library (once)."""
    if getattr(lib, "_silu_declared", False):
        return lib
    ptr, i64, cstr, f32, cint = ctypes.c_void_p, ctypes.c_int64, ctypes.c_char_p, ctypes.c_float, ctypes.c_int
    lib.MsGroupNormSiluForward.restype = cint
    lib.MsGroupNormSiluForward.argtypes = [ptr] * 6 + [i64] * 4 + [f32, f32, cstr, cstr]
    lib.MsGroupNormSiluBackward.restype = cint
    lib.MsGroupNormSiluBackward.argtypes = [ptr] * 9 + [i64] * 4 + [f32, cstr, cstr] + [cint] * 3
    lib._silu_declared = True
    return lib


_STORAGE = {"float32": np.float32, "float16": np.float16, "bfloat16": np.uint16, "float64": np.float64}


def cdll():
    return declare(_kernel_lib.cdll())


def _ptr(array):
    return None if array is None else array.ctypes.data


def _sizes(x):
    return x.shape[0], x.shape[1], int(np.prod(x.shape[2:], dtype=np.int64))


def forward(x, gamma, beta, group, eps=1e-5, swish_scale=1.0, data_dtype=None, stat_dtype=None):
    """(z, mean, rstd) for a contiguous (N, C, *) array; bfloat16 travels as uint16 bits
    (pass data_dtype="bfloat16"). mean/rstd take gamma's numpy dtype (x's without gamma)."""
    x = np.ascontiguousarray(x)
    N, C, hxw = _sizes(x)
    data_dtype = data_dtype or _kernel_lib._dtype_name(x)
    if stat_dtype is None:
        stat_np = x.dtype if gamma is None else gamma.dtype
        stat_dtype = "bfloat16" if data_dtype == "bfloat16" and stat_np == np.uint16 else _kernel_lib._dtype_name(
            np.empty(0, stat_np))
    stat_np = _STORAGE[stat_dtype]  # the buffers the kernel writes must have the size it assumes
    for name, array in (("gamma", gamma), ("beta", beta)):
        if array is not None and array.dtype != stat_np:
            raise TypeError(f"{name} must be stored as {stat_np} for stat_dtype={stat_dtype}")
    z = np.empty_like(x)
    mean = np.empty((N, group), stat_np)
    rstd = np.empty((N, group), stat_np)
    gamma = None if gamma is None else np.ascontiguousarray(gamma)
    beta = None if beta is None else np.ascontiguousarray(beta)
    status = cdll().MsGroupNormSiluForward(_ptr(x), _ptr(gamma), _ptr(beta), _ptr(z), _ptr(mean), _ptr(rstd), N, C,
                                           hxw, group, eps, swish_scale, data_dtype.encode(), stat_dtype.encode())
    if status:
        raise _kernel_lib.KernelError("MsGroupNormSiluForward", status)
    return z, mean, rstd


def backward(dz, x, mean, rstd, gamma, beta, group, output_mask=(True, True, True), swish_scale=1.0,
             data_dtype=None, stat_dtype=None):
    """(dx, dgamma, dbeta), None where masked; dtypes as in ``forward``."""
    x, dz = np.ascontiguousarray(x), np.ascontiguousarray(dz)
    N, C, hxw = _sizes(x)
    data_dtype = data_dtype or _kernel_lib._dtype_name(x)
    stat_dtype = stat_dtype or _kernel_lib._dtype_name(mean)
    mean, rstd = np.ascontiguousarray(mean), np.ascontiguousarray(rstd)
    gamma = None if gamma is None else np.ascontiguousarray(gamma)
    beta = None if beta is None else np.ascontiguousarray(beta)
    dx = np.empty_like(x) if output_mask[0] else None
    for name, array in (("mean", mean), ("rstd", rstd), ("gamma", gamma), ("beta", beta)):
        if array is not None and array.dtype != _STORAGE[stat_dtype]:
            raise TypeError(f"{name} must be stored as {_STORAGE[stat_dtype]} for stat_dtype={stat_dtype}")
    dgamma = np.empty((C,), mean.dtype) if output_mask[1] else None
    dbeta = np.empty((C,), mean.dtype) if output_mask[2] else None
    status = cdll().MsGroupNormSiluBackward(
        _ptr(dz), _ptr(x), _ptr(mean), _ptr(rstd), _ptr(gamma), _ptr(beta), _ptr(dx), _ptr(dgamma), _ptr(dbeta),
        N, C, hxw, group, swish_scale, data_dtype.encode(), stat_dtype.encode(), *[int(bool(m)) for m in output_mask])
    if status:
        raise _kernel_lib.KernelError("MsGroupNormSiluBackward", status)
    return dx, dgamma, dbeta
