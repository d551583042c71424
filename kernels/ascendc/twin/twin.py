"""The CPU twins of the AscendC kernels, called with ctypes: the tests' and scripts' harness, not part
of the installed package (tests find it through setup.cfg's pythonpath, scripts add this folder to
sys.path). The libraries are built by ms_groupnorm/backends/twin_build.py, whose names this module
re-exports: the "backward" library runs GroupNormGradMs and the fused GroupNormSiluGradMs, the
"forward" library GroupNormSiluMs, the "probes" library the probe kernels.

``twin_tiling``/``twin_launch``/``twin_backward``/``twin_silu_backward``/``twin_probe`` and
``forward_tiling``/``forward_launch``/``twin_forward`` call them with ctypes, through one set of
declarations (both operator libraries export twin_c_api.h's entry points; kernel-only;
tests use them to make both good and deliberately broken launches). bf16 travels as uint16
bit patterns; policies and executions by name. What MS_GROUPNORM_BACKEND=ascendc_twin runs
is ``ms_groupnorm.backends.cpu_aot`` with these aot shims; the operators on a real device are
``ms_groupnorm.backends.ascend``.
"""
import ctypes
import functools

import numpy as np

# re-exported: what tests and scripts reach through this module
from ms_groupnorm.backends.twin_build import (ASCENDC_DIR_ENV, BACKWARD_SOURCES, FORWARD_SOURCES, HASHED_DIRS, LIBRARIES,  # noqa: F401
                         TWIN_CACHE_ENV, ascendc_dir, build_lock, forward_aot_func, forward_library_path,
                         library_path, PROBE_SOURCES, twin_aot_func, twin_library_path)

# ---------------------------------------------------------------- the CPU twin: ctypes calls
POLICIES = {"concurrent": 0, "forward": 1, "reverse": 2, "shuffle": 3, "interleave": 4}
# How each pipe's work runs (twin_pipes.h): "immediate" at issue, "deferred" when a sync forces it.
# The C entry points take it in bits 8+ of the policy argument.
EXECUTIONS = {"immediate": 0, "deferred": 1}
# Float overflow modes of the device (twin::Config::saturation): "inf_nan" is the Atlas A2
# default and what MindSpore 2.10 runs on 910B; "saturation": inf -> +-max, NaN -> 0.
OVERFLOW_MODES = {"inf_nan": 0, "saturation": 1}


def _policy_code(policy, execution, auto_sync=True, overflow="inf_nan"):
    """The policy argument of the C entry points: bits 0-7 block order, 8-15 pipe execution,
    17 no --cce-auto-sync, 18 saturation mode; callers that need them add 16 (no hazard checks)
    and 19 (the relaxations for CANN's kernels). twin_c_api.h's LaunchConfig reads it."""
    return (POLICIES[policy] | (EXECUTIONS[execution] << 8) | (0 if auto_sync else 1 << 17)
            | (OVERFLOW_MODES[overflow] << 18))
DTYPE_CODES = {"float32": 0, "float16": 1, "bfloat16": 2}
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
MODE_NAMES = {0: "group_resident", 1: "channel_two_pass", 2: "hw_chunks", 3: "hw_one"}
TILING_STATUS = {1: "bad shape", 2: "bad dtype pair", 3: "bad platform", 4: "does not fit in UB", 5: "missing input",
                 6: "bad attribute"}
UB_RESERVE = 1024  # bytes of UB the host tiling leaves unused (ms_groupnorm::grad_tiling::kUbReserveBytes)
UB_910B = 196608  # Atlas A2 (Ascend910B) vector core UB, 192 KiB


class TwinFault(RuntimeError):
    """The twin stopped a launch for breaking a hardware rule."""


def _with_common_api(lib):
    """``lib`` with the calls every twin library has (twin_c_api.cc) declared."""
    ptr, cint = ctypes.c_void_p, ctypes.c_int
    lib.GnmsTwinLastStats.restype = cint
    lib.GnmsTwinLastStats.argtypes = [ptr, cint]
    lib.GnmsTwinCostModel.restype = None
    lib.GnmsTwinCostModel.argtypes = [ptr, ptr]
    lib.GnmsTwinFieldNames.restype = ctypes.c_char_p
    lib.GnmsTwinFieldNames.argtypes = [cint]
    return lib


def _operator_api(lib):
    """``lib``, an operator's library (twin_launch.cc or twin_forward.cc), with twin_c_api.h's
    entry points declared: both define the same ones, with the same signatures."""
    i64, ptr, cint, text = ctypes.c_int64, ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p
    lib.GnmsTwinArrayNames.restype = text
    lib.GnmsTwinArrayNames.argtypes = [cint]
    lib.GnmsTwinTilingFields.restype = text
    lib.GnmsTwinTilingFields.argtypes = []
    lib.GnmsTwinTiling.restype = cint
    lib.GnmsTwinTiling.argtypes = [ptr, ptr, ptr, i64, i64, ptr, ptr]
    lib.GnmsTwinLaunch.restype = cint
    lib.GnmsTwinLaunch.argtypes = [ptr, ptr, ptr, ptr, i64, i64, i64, cint, ctypes.c_uint64, text, cint]
    lib.GnmsTwinCheckInputs.restype = cint
    lib.GnmsTwinCheckInputs.argtypes = [ptr, ptr, ptr, text, cint]
    lib.GnmsTwinCheckDtypes.restype = cint
    lib.GnmsTwinCheckDtypes.argtypes = [ptr, text, cint]
    return _with_common_api(lib)


@functools.lru_cache(maxsize=None)
def _twin_cdll():
    """The backward library (GroupNormGradMs, GroupNormSiluGradMs)."""
    return _operator_api(ctypes.CDLL(twin_library_path()))


# GnmsTwinArrayNames' ``which`` (twin_c_api.h's GnmsTwinArray).
_ARRAYS = {"options": 0, "scalars": 1, "buffers": 2, "inputs": 3, "dtypes": 4}


def _array_names(lib, array):
    """The element names of one of ``lib``'s operator arrays, in the library's order."""
    return tuple(lib.GnmsTwinArrayNames(_ARRAYS[array]).decode().split(","))


def _pack(lib, array, values, dtype):
    """``values`` (a dict by element name) as the array ``array`` of ``lib``, in its layout; the
    names must match exactly, so that an element added on one side cannot go unnoticed."""
    names = _array_names(lib, array)
    if set(values) != set(names):
        raise KeyError(f"{array}: the library takes {names}, given {sorted(values)}")
    return np.array([values[name] for name in names], dtype)


def _tiling(lib, shape, options, scalars, ub_bytes, core_num):
    """GnmsTwinTiling: (int64 fields as a dict, tiling key); raises ValueError on failure."""
    fields = lib.GnmsTwinTilingFields().decode().split(",")
    out = np.zeros(len(fields), np.int64)
    key = ctypes.c_int64(0)
    shape = np.array(shape, np.int64)
    options = _pack(lib, "options", options, np.intc)
    scalars = _pack(lib, "scalars", scalars, np.float64)
    status = lib.GnmsTwinTiling(shape.ctypes.data, options.ctypes.data, scalars.ctypes.data, ub_bytes, core_num,
                                out.ctypes.data, ctypes.byref(key))
    if status:
        raise ValueError(f"tiling failed: {TILING_STATUS.get(status, status)}")
    return dict(zip(fields, (int(v) for v in out))), key.value


def _launch(lib, buffers, buffer_bytes, tiling, scalars, ub_bytes, core_num, policy_code, seed):
    """GnmsTwinLaunch of ``buffers`` (numpy arrays or None, at most the library's buffer count;
    the rest None); ``buffer_bytes`` overrides the sizes the launch declares. Raises TwinFault."""
    count = len(_array_names(lib, "buffers"))
    buffers = list(buffers) + [None] * (count - len(buffers))
    ptrs = (ctypes.c_void_p * count)(*[_raw(b) for b in buffers])
    sizes = list(buffer_bytes) if buffer_bytes is not None else [0 if b is None else b.nbytes for b in buffers]
    sizes = np.array(sizes + [0] * (count - len(sizes)), np.int64)
    fields = np.array([tiling[name] for name in lib.GnmsTwinTilingFields().decode().split(",")], np.int64)
    scalars = _pack(lib, "scalars", scalars, np.float64)
    error = ctypes.create_string_buffer(2048)
    status = lib.GnmsTwinLaunch(ptrs, sizes.ctypes.data, fields.ctypes.data, scalars.ctypes.data, tiling["key"],
                                ub_bytes, core_num, policy_code, seed, error, len(error))
    if status:
        raise TwinFault(error.value.decode())


def _check_dtypes(lib, dtypes):
    """GnmsTwinCheckDtypes on dtype names given by element name: (status, message)."""
    codes = _pack(lib, "dtypes", {k: DTYPE_CODES[v] for k, v in dtypes.items()}, np.intc)
    error = ctypes.create_string_buffer(1024)
    status = lib.GnmsTwinCheckDtypes(codes.ctypes.data, error, len(error))
    return status, error.value.decode()


@functools.lru_cache(maxsize=None)
def _probe_cdll():
    """The probe kernels' library (twin_probes*.cc), apart from the operators' libraries."""
    lib = ctypes.CDLL(library_path("probes"))
    lib.GnmsTwinProbe.restype = ctypes.c_int
    lib.GnmsTwinProbe.argtypes = [ctypes.c_char_p, ctypes.c_int64, ctypes.c_int64, ctypes.c_int64, ctypes.c_int,
                                  ctypes.c_uint64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_char_p, ctypes.c_int]
    return _with_common_api(lib)


@functools.lru_cache(maxsize=2)
def _field_names(which):
    return tuple(_twin_cdll().GnmsTwinFieldNames(which).decode().rstrip(",").split(","))


def __getattr__(name):
    """COST_FIELDS (the cost constants, twin::CostModel) and STAT_FIELDS (the per-block
    counters, twin::PipeStats), in the C API's order, as the twin library names them
    (twin_runtime.h's GNMS_TWIN_COST_FIELDS / GNMS_TWIN_STAT_FIELDS): read from it, never
    written here, so the two sides cannot disagree."""
    if name in _FIELD_LISTS:
        return _field_names(_FIELD_LISTS[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_FIELD_LISTS = {"COST_FIELDS": 0, "STAT_FIELDS": 1}


def _cost_model(cost_model_function, changes):
    """A library's cost constants (twin::CostModel) as a dict; ``changes`` set some for its
    later launches."""
    fields = _field_names(0)
    out = np.zeros(len(fields), np.float64)
    cost_model_function(None, out.ctypes.data)
    if changes:
        unknown = set(changes) - set(fields)
        if unknown:
            raise KeyError(f"unknown cost constants {sorted(unknown)}; known: {fields}")
        values = np.array([changes.get(name, out[i]) for i, name in enumerate(fields)], np.float64)
        cost_model_function(values.ctypes.data, out.ctypes.data)
    return dict(zip(fields, (float(v) for v in out)))


def _last_stats(last_stats_function):
    """Per-block cost counters of a library's last successful launch: dicts of STAT_FIELDS."""
    fields = _field_names(1)
    blocks = last_stats_function(None, 0)
    out = np.zeros((max(blocks, 1), len(fields)), np.float64)
    last_stats_function(out.ctypes.data, blocks)
    return [dict(zip(fields, row)) for row in out[:blocks]]


def twin_cost_model(**changes):
    """The backward twin's cost constants (twin::CostModel) as a dict; keyword arguments change
    them for later launches from Python."""
    return _cost_model(_twin_cdll().GnmsTwinCostModel, changes)


def twin_last_stats():
    """Per-block cost counters of the backward library's last successful launch: a list of
    dicts (STAT_FIELDS)."""
    return _last_stats(_twin_cdll().GnmsTwinLastStats)


def probe_cost_model(**changes):
    """twin_cost_model for the probe library's launches."""
    return _cost_model(_probe_cdll().GnmsTwinCostModel, changes)


def probe_last_stats():
    """twin_last_stats for the last probe that ran to its end."""
    return _last_stats(_probe_cdll().GnmsTwinLastStats)


def tiling_fields():
    """Names of the int64 fields of GroupNormGradMsTilingData; its float ``swishScale`` is the
    tiling dict's "swish_scale"."""
    return _twin_cdll().GnmsTwinTilingFields().decode().split(",")


def twin_tiling(N, C, HxW, G, data_dtype="float32", stat_dtype=None, ub_bytes=UB_910B, core_num=48,
                mask=(True, True, True), silu=False, swish_scale=1.0):
    """The host tiling function's result as a dict (plus "key" and "swish_scale"); raises
    ValueError on failure. ``silu``: the fused GroupNormSiluGradMs's tiling."""
    stat_dtype = stat_dtype or data_dtype
    dx, dgamma, dbeta = (int(bool(m)) for m in mask)
    options = {"dataType": DTYPE_CODES[data_dtype], "statType": DTYPE_CODES[stat_dtype], "dxRequired": dx,
               "dgammaRequired": dgamma, "dbetaRequired": dbeta, "silu": int(bool(silu))}
    tiling, key = _tiling(_twin_cdll(), (N, C, HxW, G), options, {"swishScale": float(swish_scale)}, ub_bytes,
                          core_num)
    tiling["key"] = key
    tiling["swish_scale"] = float(np.float32(swish_scale)) if silu else 1.0
    return tiling


def _check_inputs(lib, shapes, num_groups):
    """GnmsTwinCheckInputs on ``shapes`` (a dict by input name of tuples, None for a missing
    descriptor) and num_groups (None: a missing attribute): (status, message)."""
    names = _array_names(lib, "inputs")
    if set(shapes) != set(names):
        raise KeyError(f"inputs: the library takes {names}, given {sorted(shapes)}")
    ordered = [shapes[name] for name in names]
    ranks = np.array([-1 if s is None else len(s) for s in ordered], np.int64)
    dims = np.array([d for s in ordered if s is not None for d in s] or [0], np.int64)
    groups = None if num_groups is None else ctypes.byref(ctypes.c_int64(num_groups))
    error = ctypes.create_string_buffer(1024)
    status = lib.GnmsTwinCheckInputs(dims.ctypes.data, ranks.ctypes.data, groups, error, len(error))
    return status, error.value.decode()


def twin_check_inputs(dy, mean, rstd, x, gamma, num_groups):
    """The host's input validation (ms_groupnorm::grad_tiling::CheckInputs) on shapes given as tuples; None stands
    for a missing descriptor (or, for num_groups, a missing attribute). Returns (status, message)."""
    return _check_inputs(_twin_cdll(), {"dy": dy, "mean": mean, "rstd": rstd, "x": x, "gamma": gamma}, num_groups)


def _raw(array):
    return None if array is None else array.ctypes.data


def twin_launch(buffers, tiling, ub_bytes=UB_910B, core_num=48, policy="concurrent", seed=0, buffer_bytes=None,
                execution="immediate", auto_sync=True, overflow="inf_nan"):
    """Runs the kernel on the twin. ``buffers``: dy, mean, rstd, x, gamma, dx, dgamma, dbeta and,
    for the fused entry (tiling["silu"]), beta (numpy arrays or None); ``buffer_bytes``
    overrides the sizes the launch declares."""
    _launch(_twin_cdll(), buffers, buffer_bytes, tiling, {"swishScale": float(tiling.get("swish_scale", 1.0))},
            ub_bytes, core_num, _policy_code(policy, execution, auto_sync, overflow), seed)


def _launch_backward(dy, x, mean, rstd, gamma, beta, group, silu, swish_scale, mask, data_dtype, stat_dtype,
                     ub_bytes, core_num, policy, seed, execution, auto_sync, overflow):
    """One kernel-only backward launch, GroupNormGradMs (silu False, beta unused) or the fused
    GroupNormSiluGradMs; gamma/beta None mean ones/zeros. Returns (dx, dgamma, dbeta, tiling)."""
    x = np.ascontiguousarray(x)
    dy = np.ascontiguousarray(dy)
    mean, rstd = np.ascontiguousarray(mean), np.ascontiguousarray(rstd)
    N, C = x.shape[:2]
    hxw = int(np.prod(x.shape[2:], dtype=np.int64))
    names = {np.dtype(np.float32): "float32", np.dtype(np.float16): "float16"}
    data_dtype = data_dtype or names[x.dtype]
    stat_dtype = stat_dtype or names[mean.dtype]
    if gamma is None:
        one = {"float32": np.float32(1), "float16": np.float16(1), "bfloat16": np.uint16(0x3F80)}[stat_dtype]
        gamma = np.full((C,), one)
    gamma = np.ascontiguousarray(gamma)
    if silu:
        beta = np.zeros((C,), mean.dtype) if beta is None else np.ascontiguousarray(beta)
        tiling = twin_tiling(N, C, hxw, group, data_dtype, stat_dtype, ub_bytes, core_num, mask, silu=True,
                             swish_scale=swish_scale)
    else:
        beta = None  # GroupNormGradMs takes eight buffers
        tiling = twin_tiling(N, C, hxw, group, data_dtype, stat_dtype, ub_bytes, core_num, mask)
    dx = np.full_like(x, 0x7F) if mask[0] else None  # garbage where the kernel must write
    dgamma = np.full((C,), 0x7F, mean.dtype) if mask[1] else None
    dbeta = np.full((C,), 0x7F, mean.dtype) if mask[2] else None
    twin_launch([dy, mean, rstd, x, gamma, dx, dgamma, dbeta, beta], tiling, ub_bytes, core_num, policy, seed,
                execution=execution, auto_sync=auto_sync, overflow=overflow)
    return dx, dgamma, dbeta, tiling


def twin_backward(dy, x, mean, rstd, gamma, group, mask=(True, True, True), data_dtype=None, stat_dtype=None,
                  ub_bytes=UB_910B, core_num=48, policy="concurrent", seed=0, execution="immediate",
                  auto_sync=True, overflow="inf_nan"):
    """Kernel-only backward on the twin, our interface: returns (dx, dgamma, dbeta, tiling).
    bf16 travels as uint16 bit patterns (pass data_dtype/stat_dtype "bfloat16"); gamma None means ones."""
    return _launch_backward(dy, x, mean, rstd, gamma, None, group, False, 1.0, mask, data_dtype, stat_dtype,
                            ub_bytes, core_num, policy, seed, execution, auto_sync, overflow)


def twin_silu_backward(dz, x, mean, rstd, gamma, beta, group, swish_scale=1.0, mask=(True, True, True),
                       data_dtype=None, stat_dtype=None, ub_bytes=UB_910B, core_num=48, policy="concurrent",
                       seed=0, execution="immediate", auto_sync=True, overflow="inf_nan"):
    """Kernel-only fused backward (GroupNormSiluGradMs) on the twin: the gradients of
    z = y * sigmoid(swish_scale * y), y = group_norm(x) * gamma + beta, given dz. Returns
    (dx, dgamma, dbeta, tiling); conventions of ``twin_backward``; gamma/beta None mean ones/zeros."""
    return _launch_backward(dz, x, mean, rstd, gamma, beta, group, True, swish_scale, mask, data_dtype, stat_dtype,
                            ub_bytes, core_num, policy, seed, execution, auto_sync, overflow)


def twin_probe(name, block_dim=4, core_num=48, ub_bytes=UB_910B, policy="concurrent", seed=0, out_len=64,
               execution="immediate", init=None, check_hazards=True, auto_sync=True, overflow="inf_nan"):
    """Runs one of the mini kernels of twin_probes*.cc; returns its GM buffer (initially ``init``,
    zero-padded to out_len), raises TwinFault. ``check_hazards=False`` lets a probe with a
    missing synchronisation run to the end (to see what it computes under deferred execution)."""
    out = np.zeros(out_len, np.float32)
    if init is not None:
        out[:len(init)] = init
    error = ctypes.create_string_buffer(2048)
    status = _probe_cdll().GnmsTwinProbe(name.encode(), block_dim, core_num, ub_bytes,
                                        _policy_code(policy, execution, auto_sync, overflow) | (0 if check_hazards else 1 << 16),
                                        seed,
                                        out.ctypes.data, out_len, error, len(error))
    if status == 2:
        raise KeyError(name)
    if status:
        raise TwinFault(error.value.decode())
    return out


# ---------------------------------------------------------------- the forward twin: ctypes calls
FORWARD_MODE_NAMES = {0: "group_resident", 1: "chunked", 2: "empty_groups"}
# The forward host tiling leaves the same UB_RESERVE unused (ms_groupnorm::forward_tiling::kUbReserveBytes).


@functools.lru_cache(maxsize=None)
def _forward_cdll():
    """The forward library (GroupNormSiluMs): the same C API as the backward's."""
    return _operator_api(ctypes.CDLL(forward_library_path()))


def forward_tiling_fields():
    return _forward_cdll().GnmsTwinTilingFields().decode().split(",")


def forward_tiling(N, C, HxW, G, data_dtype="float32", param_dtype=None, eps=1e-5, activate_silu=True,
                   swish_scale=1.0, ub_bytes=UB_910B, core_num=48):
    """The host tiling's result as a dict (int fields, plus "key", "eps", "swish_scale");
    raises ValueError on failure."""
    param_dtype = param_dtype or data_dtype
    options = {"dataType": DTYPE_CODES[data_dtype], "paramType": DTYPE_CODES[param_dtype],
               "activateSilu": int(bool(activate_silu))}
    tiling, key = _tiling(_forward_cdll(), (N, C, HxW, G), options, {"eps": eps, "swishScale": swish_scale},
                          ub_bytes, core_num)
    tiling.update(key=key, eps=float(eps), swish_scale=float(swish_scale))
    return tiling


def forward_check_inputs(x, gamma, beta, num_groups):
    """The host's input validation (ms_groupnorm::forward_tiling::CheckInputs) on shapes given as tuples; None stands
    for a missing descriptor (or, for num_groups, a missing attribute). Returns (status, message)."""
    return _check_inputs(_forward_cdll(), {"x": x, "gamma": gamma, "beta": beta}, num_groups)


def forward_check_dtypes(x, gamma, beta):
    """The host's dtype rule (ms_groupnorm::forward_tiling::CheckDtypes) on dtype names. Returns (status, message)."""
    return _check_dtypes(_forward_cdll(), {"x": x, "gamma": gamma, "beta": beta})


def forward_launch(buffers, tiling, ub_bytes=UB_910B, core_num=48, policy="concurrent", seed=0, buffer_bytes=None,
                   execution="immediate"):
    """Runs the kernel on the twin. ``buffers``: x, gamma, beta, y, mean, rstd (numpy arrays or
    None); ``buffer_bytes`` overrides the sizes the launch declares. Raises TwinFault."""
    scalars = {"eps": tiling["eps"], "swishScale": tiling["swish_scale"]}
    _launch(_forward_cdll(), buffers, buffer_bytes, tiling, scalars, ub_bytes, core_num, _policy_code(policy, execution),
            seed)


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
    """Runs one of twin_probes_math.cc's probes of the forward's Exp, Sqrt and Div on inputs a, b
    (32 floats each); returns (exp(a), sqrt(a), a / b) as the probe wrote them, raises TwinFault or
    KeyError."""
    if name not in _MATH_PROBES:
        raise KeyError(name)
    init = np.zeros(160, np.float32)
    init[:32], init[32:64] = a, b
    gm = twin_probe(name, block_dim=1, out_len=160, init=init, execution=execution)
    return gm[64:96], gm[96:128], gm[128:160]


_MATH_PROBES = ("math_values", "exp_misaligned", "sqrt_overrun", "div_negative_count")


def forward_cost_model(**changes):
    """The forward library's cost constants (twin::CostModel) as a dict; keyword arguments
    change them for its later launches (COST_FIELDS)."""
    return _cost_model(_forward_cdll().GnmsTwinCostModel, changes)


def forward_last_stats():
    """Per-block cost counters of the forward library's last successful launch (dicts of
    STAT_FIELDS)."""
    return _last_stats(_forward_cdll().GnmsTwinLastStats)
