"""Each operator described once: what every backend needs to know about it.

A ``Description`` per direction of each operator (GroupNorm forward and backward, the fused
GroupNorm + swish forward and backward) carries its inputs, outputs and attributes in the
order the kernels take them (the aclnn contracts' order: tensors, then attributes), the
dtype rule, the name of its C entry point (whose C++ InferShape/InferType hooks give
shapes and dtypes, so GRAPH_MODE takes dynamic shapes), its CustomRegOp name, the pyboost
module that runs it in PYNATIVE_MODE, its AscendC operator and twin entry, its float64
reference, for a backward the bprop of its own
(second-order gradients, ``ops.double_backward``), and for a forward the backward its bprop
feeds (``saved``: which forward inputs/outputs the backward takes after dy) and how the
Ascend operator that runs it is set (``ascend_fixed``).

``ops.routing`` and the backends read these fields and never an operator's name, so a new
operator is a new pair of descriptions here, its kernels and its tests (docs/how-it-works.md,
"Adding an operator"; tests/test_toy_operator.py does it).
"""
import functools
from dataclasses import dataclass

from .. import reference
from ..backends.ascend_operators import GROUP_NORM_GRAD_MS, GROUP_NORM_SILU_GRAD_MS, GROUP_NORM_SILU_MS
from . import double_backward


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: the op caches key on it per call
class Description:
    """One direction of one operator, as every backend sees it."""
    name: str          # the operator family member: the pyboost module and its functions' stem
    entry: str         # the CPU kernel library's aot entry point (and of the twin's shim)
    reg_name: str      # the CustomRegOp name of the CPU aot op ("Twin" appended for the twin)
    inputs: tuple      # tensors, in the kernels' order
    outputs: tuple
    attrs: tuple       # (name, CustomRegOp value type), in the kernels' order
    reference: object  # the float64 numpy reference (ms_groupnorm.reference)
    pyboost: str       # the function of the pyboost modules (CPU and Ascend)
    twin_library: str = None  # "forward"/"backward" twin library with this entry; None: the CPU kernel
    ascend: object = None  # backends.ascend_operators: the AscendC operator that runs it on Ascend
    # forward only: the Ascend operator's attributes this operator fixes, (name, value); the
    # others are this description's attributes of the same name ("group" is "num_groups")
    ascend_fixed: tuple = ()
    # MindSpore has this operator itself (its GroupNorm primitive and grad): it runs on every
    # backend, through MindSpore's forward where our Ascend forward is not installed; an
    # operator without runs only where ops.routing.fused_backend() finds its kernels
    builtin: bool = False
    second_order: object = None  # backward only: ops.double_backward's bprop factory (attrs..., mask, statistics)
    saved: tuple = ()  # forward only: what the backward takes after dy (forward inputs/outputs by name)
    backward: "Description" = None  # forward only

    @property
    def attr_names(self):
        """The attributes before the mask bits (a backward's last three), which callers pass."""
        names = tuple(name for name, _ in self.attrs)
        return names[:-3] if names[-3:] == tuple(name for name, _ in _MASK_ATTRS) else names

    @functools.cached_property
    def _converters(self):
        kinds = dict(self.attrs)
        return tuple(_AS_TYPE[kinds[name]] for name in self.attr_names)

    def attr_values(self, values):
        """``values`` of ``attr_names`` as the kernels take them (int, float, bool)."""
        return tuple([convert(value) for convert, value in zip(self._converters, values)])  # a list: ~0.3 us less

    def backward_attr_values(self, values):
        """A forward's attribute ``values`` that its backward takes too (by name: the backward has no eps)."""
        named = dict(zip(self.attr_names, values))
        return tuple(named[name] for name in self.backward.attr_names)

    def ascend_scalars(self, values):
        """The Ascend forward operator's attributes, in its order, for this forward's ``values``."""
        known = dict(zip(("num_groups" if name == "group" else name for name in self.attr_names), values))
        known.update(self.ascend_fixed)
        return tuple(known[name] for name, _ in self.ascend.attrs)


_AS_TYPE = {"int": int, "float": float, "bool": bool}
_MASK_ATTRS = (("dx_is_require", "bool"), ("dgamma_is_require", "bool"), ("dbeta_is_require", "bool"))

GROUP_NORM_GRAD = Description(
    name="group_norm", entry="GroupNormGrad", reg_name="GroupNormGradMs",
    inputs=("dy", "x", "mean", "rstd", "gamma"), outputs=("dx", "dgamma", "dbeta"),
    attrs=(("group", "int"),) + _MASK_ATTRS, reference=reference.backward,
    pyboost="group_norm_grad", twin_library="backward", ascend=GROUP_NORM_GRAD_MS,
    second_order=double_backward.group_norm_backward_bprop, builtin=True)
GROUP_NORM = Description(
    name="group_norm", entry="GroupNorm", reg_name="GroupNormMs",
    inputs=("x", "gamma", "beta"), outputs=("y", "mean", "rstd"),
    attrs=(("group", "int"), ("eps", "float")), reference=reference.forward,
    pyboost="group_norm", twin_library="forward", ascend=GROUP_NORM_SILU_MS,
    ascend_fixed=(("activate_silu", False), ("swish_scale", 1.0)), builtin=True,
    saved=("x", "mean", "rstd", "gamma"), backward=GROUP_NORM_GRAD)

GROUP_NORM_SILU_GRAD = Description(
    name="group_norm_silu", entry="GroupNormSiluGrad", reg_name="GroupNormSiluGradMs",
    inputs=("dz", "x", "mean", "rstd", "gamma", "beta"), outputs=("dx", "dgamma", "dbeta"),
    attrs=(("group", "int"), ("swish_scale", "float")) + _MASK_ATTRS, reference=reference.silu_backward,
    pyboost="group_norm_silu_grad", twin_library="backward", ascend=GROUP_NORM_SILU_GRAD_MS,
    second_order=double_backward.group_norm_silu_backward_bprop)
GROUP_NORM_SILU = Description(
    name="group_norm_silu", entry="GroupNormSilu", reg_name="GroupNormSiluMs",
    inputs=("x", "gamma", "beta"), outputs=("z", "mean", "rstd"),
    attrs=(("group", "int"), ("eps", "float"), ("swish_scale", "float")), reference=reference.silu_forward,
    pyboost="group_norm_silu", twin_library="forward", ascend=GROUP_NORM_SILU_MS,
    ascend_fixed=(("activate_silu", True),), saved=("x", "mean", "rstd", "gamma", "beta"),
    backward=GROUP_NORM_SILU_GRAD)

OPERATORS = (GROUP_NORM, GROUP_NORM_SILU)
BY_NAME = {forward.name: forward for forward in OPERATORS}  # the PyNative modules name an operator
