"""Our op_host registrations run as CANN runs them, on CPU: each operator's OpDef, OP_ADD and tiling
function on a real ``gert::TilingContext`` (``tiling``), and its InferShape and InferDataType on real
inference contexts (``infer``: the same sources built as the op proto library, BUILDS below).

CANN builds a custom-op package's tiling library with ``-DOP_TILING_LIB``; in that build ``OP_ADD``
(metadef ``inc/external/asc/register/op_def_registry.h``) constructs the operator's OpDef and registers
its ``AICore().SetTiling`` function in gert's ``OpImplRegistry``. The same build here: every
``kernels/ascendc/op_host/*.cpp``, unmodified, with metadef's op definition, op-check, context-builder
and registry sources and asc-devkit's ``PlatformAscendC``, linked with
``kernels/ascendc/peer/cann_tiling_host.cc``, which looks the operator up in that registry and runs its
tiling on a context ``OpTilingContextBuilder`` builds for a 910B (48 vector cores, UB 196,608 bytes).

Each operator's tensors, attributes and dtype columns are read from its OpDef in the source (the
``this->Input/Output/Attr`` lines and the ``std::vector<ge::DataType>`` columns), so a tiling that reads
an attribute or a tensor by the wrong index is caught against the twin's tiling of the same call.
Needs ``METADEF`` and ``ASC_DEVKIT`` (tests/cann_peer.py says how to get them); nothing fetched is kept.
"""
import ctypes
import functools
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

import cann_peer

OP_HOST = cann_peer.ASCENDC / "op_host"
OPDEF_METADEF = [Path("base/asc/opdef") / f"{n}.cc" for n in (
    "op_def", "op_def_aicore", "op_def_aicpu", "op_def_attr", "op_def_factory", "op_def_factory_impl",
    "op_def_hostcpu", "op_def_impl", "op_def_mc2", "op_def_param", "op_config_registry",
    "op_config_registry_impl")] + [Path("base/asc/opcheck") / f"{n}.cc" for n in ("op_check", "op_check_register_impl")]
# NO_OPERATOR_IMPL (in both builds below): op_def.h without graph/operator_reg.h, as metadef builds its
# own registry library
ROLES = {"dy": "data", "x": "data", "dx": "data", "y": "data", "mean": "stat", "rstd": "stat", "gamma": "channel",
         "beta": "channel", "dgamma": "channel", "dbeta": "channel"}
GE_NAMES = {"DT_FLOAT": "float32", "DT_FLOAT16": "float16", "DT_BF16": "bfloat16"}
ATTR_KINDS = {"Int": "int", "Float": "float", "Bool": "bool"}


@dataclass(frozen=True)
class OwnOperator:
    """One of our operators as its OpDef declares it: tensors (name, dtype column variable) in order,
    attributes (name, kind) in order, and the dtype columns {variable: (dtype per column)}."""
    op_type: str
    inputs: tuple
    outputs: tuple
    attrs: tuple
    columns: dict

    def dtypes(self, column):
        """{tensor name: dtype} of OpDef column ``column``."""
        return {name: self.columns[var][column] for name, var in self.inputs + self.outputs}


def _columns(text):
    columns = {}
    for var, values in re.findall(r"std::vector<ge::DataType>\s+(\w+)\s*=\s*\{([^}]*)\}", text):
        columns[var] = tuple(GE_NAMES[v.strip().removeprefix("ge::")] for v in values.split(","))
    for var, count_of, value in re.findall(r"std::vector<ge::DataType>\s+(\w+)\((\w+)\.size\(\),\s*ge::(\w+)\)", text):
        columns[var] = (GE_NAMES[value],) * len(columns[count_of])
    return columns


def own_operator(source):
    """The OwnOperator an op_host .cpp defines."""
    text = Path(source).read_text()
    op_type = re.search(r"class (\w+) : public OpDef", text).group(1)
    tensors = {kind: tuple(re.findall(rf'this->{kind}\("(\w+)"\)\.ParamType\(REQUIRED\)\.DataType\((\w+)\)', text))
               for kind in ("Input", "Output")}
    attrs = tuple((name, ATTR_KINDS[kind]) for name, kind in
                  re.findall(r'this->Attr\("(\w+)"\)\.AttrType\(\w+\)\.(Int|Float|Bool)\(', text))
    return OwnOperator(op_type, tensors["Input"], tensors["Output"], attrs, _columns(text))


OPERATORS = {op.op_type: op for op in map(own_operator, sorted(OP_HOST.glob("group_norm_*_ms.cpp")))}


def checkouts():
    """{env: Path} of METADEF and ASC_DEVKIT, or a one-line reason why this cannot run."""
    paths = {}
    for env in ("METADEF", "ASC_DEVKIT"):
        if not os.environ.get(env):
            return f"{env} is unset: running our op_host needs CANN source checkouts ({cann_peer.HOW_TO_GET})"
        paths[env] = Path(os.environ[env])
    if not (paths["METADEF"] / OPDEF_METADEF[0]).is_file():
        return f"METADEF={paths['METADEF']} has no {OPDEF_METADEF[0]}"
    if not (paths["ASC_DEVKIT"] / cann_peer.HOST_ASC_DEVKIT[0]).is_file():
        return f"ASC_DEVKIT={paths['ASC_DEVKIT']} has no {cann_peer.HOST_ASC_DEVKIT[0]}"
    return paths


# The two builds of our op_host sources, as a custom-op package has them: the tiling library (OP_ADD
# registers the tiling) and the op proto library (OP_ADD registers InferShape and InferDataType), each
# with its entry of ours and the metadef context builders it uses.
BUILDS = {
    "tiling": (["-DOP_TILING_LIB"], cann_peer.PEER / "cann_tiling_host.cc", []),
    "infer": (["-DOP_PROTO_LIB"], cann_peer.PEER / "own_infer_host.cc",
              [Path("base/context_builder") / f"{n}.cc" for n in ("op_infer_shape_context_builder",
                                                                   "op_infer_datatype_context_builder")]),
}


def _build(kind):
    """The CDLL of our three operators' op_host sources built as ``kind`` (BUILDS); RuntimeError with the reason."""
    paths = checkouts()
    if isinstance(paths, str):
        raise RuntimeError(paths)
    metadef, asc = paths["METADEF"], paths["ASC_DEVKIT"]
    lib_flag, entry, builders = BUILDS[kind]
    includes = [cann_peer.PEER / "host_stubs", metadef / "inc/external", metadef / "inc/external/asc",
                metadef / "inc", metadef / "inc/graph", metadef / "base", metadef, metadef / "pkg_inc",
                metadef / "pkg_inc/external", metadef / "third_party", asc / "include/utils/tiling/platform",
                asc / "include/utils/tiling", asc / "include/utils", asc / "include"]
    flags = cann_peer.HOST_FLAGS + lib_flag + ["-DNO_OPERATOR_IMPL"] + [f"-I{d}" for d in includes]
    ours = cann_peer._digest(cann_peer._dir_digest(OP_HOST), cann_peer._dir_digest(cann_peer.ASCENDC / "op_kernel"),
                             cann_peer._dir_digest(cann_peer.PEER / "host_stubs"),
                             (cann_peer.PEER / "host_entry_common.h").read_bytes())
    sources = (sorted(OP_HOST.glob("*.cpp")) + [metadef / s for s in OPDEF_METADEF + cann_peer.HOST_METADEF + builders]
               + [asc / s for s in cann_peer.HOST_ASC_DEVKIT] + [entry])
    cache = cann_peer._cache()
    jobs = [(["g++", *flags, "-c", str(s)], cache / f"own-{s.stem}-{cann_peer._digest(s, s.read_bytes(), ours, *flags)}.o")
            for s in sources]
    cann_peer._compile(jobs)
    objects = [o for _, o in jobs]
    return ctypes.CDLL(str(cann_peer._link(objects, cache / f"libown_{kind}-{cann_peer._digest(*objects)}.so",
                                           ["-ldl"])))


def build_or_skip(build):
    """``build()`` (library or infer_library), or a pytest skip with the one-line reason the CANN
    checkouts give."""
    reason = checkouts()
    if isinstance(reason, str):
        pytest.skip(reason)
    return build()


@functools.lru_cache(maxsize=None)
def library():
    """The tiling library of our three operators (CDLL with GnmsPeerTiling); RuntimeError with the reason."""
    host = _build("tiling")
    i64, cint, ptr = ctypes.c_int64, ctypes.c_int, ctypes.c_void_p
    host.GnmsPeerTiling.restype = cint
    host.GnmsPeerTiling.argtypes = [ctypes.c_char_p, cint, cint, ptr, ptr, ptr, cint, ptr, ptr, ptr, ptr, cint, i64,
                                    i64, ptr, i64, ptr, i64, ptr, ctypes.c_char_p, cint]
    return host


def tiling(op, N, C, HxW, G, column=0, shapes=None, vector_cores=cann_peer.VECTOR_CORES,
           ub_bytes=cann_peer.UB_BYTES, **attrs):
    """What our operator ``op`` (an OwnOperator) computes through CANN's registry on this call: raw tiling
    bytes, tiling key, block dim, workspace bytes (system part included) and schedule mode. ``column``:
    the OpDef dtype column; ``shapes`` overrides tensor shapes by name; ``attrs`` by OpDef name (an
    attribute not given is left out of the context, as the framework leaves an unset OPTIONAL one).
    Raises ValueError with the refusal."""
    host = library()
    dtypes = op.dtypes(column)
    by_role = {"data": (N, C, HxW), "stat": (N, G), "channel": (C,)}
    names = [name for name, _ in op.inputs + op.outputs]
    shape_of = {name: tuple((shapes or {}).get(name, by_role[ROLES[name]])) for name in names}
    ranks = np.array([len(shape_of[n]) for n in names], np.int32)
    dims = np.array([d for n in names for d in shape_of[n]], np.int64)
    ge_codes = np.array([cann_peer.GE_DTYPES[dtypes[n]] for n in names], np.int32)
    count, kinds, ints, floats = _attr_arrays(op, {"num_groups": G, **attrs})
    strings = (ctypes.c_char_p * max(count, 1))()
    info = np.zeros(16, np.uint8)
    raw = np.zeros(4096, np.uint8)
    out = np.zeros(5, np.int64)
    error = ctypes.create_string_buffer(1024)
    status = host.GnmsPeerTiling(op.op_type.encode(), len(op.inputs), len(op.outputs), ranks.ctypes.data,
                                 dims.ctypes.data, ge_codes.ctypes.data, count, kinds.ctypes.data,
                                 ints.ctypes.data, floats.ctypes.data, strings, 0, vector_cores, ub_bytes,
                                 info.ctypes.data, 0, raw.ctypes.data, raw.size, out.ctypes.data, error, len(error))
    if status:
        raise ValueError(error.value.decode())
    return {"raw": raw[:out[0]].copy(), "tiling_key": int(out[1]), "block_dim": int(out[2]),
            "workspace": int(out[3]), "schedule_mode": int(out[4])}


@functools.lru_cache(maxsize=None)
def infer_library():
    """The op proto library of our three operators (CDLL with GnmsOwnInfer); RuntimeError with the reason."""
    host = _build("infer")
    cint, ptr = ctypes.c_int, ctypes.c_void_p
    host.GnmsOwnInfer.restype = cint
    host.GnmsOwnInfer.argtypes = [ctypes.c_char_p, cint, cint, ptr, ptr, ptr, cint, ptr, ptr, ptr, ptr, ptr, ptr,
                                  ctypes.c_char_p, cint]
    return host


def _attr_arrays(op, values):
    """The attributes given in ``values`` (a prefix of the OpDef's, in its order) as kinds, ints and floats."""
    given = [(name, kind) for name, kind in op.attrs if name in values]
    if [name for name, _ in given] != [name for name, _ in op.attrs[:len(given)]]:
        raise KeyError("attributes are appended in OpDef order: give a prefix of " + str([n for n, _ in op.attrs]))
    kinds = np.array([cann_peer.ATTR_KINDS[kind] for _, kind in given] or [0], np.int32)
    ints = np.array([int(values[n]) if k in ("int", "bool") else 0 for n, k in given] or [0], np.int64)
    floats = np.array([float(values[n]) if k == "float" else 0.0 for n, k in given] or [0.0], np.float64)
    return len(given), kinds, ints, floats


def infer(op, shapes, column=0, **attrs):
    """What our operator ``op`` (an OwnOperator)'s InferShape and InferDataType give through CANN's
    registry and context builders: ({output name: shape}, {output name: dtype}) for input ``shapes``
    {name: shape} with the dtypes of OpDef column ``column``; ``attrs`` by OpDef name, as ``tiling``
    takes them. Raises ValueError with the refusal."""
    host = infer_library()
    dtypes = op.dtypes(column)
    names = [name for name, _ in op.inputs]
    ranks = np.array([len(shapes[n]) for n in names], np.int32)
    dims = np.array([d for n in names for d in shapes[n]] or [0], np.int64)
    ge_codes = np.array([cann_peer.GE_DTYPES[dtypes[n]] for n in names], np.int32)
    count, kinds, ints, floats = _attr_arrays(op, attrs)
    outputs = [name for name, _ in op.outputs]
    out_ranks = np.zeros(len(outputs), np.int32)
    out_dims = np.zeros(8 * len(outputs), np.int64)
    out_dtypes = np.zeros(len(outputs), np.int32)
    error = ctypes.create_string_buffer(1024)
    status = host.GnmsOwnInfer(op.op_type.encode(), len(names), len(outputs), ranks.ctypes.data, dims.ctypes.data,
                               ge_codes.ctypes.data, count, kinds.ctypes.data, ints.ctypes.data, floats.ctypes.data,
                               out_ranks.ctypes.data, out_dims.ctypes.data, out_dtypes.ctypes.data, error, len(error))
    if status == 2:
        raise RuntimeError(error.value.decode())
    if status:
        raise ValueError(error.value.decode())
    by_code = {code: name for name, code in cann_peer.GE_DTYPES.items()}
    return ({name: tuple(int(d) for d in out_dims[8 * j:8 * j + out_ranks[j]]) for j, name in enumerate(outputs)},
            {name: by_code.get(int(out_dtypes[j]), int(out_dtypes[j])) for j, name in enumerate(outputs)})


def decode(raw, int_fields, float_fields):
    """{name: value} of a tiling struct: int64 fields in order, then float fields (4 bytes each)."""
    ints = np.frombuffer(raw[:8 * len(int_fields)].tobytes(), np.int64)
    floats = np.frombuffer(raw[8 * len(int_fields):8 * len(int_fields) + 4 * len(float_fields)].tobytes(), np.float32)
    return {**dict(zip(int_fields, map(int, ints))), **dict(zip(float_fields, map(float, floats)))}
