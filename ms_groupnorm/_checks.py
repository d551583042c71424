"""Argument checks of the aclnnGroupNorm / aclnnGroupNormBackward contracts.

Pure functions of shapes, dtypes and scalars, in CANN's order (null tensors, output
mask, dtypes, group, shapes). They depend on nothing but their (hashable) arguments,
so results are cached: a call with shapes seen before costs one dictionary lookup.
They raise the exceptions of ``errors``; ``None`` stands for an absent tensor.
"""
import functools
import math

from mindspore import dtype as mstype

from .errors import ParamInvalidError, ParamNullptrError, ParamTypeError

DATA_DTYPES = (mstype.float32, mstype.float16, mstype.bfloat16)
# What the layers and group_norm take, as mindspore.nn.GroupNorm / ops.group_norm do on
# CPU: the contract's dtypes plus float64 (computed in double by the CPU kernels).
LAYER_DTYPES = DATA_DTYPES + (mstype.float64,)
LOW_PRECISION = (mstype.float16, mstype.bfloat16)
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
        raise ParamTypeError(f"{name} has dtype {_dtype_name(dtype)}, but it must be float32, float16 or bfloat16")


def _check_same_dtype(name, dtype, other_name, other_dtype):
    if dtype != other_dtype:
        raise ParamTypeError(
            f"{name} has dtype {_dtype_name(dtype)}, but it must equal the dtype of {other_name} "
            f"({_dtype_name(other_dtype)})")


def _check_stat_dtype(name, dtype, data_name, data_dtype):
    """Statistics follow the data dtype, or are float32 with float16/bfloat16 data."""
    if dtype != data_dtype and dtype != mstype.float32:
        raise ParamTypeError(
            f"{name} has dtype {_dtype_name(dtype)}, but it must equal the dtype of {data_name} "
            f"({_dtype_name(data_dtype)}) or be float32")


@functools.lru_cache(maxsize=4096, typed=True)  # typed: True, 1 and 1.0 are different arguments here
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


@functools.lru_cache(maxsize=4096, typed=True)  # typed: True, 1 and 1.0 are different arguments here
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


def stat_dtype_for(data_dtype):
    """The dtype of the statistics the layers and group_norm compute in: float32 for
    float16/bfloat16 data (never a rounded statistic), else the data dtype."""
    return mstype.float32 if data_dtype in LOW_PRECISION else data_dtype


def _known_numel(shape):
    """numel of ``shape``, or None while a dimension (or the rank) is still unknown."""
    if shape is None or any(dim is None or dim < 0 for dim in shape):
        return None
    return _numel(shape)


@functools.lru_cache(maxsize=4096, typed=True)  # typed: True, 1 and 1.0 are different arguments here
def check_group_norm(input, weight, bias, num_groups, eps):
    """Checks group_norm's arguments (``ops.group_norm``'s rules; float64 included) given
    as (shape, dtype) pairs or None. Returns (the dtype to compute the statistics in,
    whether the input is float64): cached, so that a call costs one lookup (comparing
    MindSpore dtypes costs ~2 us each).

    In GRAPH_MODE with dynamic shapes a dimension may be None or negative and the shape
    itself None (dynamic rank): what is unknown is checked by the kernel at run time, what
    is known (dtypes, scalars, rank, C) is checked now.
    """
    _check_group_norm_args(input, weight, bias, num_groups, eps)
    return stat_dtype_for(input[1]), input[1] == mstype.float64


@functools.lru_cache(maxsize=4096, typed=True)
def check_layer_input(shape, dtype, num_channels, cls_name):
    """The GroupNorm layers' input check, with nn.GroupNorm's exception types and message
    style; shape as in check_group_norm (None entries unknown, None rank unknown).
    Returns what check_group_norm returns."""
    if shape is not None:
        if not 2 <= len(shape) <= MAX_RANK:
            raise ValueError(f"For '{cls_name}', the input must have rank 2 to {MAX_RANK} (N, C, *), "
                             f"but got shape {shape}.")
        if shape[1] is not None and shape[1] >= 0 and shape[1] != num_channels:
            raise ValueError(f"For '{cls_name}', the channel (the second dim of the input 'x') must be equal "
                             f"to num_channels, but got channel: {shape[1]}, num_channels: {num_channels}.")
    if dtype not in LAYER_DTYPES:
        raise TypeError(f"For '{cls_name}', the input dtype must be float32, float16, bfloat16 or float64, "
                        f"but got {dtype}.")
    return stat_dtype_for(dtype), dtype == mstype.float64


@functools.lru_cache(maxsize=4096, typed=True)
def check_group_norm_graph_variables(input, weight, bias, num_groups, num_groups_type, eps, eps_type):
    """check_group_norm for a call inside a graph where ``num_groups`` or ``eps`` is a graph
    variable (``ms.mutable``, or a mutable argument of an ``@ms.jit`` function).

    A variable's value is unknown while the graph compiles, and arrives here as None next
    to its MindSpore type (``F.typeof``); a constant arrives as its value with type None.
    A variable is checked by type now (an integer type for num_groups, a number type for
    eps: what ``ops.group_norm`` accepts) and by value when the kernel runs (num_groups
    > 0 and dividing C; see GroupNormRuntimeGroup in kernels/cpu/group_norm_aot.cc).
    Returns what check_group_norm returns."""
    if num_groups_type is not None and num_groups_type not in mstype.int_type + mstype.uint_type:
        raise ParamTypeError(f"num_groups is a graph variable of type {num_groups_type}, but it must be an int")
    if eps_type is not None and eps_type not in mstype.float_type + mstype.int_type + mstype.uint_type:
        raise ParamTypeError(f"eps is a graph variable of type {eps_type}, but it must be a float")
    _check_group_norm_args(input, weight, bias, num_groups, eps, num_groups_known=num_groups_type is None,
                           eps_known=eps_type is None)
    return stat_dtype_for(input[1]), input[1] == mstype.float64


def _check_group_norm_args(input, weight, bias, num_groups, eps, num_groups_known=True, eps_known=True):
    if input is None:
        raise ParamNullptrError("input is a required tensor and must not be None")
    x_shape, x_dtype = input
    if x_dtype not in LAYER_DTYPES:
        raise ParamTypeError(f"input has dtype {_dtype_name(x_dtype)}, but it must be float32, float16, "
                             f"bfloat16 or float64")
    for name, arg in (("weight", weight), ("bias", bias)):
        if arg is None:
            continue
        allowed = (x_dtype, mstype.float32) if x_dtype in LOW_PRECISION else (x_dtype,)
        if arg[1] not in allowed:
            raise ParamTypeError(f"{name} has dtype {_dtype_name(arg[1])}, but with a {_dtype_name(x_dtype)} input "
                                 f"it must be " + " or ".join(_dtype_name(d) for d in allowed))
    if num_groups_known:
        if not isinstance(num_groups, int) or isinstance(num_groups, bool):
            raise ParamTypeError(f"num_groups={num_groups!r} must be an int")
        if num_groups <= 0:
            raise ParamInvalidError(f"num_groups={num_groups} must be > 0")
    if eps_known and (not isinstance(eps, (int, float)) or isinstance(eps, bool)):
        raise ParamTypeError(f"eps={eps!r} must be a float")
    if x_shape is None:  # rank unknown until run time
        return
    _check_rank("input", x_shape, 2)
    C = x_shape[1]
    if C is None or C < 0:
        return
    if num_groups_known and C % num_groups != 0:
        raise ParamInvalidError(f"C={C} (the input's dimension 1) is not divisible by num_groups={num_groups}")
    for name, arg in (("weight", weight), ("bias", bias)):
        if arg is not None and _known_numel(arg[0]) not in (None, C):
            raise ParamInvalidError(f"numel({name})={_numel(arg[0])} (shape {tuple(arg[0])}) must equal C={C}")
