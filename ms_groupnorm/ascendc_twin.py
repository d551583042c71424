"""The CPU twin of the AscendC GroupNormGradMs kernel: build it and call it.

* ``twin_library_path`` builds (g++, cached by a hash of the sources) the CPU twin:
  kernels/ascendc/op_kernel compiled unmodified against kernels/ascendc/twin's AscendC
  stand-in, plus the host tiling function and an aot shim with the same ABI as the CPU
  backward (``twin_aot_func("GroupNormGrad")``).
* ``twin_tiling``/``twin_launch``/``twin_backward``/``twin_probe`` call the twin with ctypes
  (kernel-only; tests use them to make both good and deliberately broken launches).
  ``twin_silu_backward`` runs the fused GroupNormSiluGradMs entry (same kernel class with the
  swish gradient on; the aot shim is ``twin_aot_func("GroupNormSiluGrad")``).

The operator's registration on a real Ascend device is ``ascend``.
"""
import ctypes
import functools
import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np

# ---------------------------------------------------------------- the CPU twin: build
ASCENDC_DIR_ENV = "MS_GROUPNORM_ASCENDC_DIR"
TWIN_CACHE_ENV = "MS_GROUPNORM_TWIN_CACHE"
_TWIN_SOURCES = ("twin/twin_runtime.cc", "twin/twin_pipes.cc", "twin/twin_launch.cc", "twin/twin_aot.cc",
                 "twin/twin_probes.cc", "twin/twin_probes_buffers.cc", "twin/twin_probes_sync.cc",
                 "twin/twin_probes_vector.cc", "twin/twin_host_checks.cc", "op_kernel/group_norm_grad_ms.cpp",
                 "op_kernel/group_norm_silu_grad_ms.cpp", "op_host/group_norm_grad_ms_tiling.cpp")
_TWIN_HEADERS = ("twin/kernel_operator.h", "twin/kernel_operator_sync.h", "twin/kernel_operator_buffers.h",
                 "twin/kernel_operator_data_copy.h", "twin/kernel_operator_vector.h", "twin/build_rules.h",
                 "twin/twin_runtime.h", "twin/twin_pipes.h", "twin/twin_launch.h", "twin/twin_probes.h",
                 "op_kernel/group_norm_grad_ms.h", "op_kernel/group_norm_grad_ms_tiling_data.h",
                 "op_kernel/group_norm_grad_ms_common.h", "op_kernel/group_norm_grad_ms_copies.h",
                 "op_kernel/group_norm_grad_ms_stage2.h", "op_kernel/group_norm_grad_ms_channels.h",
                 "op_kernel/group_norm_grad_ms_hw_one.h", "op_kernel/group_norm_grad_ms_split.h",
                 "op_kernel/swish_grad_math.h",
                 "op_host/group_norm_grad_ms_tiling.h", "../cpu/half_types.h", "../cpu/aot_extra.h",
                 "../cpu/aot_status.h")
# kernel_operator.h includes the forward kernel's vector math (ms_groupnorm.ascendc_twin_forward).
_TWIN_HEADERS += ("twin/kernel_operator_forward_math.h",)
_TWIN_FLAGS = ("-std=c++17", "-O2", "-fPIC", "-shared", "-pthread", "-D_GLIBCXX_USE_CXX11_ABI=0",
               "-fvisibility=hidden", "-Wall", "-Wextra")


def ascendc_dir():
    """kernels/ascendc of the source checkout (the twin is built from source)."""
    override = os.environ.get(ASCENDC_DIR_ENV)
    path = Path(override) if override else Path(__file__).resolve().parent.parent / "kernels" / "ascendc"
    if not (path / "op_kernel" / "group_norm_grad_ms.cpp").is_file():
        raise ImportError(f"ms_groupnorm: the AscendC sources are not at {path}; the CPU twin needs a source "
                          f"checkout (or ${ASCENDC_DIR_ENV} pointing at kernels/ascendc).")
    return path


def _cache_dir():
    override = os.environ.get(TWIN_CACHE_ENV)
    candidates = [Path(override)] if override else []
    candidates += [Path(__file__).resolve().parent / "_lib",
                   Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "ms_groupnorm"]
    for path in candidates:
        try:
            path.mkdir(parents=True, exist_ok=True)
        except OSError:
            continue
        if os.access(path, os.W_OK):
            return path
    return Path(tempfile.gettempdir())


@functools.lru_cache(maxsize=None)
def twin_library_path():
    """Path of the twin library, compiled with g++ on first use and cached by source hash."""
    root = ascendc_dir()
    digest = hashlib.sha256(" ".join(_TWIN_FLAGS).encode())
    for name in _TWIN_SOURCES + _TWIN_HEADERS:
        digest.update(name.encode())
        digest.update((root / name).read_bytes())
    target = _cache_dir() / f"libms_groupnorm_ascendc_twin-{digest.hexdigest()[:16]}.so"
    if target.is_file():
        return str(target)
    scratch = target.with_name(f"{target.name}.{os.getpid()}.tmp")
    command = ["g++", *_TWIN_FLAGS, f"-I{root / 'twin'}", f"-I{root / 'op_kernel'}",
               *[str(root / s) for s in _TWIN_SOURCES], "-o", str(scratch)]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError("ms_groupnorm: building the AscendC CPU twin failed:\n" + " ".join(command) + "\n" +
                           result.stderr[-4000:])
    os.replace(scratch, target)  # atomic: concurrent builders never see a half-written file
    for stale in target.parent.glob("libms_groupnorm_ascendc_twin-*.so"):
        if stale != target:  # builds of older sources
            try:
                stale.unlink()
            except OSError:
                pass
    return str(target)


def twin_aot_func(name="GroupNormGrad"):
    """``func`` string of ``ops.Custom(func_type="aot")`` for an entry point of the twin."""
    return f"{twin_library_path()}:{name}"


# ---------------------------------------------------------------- the CPU twin: ctypes calls
POLICIES = {"concurrent": 0, "forward": 1, "reverse": 2, "shuffle": 3, "interleave": 4}
# How each pipe's work runs (twin_pipes.h): "immediate" at issue, "deferred" when a sync forces it.
# The C entry points take it in bits 8+ of the policy argument.
EXECUTIONS = {"immediate": 0, "deferred": 1}
# Per-block cost counters of the last launch (twin::PipeStats, in order).
STAT_FIELDS = ("gm_read_bytes", "gm_write_bytes", "scalar_ub", "scalar_gm", "vec_calls", "vec_repeats",
               "barriers_all", "barriers_pipe", "user_flag_pairs", "queue_flag_pairs", "sync_alls", "busy_s_ns",
               "busy_v_ns", "busy_mte2_ns", "busy_mte3_ns", "time_at_syncall_ns", "end_ns", "api_flag_pairs",
               "auto_v_barriers", "dma_bursts")
# Float overflow modes of the device (twin::Config::saturation): "inf_nan" is the Atlas A2
# default and what MindSpore 2.10 runs on 910B; "saturation": inf -> +-max, NaN -> 0.
OVERFLOW_MODES = {"inf_nan": 0, "saturation": 1}


def _policy_code(policy, execution, auto_sync=True, overflow="inf_nan"):
    """The policy argument of the C entry points: bits 0-7 block order, 8-15 pipe execution,
    16 no hazard checks (probes only), 17 no --cce-auto-sync, 18 saturation mode."""
    return (POLICIES[policy] | (EXECUTIONS[execution] << 8) | (0 if auto_sync else 1 << 17)
            | (OVERFLOW_MODES[overflow] << 18))
DTYPE_CODES = {"float32": 0, "float16": 1, "bfloat16": 2}
DTYPE_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}
MODE_NAMES = {0: "group_resident", 1: "channel_two_pass", 2: "hw_chunks", 3: "hw_one"}
TILING_STATUS = {1: "bad shape", 2: "bad dtype pair", 3: "bad platform", 4: "does not fit in UB", 5: "missing input"}
UB_RESERVE = 1024  # bytes of UB the host tiling leaves unused (gnms::kUbReserveBytes)
UB_910B = 196608  # Atlas A2 (Ascend910B) vector core UB, 192 KiB


class TwinFault(RuntimeError):
    """The twin stopped a launch for breaking a hardware rule."""


@functools.lru_cache(maxsize=None)
def _twin_cdll():
    lib = ctypes.CDLL(twin_library_path())
    i64, ptr, cint = ctypes.c_int64, ctypes.c_void_p, ctypes.c_int
    lib.GnmsTwinTilingFields.restype = ctypes.c_char_p
    lib.GnmsTwinTiling.restype = cint
    dbl = ctypes.c_double
    lib.GnmsTwinTiling.argtypes = [i64] * 4 + [cint, cint, i64, i64, cint, cint, cint, cint, dbl, ptr, ptr]
    lib.GnmsTwinLaunch.restype = cint
    lib.GnmsTwinLaunch.argtypes = [ptr, ptr, ptr, dbl, i64, i64, i64, cint, ctypes.c_uint64, ctypes.c_char_p, cint]
    lib.GnmsTwinCheckInputs.restype = cint
    lib.GnmsTwinCheckInputs.argtypes = [ptr, ptr, ptr, ctypes.c_char_p, cint]
    lib.GnmsTwinProbe.restype = cint
    lib.GnmsTwinProbe.argtypes = [ctypes.c_char_p, i64, i64, i64, cint, ctypes.c_uint64, ptr, i64,
                                  ctypes.c_char_p, cint]
    lib.GnmsTwinLastStats.restype = cint
    lib.GnmsTwinLastStats.argtypes = [ptr, cint]
    lib.GnmsTwinCostModel.restype = None
    lib.GnmsTwinCostModel.argtypes = [ptr, ptr]
    return lib


COST_FIELDS = ("clock_ghz", "gm_bytes_per_ns", "dma_setup_cycles", "dma_latency_ns", "vec_cycles_per_repeat",
               "vec_start_cycles", "scalar_ub_cycles", "scalar_gm_ns", "syncall_ns", "dma_burst_cycles",
               "vec_barrier_cycles")


def twin_cost_model(**changes):
    """The twin's cost constants (twin::CostModel) as a dict; keyword arguments change them for
    later launches from Python."""
    lib = _twin_cdll()
    out = np.zeros(len(COST_FIELDS), np.float64)
    lib.GnmsTwinCostModel(None, out.ctypes.data)
    if changes:
        unknown = set(changes) - set(COST_FIELDS)
        if unknown:
            raise KeyError(f"unknown cost constants {sorted(unknown)}; known: {COST_FIELDS}")
        values = np.array([changes.get(name, out[i]) for i, name in enumerate(COST_FIELDS)], np.float64)
        lib.GnmsTwinCostModel(values.ctypes.data, out.ctypes.data)
    return dict(zip(COST_FIELDS, (float(v) for v in out)))


def twin_last_stats():
    """Per-block cost counters of the last successful launch: a list of dicts (STAT_FIELDS)."""
    lib = _twin_cdll()
    blocks = lib.GnmsTwinLastStats(None, 0)
    out = np.zeros((max(blocks, 1), len(STAT_FIELDS)), np.float64)
    lib.GnmsTwinLastStats(out.ctypes.data, blocks)
    return [dict(zip(STAT_FIELDS, row)) for row in out[:blocks]]


def tiling_fields():
    """Names of the int64 fields of GroupNormGradMsTilingData; its float ``swishScale`` is the
    tiling dict's "swish_scale"."""
    return _twin_cdll().GnmsTwinTilingFields().decode().split(",")


def twin_tiling(N, C, HxW, G, data_dtype="float32", stat_dtype=None, ub_bytes=UB_910B, core_num=48,
                mask=(True, True, True), silu=False, swish_scale=1.0):
    """The host tiling function's result as a dict (plus "key" and "swish_scale"); raises
    ValueError on failure. ``silu``: the fused GroupNormSiluGradMs's tiling."""
    stat_dtype = stat_dtype or data_dtype
    out = np.zeros(len(tiling_fields()), np.int64)
    key = ctypes.c_int64(0)
    status = _twin_cdll().GnmsTwinTiling(N, C, HxW, G, DTYPE_CODES[data_dtype], DTYPE_CODES[stat_dtype], ub_bytes,
                                         core_num, *[int(bool(m)) for m in mask], int(bool(silu)),
                                         float(swish_scale), out.ctypes.data, ctypes.byref(key))
    if status:
        raise ValueError(f"tiling failed: {TILING_STATUS.get(status, status)}")
    tiling = dict(zip(tiling_fields(), (int(v) for v in out)))
    tiling["key"] = key.value
    tiling["swish_scale"] = float(np.float32(swish_scale)) if silu else 1.0
    return tiling


def twin_check_inputs(dy, mean, rstd, x, gamma, num_groups):
    """The host's input validation (gnms::CheckInputs) on shapes given as tuples; None stands
    for a missing descriptor (or, for num_groups, a missing attribute). Returns (status, message)."""
    shapes = (dy, mean, rstd, x, gamma)
    ranks = np.array([-1 if s is None else len(s) for s in shapes], np.int64)
    dims = np.array([d for s in shapes if s is not None for d in s] or [0], np.int64)
    groups = None if num_groups is None else ctypes.byref(ctypes.c_int64(num_groups))
    error = ctypes.create_string_buffer(1024)
    status = _twin_cdll().GnmsTwinCheckInputs(dims.ctypes.data, ranks.ctypes.data, groups, error, len(error))
    return status, error.value.decode()


def _raw(array):
    return None if array is None else array.ctypes.data


def twin_launch(buffers, tiling, ub_bytes=UB_910B, core_num=48, policy="concurrent", seed=0, buffer_bytes=None,
                execution="immediate", auto_sync=True, overflow="inf_nan"):
    """Runs the kernel on the twin. ``buffers``: dy, mean, rstd, x, gamma, dx, dgamma, dbeta and,
    for the fused entry (tiling["silu"]), beta (numpy arrays or None); ``buffer_bytes``
    overrides the sizes the launch declares."""
    buffers = list(buffers) + [None] * (9 - len(buffers))
    ptrs = (ctypes.c_void_p * 9)(*[_raw(b) for b in buffers])
    sizes = list(buffer_bytes) if buffer_bytes is not None else [0 if b is None else b.nbytes for b in buffers]
    sizes = np.array(sizes + [0] * (9 - len(sizes)), np.int64)
    fields = np.array([tiling[name] for name in tiling_fields()], np.int64)
    error = ctypes.create_string_buffer(2048)
    status = _twin_cdll().GnmsTwinLaunch(ptrs, sizes.ctypes.data, fields.ctypes.data,
                                         float(tiling.get("swish_scale", 1.0)), tiling["key"], ub_bytes,
                                         core_num, _policy_code(policy, execution, auto_sync, overflow), seed, error,
                                         len(error))
    if status:
        raise TwinFault(error.value.decode())


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
    status = _twin_cdll().GnmsTwinProbe(name.encode(), block_dim, core_num, ub_bytes,
                                        _policy_code(policy, execution, auto_sync, overflow) | (0 if check_hazards else 1 << 16),
                                        seed,
                                        out.ctypes.data, out_len, error, len(error))
    if status == 2:
        raise KeyError(name)
    if status:
        raise TwinFault(error.value.decode())
    return out
