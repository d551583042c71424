"""Each operator described once: what every backend needs to know about it.

A ``Description`` per direction of each operator (GroupNorm forward and backward, the fused
GroupNorm + swish forward and backward) carries its inputs, outputs and attributes in the
order the kernels take them (the aclnn contracts' order: tensors, then attributes), the
dtype rule, the name of its C entry point (whose C++ InferShape/InferType hooks give
shapes and dtypes, so GRAPH_MODE takes dynamic shapes), its CustomRegOp name, the pyboost
module that runs it in PYNATIVE_MODE, its AscendC operator and twin entry, its float64
reference, the argument checks of its public contract (``checks`` names the functions of
``ops.checks``), and for a forward the backward its bprop feeds (``saved``: which forward
inputs/outputs the backward takes after dy).

The backends (``ms_groupnorm.backends``) are written against these fields, so a new
operator is a new pair of descriptions here, its kernels, and one line per backend in
``ops.routing`` (docs/how-it-works.md, "Adding a third operator").
"""
from dataclasses import dataclass

from .. import reference
from ..backends.ascend_operators import GROUP_NORM_GRAD_MS, GROUP_NORM_SILU_GRAD_MS, GROUP_NORM_SILU_MS

# Data dtypes every operator takes; statistics are float32 for float16/bfloat16 data (or in
# the data's dtype), float64 runs on the CPU kernels only.
DATA_DTYPES = ("float32", "float16", "bfloat16", "float64")
DTYPE_RULE = ("data float32/float16/bfloat16 (float64 on the CPU kernels); gamma, beta, mean and rstd in one "
              "statistics dtype: the data's, or float32 for float16/bfloat16 data")


@dataclass(frozen=True)
class Description:
    """One direction of one operator, as every backend sees it."""
    name: str          # the operator family member: the pyboost module and its functions' stem
    entry: str         # the CPU kernel library's aot entry point (and of the twin's shim)
    reg_name: str      # the CustomRegOp name of the CPU aot op ("Twin" appended for the twin)
    inputs: tuple      # tensors, in the kernels' order
    outputs: tuple
    attrs: tuple       # (name, CustomRegOp value type), in the kernels' order
    reference: object  # the float64 numpy reference (ms_groupnorm.reference)
    checks: tuple      # the ops.checks functions of the public contract, in the order they run
    pyboost: str       # the function of the pyboost modules (CPU and Ascend)
    twin_library: str = None  # "forward"/"backward" twin library with this entry; None: the CPU kernel
    ascend: object = None  # backends.ascend_operators: the AscendC operator that runs it on Ascend
    activate_silu: bool = False  # forward: GroupNormSiluMs's activate_silu for this operator
    saved: tuple = ()  # forward only: what the backward takes after dy (forward inputs/outputs by name)
    backward: "Description" = None  # forward only


_MASK_ATTRS = (("dx_is_require", "bool"), ("dgamma_is_require", "bool"), ("dbeta_is_require", "bool"))

GROUP_NORM_GRAD = Description(
    name="group_norm", entry="GroupNormGrad", reg_name="GroupNormGradMs",
    inputs=("dy", "x", "mean", "rstd", "gamma"), outputs=("dx", "dgamma", "dbeta"),
    attrs=(("group", "int"),) + _MASK_ATTRS, reference=reference.backward, checks=("check_backward",),
    pyboost="group_norm_grad", twin_library="backward", ascend=GROUP_NORM_GRAD_MS)
GROUP_NORM = Description(
    name="group_norm", entry="GroupNorm", reg_name="GroupNormMs",
    inputs=("x", "gamma", "beta"), outputs=("y", "mean", "rstd"),
    attrs=(("group", "int"), ("eps", "float")), reference=reference.forward, checks=("check_forward",),
    pyboost="group_norm", twin_library="forward", ascend=GROUP_NORM_SILU_MS,
    saved=("x", "mean", "rstd", "gamma"), backward=GROUP_NORM_GRAD)

GROUP_NORM_SILU_GRAD = Description(
    name="group_norm_silu", entry="GroupNormSiluGrad", reg_name="GroupNormSiluGradMs",
    inputs=("dz", "x", "mean", "rstd", "gamma", "beta"), outputs=("dx", "dgamma", "dbeta"),
    attrs=(("group", "int"), ("swish_scale", "float")) + _MASK_ATTRS, reference=reference.silu_backward,
    checks=("check_backward", "check_beta_for_backward", "check_swish_scale"), pyboost="group_norm_silu_grad",
    twin_library="backward", ascend=GROUP_NORM_SILU_GRAD_MS)
GROUP_NORM_SILU = Description(
    name="group_norm_silu", entry="GroupNormSilu", reg_name="GroupNormSiluMs",
    inputs=("x", "gamma", "beta"), outputs=("z", "mean", "rstd"),
    attrs=(("group", "int"), ("eps", "float"), ("swish_scale", "float")), reference=reference.silu_forward,
    checks=("check_forward", "check_swish_scale"), pyboost="group_norm_silu", twin_library="forward",
    ascend=GROUP_NORM_SILU_MS, activate_silu=True, saved=("x", "mean", "rstd", "gamma", "beta"),
    backward=GROUP_NORM_SILU_GRAD)

OPERATORS = (GROUP_NORM, GROUP_NORM_SILU)
