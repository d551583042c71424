"""The CPU aot backend: each operator as ``ops.Custom(func_type="aot")``, on the CPU kernel
library (backend "cpu") or on the AscendC twins' aot shims, which have the CPU kernels' ABI
(backend "ascendc_twin"). One implementation for every operator, from its description
(``ops.descriptions``, handed in by ``ops.routing``).

* a backward op: ``(dy, x, mean, rstd, gamma[, beta]) -> (dx, dgamma, dbeta)``; outputs
  whose mask bit is off come back as (0,);
* a forward op: ``(x, gamma, beta) -> (out, mean, rstd)``, with a bprop that feeds the
  forward's saved statistics (and x, gamma[, beta]) to the backward op: nothing is
  recomputed but what the backward kernel recomputes itself.

An empty (0,) gamma/beta stands for "none" (ones/zeros), so that one operator serves both
affine and functional calls without building ones/zeros tensors per call. Shapes and dtypes
are inferred by the library's C++ ``*InferShape``/``*InferType`` hooks (out_shape/out_dtype
None): that is what lets GRAPH_MODE run with dynamic shapes, and it needs a reg_info
carrying an op name.

``PynativeForward`` is the forward of the CPU PyNative fast path: this aot op in graphs,
the pyboost module (``cpu_pyboost``) in eager calls.
"""
import ctypes

from mindspore import ops
from mindspore.ops import CustomRegOp, DataType

from .._compat import recording_gradient
from . import cpu_kernels, twin_build

# Distinct op names per backend: MindSpore registers reg_info per op name.
TWIN_SUFFIX = "Twin"


def reg_info(op_name, inputs, outputs, attrs):
    """The CPU CustomRegOp; ``attrs``: (name, value type, value)."""
    reg = CustomRegOp(op_name)
    for index, name in enumerate(inputs):
        reg = reg.input(index, name)
    for index, name in enumerate(outputs):
        reg = reg.output(index, name)
    # The CPU backend does not enforce dtype rows; the kernel validates dtypes itself.
    reg = reg.dtype_format(*([DataType.None_None] * (len(inputs) + len(outputs))))
    for name, value_type, value in attrs:
        reg = reg.attr(name, "required", value_type, value=value)
    return reg.target("CPU").get_op_info()


def _on_twin(description, backend):
    return backend == "ascendc_twin" and description.twin_library is not None


def _twin_func(description):
    """The twin's aot shim for ``description``; a clear error, not MindSpore's failed symbol
    lookup at launch, where the twin library has none."""
    path = twin_build.library_path(description.twin_library)
    if not hasattr(ctypes.CDLL(path), description.entry):
        raise NotImplementedError(
            f"ms_groupnorm: the AscendC twin library has no {description.entry} aot shim ({description.reg_name} "
            f"through the twin), so $MS_GROUPNORM_BACKEND=ascendc_twin cannot run it")
    return f"{path}:{description.entry}"


def _custom(description, backend, attr_values, op_class=ops.Custom, **options):
    func = _twin_func(description) if _on_twin(description, backend) else cpu_kernels.aot_func(description.entry)
    reg = reg_info(description.reg_name + (TWIN_SUFFIX if _on_twin(description, backend) else ""),
                   description.inputs, description.outputs,
                   [(name, value_type, value) for (name, value_type), value in zip(description.attrs, attr_values)])
    return op_class(func, out_shape=None, out_dtype=None, func_type="aot", reg_info=reg, **options)


def backward_op(description, backend, attr_values, bprop=None):
    """The backward aot op of ``description`` with its attributes (group, ..., mask bits) and
    ``bprop`` (ops.double_backward: what second-order gradients differentiate)."""
    return _custom(description, backend, attr_values, bprop=bprop)


def bprop_feeding(backward, saved):
    """A forward's bprop: the backward gets dy (only out's gradient flows back: mean and rstd
    are saved statistics) and what ``saved`` names. Written out per signature: MindSpore
    parses a bprop in graphs, where it cannot build an argument list."""
    if saved == ("x", "mean", "rstd", "gamma"):
        def bprop(x, gamma, beta, out, dout):
            dx, dgamma, dbeta = backward(dout[0], x, out[1], out[2], gamma)
            return dx, dgamma, dbeta
    elif saved == ("x", "mean", "rstd", "gamma", "beta"):
        def bprop(x, gamma, beta, out, dout):
            dx, dgamma, dbeta = backward(dout[0], x, out[1], out[2], gamma, beta)
            return dx, dgamma, dbeta
    else:
        raise NotImplementedError(f"ms_groupnorm: no bprop written for a backward taking dy and {saved}")
    return bprop


def forward_op(description, backend, attr_values, backward, module_forwards=None):
    """The forward aot op of ``description``, its bprop running ``backward``. With
    ``module_forwards`` (plain, differentiable pyboost forwards), a ``PynativeForward``."""
    bprop = bprop_feeding(backward, description.saved)
    if module_forwards is None:
        return _custom(description, backend, attr_values, bprop=bprop)
    op = _custom(description, backend, attr_values, op_class=PynativeForward, bprop=bprop)
    op.module_forward, op.module_autograd = module_forwards
    return op


class PynativeForward(ops.Custom):
    """The forward aot op, whose eager PyNative calls go through the pyboost module.

    In a graph (GRAPH_MODE, ``@ms.jit``) this is the aot Custom primitive and nothing else:
    a compiled graph never calls ``__call__``. An eager call runs the module instead, for
    a fraction of the Custom op's per-call cost and bitwise the same outputs: while
    autograd records, its ``*_autograd`` function, which records its own backward node
    (the plain module forward has no bprop, and a gradient through it would silently be
    zero); otherwise (inference, evaluation, ``ms.no_grad``) the plain forward."""

    module_forward = None   # set by forward_op: pyboost (x, gamma, beta) -> (out, mean, rstd)
    module_autograd = None  # the same, differentiable

    def __call__(self, x, gamma, beta):
        if recording_gradient():
            return self.module_autograd(x, gamma, beta)
        return self.module_forward(x, gamma, beta)


# ---- num_groups / eps as graph variables (ms.mutable inside a graph) ----
# A graph variable has no value while the graph compiles, so it cannot become the
# "group"/"eps" attribute of the ops above (an attribute is fixed at compile time), and
# mean/rstd of shape (N, group) cannot be inferred. These ops take group (int64) and eps
# (float32) as one-element tensor inputs that the kernel reads when it runs, as
# MindSpore's own GroupNorm primitive takes num_groups as an input; their mean/rstd are
# (N, C) buffers holding the N*group statistics first (kernels/cpu/group_norm_aot.cc,
# GroupNormRuntimeGroup). Only the "cpu" backend has them (functional.group_norm checks
# this while compiling); they are only ever created inside a graph, where the PyNative
# fast path does not apply.
def runtime_group_backward_op(mask):
    """(dy, x, mean, rstd, gamma, group) -> (dx, dgamma, dbeta), group read at run time."""
    reg = reg_info("GroupNormGradRuntimeGroupMs", ["dy", "x", "mean", "rstd", "gamma", "group"],
                   ["dx", "dgamma", "dbeta"],
                   [("dx_is_require", "bool", mask[0]), ("dgamma_is_require", "bool", mask[1]),
                    ("dbeta_is_require", "bool", mask[2])])
    return ops.Custom(cpu_kernels.aot_func("GroupNormGradRuntimeGroup"), out_shape=None, out_dtype=None,
                      func_type="aot", reg_info=reg)


def runtime_group_forward_op(backward):
    """(x, gamma, beta, group, eps) -> (y, mean, rstd), mean/rstd (N, C); its bprop runs
    ``backward`` (a runtime_group_backward_op)."""

    def bprop(x, gamma, beta, group, eps, out, dout):
        dx, dgamma, dbeta = backward(dout[0], x, out[1], out[2], gamma, group)
        return dx, dgamma, dbeta, ops.zeros_like(group), ops.zeros_like(eps)

    reg = reg_info("GroupNormRuntimeGroupMs", ["x", "gamma", "beta", "group", "eps"], ["y", "mean", "rstd"], [])
    return ops.Custom(cpu_kernels.aot_func("GroupNormRuntimeGroup"), out_shape=None, out_dtype=None,
                      func_type="aot", bprop=bprop, reg_info=reg)
