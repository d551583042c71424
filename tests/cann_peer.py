"""CANN's own GroupNormGrad as a peer: its 910B kernel on our twin, with the tiling its own code computes.

Reads CANN's sources from checkouts named in the environment (nothing fetched is kept in the repo):

* ``OPS_NN``: hicann/ops-nn (the kernel ``norm/group_norm_grad/op_kernel/group_norm_grad.cpp`` and its
  tiling ``op_host/group_norm_grad_tiling.cpp``, with ops-nn's ``common/inc``);
* ``METADEF``: hicann/metadef (``OpTilingContextBuilder`` / ``OpTilingParseContextBuilder``, the op
  registry that ``IMPL_OP_OPTILING`` fills, the runtime context types);
* ``ASC_DEVKIT``: mirror-cann/asc-devkit (``platform_ascendc.cpp``, which the tiling asks for cores, UB
  and the system workspace).

Two libraries are built with g++, their object files cached by the hash of what goes in:

* the host library (default C++ ABI): metadef's context builders and registry, asc-devkit's platform
  code and ops-nn's three op_host tiling files, unmodified, with the stand-ins of
  kernels/ascendc/peer/host_stubs for closed or unmirrored headers, and
  kernels/ascendc/peer/cann_tiling_host.cc, which runs CANN's TilingParse and Tiling on a 910B platform
  table (48 vector cores, UB 196,608 bytes: CANN's tiling unit tests' values);
* the kernel library (the twin's ABI): CANN's kernel, unmodified, against kernels/ascendc/twin, with
  the kernel-side tiling struct generated here from ``BEGIN_TILING_DATA_DEF`` (what asc-devkit's op
  compiler writes from the host registration) and kernels/ascendc/peer/cann_kernel_launch.cc.
"""
import ctypes
import functools
import hashlib
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

import twin
from ms_groupnorm.backends import twin_build
from twin import TwinFault

ENVS = ("OPS_NN", "METADEF", "ASC_DEVKIT")
HOW_TO_GET = ("fetch hicann/ops-nn, hicann/metadef and mirror-cann/asc-devkit, extract a work tree of each and set "
              "OPS_NN, METADEF and ASC_DEVKIT to them (docs/ascend.md, 'CANN's kernels on the twin')")
ASCENDC = Path(__file__).resolve().parent.parent / "kernels" / "ascendc"
PEER = ASCENDC / "peer"
OP_DIR = Path("norm/group_norm_grad")
KERNEL = OP_DIR / "op_kernel/group_norm_grad.cpp"
TILING_HEADER = OP_DIR / "op_host/group_norm_grad_tiling.h"
HOST_OPS_NN = [OP_DIR / f"op_host/{n}.cpp" for n in
               ("group_norm_grad_tiling", "group_norm_grad_tiling_arch35", "group_norm_grad_empty_tiling_arch35")]
HOST_METADEF = [Path("base") / p for p in (
    "context_builder/op_tiling_context_builder.cc", "context_builder/op_tiling_parse_context_builder.cc",
    "context_builder/op_context_builder_base.cc", "context_builder/op_context_builder_impl.cc",
    "context_builder/context_holder.cc", "runtime/compute_node_info.cc", "runtime/runtime_attrs.cc",
    "asc/tilingdata_base_impl.cc", "any_value.cc", "registry/op_impl_registry.cc", "utils/type_utils_impl.cc",
    "type/ascend_string_impl.cc")]
HOST_ASC_DEVKIT = [Path("impl/utils/tiling/platform/platform_ascendc.cpp")]
HOST_FLAGS = ["-std=c++17", "-O1", "-fPIC", "-w"]
KERNEL_FLAGS = ["-std=c++17", "-O2", "-fPIC", "-pthread", "-D_GLIBCXX_USE_CXX11_ABI=0", "-fvisibility=hidden"]
SYSTEM_WORKSPACE = 16 * 1024 * 1024  # GetLibApiWorkSpaceSize on the 910B: the part GetUserWorkspace skips
VECTOR_CORES = 48
UB_BYTES = 196608
GE_DTYPES = {"float32": 0, "float16": 1, "bfloat16": 27}  # ge::DataType DT_FLOAT, DT_FLOAT16, DT_BF16


def checkouts():
    """{env: Path} of the three checkouts, or a one-line reason why the peer cannot run."""
    paths = {}
    for env in ENVS:
        value = os.environ.get(env)
        if not value:
            return f"{env} is unset: the CANN peer needs CANN source checkouts ({HOW_TO_GET})"
        paths[env] = Path(value)
    if not (paths["OPS_NN"] / KERNEL).is_file():
        return f"OPS_NN={paths['OPS_NN']} has no {KERNEL}"
    if not (paths["METADEF"] / "base/context_builder/op_tiling_context_builder.cc").is_file():
        return f"METADEF={paths['METADEF']} has no base/context_builder/op_tiling_context_builder.cc"
    if not (paths["ASC_DEVKIT"] / HOST_ASC_DEVKIT[0]).is_file():
        return f"ASC_DEVKIT={paths['ASC_DEVKIT']} has no {HOST_ASC_DEVKIT[0]}"
    return paths


# ---------------------------------------------------------------- the kernel-side tiling struct
def tiling_struct_header(tiling_header_text, op_type="GroupNormGrad"):
    """The kernel-side struct of the tiling class ``REGISTER_TILING_DATA_CLASS(op_type, X)`` names, from
    its ``BEGIN_TILING_DATA_DEF(X)`` fields, and GET_TILING_DATA for it (the twin's
    GET_TILING_DATA_WITH_STRUCT copies it from GM). asc-devkit's op compiler writes the same struct
    from the host registration (get_op_tiling.py, gen_dynamic_shape); when fields of different widths
    need alignment placeholders (TilingDef::CheckAlignAndGenPlaceHolder) this generator refuses."""
    name = re.search(rf"REGISTER_TILING_DATA_CLASS\(\s*{op_type}\s*,\s*(\w+)\s*\)", tiling_header_text).group(1)
    body = re.search(rf"BEGIN_TILING_DATA_DEF\(\s*{name}\s*\)(.*?)END_TILING_DATA_DEF", tiling_header_text, re.S)
    fields = re.findall(r"TILING_DATA_FIELD_DEF\(\s*(\w+)\s*,\s*(\w+)\s*\)", body.group(1))
    if not fields or any(t not in ("uint64_t", "int64_t") for t, _ in fields):
        raise ValueError(f"{name}: only structs of 64-bit fields are generated here (no alignment placeholders)")
    members = "".join(f"  {t} {n};\n" for t, n in fields)
    return (f"// generated by tests/cann_peer.py from {name}'s BEGIN_TILING_DATA_DEF\n#pragma once\n#include <cstdint>\n"
            f"struct {name} {{\n{members}}};\n"
            f"#define GET_TILING_DATA(var, tiling) GET_TILING_DATA_WITH_STRUCT({name}, var, tiling)\n"), name, \
        [n for _, n in fields]


# ---------------------------------------------------------------- cached builds
def _cache():
    path = twin_build._cache_dir() / "cann_peer"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _digest(*parts):
    h = hashlib.sha256()
    for p in parts:
        h.update(p if isinstance(p, bytes) else str(p).encode())
        h.update(b"\0")
    return h.hexdigest()[:16]


def _dir_digest(directory, suffixes=(".h", ".cc", ".cpp")):
    files = sorted(p for p in Path(directory).rglob("*") if p.suffix in suffixes)
    return _digest(*[f"{p.relative_to(directory)}" for p in files], *[p.read_bytes() for p in files])


def _compile(jobs):
    """[(command, object)]: runs those whose object is missing, two at a time; raises on the first error."""
    def one(job):
        command, target = job
        if target.is_file():
            return None
        scratch = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        result = subprocess.run([*command, "-o", str(scratch)], capture_output=True, text=True)
        if result.returncode != 0:
            return " ".join(command) + "\n" + result.stderr[-4000:]
        os.replace(scratch, target)
        return None
    with ThreadPoolExecutor(max_workers=2) as pool:
        errors = [e for e in pool.map(one, jobs) if e]
    if errors:
        raise RuntimeError("building the CANN peer failed:\n" + errors[0])


def _link(objects, target, extra=()):
    if not target.is_file():
        scratch = target.with_name(f"{target.name}.{os.getpid()}.tmp")
        subprocess.run(["g++", "-shared", "-pthread", "-Wl,--no-undefined", *map(str, objects), "-o", str(scratch),
                        *extra], check=True, capture_output=True, text=True)
        os.replace(scratch, target)
    return target


def host_library(paths):
    ops_nn, metadef, asc = paths["OPS_NN"], paths["METADEF"], paths["ASC_DEVKIT"]
    includes = [PEER / "host_stubs", metadef / "inc/external", metadef / "inc/external/asc", metadef / "inc",
                metadef / "inc/graph", metadef / "base", metadef, metadef / "pkg_inc", metadef / "pkg_inc/external",
                metadef / "third_party", ops_nn / "common/inc", ops_nn / OP_DIR / "op_host",
                asc / "include/utils/tiling/platform", asc / "include/utils/tiling", asc / "include/utils",
                asc / "include"]
    flags = HOST_FLAGS + [f"-I{d}" for d in includes]
    stubs = _dir_digest(PEER / "host_stubs")
    sources = ([ops_nn / s for s in HOST_OPS_NN] + [metadef / s for s in HOST_METADEF]
               + [asc / s for s in HOST_ASC_DEVKIT] + [PEER / "cann_tiling_host.cc"])
    cache = _cache()
    jobs = [(["g++", *flags, "-c", str(s)], cache / f"host-{s.stem}-{_digest(s, s.read_bytes(), stubs, *flags)}.o")
            for s in sources]
    _compile(jobs)
    objects = [o for _, o in jobs]
    return _link(objects, cache / f"libcann_peer_host-{_digest(*objects)}.so", ["-ldl"])


def kernel_library(paths):
    ops_nn = paths["OPS_NN"]
    text, struct, fields = tiling_struct_header((ops_nn / TILING_HEADER).read_text())
    cache = _cache()
    header = cache / f"tiling-{_digest(text)}.h"
    if not header.is_file():
        header.write_text(text)
    flags = KERNEL_FLAGS + [f"-I{ASCENDC / 'twin'}", f"-I{PEER / 'kernel_stubs'}"]
    twin_digest = _dir_digest(ASCENDC / "twin")
    kernel_dir = ops_nn / OP_DIR / "op_kernel"
    kernel_text = b"".join(p.read_bytes() for p in sorted(kernel_dir.glob("group_norm_grad*")) if p.is_file())
    jobs = [(["g++", *flags, "-c", str(ASCENDC / "twin" / s)],
             cache / f"twin-{Path(s).stem}-{_digest(twin_digest, *flags)}.o")
            for s in ("twin_runtime.cc", "twin_pipes.cc", "twin_c_api.cc")]
    jobs.append((["g++", *flags, "-w", "-include", str(header), "-c", str(ops_nn / KERNEL)],
                 cache / f"kernel-group_norm_grad-{_digest(twin_digest, kernel_text, text, *flags)}.o"))
    launch = PEER / "cann_kernel_launch.cc"
    jobs.append((["g++", *flags, "-c", str(launch)],
                 cache / f"launch-{_digest(twin_digest, launch.read_bytes(), *flags)}.o"))
    _compile(jobs)
    objects = [o for _, o in jobs]
    return _link(objects, cache / f"libcann_peer_kernel-{_digest(*objects)}.so"), fields


@functools.lru_cache(maxsize=None)
def libraries():
    """(host CDLL, kernel CDLL, tiling field names); raises RuntimeError with the reason."""
    paths = checkouts()
    if isinstance(paths, str):
        raise RuntimeError(paths)
    host = ctypes.CDLL(str(host_library(paths)))
    kernel_path, fields = kernel_library(paths)
    kernel = ctypes.CDLL(str(kernel_path))
    i64, cint, ptr = ctypes.c_int64, ctypes.c_int, ctypes.c_void_p
    host.GnmsPeerGroupNormGradTiling.restype = cint
    host.GnmsPeerGroupNormGradTiling.argtypes = ([i64] * 4 + [cint] * 5 + [i64, i64, ptr, i64, ptr, ptr,
                                                  ctypes.c_char_p, cint])
    kernel.GnmsPeerGroupNormGradLaunch.restype = cint
    kernel.GnmsPeerGroupNormGradLaunch.argtypes = [ptr, ptr, ptr, i64, i64, i64, i64, i64, i64, cint, ctypes.c_uint64,
                                                   ctypes.c_char_p, cint]
    return host, twin._with_common_api(kernel), tuple(fields)


# ---------------------------------------------------------------- CANN's tiling and its launch
def cann_tiling(N, C, HxW, G, dtype="float32", deterministic=False, required=(True, True, True),
                vector_cores=VECTOR_CORES, ub_bytes=UB_BYTES):
    """What CANN's TilingParse + Tiling compute for this GroupNormGrad: a dict with the tiling struct
    by field name, its raw bytes, tiling_key, block_dim, workspace (bytes, system part included) and
    the compile info (core_num, sys_workspace, ub_bytes, block_bytes). Raises ValueError on a refusal."""
    host, _, fields = libraries()
    raw = np.zeros(4096, np.uint8)
    out = np.zeros(5, np.int64)
    compile_info = np.zeros(4, np.int64)
    error = ctypes.create_string_buffer(1024)
    status = host.GnmsPeerGroupNormGradTiling(N, C, HxW, G, GE_DTYPES[dtype], int(deterministic), *map(int, required),
                                              vector_cores, ub_bytes, raw.ctypes.data, raw.size, out.ctypes.data,
                                              compile_info.ctypes.data, error, len(error))
    if status:
        raise ValueError(error.value.decode())
    raw = raw[:out[0]].copy()
    values = raw.view(np.uint64)[:len(fields)]
    return {"fields": dict(zip(fields, (int(v) for v in values))), "raw": raw, "tiling_key": int(out[1]),
            "block_dim": int(out[2]), "workspace": int(out[3]), "schedule_mode": int(out[4]),
            "compile_info": dict(zip(("core_num", "sys_workspace", "ub_bytes", "block_bytes"),
                                     (int(v) for v in compile_info)))}


def to_storage(values, dtype):
    """float values -> the array the kernel reads: float32, float16, or bf16 bits (uint16, rounded to
    nearest even)."""
    if dtype == "bfloat16":
        bits = np.ascontiguousarray(values, np.float32).view(np.uint32).astype(np.uint64)
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    return np.ascontiguousarray(values, {"float32": np.float32, "float16": np.float16}[dtype])


def from_storage(array, dtype):
    if dtype == "bfloat16":
        return (array.astype(np.uint32) << 16).view(np.float32)
    return array.astype(np.float32)


def run_cann(dy, mean, rstd, x, gamma, num_groups, deterministic=False, policy="concurrent", execution="immediate",
             seed=0, check_hazards=True, tiling=None, cann_compat=True, dtype=None):
    """CANN's GroupNormGrad kernel on the twin: (dx, dgamma, dbeta) as float32, or TwinFault. ``dtype``
    (default: x's, float32 or float16; "bfloat16" for bf16) is the one type T the 910B kernel takes for
    every array; the inputs are rounded to it. ``cann_compat``: the twin's per-launch relaxations for
    CANN's kernels (twin::Config::cannCompat)."""
    _, kernel, _ = libraries()
    N, C = x.shape[:2]
    HxW = int(np.prod(x.shape[2:])) if x.ndim > 2 else 1
    dtype = dtype or np.asarray(x).dtype.name
    t = tiling or cann_tiling(N, C, HxW, num_groups, dtype, deterministic)
    if t["block_dim"] <= 0:  # CANN's tiling answers some refused shapes with success and block dim 0
        raise ValueError(f"CANN's tiling gave block dim {t['block_dim']} for {(N, C, HxW, num_groups)}: not a launch")
    arrays = [to_storage(a, dtype) for a in (dy, mean, rstd, x, gamma)]
    nan = to_storage(np.full(1, np.nan), dtype)[0]
    outs = [np.full(x.shape, nan), np.full(C, nan), np.full(C, nan)]
    outs = [o.astype(arrays[0].dtype) for o in outs]
    buffers = (ctypes.c_void_p * 8)(*[a.ctypes.data for a in arrays + outs])
    sizes = np.array([a.nbytes for a in arrays + outs], np.int64)
    code = (twin._policy_code(policy, execution) | (0 if check_hazards else 1 << 16)
            | (int(cann_compat) << 19))
    error = ctypes.create_string_buffer(4096)
    status = kernel.GnmsPeerGroupNormGradLaunch(buffers, sizes.ctypes.data, t["raw"].ctypes.data, t["raw"].size,
                                                t["tiling_key"], t["block_dim"],
                                                max(t["workspace"] - SYSTEM_WORKSPACE, 0), UB_BYTES, VECTOR_CORES,
                                                code, seed, error, len(error))
    if status:
        raise TwinFault(error.value.decode())
    return tuple(from_storage(o, dtype) for o in outs)


def last_stats():
    """Per-block cost counters of the last CANN launch: dicts of twin.STAT_FIELDS."""
    return twin._last_stats(libraries()[1].GnmsTwinLastStats)


def cost_model(**changes):
    """The peer library's cost constants (its own copy of twin::CostModel), as twin.twin_cost_model."""
    return twin._cost_model(libraries()[1].GnmsTwinCostModel, changes)


# ---------------------------------------------------------------- the ttk close rule
def ttk_failures(actual, expected, rtol=0.004, atol=1e-4):
    """Elements outside |a - e| <= atol + rtol * |e| (CANN's ttk rule: its ST cases give precision
    tolerance 0.004 and absolute precision 1e-4), as a fraction of all; NaN counts as a failure."""
    a = np.asarray(actual, np.float64)
    e = np.asarray(expected, np.float64)
    bad = ~(np.abs(a - e) <= atol + rtol * np.abs(e))
    return float(bad.mean()) if bad.size else 0.0
