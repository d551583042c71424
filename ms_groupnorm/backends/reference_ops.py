"""A description's float64 reference as a MindSpore op (``ops.Custom(func_type="pyfunc")``, CPU,
both modes): what runs an operator that has a description but no kernel yet (``entry`` None).

It makes a new operator runnable, differentiable and testable end to end from its description
and reference alone, before any kernel exists (tests/test_toy_operator.py). It is slow (numpy in
float64, one Python call per launch) and never chosen for an operator that has kernels.

The family's shapes hold for it: a forward takes (x, gamma, beta) and returns out like x and
two (N, group) statistics in gamma's dtype; a backward takes dy, x, mean, rstd and the saved
parameters and returns dx like x and two (C,) parameter gradients in mean's dtype, (0,) where
the mask is off. Parameters must be real tensors: MindSpore's pyfunc kernel fails on an
empty input ("memcpy failed", 2.10), so the empty "none" gamma/beta of the kernels' ops cannot
reach it.
"""
import inspect

import numpy as np
from mindspore import nn, ops

def _float64(arrays):
    return [array.astype(np.float64) for array in arrays]


def _taking(function, names):
    """``function(*arrays)`` declaring one parameter per input: MindSpore counts a pyfunc's inputs
    from its signature, and refuses ``*arrays`` ("Tuple/List inputs are not supported")."""
    kind = inspect.Parameter.POSITIONAL_OR_KEYWORD
    function.__signature__ = inspect.Signature([inspect.Parameter(name, kind) for name in names])
    return function


def forward_op(description, attr_values, bprop):
    """``(x, gamma, beta) -> (out, mean, rstd)`` by ``description.reference(x, gamma, beta, *attrs)``."""
    group = attr_values[0]

    def run(*arrays):
        outputs = description.reference(*_float64(arrays), *attr_values)
        x, gamma = arrays[0], arrays[1]
        return outputs[0].astype(x.dtype), outputs[1].astype(gamma.dtype), outputs[2].astype(gamma.dtype)

    def out_shape(x, *_params):
        return list(x), [x[0], group], [x[0], group]

    def out_dtype(x, gamma, *_params):
        return x, gamma, gamma

    return ops.Custom(_taking(run, description.inputs), out_shape=out_shape, out_dtype=out_dtype, func_type="pyfunc",
                      bprop=bprop)


def backward_op(description, attr_values, mask, bprop):
    """``(dy, x, mean, rstd, params...) -> (dx, dgamma, dbeta)`` by ``description.reference``;
    outputs whose mask bit is off are (0,), cut after the op (a pyfunc cannot write an empty
    output either)."""
    def run(*arrays):
        outputs = description.reference(*_float64(arrays), *attr_values)
        dtypes = (arrays[1].dtype, arrays[2].dtype, arrays[2].dtype)
        return tuple(out.astype(dtype) for out, dtype in zip(outputs, dtypes))

    def out_shape(_dy, x, *_rest):
        return list(x), [x[1]], [x[1]]

    def out_dtype(_dy, x, mean, *_rest):
        return x, mean, mean

    op = ops.Custom(_taking(run, description.inputs), out_shape=out_shape, out_dtype=out_dtype, func_type="pyfunc",
                    bprop=bprop)
    return _Masked(op, mask)


def _kept(grad):
    return grad


def _dropped(grad):
    return ops.zeros((0,), grad.dtype)


class _Masked(nn.Cell):
    """``op``'s three outputs, those whose mask bit is off as (0,) (chosen here, not by a branch)."""

    def __init__(self, op, mask):
        super().__init__()
        self.op = op
        self.finish_dx, self.finish_dgamma, self.finish_dbeta = (_kept if bit else _dropped for bit in mask)

    def construct(self, *inputs):
        dx, dgamma, dbeta = self.op(*inputs)
        return self.finish_dx(dx), self.finish_dgamma(dgamma), self.finish_dbeta(dbeta)
