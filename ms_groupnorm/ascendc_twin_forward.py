"""The CPU twin of the AscendC GroupNormSiluMs forward kernel: build it and call it.

``forward_library_path`` builds (g++, cached by a hash of the sources) a library of the
unmodified kernels/ascendc/op_kernel/group_norm_silu_ms.cpp compiled against the twin's
AscendC stand-in, the host tiling and input checks, twin/twin_forward.cc's C API and
twin/twin_forward_aot.cc's aot shim ``GroupNormSilu`` (the ABI of the CPU kernel's fused
forward, ``forward_aot_func``: what MS_GROUPNORM_BACKEND=ascendc_twin runs, see _silu_ops).
``forward_tiling``/``forward_launch``/``twin_forward`` call it with ctypes (kernel-only; the
tests make good and deliberately broken launches). Same conventions as ``ascendc_twin``
(the backward's twin): bf16 travels as uint16 bit patterns, policies and executions by name.
"""
import ctypes
import functools
import hashlib
import os
import subprocess

import numpy as np

from . import ascendc_twin
from .ascendc_twin import DTYPE_CODES, UB_910B, TwinFault, _policy_code

_SOURCES = ("twin/twin_runtime.cc", "twin/twin_pipes.cc", "twin/twin_forward.cc", "twin/twin_forward_aot.cc",
            "op_kernel/group_norm_silu_ms.cpp", "op_host/group_norm_silu_ms_tiling.cpp")
# The aot shim reads the ABI with the CPU entry points' helpers (kernels/cpu/aot_abi.h).
_HEADERS = ("op_kernel/group_norm_silu_ms.h", "op_kernel/group_norm_silu_ms_resident.h",
            "op_kernel/group_norm_silu_ms_chunked.h", "op_kernel/group_norm_silu_ms_copies.h",
            "op_kernel/group_norm_silu_ms_tiling_data.h", "op_kernel/group_norm_silu_ms_stats.h",
            "op_host/group_norm_silu_ms_tiling.h", "../cpu/half_types.h", "../cpu/aot_abi.h", "../cpu/aot_extra.h",
            "../cpu/aot_status.h", "../cpu/group_norm_sizes.h")
MODE_NAMES = {0: "group_resident", 1: "chunked", 2: "empty_groups"}
TILING_STATUS = {1: "bad shape", 2: "bad dtype pair", 3: "bad platform", 4: "does not fit in UB", 5: "missing input"}
UB_RESERVE = 1024  # bytes of UB the host tiling leaves unused (gnsms::kUbReserveBytes)


@functools.lru_cache(maxsize=None)
def forward_library_path():
    """Path of the forward twin library, compiled on first use and cached by source hash
    (every twin header counts, so a change of the shared twin rebuilds it)."""
    root = ascendc_twin.ascendc_dir()
    flags = ascendc_twin._TWIN_FLAGS
    digest = hashlib.sha256(" ".join(flags).encode())
    headers = sorted(str(p.relative_to(root)) for p in (root / "twin").glob("*.h"))
    for name in _SOURCES + _HEADERS + tuple(headers):
        digest.update(name.encode())
        digest.update((root / name).read_bytes())
    target = ascendc_twin._cache_dir() / f"libms_groupnorm_ascendc_forward_twin-{digest.hexdigest()[:16]}.so"
    if target.is_file():
        return str(target)
    scratch = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    command = ["g++", *flags, f"-I{root / 'twin'}", f"-I{root / 'op_kernel'}", *[str(root / s) for s in _SOURCES],
               "-o", str(scratch)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError("ms_groupnorm: building the AscendC forward twin failed:\n" + " ".join(command) + "\n" +
                           result.stderr[-4000:])
    os.replace(scratch, target)
    for stale in target.parent.glob("libms_groupnorm_ascendc_forward_twin-*.so"):
        if stale != target:
            try:
                stale.unlink()
            except OSError:
                pass
    return str(target)


def forward_aot_func(name="GroupNormSilu"):
    """``func`` string of ``ops.Custom(func_type="aot")`` for an aot entry point of the forward twin."""
    return f"{forward_library_path()}:{name}"


@functools.lru_cache(maxsize=None)
def _cdll():
    lib = ctypes.CDLL(forward_library_path())
    i64, ptr, cint, dbl = ctypes.c_int64, ctypes.c_void_p, ctypes.c_int, ctypes.c_double
    lib.GnsmsTwinTilingFields.restype = ctypes.c_char_p
    lib.GnsmsTwinTiling.restype = cint
    lib.GnsmsTwinTiling.argtypes = [i64] * 4 + [cint, cint, dbl, cint, dbl, i64, i64, ptr, ptr]
    lib.GnsmsTwinLaunch.restype = cint
    lib.GnsmsTwinLaunch.argtypes = [ptr, ptr, ptr, dbl, dbl, i64, i64, i64, cint, ctypes.c_uint64, ctypes.c_char_p,
                                    cint]
    lib.GnsmsTwinCheckInputs.restype = cint
    lib.GnsmsTwinCheckInputs.argtypes = [ptr, ptr, ptr, ctypes.c_char_p, cint]
    lib.GnsmsTwinCheckDtypes.restype = cint
    lib.GnsmsTwinCheckDtypes.argtypes = [cint, cint, cint, ctypes.c_char_p, cint]
    lib.GnsmsTwinMathProbe.restype = cint
    lib.GnsmsTwinMathProbe.argtypes = [ctypes.c_char_p, ptr, cint, ctypes.c_char_p, cint]
    lib.GnsmsTwinCostModel.restype = None
    lib.GnsmsTwinCostModel.argtypes = [ptr, ptr]
    lib.GnsmsTwinLastStats.restype = cint
    lib.GnsmsTwinLastStats.argtypes = [ptr, cint]
    return lib


def forward_tiling_fields():
    return _cdll().GnsmsTwinTilingFields().decode().split(",")


def forward_tiling(N, C, HxW, G, data_dtype="float32", param_dtype=None, eps=1e-5, activate_silu=True,
                   swish_scale=1.0, ub_bytes=UB_910B, core_num=48):
    """The host tiling's result as a dict (int fields, plus "key", "eps", "swish_scale");
    raises ValueError on failure."""
    param_dtype = param_dtype or data_dtype
    fields = forward_tiling_fields()
    out = np.zeros(len(fields), np.int64)
    key = ctypes.c_int64(0)
    status = _cdll().GnsmsTwinTiling(N, C, HxW, G, DTYPE_CODES[data_dtype], DTYPE_CODES[param_dtype], eps,
                                     int(bool(activate_silu)), swish_scale, ub_bytes, core_num, out.ctypes.data,
                                     ctypes.byref(key))
    if status:
        raise ValueError(f"tiling failed: {TILING_STATUS.get(status, status)}")
    tiling = dict(zip(fields, (int(v) for v in out)))
    tiling.update(key=key.value, eps=float(eps), swish_scale=float(swish_scale))
    return tiling


def forward_check_inputs(x, gamma, beta, num_groups):
    """The host's input validation (gnsms::CheckInputs) on shapes given as tuples; None stands
    for a missing descriptor (or, for num_groups, a missing attribute). Returns (status, message)."""
    shapes = (x, gamma, beta)
    ranks = np.array([-1 if s is None else len(s) for s in shapes], np.int64)
    dims = np.array([d for s in shapes if s is not None for d in s] or [0], np.int64)
    groups = None if num_groups is None else ctypes.byref(ctypes.c_int64(num_groups))
    error = ctypes.create_string_buffer(1024)
    status = _cdll().GnsmsTwinCheckInputs(dims.ctypes.data, ranks.ctypes.data, groups, error, len(error))
    return status, error.value.decode()


def forward_check_dtypes(x, gamma, beta):
    """The host's dtype rule (gnsms::CheckDtypes) on dtype names. Returns (status, message)."""
    error = ctypes.create_string_buffer(1024)
    status = _cdll().GnsmsTwinCheckDtypes(DTYPE_CODES[x], DTYPE_CODES[gamma], DTYPE_CODES[beta], error, len(error))
    return status, error.value.decode()


def forward_launch(buffers, tiling, ub_bytes=UB_910B, core_num=48, policy="concurrent", seed=0, buffer_bytes=None,
                   execution="immediate"):
    """Runs the kernel on the twin. ``buffers``: x, gamma, beta, y, mean, rstd (numpy arrays or
    None); ``buffer_bytes`` overrides the sizes the launch declares. Raises TwinFault."""
    ptrs = (ctypes.c_void_p * 6)(*[None if b is None else b.ctypes.data for b in buffers])
    sizes = np.array(buffer_bytes if buffer_bytes is not None else
                     [0 if b is None else b.nbytes for b in buffers], np.int64)
    fields = np.array([tiling[name] for name in forward_tiling_fields()], np.int64)
    error = ctypes.create_string_buffer(2048)
    status = _cdll().GnsmsTwinLaunch(ptrs, sizes.ctypes.data, fields.ctypes.data, tiling["eps"],
                                     tiling["swish_scale"], tiling["key"], ub_bytes, core_num,
                                     _policy_code(policy, execution), seed, error, len(error))
    if status:
        raise TwinFault(error.value.decode())


def twin_forward(x, gamma, beta, num_groups, eps=1e-5, activate_silu=True, swish_scale=1.0, data_dtype=None,
                 param_dtype=None, ub_bytes=UB_910B, core_num=48, policy="concurrent", seed=0,
                 execution="immediate"):
    """Kernel-only forward on the twin: returns (y, mean, rstd, tiling); y in x's storage dtype,
    mean and rstd float32 of shape (N, G). bf16 travels as uint16 (pass data_dtype/param_dtype
    "bfloat16"); gamma/beta None mean ones/zeros (the operator itself requires both)."""
    x = np.ascontiguousarray(x)
    N, C = x.shape[:2]
    hxw = int(np.prod(x.shape[2:], dtype=np.int64))
    names = {np.dtype(np.float32): "float32", np.dtype(np.float16): "float16"}
    data_dtype = data_dtype or names[x.dtype]
    if param_dtype is None:
        present = gamma if gamma is not None else beta
        param_dtype = names[present.dtype] if present is not None and present.dtype != np.uint16 else data_dtype
    storage = {"float32": np.float32, "float16": np.float16, "bfloat16": np.uint16}[param_dtype]
    one = {"float32": np.float32(1), "float16": np.float16(1), "bfloat16": np.uint16(0x3F80)}[param_dtype]
    gamma = np.full((C,), one) if gamma is None else np.ascontiguousarray(gamma, storage)
    beta = np.zeros((C,), storage) if beta is None else np.ascontiguousarray(beta, storage)
    tiling = forward_tiling(N, C, hxw, num_groups, data_dtype, param_dtype, eps, activate_silu, swish_scale,
                            ub_bytes, core_num)
    y = np.full_like(x, 0x7F)  # garbage where the kernel must write
    mean = np.full((N, num_groups), 12345.0, np.float32)
    rstd = np.full((N, num_groups), 12345.0, np.float32)
    forward_launch([x, gamma, beta, y, mean, rstd], tiling, ub_bytes, core_num, policy, seed, execution=execution)
    return y, mean, rstd, tiling


def forward_math_probe(name, a, b, execution="immediate"):
    """Runs one of twin_forward.cc's math probes on inputs a, b (32 floats each); returns
    (exp(a), sqrt(a), a / b) as the probe wrote them, raises TwinFault or KeyError."""
    lib = _cdll()
    gm = np.zeros(160, np.float32)
    gm[:32], gm[32:64] = a, b
    error = ctypes.create_string_buffer(2048)
    status = lib.GnsmsTwinMathProbe(name.encode(), gm.ctypes.data, ascendc_twin.EXECUTIONS[execution], error,
                                    len(error))
    if status == 2:
        raise KeyError(name)
    if status:
        raise TwinFault(error.value.decode())
    return gm[64:96], gm[96:128], gm[128:160]


def forward_cost_model(**changes):
    """The forward library's cost constants (twin::CostModel) as a dict; keyword arguments
    change them for its later launches (ascendc_twin.COST_FIELDS)."""
    lib = _cdll()
    fields = ascendc_twin.COST_FIELDS
    out = np.zeros(len(fields), np.float64)
    lib.GnsmsTwinCostModel(None, out.ctypes.data)
    if changes:
        unknown = set(changes) - set(fields)
        if unknown:
            raise KeyError(f"unknown cost constants {sorted(unknown)}; known: {fields}")
        values = np.array([changes.get(name, out[i]) for i, name in enumerate(fields)], np.float64)
        lib.GnsmsTwinCostModel(values.ctypes.data, out.ctypes.data)
    return dict(zip(fields, (float(v) for v in out)))


def forward_last_stats():
    """Per-block cost counters of the forward library's last successful launch (dicts of
    ascendc_twin.STAT_FIELDS)."""
    lib = _cdll()
    blocks = lib.GnsmsTwinLastStats(None, 0)
    out = np.zeros((max(blocks, 1), len(ascendc_twin.STAT_FIELDS)), np.float64)
    lib.GnsmsTwinLastStats(out.ctypes.data, blocks)
    return [dict(zip(ascendc_twin.STAT_FIELDS, row)) for row in out[:blocks]]
