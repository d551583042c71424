"""Fused GroupNorm + SiLU, functional forms: ``group_norm_silu`` (differentiable) and the
aclnn-style contracts ``group_norm_silu_forward`` / ``group_norm_silu_backward`` (CANN's
aclnnGroupNormSilu / GroupNormSwish(Grad) with this project's dtype rules: float32
statistics for float16/bfloat16 data allowed, any group count, deterministic).

swish: z = y * sigmoid(swish_scale * y), y = gamma * xhat + beta; swish_scale = 1 is SiLU.
Argument errors are those of GroupNorm (ms_groupnorm.errors, codes 161001/161002).

On Ascend the fused AscendC operators run (GroupNormSiluMs forward, GroupNormSiluGradMs
backward; see ascend_silu) when both are installed; with MS_GROUPNORM_BACKEND=ascendc_twin the
same kernels run through their CPU twins (see _silu_ops). Where no fused kernel runs, the
functions compute the unfused pair, GroupNorm then swish, with the same results up to
rounding: float64 input (the fused kernels are float32/16-bit only) and MindSpore on Ascend
without those operators, where group_norm_silu_backward raises NotImplementedError saying
so.
"""

from mindspore import ops
from mindspore.ops.primitive import constexpr

from . import _checks, _ops, _silu_ops, ascend_silu
from .errors import ParamTypeError
from .functional import (FULL_MASK, _absent, _as_nchw, _is_nchw, _kernel_layout, _reshape, _spec, empty_backward,
                         empty_forward, forward_stat_dtype, group_norm, group_norm_forward, masked_backward_outputs,
                         param_spec)


@_checks.cached_check
def check_swish_scale(swish_scale):
    """swish_scale (1.0 is SiLU): a number float32 holds, as eps (_checks.as_float32_number);
    returned as a Python float."""
    return _checks.as_float32_number("swish_scale", swish_scale)


@_checks.cached_check
def check_beta_for_backward(beta, mean, C):
    """The backward's extra input beta (recomputing y needs it): mean's dtype, C elements."""
    _checks.check_is_tensor("beta", beta)
    if beta is not None:
        _checks._check_same_dtype("beta", beta[1], "mean", mean[1])  # pylint: disable=protected-access
        _checks._check_numel("beta", beta[0], C, "C")  # pylint: disable=protected-access


@constexpr(check=False)  # runs in Python, also while a graph compiles (unknown dims arrive as None)
def _check_group_norm_silu(shape, dtype, weight_spec, bias_spec, num_groups, eps):
    """group_norm's checks; returns (statistics dtype, whether the fused kernel runs)."""
    stat_dtype, is_float64 = _checks.check_group_norm((None if shape is None else tuple(shape), dtype), weight_spec,
                                                      bias_spec, num_groups, eps)
    fused = _silu_ops.fused_backend() is not None
    if is_float64 and not fused:
        raise ParamTypeError("input has dtype Float64, which only the CPU kernels support; use float32")
    return stat_dtype, fused and not is_float64


def _swish(y, swish_scale=1.0):
    """y * sigmoid(swish_scale * y): MindSpore's silu for the unfused fallback."""
    if swish_scale == 1.0:
        return ops.silu(y)
    return y * ops.sigmoid(y * swish_scale)


def group_norm_silu(input, num_groups, weight=None, bias=None, eps=1e-05):  # pylint: disable=redefined-builtin
    """silu(group_norm(input, num_groups, weight, bias, eps)) in one fused kernel,
    differentiable in input, weight and bias; the arguments, dtypes and errors of
    :func:`ms_groupnorm.group_norm`. With float16/bfloat16 input the statistics are float32
    and weight/bias may be float32 (their gradients are then float32). The backward keeps
    only x, mean and rstd: y and sigmoid(y) are recomputed.
    """
    stat_dtype, fused = _check_group_norm_silu(input.shape, input.dtype, param_spec(weight), param_spec(bias),
                                               num_groups, eps)
    if not fused:
        return ops.silu(group_norm(input, num_groups, weight, bias, eps))
    mask = (True, weight is not None, bias is not None)
    weight = _absent(stat_dtype) if weight is None else weight
    bias = _absent(stat_dtype) if bias is None else bias
    if weight.dtype != stat_dtype:
        weight = ops.cast(weight, stat_dtype)
    if bias.dtype != stat_dtype:
        bias = ops.cast(bias, stat_dtype)
    return _silu_ops.silu_forward_op(num_groups, float(eps), 1.0, mask)(input, weight, bias)[0]


def group_norm_silu_forward(input, gamma, beta, N, C, HxW, group, eps=1e-5, swish_scale=1.0):
    """aclnnGroupNormSilu(/Swish): (out, mean, rstd), out = y * sigmoid(swish_scale * y),
    mean/rstd of shape (N, group) in gamma's dtype (input's when gamma is None).

    The contract of :func:`ms_groupnorm.group_norm_forward` plus ``swish_scale`` (finite).
    Gradients flow to input, gamma and beta from ``out`` only.
    """
    N, C, HxW, group, eps = _checks.check_forward(_spec(input), _spec(gamma), _spec(beta), N, C, HxW, group, eps)
    swish_scale = check_swish_scale(swish_scale)
    stat_dtype = forward_stat_dtype(input, gamma, beta)
    if N * C * HxW == 0:  # empty input: nothing to launch
        return empty_forward(input, N, group, stat_dtype)
    if _silu_ops.fused_backend() is None:
        out, mean, rstd = group_norm_forward(input, gamma, beta, N, C, HxW, group, eps)
        return _swish(out, swish_scale), mean, rstd
    op = _silu_ops.silu_forward_op(group, eps, swish_scale, (True, gamma is not None, beta is not None))
    nchw = _is_nchw(input.shape, N, C)
    out, mean, rstd = op(_as_nchw(input, N, C, HxW), _absent(stat_dtype) if gamma is None else gamma,
                         _absent(stat_dtype) if beta is None else beta)
    return (out if nchw else _reshape(out, input.shape)), mean, rstd


def group_norm_silu_backward(grad_out, input, mean, rstd, gamma, beta, N, C, HxW, group, output_mask=FULL_MASK,
                             swish_scale=1.0):
    """GroupNormSwishGrad: (grad_input, grad_gamma, grad_beta), None where output_mask is
    False, from grad_out (of ``out``), input, the saved mean/rstd and gamma/beta (None:
    ones/zeros), which recompute y and sigmoid(swish_scale * y).

    The contract of :func:`ms_groupnorm.group_norm_backward` plus beta (mean's dtype, C
    elements) and ``swish_scale``.
    """
    N, C, HxW, group, output_mask = _checks.check_backward(_spec(grad_out), _spec(input), _spec(mean), _spec(rstd),
                                                           _spec(gamma), N, C, HxW, group, output_mask)
    check_beta_for_backward(_spec(beta), _spec(mean), C)
    swish_scale = check_swish_scale(swish_scale)
    if N * HxW == 0:  # empty input: nothing to launch; the parameter gradients are zeros
        return empty_backward(input, C, output_mask, mean.dtype)
    if _silu_ops.fused_backend() is None:
        if _ops.backend_name() == "ascend":
            raise NotImplementedError(ascend_silu.NOT_INSTALLED)
        raise NotImplementedError("ms_groupnorm: group_norm_silu_backward has no kernel on this backend yet")
    x, dz = _kernel_layout(grad_out, input, N, C, HxW)
    gamma = _absent(mean.dtype) if gamma is None else gamma
    beta = _absent(mean.dtype) if beta is None else beta
    dx, dgamma, dbeta = _silu_ops.silu_backward_op(group, swish_scale, output_mask)(dz, x, mean, rstd, gamma, beta)
    return masked_backward_outputs(dx, dgamma, dbeta, input, N, C, output_mask)
