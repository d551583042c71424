"""The ``mindspore.ops.Custom`` operators behind ms_groupnorm, created once and cached.

* ``backward_op(group, mask)``: dy, x, mean, rstd, gamma -> dx, dgamma, dbeta (the
  aclnnGroupNormBackward contract); outputs whose mask bit is off come back as (0,).
* ``forward_op(group, eps, mask)``: x, gamma, beta -> y, mean, rstd, with a bprop that
  feeds the saved mean/rstd to ``backward_op``: nothing is recomputed.

An empty (0,) gamma/beta stands for "none" (ones/zeros), so that one operator serves
both affine and functional calls without building ones/zeros tensors per call.

Shapes and dtypes are inferred by the library's C++ ``*InferShape``/``*InferType``
hooks (out_shape/out_dtype None): that is what lets GRAPH_MODE run with dynamic shapes,
and it needs a reg_info carrying an op name.
"""
import functools

from mindspore import ops
from mindspore.ops import CustomRegOp, DataType

from . import _kernel_lib

FULL_MASK = (True, True, True)


def _reg_info(op_name, inputs, outputs, attrs):
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


@functools.lru_cache(maxsize=None)
def backward_op(group, mask=FULL_MASK):
    """The backward Custom op for ``group`` groups and output mask (dx, dgamma, dbeta)."""
    reg = _reg_info(
        "GroupNormGradMs",
        ["dy", "x", "mean", "rstd", "gamma"],
        ["dx", "dgamma", "dbeta"],
        [("group", "int", int(group)),
         ("dx_is_require", "bool", bool(mask[0])),
         ("dgamma_is_require", "bool", bool(mask[1])),
         ("dbeta_is_require", "bool", bool(mask[2]))],
    )
    return ops.Custom(_kernel_lib.aot_func("GroupNormGrad"), out_shape=None, out_dtype=None,
                      func_type="aot", reg_info=reg)


@functools.lru_cache(maxsize=None)
def forward_op(group, eps, mask=FULL_MASK):
    """The forward Custom op; its bprop runs ``backward_op(group, mask)``.

    ``mask`` says which of x, gamma, beta are real inputs whose gradient is wanted: a
    gamma or beta passed as the empty "none" tensor gets an empty gradient.
    """
    backward = backward_op(group, mask)

    def bprop(x, gamma, beta, out, dout):
        # Only y's gradient flows back: mean and rstd are saved statistics.
        dx, dgamma, dbeta = backward(dout[0], x, out[1], out[2], gamma)
        return dx, dgamma, dbeta

    reg = _reg_info(
        "GroupNormMs",
        ["x", "gamma", "beta"],
        ["y", "mean", "rstd"],
        [("group", "int", int(group)), ("eps", "float", float(eps))],
    )
    return ops.Custom(_kernel_lib.aot_func("GroupNorm"), out_shape=None, out_dtype=None,
                      func_type="aot", bprop=bprop, reg_info=reg)
