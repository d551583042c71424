"""Argument checks of the aclnnGroupNorm / aclnnGroupNormBackward contracts.

Pure functions of shapes, dtypes and scalars, in CANN's order (null tensors, output
mask, dtypes, group, shapes). They depend on nothing but their (hashable) arguments,
so results are cached: a call with shapes seen before costs one dictionary lookup.
They raise the exceptions of ``errors``; ``None`` stands for an absent tensor.
"""
import functools
import math

from mindspore import dtype as mstype

from .errors import ParamInvalidError, ParamNullptrError

DATA_DTYPES = (mstype.float32, mstype.float16, mstype.bfloat16)
MAX_RANK = 8


def _numel(shape):
    return math.prod(shape)


def _dtype_name(dtype):
    return str(dtype)


def _check_mask(output_mask):
    if not isinstance(output_mask, (tuple, list)) or len(output_mask) != 3:
        raise ParamInvalidError(f"output_mask must be a sequence of 3 bools, got {output_mask!r}")
    if not all(isinstance(bit, bool) for bit in output_mask):
        raise ParamInvalidError(f"output_mask must hold 3 bools, got {output_mask!r}")


def _check_sizes(N, C, HxW, group):
    for name, value in (("N", N), ("C", C), ("HxW", HxW)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise ParamInvalidError(f"{name}={value!r} must be an int >= 0")
    if not isinstance(group, int) or isinstance(group, bool) or group <= 0:
        raise ParamInvalidError(f"group={group!r} must be an int > 0")
    if C % group != 0:
        raise ParamInvalidError(f"C={C} is not divisible by group={group}")


def _check_rank(name, shape, low):
    if not low <= len(shape) <= MAX_RANK:
        raise ParamInvalidError(f"{name} has rank {len(shape)}, but the rank must be in [{low}, {MAX_RANK}]")


def _check_numel(name, shape, expected, rule):
    if _numel(shape) != expected:
        raise ParamInvalidError(f"numel({name})={_numel(shape)} (shape {tuple(shape)}) must equal {rule}={expected}")


def _check_data_dtype(name, dtype):
    if dtype not in DATA_DTYPES:
        raise ParamInvalidError(f"{name} has dtype {_dtype_name(dtype)}, but it must be float32, float16 or bfloat16")


def _check_same_dtype(name, dtype, other_name, other_dtype):
    if dtype != other_dtype:
        raise ParamInvalidError(
            f"{name} has dtype {_dtype_name(dtype)}, but it must equal the dtype of {other_name} "
            f"({_dtype_name(other_dtype)})")


def _check_stat_dtype(name, dtype, data_name, data_dtype):
    """Statistics follow the data dtype, or are float32 with float16/bfloat16 data."""
    if dtype != data_dtype and dtype != mstype.float32:
        raise ParamInvalidError(
            f"{name} has dtype {_dtype_name(dtype)}, but it must equal the dtype of {data_name} "
            f"({_dtype_name(data_dtype)}) or be float32")


@functools.lru_cache(maxsize=4096)
def check_backward(grad_out, input, mean, rstd, gamma, N, C, HxW, group, output_mask):
    """Check aclnnGroupNormBackward arguments, given as (shape, dtype) pairs or None."""
    for name, arg in (("grad_out", grad_out), ("input", input), ("mean", mean), ("rstd", rstd)):
        if arg is None:
            raise ParamNullptrError(f"{name} is a required tensor and must not be None")
    _check_mask(output_mask)
    (dy_shape, dy_dtype), (x_shape, x_dtype) = grad_out, input
    (mean_shape, mean_dtype), (rstd_shape, rstd_dtype) = mean, rstd
    _check_data_dtype("grad_out", dy_dtype)
    _check_same_dtype("input", x_dtype, "grad_out", dy_dtype)
    _check_stat_dtype("mean", mean_dtype, "grad_out", dy_dtype)
    _check_same_dtype("rstd", rstd_dtype, "mean", mean_dtype)
    if gamma is not None:
        _check_same_dtype("gamma", gamma[1], "mean", mean_dtype)
    _check_sizes(N, C, HxW, group)
    _check_rank("grad_out", dy_shape, 1)
    _check_rank("input", x_shape, 1)
    _check_numel("grad_out", dy_shape, N * C * HxW, "N*C*HxW")
    _check_numel("input", x_shape, N * C * HxW, "N*C*HxW")
    _check_numel("mean", mean_shape, N * group, "N*group")
    _check_numel("rstd", rstd_shape, N * group, "N*group")
    if gamma is not None:
        _check_numel("gamma", gamma[0], C, "C")


@functools.lru_cache(maxsize=4096)
def check_forward(input, gamma, beta, N, C, HxW, group, eps):
    """Check aclnnGroupNorm arguments, given as (shape, dtype) pairs or None."""
    if input is None:
        raise ParamNullptrError("input is a required tensor and must not be None")
    x_shape, x_dtype = input
    _check_data_dtype("input", x_dtype)
    for name, arg in (("gamma", gamma), ("beta", beta)):
        if arg is not None:
            _check_stat_dtype(name, arg[1], "input", x_dtype)
    if gamma is not None and beta is not None:
        _check_same_dtype("beta", beta[1], "gamma", gamma[1])
    if not isinstance(eps, (int, float)) or isinstance(eps, bool) or not eps > 0:
        raise ParamInvalidError(f"eps={eps!r} must be a number > 0")
    _check_sizes(N, C, HxW, group)
    _check_rank("input", x_shape, 2)
    _check_numel("input", x_shape, N * C * HxW, "N*C*HxW")
    for name, arg in (("gamma", gamma), ("beta", beta)):
        if arg is not None:
            _check_numel(name, arg[0], C, "C")


@functools.lru_cache(maxsize=4096)
def check_group_norm(input, gamma, beta, num_groups, eps):
    """check_forward for an (N, C, *) input whose sizes come from its shape; dimensions
    still unknown (negative, GRAPH_MODE dynamic shapes) are left to the kernel."""
    shape = input[0]
    if any(dim < 0 for dim in shape):
        return
    N, C, HxW = (shape[0], shape[1], _numel(shape[2:])) if len(shape) >= 2 else (0, 0, 0)
    check_forward(input, gamma, beta, N, C, HxW, num_groups, eps)
