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
import functools
import math

from mindspore import ops
from mindspore.ops.primitive import constexpr

from . import _checks, _ops, _silu_ops, ascend_silu
from .errors import ParamInvalidError, ParamTypeError
from .functional import FULL_MASK, _absent, _nchw_view, _param_spec, _spec, group_norm, group_norm_forward


# Cached like the checks of _checks (hashable arguments): a cached function is also what
# MindSpore's graph compiler calls in Python at compile time instead of parsing it.
@functools.lru_cache(maxsize=1024, typed=True)
def check_swish_scale(swish_scale):
    """swish_scale must be a finite real number (1.0 is SiLU)."""
    if not isinstance(swish_scale, (int, float)) or isinstance(swish_scale, bool):
        raise ParamTypeError(f"swish_scale={swish_scale!r} must be a float")
    if not math.isfinite(swish_scale):
        raise ParamInvalidError(f"swish_scale={swish_scale!r} must be finite")


@functools.lru_cache(maxsize=1024, typed=True)
def check_beta_for_backward(beta, mean, C):
    """The backward's extra input beta (recomputing y needs it): mean's dtype, C elements."""
    if beta is None:
        return
    _checks._check_same_dtype("beta", beta[1], "mean", mean[1])
    _checks._check_numel("beta", beta[0], C, "C")


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
    stat_dtype, fused = _check_group_norm_silu(
        input.shape, input.dtype, None if weight is None else _param_spec(weight.shape, weight.dtype),
        None if bias is None else _param_spec(bias.shape, bias.dtype), num_groups, eps)
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
    _checks.check_forward(_spec(input), _spec(gamma), _spec(beta), N, C, HxW, group, eps)
    check_swish_scale(swish_scale)
    if N * C * HxW == 0 or _silu_ops.fused_backend() is None:
        out, mean, rstd = group_norm_forward(input, gamma, beta, N, C, HxW, group, eps)
        return (out if N * C * HxW == 0 else _swish(out, float(swish_scale))), mean, rstd
    stat_dtype = input.dtype if gamma is None else gamma.dtype
    op = _silu_ops.silu_forward_op(group, float(eps), float(swish_scale), (True, gamma is not None, beta is not None))
    x = _nchw_view(input, N, C, HxW)
    out, mean, rstd = op(x, _absent(stat_dtype) if gamma is None else gamma,
                         _absent(stat_dtype) if beta is None else beta)
    if x is not input:
        out = ops.reshape(out, input.shape)
    return out, mean, rstd


def group_norm_silu_backward(grad_out, input, mean, rstd, gamma, beta, N, C, HxW, group, output_mask=FULL_MASK,
                             swish_scale=1.0):
    """GroupNormSwishGrad: (grad_input, grad_gamma, grad_beta), None where output_mask is
    False, from grad_out (of ``out``), input, the saved mean/rstd and gamma/beta (None:
    ones/zeros), which recompute y and sigmoid(swish_scale * y).

    The contract of :func:`ms_groupnorm.group_norm_backward` plus beta (mean's dtype, C
    elements) and ``swish_scale``.
    """
    output_mask = tuple(output_mask) if isinstance(output_mask, list) else output_mask
    _checks.check_backward(_spec(grad_out), _spec(input), _spec(mean), _spec(rstd), _spec(gamma),
                           N, C, HxW, group, output_mask)
    check_beta_for_backward(_spec(beta), _spec(mean), C)
    check_swish_scale(swish_scale)
    if N * HxW == 0:  # empty input: nothing to launch; the parameter gradients are zeros
        return (ops.zeros(input.shape, input.dtype) if output_mask[0] else None,
                ops.zeros((C,), mean.dtype) if output_mask[1] else None,
                ops.zeros((C,), mean.dtype) if output_mask[2] else None)
    if _silu_ops.fused_backend() is None:
        if _ops.backend_name() == "ascend":
            raise NotImplementedError(ascend_silu.NOT_INSTALLED)
        raise NotImplementedError("ms_groupnorm: group_norm_silu_backward has no kernel on this backend yet")
    x = _nchw_view(input, N, C, HxW)
    dz = grad_out if tuple(grad_out.shape) == tuple(x.shape) else ops.reshape(grad_out, x.shape)
    gamma = _absent(mean.dtype) if gamma is None else gamma
    beta = _absent(mean.dtype) if beta is None else beta
    dx, dgamma, dbeta = _silu_ops.silu_backward_op(group, float(swish_scale), output_mask)(dz, x, mean, rstd, gamma,
                                                                                          beta)
    if output_mask[0] and x is not input:
        dx = ops.reshape(dx, input.shape)
    return (dx if output_mask[0] else None,
            dgamma if output_mask[1] else None,
            dbeta if output_mask[2] else None)
