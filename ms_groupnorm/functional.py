"""Functional forms: ``group_norm`` (differentiable) and the two aclnn contracts,
``group_norm_forward`` and ``group_norm_backward``."""
import functools

import numpy as np
from mindspore import Tensor, ops
from mindspore import dtype as mstype
from mindspore.ops import functional as F
from mindspore.ops.primitive import constexpr

from . import _checks, _ops
from .errors import ParamInvalidError, ParamTypeError

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


@constexpr(check=False)  # runs in Python, also while a graph compiles (unknown dims arrive as None)
def _check_group_norm(shape, dtype, weight_spec, bias_spec, num_groups, eps):
    """Checks group_norm's arguments; returns the dtype of the statistics (see _run_group_norm)."""
    stat_dtype, is_float64 = _checks.check_group_norm((None if shape is None else tuple(shape), dtype), weight_spec,
                                                      bias_spec, num_groups, eps)
    if is_float64 and _ops.backend_name() != "cpu":
        raise ParamTypeError(f"input has dtype Float64, which only the CPU kernels support (this backend is "
                             f"{_ops.backend_name()!r}); use float32")
    return stat_dtype


@constexpr(check=False)
def _check_group_norm_graph_variables(shape, dtype, weight_spec, bias_spec, num_groups, num_groups_type, eps,
                                      eps_type):
    """_check_group_norm where num_groups or eps is a graph variable (its value None, its
    type given; a constant has type None); see _checks.check_group_norm_graph_variables."""
    stat_dtype, _ = _checks.check_group_norm_graph_variables(
        (None if shape is None else tuple(shape), dtype), weight_spec, bias_spec, num_groups, num_groups_type, eps,
        eps_type)
    if _ops.backend_name() != "cpu":  # float64 included: the "cpu" backend takes it
        raise ParamInvalidError(
            f"num_groups/eps given as a graph variable (e.g. ms.mutable) are read when the kernel runs, which only "
            f"the 'cpu' backend supports (this backend is {_ops.backend_name()!r}); pass Python numbers")
    return stat_dtype


@constexpr(check=False)
def _param_spec(shape, dtype):
    return None if shape is None else tuple(shape), dtype


def _run_group_norm(input, num_groups, weight, bias, eps, mask, stat_dtype):
    """y of GroupNorm after the checks: statistics in ``stat_dtype``, float32 for
    float16/bfloat16 input (weight/bias are cast up, their gradients cast back), the input's
    dtype otherwise."""
    weight, bias = _cast_params(weight, bias, stat_dtype)
    return _ops.forward_op(num_groups, float(eps), mask)(input, weight, bias)[0]


def _cast_params(weight, bias, stat_dtype):
    """weight/bias in ``stat_dtype``, the empty "none" tensor for an absent one."""
    weight = _absent(stat_dtype) if weight is None else weight
    bias = _absent(stat_dtype) if bias is None else bias
    if weight.dtype != stat_dtype:
        weight = ops.cast(weight, stat_dtype)
    if bias.dtype != stat_dtype:
        bias = ops.cast(bias, stat_dtype)
    return weight, bias


def _group_norm_graph_variables(input, num_groups, weight, bias, eps):
    """group_norm inside a graph where num_groups or eps is a graph variable: both reach
    the kernel as tensors it reads when it runs (see _ops.runtime_group_forward_op).
    The same float32 eps and the same kernels as the attribute route, so the results are
    bitwise equal to a call with the same Python numbers."""
    groups_known, eps_known = F.isconstant(num_groups), F.isconstant(eps)
    stat_dtype = _check_group_norm_graph_variables(
        input.shape, input.dtype, None if weight is None else _param_spec(weight.shape, weight.dtype),
        None if bias is None else _param_spec(bias.shape, bias.dtype),
        num_groups, None if groups_known else F.typeof(num_groups), eps, None if eps_known else F.typeof(eps))
    mask = (True, weight is not None, bias is not None)
    weight, bias = _cast_params(weight, bias, stat_dtype)
    group = ops.scalar_to_tensor(num_groups, mstype.int64)
    eps = ops.scalar_to_tensor(eps, mstype.float32)
    return _ops.runtime_group_forward_op(mask)(input, weight, bias, group, eps)[0]


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-05):  # pylint: disable=redefined-builtin
    """GroupNorm of an (N, C, *) tensor, differentiable through this project's kernels;
    the signature of ``mindspore.ops.group_norm`` and ``mint.nn.functional.group_norm``.

    ``input``: float32, float16, bfloat16 or float64 (CPU), rank 2-8. ``weight``/``bias``
    of C elements may be None (ones/zeros); in input's dtype, or float32 with a
    float16/bfloat16 input. ``eps``: any float, as in MindSpore (a negative eps larger
    than a group's variance gives NaN there). With a float16/bfloat16 input the mean and
    rstd are computed, used and saved for the backward in float32, whatever weight's
    dtype. Returns y with input's shape and dtype.

    Inside a graph (GRAPH_MODE, ``@ms.jit``) ``num_groups`` and ``eps`` may also be graph
    variables (``ms.mutable(2)``, mutable arguments), whose values are unknown while the
    graph compiles: they then reach the kernel as tensors, and num_groups is checked
    (> 0, dividing C) when the kernel runs (CPU backend only).
    """
    # F.isconstant is folded while a graph compiles, so only one route is compiled (nested
    # ifs: `if not (a and b): return ...` before the static route compiled that route too,
    # whose check refuses num_groups=None), and is True in PyNative (~0.2 us).
    if F.isconstant(num_groups):
        if F.isconstant(eps):
            stat_dtype = _check_group_norm(input.shape, input.dtype,
                                           None if weight is None else _param_spec(weight.shape, weight.dtype),
                                           None if bias is None else _param_spec(bias.shape, bias.dtype),
                                           num_groups, eps)
            return _run_group_norm(input, num_groups, weight, bias, eps,
                                   (True, weight is not None, bias is not None), stat_dtype)
    return _group_norm_graph_variables(input, num_groups, weight, bias, eps)


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
