"""Functional forms: ``group_norm`` (differentiable) and the two aclnn contracts,
``group_norm_forward`` and ``group_norm_backward``."""
import functools

import numpy as np
from mindspore import Tensor, ops

from . import _checks, _ops

FULL_MASK = _ops.FULL_MASK


@functools.lru_cache(maxsize=None)
def _absent(dtype):
    """The empty (0,) tensor that stands for a None gamma/beta (ones/zeros) in the kernels."""
    return Tensor(np.zeros((0,), np.float32), dtype=dtype)


def _spec(tensor):
    return None if tensor is None else (tuple(tensor.shape), tensor.dtype)


def _nchw_view(tensor, N, C, HxW):
    """``tensor`` as (N, C, *) for the kernel: itself when its shape already is, else (N, C, HxW)."""
    shape = tuple(tensor.shape)
    if len(shape) >= 2 and shape[0] == N and shape[1] == C:
        return tensor
    return ops.reshape(tensor, (N, C, HxW))


def group_norm(x, num_groups, gamma=None, beta=None, eps=1e-5):
    """GroupNorm of an (N, C, *) tensor, differentiable through this project's kernels.

    gamma/beta of shape (C,) may be None (ones/zeros); they may be float32 while x is
    float16/bfloat16 (mixed precision). Returns y with x's shape and dtype.
    """
    _checks.check_group_norm(_spec(x), _spec(gamma), _spec(beta), num_groups, eps)
    stat_dtype = x.dtype if gamma is None else gamma.dtype
    op = _ops.forward_op(num_groups, float(eps), (True, gamma is not None, beta is not None))
    gamma = _absent(stat_dtype) if gamma is None else gamma
    beta = _absent(stat_dtype) if beta is None else beta
    return op(x, gamma, beta)[0]


def group_norm_forward(input, gamma, beta, N, C, HxW, group, eps=1e-5):
    """aclnnGroupNorm: (out, mean, rstd) with mean/rstd of shape (N, group).

    ``input`` holds N*C*HxW elements; gamma/beta (C,) or None. mean/rstd take gamma's
    dtype (input's when gamma is None). Gradients flow to input, gamma and beta from
    ``out`` only: mean and rstd are treated as saved statistics.
    """
    _checks.check_forward(_spec(input), _spec(gamma), _spec(beta), N, C, HxW, group, eps)
    stat_dtype = input.dtype if gamma is None else gamma.dtype
    if N * C * HxW == 0:  # empty input: nothing to launch (aclnn: mean 0, rstd NaN)
        return (ops.zeros(input.shape, input.dtype), ops.zeros((N, group), stat_dtype),
                ops.full((N, group), float("nan"), dtype=stat_dtype))
    op = _ops.forward_op(group, float(eps), (True, gamma is not None, beta is not None))
    x = _nchw_view(input, N, C, HxW)
    out, mean, rstd = op(x, _absent(stat_dtype) if gamma is None else gamma,
                         _absent(stat_dtype) if beta is None else beta)
    if x is not input:
        out = ops.reshape(out, input.shape)
    return out, mean, rstd


def group_norm_backward(grad_out, input, mean, rstd, gamma, N, C, HxW, group, output_mask=FULL_MASK):
    """aclnnGroupNormBackward: (grad_input, grad_gamma, grad_beta), None where output_mask is False.

    grad_out and input hold N*C*HxW elements each (their shapes may differ); mean and
    rstd hold N*group; gamma is (C,) or None (ones). grad_input has input's shape and
    dtype; grad_gamma/grad_beta are (C,) in mean's dtype.
    """
    output_mask = tuple(output_mask) if isinstance(output_mask, list) else output_mask
    _checks.check_backward(_spec(grad_out), _spec(input), _spec(mean), _spec(rstd), _spec(gamma),
                           N, C, HxW, group, output_mask)
    if N * HxW == 0:  # empty input: nothing to launch; the parameter gradients are zeros
        return (ops.zeros(input.shape, input.dtype) if output_mask[0] else None,
                ops.zeros((C,), mean.dtype) if output_mask[1] else None,
                ops.zeros((C,), mean.dtype) if output_mask[2] else None)
    x = _nchw_view(input, N, C, HxW)
    dy = grad_out if tuple(grad_out.shape) == tuple(x.shape) else ops.reshape(grad_out, x.shape)
    gamma = _absent(mean.dtype) if gamma is None else gamma
    dx, dgamma, dbeta = _ops.backward_op(group, output_mask)(dy, x, mean, rstd, gamma)
    if output_mask[0] and x is not input:
        dx = ops.reshape(dx, input.shape)
    return (dx if output_mask[0] else None,
            dgamma if output_mask[1] else None,
            dbeta if output_mask[2] else None)
