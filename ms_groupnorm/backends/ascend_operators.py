"""The AscendC operators as kernels/ascendc/op_host's OpDefs define them (type name,
inputs, outputs, attributes and dtype columns, in CANN's order, which differs from ours:
dy, mean, rstd, x, ...). What MindSpore's registration (``ascend``) and the Ascend PyNative
module's build (``ascend_pyboost``) need to know of them; each operator's description
(``ops.descriptions``) names the one that runs it.
"""
import os
import re
from dataclasses import dataclass
from pathlib import Path

NATIVE_DIR = Path(__file__).resolve().parent.parent / "_native"


@dataclass(frozen=True)
class AscendOperator:
    """An AscendC operator; ``dtype_rows``: the OpDef's dtype columns as MindSpore DataType
    names, one row per supported combination (inputs then outputs)."""
    op_type: str
    inputs: tuple
    outputs: tuple
    attrs: tuple  # (name, value type)
    dtype_rows: tuple
    infer_source: Path  # the C++ infer MindSpore compiles for GRAPH_MODE

    @property
    def aclnn_func(self):
        """The ``func`` of ops.Custom and the CustomRegOp name: MindSpore requires them to be
        the same (docs op_custom_ascendc.md, "Precautions: Name Consistency"; its aclnn tests
        use CustomRegOp("aclnnAddCustom") with func="aclnnAddCustom"). The C++ infer hooks
        are looked up as "<func name>InferShape"/"InferType" with this exact name."""
        return "aclnn" + self.op_type


_GRAD_ROWS = tuple((d, s, s, d, s, d, s, s) for d, s in (
    ("F32_Default", "F32_Default"), ("F16_Default", "F16_Default"), ("BF16_Default", "BF16_Default"),
    ("F16_Default", "F32_Default"), ("BF16_Default", "F32_Default")))
# dy, mean, rstd, x, gamma | dx, dgamma, dbeta: the (data, statistics) pairs of the OpDef
GROUP_NORM_GRAD_MS = AscendOperator(
    op_type="GroupNormGradMs", inputs=("dy", "mean", "rstd", "x", "gamma"), outputs=("dx", "dgamma", "dbeta"),
    attrs=(("num_groups", "int"), ("dx_is_require", "bool"), ("dgamma_is_require", "bool"),
           ("dbeta_is_require", "bool")),
    dtype_rows=_GRAD_ROWS, infer_source=NATIVE_DIR / "group_norm_ascend_infer.cc")
# Our AscendC forward (kernels/ascendc/op_host/group_norm_silu_ms.cpp); with activate_silu=False
# it is plain GroupNorm. x, gamma, beta | y, mean, rstd; mean/rstd always float32; gamma/beta
# are required (the callers pass ones/zeros for "none"). Its infer is compiled per num_groups.
GROUP_NORM_SILU_MS = AscendOperator(
    op_type="GroupNormSiluMs", inputs=("x", "gamma", "beta"), outputs=("y", "mean", "rstd"),
    attrs=(("num_groups", "int"), ("eps", "float"), ("activate_silu", "bool"), ("swish_scale", "float")),
    dtype_rows=tuple((d, p, p, d, "F32_Default", "F32_Default") for d, p in (
        ("F32_Default", "F32_Default"), ("F16_Default", "F16_Default"), ("BF16_Default", "BF16_Default"),
        ("F16_Default", "F32_Default"), ("BF16_Default", "F32_Default"))),
    infer_source=NATIVE_DIR / "group_norm_silu_ascend_infer.cc")
# dy, mean, rstd, x, gamma, beta | dx, dgamma, dbeta; GroupNormGradMs's infer (same outputs,
# same positions of x and gamma).
GROUP_NORM_SILU_GRAD_MS = AscendOperator(
    op_type="GroupNormSiluGradMs", inputs=("dy", "mean", "rstd", "x", "gamma", "beta"),
    outputs=("dx", "dgamma", "dbeta"),
    attrs=(("num_groups", "int"), ("swish_scale", "float"), ("dx_is_require", "bool"),
           ("dgamma_is_require", "bool"), ("dbeta_is_require", "bool")),
    dtype_rows=tuple(row[:5] + (row[4],) + row[5:] for row in _GRAD_ROWS),
    infer_source=NATIVE_DIR / "group_norm_ascend_infer.cc")
ASCEND_OPERATORS = (GROUP_NORM_GRAD_MS, GROUP_NORM_SILU_MS, GROUP_NORM_SILU_GRAD_MS)

NOT_INSTALLED = (
    "ms_groupnorm: on Ascend the fused GroupNorm + SiLU needs the AscendC operators GroupNormSiluMs and "
    "GroupNormSiluGradMs installed where $ASCEND_CUSTOM_OPP_PATH points (run `bash kernels/ascendc/build.sh` "
    "and export the ASCEND_CUSTOM_OPP_PATH it prints); without them group_norm_silu, GroupNormSiLU and "
    "group_norm_silu_forward run GroupNorm then SiLU, and group_norm_silu_backward has no kernel")


# ---------------------------------------------------------------- where they are installed
def aclnn_header_name(op_type):
    """``aclnn_<snake_case>.h``, the header CANN generates for ``op_type`` (the name
    MindSpore's CustomInfoGenerator looks for as well)."""
    name = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", "aclnn" + op_type)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower() + ".h"


def custom_opp_entries():
    """The vendor directories of $ASCEND_CUSTOM_OPP_PATH, in order."""
    return [Path(entry) for entry in os.environ.get("ASCEND_CUSTOM_OPP_PATH", "").split(":") if entry]


def installed_header(op_type):
    """The installed ``op_api/include/aclnn_<op>.h`` of ``op_type`` (first
    $ASCEND_CUSTOM_OPP_PATH entry that has it, as MindSpore searches), or None."""
    for entry in custom_opp_entries():
        header = entry / "op_api" / "include" / aclnn_header_name(op_type)
        if header.is_file():
            return header
    return None


def vendor_dir(header):
    """The vendor directory (the $ASCEND_CUSTOM_OPP_PATH entry) of an installed
    ``<vendor>/op_api/include/aclnn_<op>.h``."""
    return Path(header).parents[2]
