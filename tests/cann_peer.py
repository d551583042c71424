"""CANN's own operators as peers: their 910B kernels on our twin, with the tiling their own code computes.

Reads CANN's sources from checkouts named in the environment (nothing fetched is kept in the repo):

* ``OPS_NN``: hicann/ops-nn (each operator's ``op_kernel`` file and its ``op_host`` tiling files, with
  ops-nn's ``common/inc``);
* ``METADEF``: hicann/metadef (``OpTilingContextBuilder`` / ``OpTilingParseContextBuilder``, the op
  registry that ``IMPL_OP_OPTILING`` fills, the runtime context types);
* ``ASC_DEVKIT``: mirror-cann/asc-devkit (``platform_ascendc.cpp``, which the tiling asks for cores, UB
  and the system workspace).

One ``Operator`` description per CANN operator (``GROUP_NORM_GRAD``, ``GROUP_NORM_SWISH_GRAD``,
``GROUP_NORM_SILU``) says where its files are, its tensors and attributes in the order of its OpDef, the
compile info its TilingParse fills and, for a kernel CANN builds per data type, the macro that names the
type; from it two libraries are built with g++ (a kernel library per data type where the kernel is built
so), their object files cached by the hash of what goes in:

* the host library (default C++ ABI): metadef's context builders and registry, asc-devkit's platform
  code and the operator's op_host tiling files, unmodified, with the stand-ins of
  kernels/ascendc/peer/host_stubs for closed or unmirrored headers, and
  kernels/ascendc/peer/cann_tiling_host.cc, which runs CANN's TilingParse and Tiling on a 910B platform
  table (48 vector cores, UB 196,608 bytes: CANN's tiling unit tests' values);
* the kernel library (the twin's ABI): CANN's kernel, unmodified, against kernels/ascendc/twin, with
  the 910B vector core's architecture macros, the kernel-side tiling struct generated here from
  ``BEGIN_TILING_DATA_DEF`` (what asc-devkit's op compiler writes from the host registration) and
  kernels/ascendc/peer/cann_kernel_launch.cc.
"""
import ctypes
import functools
import hashlib
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Operator:
    """What the harness needs to know of one CANN operator. Tensor roles give the shapes: "data" is
    (N, C, HxW), "stat" (N, G), "channel" (C,). ``attrs``: (name, kind, default) in the order of the
    OpDef (kind int, float, bool or str; the OpTilingContextBuilder appends them in that order and the
    tiling reads them by index). ``compile_info``: the fields of the struct its TilingParse fills, as
    (name, ctypes type), to read back what it computed. ``dtype_macro``: the macro a kernel built per
    data type reads its type from (CANN's build defines DTYPE_<INPUT> per binary variant of
    op_host/config/ascend910b/*_binary.json); empty for a kernel that dispatches on the tiling key."""
    op_type: str
    op_dir: str
    inputs: tuple
    outputs: tuple
    attrs: tuple
    compile_info: tuple
    host_files: tuple  # op_host/*.cpp stems: the tiling and whatever its dispatcher references
    dtype_macro: str = ""

    @property
    def stem(self):
        return Path(self.op_dir).name

    @property
    def kernel(self):
        return Path(self.op_dir) / "op_kernel" / f"{self.stem}.cpp"

    @property
    def tiling_header(self):
        return Path(self.op_dir) / "op_host" / f"{self.stem}_tiling.h"

    @property
    def tensors(self):
        return self.inputs + self.outputs

    def attr_defaults(self):
        return {name: default for name, _, default in self.attrs}


GROUP_NORM_GRAD = Operator(
    op_type="GroupNormGrad", op_dir="norm/group_norm_grad",
    inputs=(("dy", "data"), ("mean", "stat"), ("rstd", "stat"), ("x", "data"), ("gamma", "channel")),
    outputs=(("dx", "data"), ("dgamma", "channel"), ("dbeta", "channel")),
    attrs=(("num_groups", "int", None), ("data_format", "str", "NCHW"), ("dx_is_require", "bool", True),
           ("dgamma_is_require", "bool", True), ("dbeta_is_require", "bool", True)),
    compile_info=(("totalCoreNum", ctypes.c_int32), ("sysWorkspaceSize", ctypes.c_uint32),
                  ("ubSizePlatForm", ctypes.c_uint64), ("vectorLen", ctypes.c_uint32), ("blockSize", ctypes.c_uint32),
                  ("isRegBase", ctypes.c_bool)),
    host_files=("group_norm_grad_tiling", "group_norm_grad_tiling_arch35", "group_norm_grad_empty_tiling_arch35"))

GROUP_NORM_SWISH_GRAD = Operator(
    op_type="GroupNormSwishGrad", op_dir="norm/group_norm_swish_grad",
    inputs=(("dy", "data"), ("mean", "stat"), ("rstd", "stat"), ("x", "data"), ("gamma", "channel"),
            ("beta", "channel")),
    outputs=(("dx", "data"), ("dgamma", "channel"), ("dbeta", "channel")),
    attrs=(("num_groups", "int", None), ("data_format", "str", "NCHW"), ("swish_scale", "float", 1.0),
           ("dgamma_is_require", "bool", True), ("dbeta_is_require", "bool", True)),
    compile_info=(("totalCoreNum", ctypes.c_int32), ("sysWorkspaceSize", ctypes.c_uint64),
                  ("ubSizePlatForm", ctypes.c_uint64)),
    host_files=("group_norm_swish_grad_tiling",))

GROUP_NORM_SILU = Operator(
    op_type="GroupNormSilu", op_dir="norm/group_norm_silu",
    inputs=(("x", "data"), ("gamma", "channel"), ("beta", "channel")),
    outputs=(("y", "data"), ("mean", "stat"), ("rstd", "stat")),
    attrs=(("num_groups", "int", None), ("eps", "float", 1e-5), ("activate_silu", "bool", True)),
    compile_info=(("totalCoreNum", ctypes.c_int32), ("ubSizePlatForm", ctypes.c_uint64), ("is310P", ctypes.c_int32),
                  ("isRegbase", ctypes.c_int32), ("vectorLength", ctypes.c_uint32),
                  ("blockSizePlatform", ctypes.c_uint32)),
    host_files=("group_norm_silu_tiling", "group_norm_silu_tiling_arch35"), dtype_macro="DTYPE_X")

OPERATORS = {op.op_type: op for op in (GROUP_NORM_GRAD, GROUP_NORM_SWISH_GRAD, GROUP_NORM_SILU)}
KERNEL_TYPES = {"float32": "float", "float16": "half", "bfloat16": "bfloat16_t"}  # the twin's names
OP_DIR = Path(GROUP_NORM_GRAD.op_dir)  # GroupNormGrad's, for its tests
HOST_METADEF = [Path("base") / p for p in (
    "context_builder/op_tiling_context_builder.cc", "context_builder/op_tiling_parse_context_builder.cc",
    "context_builder/op_context_builder_base.cc", "context_builder/op_context_builder_impl.cc",
    "context_builder/context_holder.cc", "runtime/compute_node_info.cc", "runtime/runtime_attrs.cc",
    "asc/tilingdata_base_impl.cc", "any_value.cc", "registry/op_impl_registry.cc", "utils/type_utils_impl.cc",
    "type/ascend_string_impl.cc")]
HOST_ASC_DEVKIT = [Path("impl/utils/tiling/platform/platform_ascendc.cpp")]
HOST_FLAGS = ["-std=c++17", "-O1", "-fPIC", "-w"]
# The architecture macros bisheng defines for the 910B vector core (dav-c220-vec): CANN's kernels pick
# their 910B paths by them (GroupNormSilu: DataCopyPad and CAST_ROUND where __CCE_AICORE__ == 220).
ARCH_MACROS = ["-D__CCE_AICORE__=220", "-D__NPU_ARCH__=2201"]
KERNEL_FLAGS = ["-std=c++17", "-O2", "-fPIC", "-pthread", "-D_GLIBCXX_USE_CXX11_ABI=0", "-fvisibility=hidden"]
SYSTEM_WORKSPACE = 16 * 1024 * 1024  # GetLibApiWorkSpaceSize on the 910B: the part GetUserWorkspace skips
VECTOR_CORES = 48
UB_BYTES = 196608
GE_DTYPES = {"float32": 0, "float16": 1, "bfloat16": 27}  # ge::DataType DT_FLOAT, DT_FLOAT16, DT_BF16
ATTR_KINDS = {"int": 0, "float": 1, "bool": 2, "str": 3}  # host_entry_common.h AttrKind


def checkouts(op=GROUP_NORM_GRAD):
    """{env: Path} of the three checkouts, or a one-line reason why the peer of ``op`` cannot run."""
    paths = {}
    for env in ENVS:
        value = os.environ.get(env)
        if not value:
            return f"{env} is unset: the CANN peer needs CANN source checkouts ({HOW_TO_GET})"
        paths[env] = Path(value)
    if not (paths["OPS_NN"] / op.kernel).is_file():
        return f"OPS_NN={paths['OPS_NN']} has no {op.kernel}"
    if not (paths["METADEF"] / "base/context_builder/op_tiling_context_builder.cc").is_file():
        return f"METADEF={paths['METADEF']} has no base/context_builder/op_tiling_context_builder.cc"
    if not (paths["ASC_DEVKIT"] / HOST_ASC_DEVKIT[0]).is_file():
        return f"ASC_DEVKIT={paths['ASC_DEVKIT']} has no {HOST_ASC_DEVKIT[0]}"
    return paths


def peer_checkouts(*ops):
    """The checkouts for the peers of ``ops`` (default GroupNormGrad), their libraries built: a test
    module's ``peer`` fixture. Skips with checkouts' reason where one cannot run."""
    import pytest
    paths = None
    for op in ops or (GROUP_NORM_GRAD,):
        paths = checkouts(op)
        if isinstance(paths, str):
            pytest.skip(paths)
        libraries(op)
    return paths


# ---------------------------------------------------------------- the kernel-side tiling struct
FIELD_BYTES = {"uint64_t": 8, "int64_t": 8, "uint32_t": 4, "int32_t": 4, "float": 4, "uint16_t": 2, "int16_t": 2,
               "uint8_t": 1, "int8_t": 1}


def _aligned(offset, width):
    """Where metadef puts a field of ``width`` bytes after ``offset`` bytes: at the next multiple of its
    size, the gap filled by a uint8_t placeholder (TilingDefImpl::CheckAlignAndGenPlaceHolder)."""
    return -(-offset // width) * width


def tiling_struct_header(tiling_header_text, op_type="GroupNormGrad"):
    """The kernel-side struct of the tiling class ``REGISTER_TILING_DATA_CLASS(op_type, X)`` names, from
    its ``BEGIN_TILING_DATA_DEF(X)`` fields, and GET_TILING_DATA for it (the twin's
    GET_TILING_DATA_WITH_STRUCT copies it from GM). asc-devkit's op compiler writes the same struct
    from the host registration (get_op_tiling.py, gen_dynamic_shape). The host lays fields out in
    order and inserts a uint8_t placeholder (named after the field, "PH" appended) before a field whose
    offset is not a multiple of its size (metadef TilingDefImpl::CheckAlignAndGenPlaceHolder); the
    struct written here spells those placeholders out, so its layout is the host's by construction and
    not by the C++ compiler's padding. Returns (header text, class name, [(field, C type)])."""
    name = re.search(rf"REGISTER_TILING_DATA_CLASS\(\s*{op_type}\s*,\s*(\w+)\s*\)", tiling_header_text).group(1)
    body = re.search(rf"BEGIN_TILING_DATA_DEF\(\s*{name}\s*\)(.*?)END_TILING_DATA_DEF", tiling_header_text, re.S)
    fields = re.findall(r"TILING_DATA_FIELD_DEF\(\s*(\w+)\s*,\s*(\w+)\s*\)", body.group(1))
    if not fields or any(t not in FIELD_BYTES for t, _ in fields):
        raise ValueError(f"{name}: only structs of scalar fields are generated here")
    members, offset = [], 0
    for t, n in fields:
        start = _aligned(offset, FIELD_BYTES[t])
        if start > offset:
            members.append(f"  uint8_t {n}PH[{start - offset}];\n")
        members.append(f"  {t} {n};\n")
        offset = start + FIELD_BYTES[t]
    if _aligned(offset, 8) > offset:  # the class's own placeholder: its size is a multiple of 8
        members.append(f"  uint8_t {name}PH[{_aligned(offset, 8) - offset}];\n")
    return (f"// generated by tests/cann_peer.py from {name}'s BEGIN_TILING_DATA_DEF\n#pragma once\n#include <cstdint>\n"
            f"struct {name} {{\n{''.join(members)}}};\n"
            f"static_assert(sizeof({name}) == {_aligned(offset, 8)}, \"the host's layout, placeholders included\");\n"
            f"#define GET_TILING_DATA(var, tiling) GET_TILING_DATA_WITH_STRUCT({name}, var, tiling)\n"), name, \
        [(n, t) for t, n in fields]


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


def host_library(paths, op):
    ops_nn, metadef, asc = paths["OPS_NN"], paths["METADEF"], paths["ASC_DEVKIT"]
    includes = [PEER / "host_stubs", metadef / "inc/external", metadef / "inc/external/asc", metadef / "inc",
                metadef / "inc/graph", metadef / "base", metadef, metadef / "pkg_inc", metadef / "pkg_inc/external",
                metadef / "third_party", ops_nn / "common/inc", ops_nn / op.op_dir / "op_host",
                asc / "include/utils/tiling/platform", asc / "include/utils/tiling", asc / "include/utils",
                asc / "include"]
    flags = HOST_FLAGS + [f"-I{d}" for d in includes]
    stubs = _digest(_dir_digest(PEER / "host_stubs"), (PEER / "host_entry_common.h").read_bytes())
    header = (ops_nn / op.tiling_header).read_bytes()
    sources = ([ops_nn / op.op_dir / "op_host" / f"{n}.cpp" for n in op.host_files]
               + [metadef / s for s in HOST_METADEF] + [asc / s for s in HOST_ASC_DEVKIT]
               + [PEER / "cann_tiling_host.cc"])
    cache = _cache()
    jobs = [(["g++", *flags, "-c", str(s)],
             cache / f"host-{s.stem}-{_digest(s, s.read_bytes(), header, stubs, *flags)}.o") for s in sources]
    _compile(jobs)
    objects = [o for _, o in jobs]
    return _link(objects, cache / f"libcann_peer_host-{op.stem}-{_digest(*objects)}.so", ["-ldl"])


def kernel_library(paths, op, dtype=None):
    """The kernel library of ``op``; of its ``dtype`` variant where the kernel is built per data type."""
    ops_nn = paths["OPS_NN"]
    text, _, fields = tiling_struct_header((ops_nn / op.tiling_header).read_text(), op.op_type)
    cache = _cache()
    header = cache / f"tiling-{_digest(text)}.h"
    if not header.is_file():
        header.write_text(text)
    flags = KERNEL_FLAGS + [f"-I{ASCENDC / 'twin'}", f"-I{PEER / 'kernel_stubs'}"]
    variant = [f"-D{op.dtype_macro}={KERNEL_TYPES[dtype]}"] if dtype else []
    twin_digest = _dir_digest(ASCENDC / "twin")
    kernel_dir = ops_nn / op.op_dir / "op_kernel"
    kernel_text = b"".join(p.read_bytes() for p in sorted(kernel_dir.glob(f"{op.stem}*")) if p.is_file())
    jobs = [(["g++", *flags, "-c", str(ASCENDC / "twin" / s)],
             cache / f"twin-{Path(s).stem}-{_digest(twin_digest, *flags)}.o")
            for s in ("twin_runtime.cc", "twin_pipes.cc", "twin_c_api.cc")]
    kernel_flags = [*flags, *ARCH_MACROS, *variant]
    jobs.append((["g++", *kernel_flags, "-w", "-include", str(header), "-c", str(ops_nn / op.kernel)],
                 cache / f"kernel-{op.stem}-{_digest(twin_digest, kernel_text, text, *kernel_flags)}.o"))
    launch = PEER / "cann_kernel_launch.cc"
    launch_flags = [*flags, f"-DGNMS_PEER_ENTRY={op.stem}", f"-DGNMS_PEER_TENSORS={len(op.tensors)}"]
    jobs.append((["g++", *launch_flags, "-c", str(launch)],
                 cache / f"launch-{op.stem}-{_digest(twin_digest, launch.read_bytes(), *launch_flags)}.o"))
    _compile(jobs)
    objects = [o for _, o in jobs]
    name = f"libcann_peer_kernel-{op.stem}{'-' + dtype if dtype else ''}-{_digest(*objects)}.so"
    return _link(objects, cache / name), fields


def libraries(op=GROUP_NORM_GRAD, dtype="float32"):
    """(host CDLL, kernel CDLL, tiling fields [(name, C type)]) of ``op`` (its ``dtype`` kernel where it is
    built per data type; one kernel serves every dtype otherwise); raises RuntimeError with the reason."""
    return _libraries(op, dtype if op.dtype_macro else None)


@functools.lru_cache(maxsize=None)
def _libraries(op, dtype):
    paths = checkouts(op)
    if isinstance(paths, str):
        raise RuntimeError(paths)
    host = ctypes.CDLL(str(host_library(paths, op)))
    kernel_path, fields = kernel_library(paths, op, dtype)
    kernel = ctypes.CDLL(str(kernel_path))
    i64, cint, ptr = ctypes.c_int64, ctypes.c_int, ctypes.c_void_p
    host.GnmsPeerTiling.restype = cint
    host.GnmsPeerTiling.argtypes = [ctypes.c_char_p, cint, cint, ptr, ptr, ptr, cint, ptr, ptr, ptr, ptr, cint, i64,
                                    i64, ptr, i64, ptr, i64, ptr, ctypes.c_char_p, cint]
    kernel.GnmsPeerLaunch.restype = cint
    kernel.GnmsPeerLaunch.argtypes = [ptr, ptr, ptr, ptr, i64, i64, i64, i64, i64, i64, cint, ctypes.c_uint64,
                                      ctypes.c_char_p, cint]
    return host, twin._with_common_api(kernel), tuple(fields)


# ---------------------------------------------------------------- CANN's tiling and its launch
def _shape(role, N, C, HxW, G):
    return {"data": (N, C, HxW), "stat": (N, G), "channel": (C,)}[role]


def _decode_tiling(raw, fields):
    """{name: value} of the tiling bytes, by the generated struct's fields (laid out in order)."""
    out, offset = {}, 0
    for name, ctype in fields:
        width = FIELD_BYTES[ctype]
        offset = _aligned(offset, width)
        kind = {"float": np.float32}.get(ctype) or np.dtype(ctype.replace("_t", ""))
        value = np.frombuffer(raw[offset:offset + width].tobytes(), kind)[0]
        out[name] = float(value) if ctype == "float" else int(value)
        offset += width
    return out


def operator_tiling(op, N, C, HxW, G, dtype="float32", deterministic=False, vector_cores=VECTOR_CORES,
                    ub_bytes=UB_BYTES, tensor_dtypes=None, **attrs):
    """What CANN's TilingParse + Tiling compute for ``op`` on this shape: a dict with the tiling struct
    by field name, its raw bytes, tiling_key, block_dim, workspace (bytes, system part included), schedule
    mode and the compile info by its fields. ``dtype``: every tensor's, but those ``tensor_dtypes``
    ({name: dtype}) names. ``attrs``: the operator's attributes by OpDef name (defaults: its OpDef's;
    num_groups is G). Raises ValueError on a refusal."""
    host, _, fields = libraries(op, dtype)
    unknown = set(attrs) - set(op.attr_defaults())
    if unknown:
        raise KeyError(f"{op.op_type} has no attributes {sorted(unknown)}")
    values = {**op.attr_defaults(), "num_groups": G, **attrs}
    kinds = np.array([ATTR_KINDS[kind] for _, kind, _ in op.attrs], np.int32)
    ints = np.array([int(values[n]) if k in ("int", "bool") else 0 for n, k, _ in op.attrs], np.int64)
    floats = np.array([float(values[n]) if k == "float" else 0.0 for n, k, _ in op.attrs], np.float64)
    strings = (ctypes.c_char_p * len(op.attrs))(*[str(values[n]).encode() if k == "str" else None
                                                  for n, k, _ in op.attrs])
    shapes = [_shape(role, N, C, HxW, G) for _, role in op.tensors]
    ranks = np.array([len(s) for s in shapes], np.int32)
    dims = np.array([d for s in shapes for d in s], np.int64)
    dtypes = np.array([GE_DTYPES[(tensor_dtypes or {}).get(name, dtype)] for name, _ in op.tensors], np.int32)
    info_type = type("CompileInfo", (ctypes.Structure,), {"_fields_": list(op.compile_info)})
    info = np.zeros(ctypes.sizeof(info_type), np.uint8)
    raw = np.zeros(4096, np.uint8)
    out = np.zeros(5, np.int64)
    error = ctypes.create_string_buffer(1024)
    status = host.GnmsPeerTiling(op.op_type.encode(), len(op.inputs), len(op.outputs), ranks.ctypes.data,
                                 dims.ctypes.data, dtypes.ctypes.data, len(op.attrs), kinds.ctypes.data,
                                 ints.ctypes.data, floats.ctypes.data, strings, int(deterministic), vector_cores,
                                 ub_bytes, info.ctypes.data, info.size, raw.ctypes.data, raw.size, out.ctypes.data,
                                 error, len(error))
    if status:
        raise ValueError(error.value.decode())
    raw = raw[:out[0]].copy()
    compile_info = info_type.from_buffer_copy(info.tobytes())
    return {"fields": _decode_tiling(raw, fields), "raw": raw, "tiling_key": int(out[1]), "block_dim": int(out[2]),
            "workspace": int(out[3]), "schedule_mode": int(out[4]),
            "compile_info": {name: getattr(compile_info, name) for name, _ in op.compile_info}}


def cann_tiling(N, C, HxW, G, dtype="float32", deterministic=False, required=(True, True, True),
                vector_cores=VECTOR_CORES, ub_bytes=UB_BYTES):
    """CANN's GroupNormGrad tiling (operator_tiling), with its three *_is_require attributes."""
    flags = dict(zip(("dx_is_require", "dgamma_is_require", "dbeta_is_require"), map(bool, required)))
    return operator_tiling(GROUP_NORM_GRAD, N, C, HxW, G, dtype, deterministic, vector_cores, ub_bytes, **flags)


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


def launch_operator(op, inputs, tiling, dtype, policy="concurrent", execution="immediate", seed=0,
                    check_hazards=True, cann_compat=True, tensor_dtypes=None, num_groups=None):
    """``op``'s CANN kernel on the twin: its outputs (float32, in OpDef order), or TwinFault. ``inputs``:
    {name: float array} of every input, rounded to its dtype: ``dtype`` (the one type T the 910B backward
    kernels take for every array), or the one ``tensor_dtypes`` ({name: dtype}) gives it. Outputs start as
    NaN. ``num_groups``: G, where no input has the (N, G) shape of the statistics. ``cann_compat``: the
    twin's per-launch relaxations for CANN's kernels (twin::Config::cannCompat)."""
    _, kernel, _ = libraries(op, dtype)
    if tiling["block_dim"] <= 0:  # CANN's tiling answers some refused shapes with success and block dim 0
        raise ValueError(f"CANN's tiling gave block dim {tiling['block_dim']}: not a launch")
    dtype_of = {name: (tensor_dtypes or {}).get(name, dtype) for name, _ in op.tensors}
    arrays = [to_storage(inputs[name], dtype_of[name]) for name, _ in op.inputs]
    x = inputs["x"]
    N, C = x.shape[:2]
    G = num_groups or inputs["mean"].shape[1]
    HxW = int(np.prod(x.shape[2:])) if x.ndim > 2 else 1
    outs = [to_storage(np.full(_shape(role, N, C, HxW, G), np.nan), dtype_of[name]) for name, role in op.outputs]
    tensors = arrays + outs
    buffers = (ctypes.c_void_p * len(tensors))(*[a.ctypes.data for a in tensors])
    sizes = np.array([a.nbytes for a in tensors], np.int64)
    names = (ctypes.c_char_p * len(tensors))(*[name.encode() for name, _ in op.tensors])
    code = (twin._policy_code(policy, execution) | (0 if check_hazards else 1 << 16)
            | (int(cann_compat) << 19))
    error = ctypes.create_string_buffer(4096)
    status = kernel.GnmsPeerLaunch(buffers, sizes.ctypes.data, names, tiling["raw"].ctypes.data, tiling["raw"].size,
                                   tiling["tiling_key"], tiling["block_dim"],
                                   max(tiling["workspace"] - SYSTEM_WORKSPACE, 0), UB_BYTES, VECTOR_CORES, code, seed,
                                   error, len(error))
    if status:
        raise TwinFault(error.value.decode())
    return tuple(from_storage(o, dtype_of[name]).reshape(x.shape if role == "data" else o.shape)
                 for o, (name, role) in zip(outs, op.outputs))


def run_cann(dy, mean, rstd, x, gamma, num_groups, deterministic=False, policy="concurrent", execution="immediate",
             seed=0, check_hazards=True, tiling=None, cann_compat=True, dtype=None):
    """CANN's GroupNormGrad kernel on the twin: (dx, dgamma, dbeta) as float32, or TwinFault. ``dtype``
    (default: x's, float32 or float16; "bfloat16" for bf16) is the one type T the 910B kernel takes for
    every array; the inputs are rounded to it."""
    N, C = x.shape[:2]
    HxW = int(np.prod(x.shape[2:])) if x.ndim > 2 else 1
    dtype = dtype or np.asarray(x).dtype.name
    t = tiling or cann_tiling(N, C, HxW, num_groups, dtype, deterministic)
    if t["block_dim"] <= 0:
        raise ValueError(f"CANN's tiling gave block dim {t['block_dim']} for {(N, C, HxW, num_groups)}: not a launch")
    inputs = {"dy": dy, "mean": mean, "rstd": rstd, "x": x, "gamma": gamma}
    return launch_operator(GROUP_NORM_GRAD, inputs, t, dtype, policy, execution, seed, check_hazards, cann_compat)


def run_cann_swish(dy, mean, rstd, x, gamma, beta, num_groups, swish_scale=1.0, deterministic=False, tiling=None,
                   dtype=None, **launch):
    """CANN's GroupNormSwishGrad kernel on the twin: (dx, dgamma, dbeta) as float32, or TwinFault.
    ``launch``: launch_operator's policy, execution, seed, check_hazards, cann_compat."""
    N, C = x.shape[:2]
    HxW = int(np.prod(x.shape[2:])) if x.ndim > 2 else 1
    dtype = dtype or np.asarray(x).dtype.name
    t = tiling or operator_tiling(GROUP_NORM_SWISH_GRAD, N, C, HxW, num_groups, dtype, deterministic,
                                  swish_scale=swish_scale)
    inputs = {"dy": dy, "mean": mean, "rstd": rstd, "x": x, "gamma": gamma, "beta": beta}
    return launch_operator(GROUP_NORM_SWISH_GRAD, inputs, t, dtype, **launch)


def run_cann_silu(x, gamma, beta, num_groups, eps=1e-5, activate_silu=True, dtype=None, param_dtype=None, tiling=None,
                  **launch):
    """CANN's GroupNormSilu forward on the twin: (y, mean, rstd) as float32, or TwinFault. ``dtype``
    (default x's) is x's, y's, mean's and rstd's (the 910B kernel writes its statistics in x's type);
    ``param_dtype`` (default dtype) gamma's and beta's: float32 under 16-bit x is CANN's mixed variant.
    ``launch``: launch_operator's policy, execution, seed, check_hazards, cann_compat."""
    N, C = x.shape[:2]
    HxW = int(np.prod(x.shape[2:])) if x.ndim > 2 else 1
    dtype = dtype or np.asarray(x).dtype.name
    params = {"gamma": param_dtype or dtype, "beta": param_dtype or dtype}
    t = tiling or operator_tiling(GROUP_NORM_SILU, N, C, HxW, num_groups, dtype, tensor_dtypes=params, eps=eps,
                                  activate_silu=activate_silu)
    return launch_operator(GROUP_NORM_SILU, {"x": x, "gamma": gamma, "beta": beta}, t, dtype, tensor_dtypes=params,
                           num_groups=num_groups, **launch)


def last_stats(op=GROUP_NORM_GRAD, dtype="float32"):
    """Per-block cost counters of the last launch of ``op``'s (``dtype``) kernel: dicts of twin.STAT_FIELDS."""
    return twin._last_stats(libraries(op, dtype)[1].GnmsTwinLastStats)


def cost_model(op=GROUP_NORM_GRAD, dtype="float32", **changes):
    """The cost constants of ``op``'s (``dtype``) peer library (its own copy of twin::CostModel), as
    twin.twin_cost_model."""
    return twin._cost_model(libraries(op, dtype)[1].GnmsTwinCostModel, changes)


# ---------------------------------------------------------------- the ttk close rule
def ttk_failures(actual, expected, rtol=0.004, atol=1e-4):
    """Elements outside |a - e| <= atol + rtol * |e| (CANN's ttk rule: its ST cases give precision
    tolerance 0.004 and absolute precision 1e-4), as a fraction of all; NaN counts as a failure."""
    a = np.asarray(actual, np.float64)
    e = np.asarray(expected, np.float64)
    bad = ~(np.abs(a - e) <= atol + rtol * np.abs(e))
    return float(bad.mean()) if bad.size else 0.0



# A launch passes where at most this fraction of an output's elements breaks the ttk rule.
TTK_FAIL_FRACTION = 0.004


def failures_over_limit(got, want, names):
    """{output name: fraction outside the ttk rule} of the outputs above TTK_FAIL_FRACTION."""
    fracs = {name: ttk_failures(a, e) for name, a, e in zip(names, got, want)}
    return {name: f for name, f in fracs.items() if f > TTK_FAIL_FRACTION}


def seeded_inputs(N, C, HxW, G, dtype, seed=0):
    """Seeded float32 x, dy, gamma, beta and x's mean and rstd (N, G) for a backward launch, and their
    float64 values after rounding to ``dtype``."""
    rng = np.random.default_rng(seed)
    arrays = {"x": rng.standard_normal((N, C, HxW)).astype(np.float32),
              "dy": rng.standard_normal((N, C, HxW)).astype(np.float32),
              "gamma": rng.standard_normal(C).astype(np.float32), "beta": rng.standard_normal(C).astype(np.float32)}
    xg = arrays["x"].reshape(N, G, -1).astype(np.float64)
    arrays["mean"] = xg.mean(-1).astype(np.float32)
    arrays["rstd"] = (1 / np.sqrt(xg.var(-1) + 1e-5)).astype(np.float32)
    exact = {k: from_storage(to_storage(v, dtype), dtype).astype(np.float64) for k, v in arrays.items()}
    return arrays, exact


def case_ids(cases):
    """Test ids of (N, C, HxW, G, ...) cases: "NxCxHxW:G"."""
    return ["x".join(map(str, c[:3])) + f":{c[3]}" for c in cases]