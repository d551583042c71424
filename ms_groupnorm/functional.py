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


_spec = _checks.tensor_spec


def _is_nchw(shape, N, C):
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
    return dtype == mstype.bfloat16 and _ops._device_target() != "Ascend"  # pylint: disable=protected-access


def _reshape(tensor, shape):
    if _reshape_in_float32(tensor.dtype):
        return ops.cast(ops.reshape(ops.cast(tensor, mstype.float32), shape), tensor.dtype)
    return ops.reshape(tensor, shape)


def _as_nchw(tensor, N, C, HxW):
    """``tensor`` as (N, C, *) for the kernel: itself when its shape already is, else (N, C, HxW)."""
    return tensor if _is_nchw(tensor.shape, N, C) else _reshape(tensor, (N, C, HxW))


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


def param_spec(tensor):
    """tensor_spec() for group_norm's weight/bias, whose dims are None while unknown (a
    dynamic shape in a graph); ``(None, obj)`` for a non-tensor, which the checks refuse."""
    if tensor is None:
        return None
    if isinstance(tensor, Tensor):
        return _param_spec(tensor.shape, tensor.dtype)
    return None, tensor


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
        input.shape, input.dtype, param_spec(weight), param_spec(bias),
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
            stat_dtype = _check_group_norm(input.shape, input.dtype, param_spec(weight), param_spec(bias),
                                           num_groups, eps)
            return _run_group_norm(input, num_groups, weight, bias, eps,
                                   (True, weight is not None, bias is not None), stat_dtype)
    return _group_norm_graph_variables(input, num_groups, weight, bias, eps)


def group_norm_forward(input, gamma, beta, N, C, HxW, group, eps=1e-5):
    """aclnnGroupNorm: (out, mean, rstd) with mean/rstd of shape (N, group).

    ``input`` holds N*C*HxW elements; gamma/beta (C,) or None. mean/rstd take the
    parameters' dtype: gamma's, else beta's, else input's. Gradients flow to input, gamma
    and beta from ``out`` only: mean and rstd are treated as saved statistics.
    """
    input_spec, gamma_spec, beta_spec = _spec(input), _spec(gamma), _spec(beta)
    N, C, HxW, group, eps = _checks.check_forward(input_spec, gamma_spec, beta_spec, N, C, HxW, group, eps)
    stat_dtype = forward_stat_dtype(input, gamma, beta)
    if N * C * HxW == 0:  # empty input: nothing to launch
        return empty_forward(input, N, group, stat_dtype)
    op = _ops.forward_op(group, eps, (True, gamma is not None, beta is not None))
    nchw = _is_nchw(input.shape, N, C)
    out, mean, rstd = op(_as_nchw(input, N, C, HxW), _absent(stat_dtype) if gamma is None else gamma,
                         _absent(stat_dtype) if beta is None else beta)
    return (out if nchw else _reshape(out, input.shape)), mean, rstd


def group_norm_backward(grad_out, input, mean, rstd, gamma, N, C, HxW, group, output_mask=FULL_MASK):
    """aclnnGroupNormBackward: (grad_input, grad_gamma, grad_beta), None where output_mask is False.

    grad_out and input hold N*C*HxW elements each (their shapes may differ); mean and
    rstd hold N*group; gamma is (C,) or None (ones). grad_input has input's shape and
    dtype; grad_gamma/grad_beta are (C,) in mean's dtype.
    """
    N, C, HxW, group, output_mask = _checks.check_backward(_spec(grad_out), _spec(input), _spec(mean), _spec(rstd),
                                                           _spec(gamma), N, C, HxW, group, output_mask)
    if N * HxW == 0:  # empty input: nothing to launch; the parameter gradients are zeros
        return empty_backward(input, C, output_mask, mean.dtype)
    x, dy = _kernel_layout(grad_out, input, N, C, HxW)
    gamma = _absent(mean.dtype) if gamma is None else gamma
    dx, dgamma, dbeta = _ops.backward_op(group, output_mask)(dy, x, mean, rstd, gamma)
    return masked_backward_outputs(dx, dgamma, dbeta, input, N, C, output_mask)


def _kernel_layout(grad_out, input, N, C, HxW):
    """(x, dy) for a backward kernel: input as (N, C, *), grad_out in x's shape."""
    x = _as_nchw(input, N, C, HxW)
    same = tuple(grad_out.shape) == tuple(x.shape)
    return x, (grad_out if same else _reshape(grad_out, x.shape))


def masked_backward_outputs(dx, dgamma, dbeta, input, N, C, output_mask):
    """A backward kernel's outputs as the contracts return them: dx in input's shape, None
    where output_mask is False."""
    if output_mask[0] and not _is_nchw(input.shape, N, C):
        dx = _reshape(dx, input.shape)
    return (dx if output_mask[0] else None,
            dgamma if output_mask[1] else None,
            dbeta if output_mask[2] else None)
