"""The shape and dtype glue every operator's functional forms share: the empty "none"
gamma/beta, the (N, C, *) layout the kernels take, what the contracts return for empty
input, and the dtype of the statistics."""
import functools

import numpy as np
from mindspore import Tensor, ops
from mindspore import dtype as mstype
from mindspore.ops.primitive import constexpr

from . import checks, routing

@functools.lru_cache(maxsize=None)
def absent(dtype):
    """The empty (0,) tensor that stands for a None gamma/beta (ones/zeros) in the kernels."""
    return Tensor(np.zeros((0,), np.float32), dtype=dtype)


spec = checks.tensor_spec


def is_nchw(shape, N, C):
    """Whether a tensor of ``shape`` is (N, C, *) already, as the kernels take it. A
    constant while a graph compiles: comparing the reshaped tensor with the input by
    identity (``x is not input``) instead made MindSpore evaluate it in Python at run time
    (a pyexecute node), which refuses a strided view (its storage is larger than its data)."""
    return len(shape) >= 2 and shape[0] == N and shape[1] == C


@constexpr(check=False)
def _reshape_in_float32(dtype):
    """Whether a reshape of ``dtype`` data goes through float32: bfloat16 off Ascend, where
    MindSpore's CPU Reshape has no bfloat16 kernel in graphs (GRAPH_MODE, @ms.jit: "Select
    CPU operator[Reshape] fail"). bfloat16 -> float32 -> bfloat16 is exact."""
    return dtype == mstype.bfloat16 and routing._device_target() != "Ascend"  # pylint: disable=protected-access


def reshape(tensor, shape):
    if _reshape_in_float32(tensor.dtype):
        return ops.cast(ops.reshape(ops.cast(tensor, mstype.float32), shape), tensor.dtype)
    return ops.reshape(tensor, shape)


def as_nchw(tensor, N, C, HxW):
    """``tensor`` as (N, C, *) for the kernel: itself when its shape already is, else (N, C, HxW)."""
    return tensor if is_nchw(tensor.shape, N, C) else reshape(tensor, (N, C, HxW))


def _filled(shape, value, dtype):
    """``shape`` filled with ``value`` in ``dtype``; bfloat16 through float32 (exact for the
    0 and NaN used here): PYNATIVE_MODE has no CPU FillV2 kernel for bfloat16."""
    if dtype == mstype.bfloat16:
        return ops.cast(ops.full(shape, value, dtype=mstype.float32), dtype)
    return ops.full(shape, value, dtype=dtype)


def forward_stat_dtype(input, gamma, beta):
    """The dtype of the forward contracts' mean/rstd, and of the "none" tensor standing for an
    absent gamma or beta: the parameters' dtype (gamma's, else beta's), else the input's.
    One dtype for both parameters, so that a float32 beta next to a None gamma with
    float16/bfloat16 input reaches every backend as a consistent pair."""
    if gamma is not None:
        return gamma.dtype
    if beta is not None:
        return beta.dtype
    return input.dtype


def empty_forward(input, N, group, stat_dtype):
    """What the forward contracts return for an empty input, without a launch (aclnn's rule):
    out empty, mean 0, rstd NaN."""
    return (ops.zeros(input.shape, input.dtype), _filled((N, group), 0.0, stat_dtype),
            _filled((N, group), float("nan"), stat_dtype))


def empty_backward(input, C, output_mask, stat_dtype):
    """What the backward contracts return for an empty input: no launch, an empty grad_input
    and zero parameter gradients, None where output_mask is False."""
    return (ops.zeros(input.shape, input.dtype) if output_mask[0] else None,
            _filled((C,), 0.0, stat_dtype) if output_mask[1] else None,
            _filled((C,), 0.0, stat_dtype) if output_mask[2] else None)


@constexpr(check=False)
def _param_spec(shape, dtype):
    return None if shape is None else tuple(shape), dtype


def param_spec(tensor):
    """tensor_spec() for group_norm's weight/bias, whose dims are None while unknown (a
    dynamic shape in a graph); ``(None, obj)`` for a non-tensor, which the checks refuse."""
    if tensor is None:
        return None
    if isinstance(tensor, Tensor):
        return _param_spec(tensor.shape, tensor.dtype)
    return None, tensor


def cast_params(weight, bias, stat_dtype):
    """weight/bias in ``stat_dtype``, the empty "none" tensor for an absent one."""
    weight = absent(stat_dtype) if weight is None else weight
    bias = absent(stat_dtype) if bias is None else bias
    if weight.dtype != stat_dtype:
        weight = ops.cast(weight, stat_dtype)
    if bias.dtype != stat_dtype:
        bias = ops.cast(bias, stat_dtype)
    return weight, bias


def forward_contract_outputs(op, input, gamma, beta, N, C, HxW, stat_dtype):
    """A forward op's (out, mean, rstd) as the forward contracts return them: input given to
    the kernel as (N, C, *), a None gamma/beta as the empty "none" tensor in ``stat_dtype``,
    out in input's shape."""
    out, mean, rstd = op(as_nchw(input, N, C, HxW), absent(stat_dtype) if gamma is None else gamma,
                         absent(stat_dtype) if beta is None else beta)
    return (out if is_nchw(input.shape, N, C) else reshape(out, input.shape)), mean, rstd


def kernel_layout(grad_out, input, N, C, HxW):
    """(x, dy) for a backward kernel: input as (N, C, *), grad_out in x's shape."""
    x = as_nchw(input, N, C, HxW)
    same = tuple(grad_out.shape) == tuple(x.shape)
    return x, (grad_out if same else reshape(grad_out, x.shape))


def masked_backward_outputs(dx, dgamma, dbeta, input, N, C, output_mask):
    """A backward kernel's outputs as the contracts return them: dx in input's shape, None
    where output_mask is False."""
    if output_mask[0] and not is_nchw(input.shape, N, C):
        dx = reshape(dx, input.shape)
    return (dx if output_mask[0] else None,
            dgamma if output_mask[1] else None,
            dbeta if output_mask[2] else None)
