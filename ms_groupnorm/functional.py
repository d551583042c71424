"""Functional forms of both operators: ``group_norm`` and ``group_norm_silu``
(differentiable), and the aclnn-style contracts ``group_norm_forward`` /
``group_norm_backward`` (aclnnGroupNorm / aclnnGroupNormBackward) and
``group_norm_silu_forward`` / ``group_norm_silu_backward`` (CANN's aclnnGroupNormSilu /
GroupNormSwish(Grad) with this project's dtype rules: float32 statistics for
float16/bfloat16 data allowed, any group count, deterministic).

swish: z = y * sigmoid(swish_scale * y), y = gamma * xhat + beta; swish_scale = 1 is SiLU.
Argument errors are those of GroupNorm (ms_groupnorm.errors, codes 161001/161002).

The fused functions run the fused kernels where a backend has them (``ops.routing.fused_backend``:
the CPU kernels, the AscendC ones through their CPU twins with
MS_GROUPNORM_BACKEND=ascendc_twin, and on Ascend our GroupNormSiluMs / GroupNormSiluGradMs
when both are installed). Where no fused kernel runs, they compute the unfused pair,
GroupNorm then swish, with the same results up to rounding: float64 input (the fused
kernels are float32/16-bit only) and MindSpore on Ascend without those operators, where
group_norm_silu_backward raises NotImplementedError saying so.
"""
from mindspore import Tensor, ops
from mindspore import dtype as mstype
from mindspore.ops import functional as F
from mindspore.ops.primitive import constexpr

from .backends.ascend_operators import NOT_INSTALLED
from .errors import ParamInvalidError, ParamTypeError
from .ops import checks, routing
from .ops.layout import (absent, cast_params, empty_backward, empty_forward, forward_contract_outputs,
                         forward_stat_dtype, kernel_layout, masked_backward_outputs, param_spec, spec)

FULL_MASK = routing.FULL_MASK

@constexpr(check=False)  # runs in Python, also while a graph compiles (unknown dims arrive as None)
def _check_group_norm(shape, dtype, weight_spec, bias_spec, num_groups, eps):
    """Checks group_norm's arguments; returns the dtype of the statistics (see _run_group_norm)
    and whether C is known (a graph with a dynamic shape knows it only when it runs)."""
    stat_dtype, is_float64 = checks.check_group_norm((None if shape is None else tuple(shape), dtype), weight_spec,
                                                      bias_spec, num_groups, eps)
    if is_float64 and routing.backend_name() != "cpu":
        raise ParamTypeError(f"input has dtype Float64, which only the CPU kernels support (this backend is "
                             f"{routing.backend_name()!r}); use float32")
    return stat_dtype, shape is not None and shape[1] is not None and shape[1] >= 0


@constexpr(check=False)
def _check_group_norm_graph_variables(shape, dtype, weight_spec, bias_spec, num_groups, num_groups_type, eps,
                                      eps_type):
    """_check_group_norm where num_groups or eps is a graph variable (its value None, its
    type given; a constant has type None); see checks.check_group_norm_graph_variables."""
    stat_dtype, _ = checks.check_group_norm_graph_variables(
        (None if shape is None else tuple(shape), dtype), weight_spec, bias_spec, num_groups, num_groups_type, eps,
        eps_type)
    if routing.backend_name() != "cpu":  # float64 included: the "cpu" backend takes it
        raise ParamInvalidError(
            f"num_groups/eps given as a graph variable (e.g. ms.mutable) are read when the kernel runs, which only "
            f"the 'cpu' backend supports (this backend is {routing.backend_name()!r}); pass Python numbers")
    return stat_dtype


@constexpr(check=False)
def _refuse_input(input):  # pylint: disable=redefined-builtin
    """group_norm/group_norm_silu's ``input`` is not a Tensor (a list, a number, None...)."""
    raise ParamTypeError(f"input must be a mindspore.Tensor, got {type(input).__name__}")


def _run_group_norm(input, num_groups, weight, bias, eps, mask, stat_dtype):
    """y of GroupNorm after the checks: statistics in ``stat_dtype``, float32 for
    float16/bfloat16 input (weight/bias are cast up, their gradients cast back), the input's
    dtype otherwise."""
    weight, bias = cast_params(weight, bias, stat_dtype)
    return routing.forward_op(num_groups, float(eps), mask)(input, weight, bias)[0]


def _check_groups_divide(input, num_groups):  # pylint: disable=redefined-builtin
    """num_groups divides C where only the run knows C (a graph with a dynamic shape): the
    eager call's ValueError naming num_groups, not the kernel's status. Where C is known the
    checks above have seen it, and it is not called."""
    channels = input.shape[1]
    if channels % num_groups != 0:
        raise ValueError(f"ms_groupnorm: C={channels} (the input's dimension 1) is not divisible by "
                         f"num_groups={num_groups}")


def _group_norm_graph_variables(input, num_groups, weight, bias, eps):
    """group_norm inside a graph where num_groups or eps is a graph variable: both reach
    the kernel as tensors it reads when it runs (see ops.routing.runtime_group_forward_op).
    The same float32 eps and the same kernels as the attribute route, so the results are
    bitwise equal to a call with the same Python numbers."""
    groups_known, eps_known = F.isconstant(num_groups), F.isconstant(eps)
    stat_dtype = _check_group_norm_graph_variables(
        input.shape, input.dtype, param_spec(weight), param_spec(bias),
        num_groups, None if groups_known else F.typeof(num_groups), eps, None if eps_known else F.typeof(eps))
    if not groups_known:
        # Checked when the graph runs, as the eager call checks it: a ValueError naming
        # num_groups (the kernel's own check would only give MindSpore's RuntimeError).
        channels = input.shape[1]
        if num_groups <= 0 or channels % num_groups != 0:
            raise ValueError(f"ms_groupnorm: num_groups={num_groups} must be > 0 and divide C={channels} "
                             f"(the input's dimension 1)")
    mask = (True, weight is not None, bias is not None)
    weight, bias = cast_params(weight, bias, stat_dtype)
    group = ops.scalar_to_tensor(num_groups, mstype.int64)
    eps = ops.scalar_to_tensor(eps, mstype.float32)
    return routing.runtime_group_forward_op(mask)(input, weight, bias, group, eps)[0]


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
    if not isinstance(input, Tensor):
        _refuse_input(input)
    # F.isconstant is folded while a graph compiles, so only one route is compiled (nested
    # ifs: `if not (a and b): return ...` before the static route compiled that route too,
    # whose check refuses num_groups=None), and is True in PyNative (~0.2 us).
    if F.isconstant(num_groups):
        if F.isconstant(eps):
            stat_dtype, c_known = _check_group_norm(input.shape, input.dtype, param_spec(weight),
                                                    param_spec(bias), num_groups, eps)
            if not c_known:  # a dynamic C: checked when the graph runs
                _check_groups_divide(input, num_groups)
            return _run_group_norm(input, num_groups, weight, bias, eps,
                                   (True, weight is not None, bias is not None), stat_dtype)
    return _group_norm_graph_variables(input, num_groups, weight, bias, eps)


def group_norm_forward(input, gamma, beta, N, C, HxW, group, eps=1e-5):
    """aclnnGroupNorm: (out, mean, rstd) with mean/rstd of shape (N, group).

    ``input`` holds N*C*HxW elements; gamma/beta (C,) or None. mean/rstd take the
    parameters' dtype: gamma's, else beta's, else input's. Gradients flow to input, gamma
    and beta from ``out`` only: mean and rstd are treated as saved statistics.
    """
    input_spec, gamma_spec, beta_spec = spec(input), spec(gamma), spec(beta)
    N, C, HxW, group, eps = checks.check_forward(input_spec, gamma_spec, beta_spec, N, C, HxW, group, eps)
    stat_dtype = forward_stat_dtype(input, gamma, beta)
    if N * C * HxW == 0:  # empty input: nothing to launch
        return empty_forward(input, N, group, stat_dtype)
    op = routing.forward_op(group, eps, (True, gamma is not None, beta is not None))
    return forward_contract_outputs(op, input, gamma, beta, N, C, HxW, stat_dtype)


def group_norm_backward(grad_out, input, mean, rstd, gamma, N, C, HxW, group, output_mask=FULL_MASK):
    """aclnnGroupNormBackward: (grad_input, grad_gamma, grad_beta), None where output_mask is False.

    grad_out and input hold N*C*HxW elements each (their shapes may differ); mean and
    rstd hold N*group; gamma is (C,) or None (ones). grad_input has input's shape and
    dtype; grad_gamma/grad_beta are (C,) in mean's dtype.
    """
    N, C, HxW, group, output_mask = checks.check_backward(spec(grad_out), spec(input), spec(mean), spec(rstd),
                                                           spec(gamma), N, C, HxW, group, output_mask)
    if N * HxW == 0:  # empty input: nothing to launch; the parameter gradients are zeros
        return empty_backward(input, C, output_mask, mean.dtype)
    x, dy = kernel_layout(grad_out, input, N, C, HxW)
    gamma = absent(mean.dtype) if gamma is None else gamma
    dx, dgamma, dbeta = routing.backward_op(group, output_mask)(dy, x, mean, rstd, gamma)
    return masked_backward_outputs(dx, dgamma, dbeta, input, N, C, output_mask)


# ---------------------------------------------------------------- GroupNorm + swish
@constexpr(check=False)  # runs in Python, also while a graph compiles (unknown dims arrive as None)
def _check_group_norm_silu(shape, dtype, weight_spec, bias_spec, num_groups, eps):
    """group_norm's checks; returns (statistics dtype, whether the fused kernel runs)."""
    stat_dtype, is_float64 = checks.check_group_norm((None if shape is None else tuple(shape), dtype), weight_spec,
                                                      bias_spec, num_groups, eps)
    fused = routing.fused_backend() is not None
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

    ``num_groups``/``eps`` may be graph variables inside a graph, as for ``group_norm``
    (CPU backend only); that call runs GroupNorm then SiLU, not the fused kernel.
    """
    if not isinstance(input, Tensor):
        _refuse_input(input)
    if F.isconstant(num_groups):  # nested as in group_norm: one route compiled
        if F.isconstant(eps):
            stat_dtype, fused = _check_group_norm_silu(input.shape, input.dtype, param_spec(weight),
                                                       param_spec(bias), num_groups, eps)
            if not fused:
                return ops.silu(group_norm(input, num_groups, weight, bias, eps))
            mask = (True, weight is not None, bias is not None)
            weight, bias = cast_params(weight, bias, stat_dtype)
            return routing.silu_forward_op(num_groups, float(eps), 1.0, mask)(input, weight, bias)[0]
    # num_groups or eps a graph variable: group_norm's kernel reading them at run time, then
    # SiLU (the fused kernel takes them as attributes only).
    return ops.silu(_group_norm_graph_variables(input, num_groups, weight, bias, eps))


def group_norm_silu_forward(input, gamma, beta, N, C, HxW, group, eps=1e-5, swish_scale=1.0):
    """aclnnGroupNormSilu(/Swish): (out, mean, rstd), out = y * sigmoid(swish_scale * y),
    mean/rstd of shape (N, group) in gamma's dtype (input's when gamma is None).

    The contract of :func:`ms_groupnorm.group_norm_forward` plus ``swish_scale`` (finite).
    Gradients flow to input, gamma and beta from ``out`` only.
    """
    N, C, HxW, group, eps = checks.check_forward(spec(input), spec(gamma), spec(beta), N, C, HxW, group, eps)
    swish_scale = checks.check_swish_scale(swish_scale)
    stat_dtype = forward_stat_dtype(input, gamma, beta)
    if N * C * HxW == 0:  # empty input: nothing to launch
        return empty_forward(input, N, group, stat_dtype)
    if routing.fused_backend() is None:
        out, mean, rstd = group_norm_forward(input, gamma, beta, N, C, HxW, group, eps)
        return _swish(out, swish_scale), mean, rstd
    op = routing.silu_forward_op(group, eps, swish_scale, (True, gamma is not None, beta is not None))
    return forward_contract_outputs(op, input, gamma, beta, N, C, HxW, stat_dtype)


def group_norm_silu_backward(grad_out, input, mean, rstd, gamma, beta, N, C, HxW, group, output_mask=FULL_MASK,
                             swish_scale=1.0):
    """GroupNormSwishGrad: (grad_input, grad_gamma, grad_beta), None where output_mask is
    False, from grad_out (of ``out``), input, the saved mean/rstd and gamma/beta (None:
    ones/zeros), which recompute y and sigmoid(swish_scale * y).

    The contract of :func:`ms_groupnorm.group_norm_backward` plus beta (mean's dtype, C
    elements) and ``swish_scale``.
    """
    N, C, HxW, group, output_mask = checks.check_backward(spec(grad_out), spec(input), spec(mean), spec(rstd),
                                                           spec(gamma), N, C, HxW, group, output_mask)
    checks.check_beta_for_backward(spec(beta), spec(mean), C)
    swish_scale = checks.check_swish_scale(swish_scale)
    if N * HxW == 0:  # empty input: nothing to launch; the parameter gradients are zeros
        return empty_backward(input, C, output_mask, mean.dtype)
    if routing.fused_backend() is None:
        if routing.backend_name() == "ascend":
            raise NotImplementedError(NOT_INSTALLED)
        raise NotImplementedError("ms_groupnorm: group_norm_silu_backward has no kernel on this backend yet")
    x, dz = kernel_layout(grad_out, input, N, C, HxW)
    gamma = absent(mean.dtype) if gamma is None else gamma
    beta = absent(mean.dtype) if beta is None else beta
    dx, dgamma, dbeta = routing.silu_backward_op(group, swish_scale, output_mask)(dz, x, mean, rstd, gamma, beta)
    return masked_backward_outputs(dx, dgamma, dbeta, input, N, C, output_mask)
