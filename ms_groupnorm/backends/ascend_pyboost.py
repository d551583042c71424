"""PyNative on Ascend: the CustomOpBuilder(backend="Ascend") module that launches the
installed AscendC operators through AclnnOpRunner (source: _native/group_norm_ascend_pyboost.cc):
GroupNormGradMs, GroupNormSiluMs (SiLU off for GroupNorm, on for the fused op) and the fused
backward GroupNormSiluGradMs (``ascend`` calls them; ``ops.routing`` says which).

Why: on Ascend, ``ops.Custom.__call__`` runs ``pyboost_custom_ext``, which accepts tensors
only, and our operator takes num_groups and the output mask as scalars; MindSpore's docs
point Ascend C operators in PyNative to CustomOpBuilder + AclnnOpRunner. GRAPH_MODE keeps
``ops.Custom(func_type="aot")`` (see ``ascend``).

Built on first use, once per MindSpore version, source and installed operator headers,
into the same cache as the CPU fast path (``native_build.cache_root()``); later processes only
load it. It needs CANN's environment (``$ASCEND_OPP_PATH``, from CANN's set_env.sh) and the
GroupNormGradMs operator installed where ``$ASCEND_CUSTOM_OPP_PATH`` points (its
``op_api/include/aclnn_group_norm_grad_ms.h`` is compiled against, so that the arguments
are checked against CANN's declaration); without either, ``module()`` raises a
RuntimeError that says what to run. There is no silent fallback: on Ascend no other
eager route passes the scalars.
"""
import functools
import os

from .ascend_chip import check_chip
from .ascend_operators import GROUP_NORM_GRAD_MS, GROUP_NORM_SILU_GRAD_MS, GROUP_NORM_SILU_MS
from .ascend_operators import aclnn_header_name, custom_opp_entries, installed_header, vendor_dir  # noqa: F401
from .cann_env import check_cann_environment
from .native_build import (NATIVE_DIR, ORDERING_HEADER, SECOND_ORDER_HEADER, build_key, build_module, cache_root,
                           missing_tools, once, SecondOrderHook)

SOURCE = NATIVE_DIR / "group_norm_ascend_pyboost.cc"
GRAD_OP_TYPE = GROUP_NORM_GRAD_MS.op_type
FORWARD_OP_TYPE = GROUP_NORM_SILU_MS.op_type
SILU_GRAD_OP_TYPE = GROUP_NORM_SILU_GRAD_MS.op_type  # the fused GroupNorm + SiLU backward
_HINT = ("on a 910B run `bash kernels/ascendc/build.sh` (or check_on_ascend.sh) and export the "
         "ASCEND_CUSTOM_OPP_PATH it prints")


def installed(op_type):
    """True when the AscendC operator ``op_type`` is installed. Read once per process and
    $ASCEND_CUSTOM_OPP_PATH value: it is asked on every call of the ops, and the operators
    are installed before MindSpore starts."""
    return _installed(op_type, os.environ.get("ASCEND_CUSTOM_OPP_PATH", ""))


@functools.lru_cache(maxsize=32)
def _installed(op_type, _custom_opp_path):
    return installed_header(op_type) is not None


def forward_installed():
    """True when our GroupNormSiluMs forward operator is installed."""
    return installed(FORWARD_OP_TYPE)


def fused_installed():
    """True when both operators of the fused GroupNorm + SiLU are installed: the forward
    GroupNormSiluMs and the backward GroupNormSiluGradMs."""
    return installed(FORWARD_OP_TYPE) and installed(SILU_GRAD_OP_TYPE)


def check_environment():
    """Raises a RuntimeError saying what is missing: CANN's environment or the operator.
    Returns the installed operator headers (grad first, then those of GroupNormSiluMs and
    GroupNormSiluGradMs where installed: they are part of the build key, so installing one
    later rebuilds the module against it)."""
    check_chip()  # the chip first: on a chip we do not run on, that is the news
    check_cann_environment("the Ascend PyNative module")
    grad = installed_header(GRAD_OP_TYPE)
    if grad is None:
        searched = ", ".join(str(e) for e in custom_opp_entries()) or "$ASCEND_CUSTOM_OPP_PATH is unset"
        raise RuntimeError(f"ms_groupnorm: the AscendC operator {GRAD_OP_TYPE} is not installed (no "
                           f"op_api/include/{aclnn_header_name(GRAD_OP_TYPE)} in: {searched}); {_HINT}")
    check_chip(vendor_dir(grad))  # and the SoCs the installed package was built for
    headers = [grad]
    for op_type in (FORWARD_OP_TYPE, SILU_GRAD_OP_TYPE):
        header = installed_header(op_type)
        if header is not None:
            headers.append(header)
    return headers


def build():
    """Builds (or re-checks) and loads the module; raises with a clear message on failure."""
    headers = check_environment()
    if not SOURCE.is_file():
        raise FileNotFoundError(f"ms_groupnorm: {SOURCE} is not installed")
    missing = missing_tools()
    if missing:
        raise RuntimeError(f"ms_groupnorm: building the Ascend PyNative module needs {', '.join(missing)} on PATH")
    key = build_key(SOURCE.read_bytes(), ORDERING_HEADER.read_bytes(), SECOND_ORDER_HEADER.read_bytes(),
                    *[h.read_bytes() for h in headers])
    build_dir = cache_root() / "ascend_pyboost" / key
    return build_module(f"ms_groupnorm_ascend_{key}", [SOURCE], build_dir,
                        f"ms_groupnorm: compiling the Ascend PyNative module once (cached in {build_dir})...",
                        "ms_groupnorm: Ascend PyNative module built in {seconds:.0f} s",
                        backend="Ascend", include_paths=sorted({str(h.parent) for h in headers}))


second_order_hook = SecondOrderHook()  # set by ops.routing


@once
def module():
    """The loaded module (built on first use); raises when it cannot be built."""
    loaded = build()
    loaded.set_differentiable_backward(second_order_hook)
    return loaded
