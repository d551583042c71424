"""A CANN install tree for tests on machines without CANN: ``<root>/opp`` (what
$ASCEND_OPP_PATH names) and ``<root>/include`` = tests/ascend_stubs (declaration-only
stand-ins), plus a vendor directory with the aclnn headers CANN's build would generate
from op_host (tests/aclnn_header.py). Nothing here runs a kernel."""
import os
from pathlib import Path

import aclnn_header

from ms_groupnorm.backends import ascend
import twin

STUBS = Path(__file__).resolve().parent / "ascend_stubs"
OP_HOST = twin.ascendc_dir() / "op_host"


def op_definitions():
    """The parsed OpDefs of the operators ms_groupnorm calls: GroupNormGradMs,
    GroupNormSiluGradMs (the fused backward), and GroupNormSiluMs when its op_host source
    is in this tree (else from ASCEND_FORWARD_OP)."""
    grad = aclnn_header.parse_op_def((OP_HOST / "group_norm_grad_ms.cpp").read_text())
    silu_grad = aclnn_header.parse_op_def((OP_HOST / "group_norm_silu_grad_ms.cpp").read_text())
    forward_src = OP_HOST / "group_norm_silu_ms.cpp"
    if forward_src.is_file():
        forward = aclnn_header.parse_op_def(forward_src.read_text())
    else:
        d = ascend.GROUP_NORM_SILU_MS
        forward = {"op_type": d.op_type, "inputs": [(n, "REQUIRED") for n in d.inputs],
                   "outputs": [(n, "REQUIRED") for n in d.outputs],
                   "attrs": [(n, t.capitalize()) for n, t in d.attrs]}
    return {"grad": grad, "forward": forward, "silu_grad": silu_grad}


BUILT_FOR = ("ascend910b", "ascend910_93")


def make(root, ops=None, socs=BUILT_FOR):
    """Builds the tree under ``root``; returns (cann_root, vendor_dir). MindSpore finds CANN's
    root as ``$ASCEND_OPP_PATH.split("opp")[0]``, so ``root`` must not contain "opp". The
    vendor directory gets one ``op_impl/ai_core/tbe/config/<soc>`` per SoC of ``socs``, as
    CANN's installer writes for each SoC the package was built for."""
    assert "opp" not in str(root), f"{root}: MindSpore would cut the CANN path at its 'opp'"
    root = Path(root)
    (root / "cann" / "opp").mkdir(parents=True, exist_ok=True)
    include = root / "cann" / "include"
    if not include.exists():
        os.symlink(STUBS, include)
    vendor = root / "vendors" / "ms_groupnorm"
    for op in (ops or op_definitions()).values():
        aclnn_header.install(op, vendor)
    for soc in socs:
        config = vendor / "op_impl" / "ai_core" / "tbe" / "config" / soc
        config.mkdir(parents=True, exist_ok=True)
        (config / f"aic-{soc}-ops-info.json").write_text("{}")
    return root / "cann", vendor
