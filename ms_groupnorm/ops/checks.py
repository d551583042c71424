"""Argument checks of the aclnn-style contracts: aclnnGroupNorm / aclnnGroupNormBackward and
the fused GroupNorm + swish pair (the same checks plus swish_scale and the backward's beta).

Pure functions of shapes, dtypes and scalars, in CANN's order (null tensors, output
mask, dtypes, group, shapes). They raise the exceptions of ``errors``; ``None`` stands
for an absent tensor, ``(None, obj)`` for an argument that is not a MindSpore tensor.

The public checks first apply the one rule for scalar arguments (``as_int``,
``as_float32_number``, ``as_mask``): the same in PYNATIVE_MODE and GRAPH_MODE, and
before anything is hashed, so an unhashable argument gets a typed error naming it. The
rest depends on nothing but hashable arguments and is cached: a call with shapes seen
before costs one dictionary lookup.
"""
import functools
import math

import numpy as np
from mindspore import Tensor
from mindspore import dtype as mstype

from .._compat import evaluated_by_graph_compiler
from ..errors import GroupNormParamError, ParamInvalidError, ParamNullptrError, ParamTypeError

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


# ---- the one rule for scalar arguments, in both modes ----
# In GRAPH_MODE MindSpore turns constants into C++ values before any of this code sees
# them: numpy scalars arrive as Python ones, floats rounded to float32 (1e39 as inf, 1e-320
# as 0.0), ints beyond int64 fail in MindSpore itself. PyNative hands over what the caller
# passed. So the rule is stated on what both modes can see: numpy and Python numbers alike,
# ints within int64, floats that keep their value as float32.
INT64_MIN, INT64_MAX = -2 ** 63, 2 ** 63 - 1
FLOAT32_MAX = float(np.finfo(np.float32).max)    # 3.4028235e38; above it float32 is inf
FLOAT32_NORMAL = float(np.finfo(np.float32).tiny)  # 1.1754944e-38; below it float32 loses digits
_BOOLS = (bool, np.bool_)


def _shown(value):
    """``value`` for a message: its repr, cut short (a huge int or array stays readable)."""
    text = repr(value)
    return text if len(text) <= 60 else text[:40] + "..." + text[-10:]


def as_int(name, value):
    """``value`` as a Python int: a Python or numpy integer (not a bool) within int64 (what
    MindSpore can pass to a kernel)."""
    if type(value) is int and INT64_MIN <= value <= INT64_MAX:  # pylint: disable=unidiomatic-typecheck
        return value  # the usual case, in ~0.1 us
    if isinstance(value, _BOOLS) or not isinstance(value, (int, np.integer)):
        raise ParamTypeError(f"{name}={_shown(value)} must be an int (a Python or numpy integer, not a bool), "
                             f"got {type(value).__name__}")
    if not INT64_MIN <= int(value) <= INT64_MAX:
        raise ParamInvalidError(f"{name}={_shown(value)} must fit in int64 (|{name}| < 2**63)")
    return int(value)


def as_float32_number(name, value):
    """``value`` as a Python float: a Python or numpy int or float (not a bool) that float32,
    the kernels' attribute type, holds without losing it: 0, or a magnitude in float32's
    normal range [1.1754944e-38, 3.4028235e38]. Beyond it float32 makes inf; below it
    digits are lost and then the value itself (1e-320 becomes 0), and hardware that flushes
    subnormals (Ascend) makes it 0 outright. NaN is refused."""
    if type(value) is float and (FLOAT32_NORMAL <= abs(value) <= FLOAT32_MAX or value == 0.0):
        return value  # the usual case  # pylint: disable=unidiomatic-typecheck
    if isinstance(value, _BOOLS) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ParamTypeError(f"{name}={_shown(value)} must be a float (a Python or numpy int or float, not a bool), "
                             f"got {type(value).__name__}")
    try:
        number = float(value)
    except OverflowError:  # an int beyond any float
        number = math.inf
    if math.isnan(number):
        raise ParamInvalidError(f"{name}={_shown(value)} must not be NaN")
    if math.isinf(number) and not isinstance(value, int):
        raise ParamInvalidError(f"{name}={_shown(value)} must be finite")
    with np.errstate(over="ignore", under="ignore"):
        held = float(np.float32(number))
    if number != 0.0 and not FLOAT32_NORMAL <= abs(held) <= FLOAT32_MAX:
        raise ParamInvalidError(
            f"{name}={_shown(value)} cannot be held by float32 (it would become {held!r}): it must be 0 or of "
            f"magnitude in [{FLOAT32_NORMAL:.8g}, {FLOAT32_MAX:.8g}]")
    return number


def as_mask(output_mask):
    """``output_mask`` as a tuple of 3 Python bools: a tuple or list of 3 Python or numpy bools."""
    # pylint: disable-next=unidiomatic-typecheck
    if type(output_mask) is tuple and len(output_mask) == 3 and all(type(bit) is bool for bit in output_mask):
        return output_mask  # the usual case
    if not isinstance(output_mask, (tuple, list)) or len(output_mask) != 3:
        raise ParamInvalidError(f"output_mask must be a sequence of 3 bools (a tuple or list), "
                                f"got {_shown(output_mask)}")
    if not all(isinstance(bit, _BOOLS) for bit in output_mask):
        raise ParamInvalidError(f"output_mask must hold 3 bools, got {_shown(output_mask)}")
    return tuple(bool(bit) for bit in output_mask)


def check_is_tensor(name, spec):
    """A (shape, dtype) spec of a MindSpore tensor, or None; ``(None, obj)`` (what the
    callers make of anything else: a numpy array, a list, a number) is refused by name."""
    if spec is not None and not isinstance(spec[1], mstype.Type):
        raise ParamTypeError(f"{name} must be a mindspore.Tensor or None, got {type(spec[1]).__name__}")


def tensor_spec(tensor):
    """(shape, dtype) of a MindSpore tensor, None for None, ``(None, obj)`` for anything else
    (which check_is_tensor refuses). Plain graph syntax: GRAPH_MODE compiles it."""
    if tensor is None:
        return None
    if isinstance(tensor, Tensor):
        return tuple(tensor.shape), tensor.dtype
    return None, tensor


def _check_sizes(N, C, HxW, group):
    """On Python ints (as_int): N, C, HxW >= 0; 0 < group <= max(C, 1), dividing C. With C = 0
    the groups hold no channels, and a group count beyond 1 would only size the (N, group)
    statistics (2**40 groups: terabytes); N*group must fit in int64 as their element count."""
    for name, value in (("N", N), ("C", C), ("HxW", HxW)):
        if value < 0:
            raise ParamInvalidError(f"{name}={value!r} must be an int >= 0")
    if group <= 0:
        raise ParamInvalidError(f"group={group!r} must be an int > 0")
    _check_group_rule(C, group, "group")
    if N * group > INT64_MAX:
        raise ParamInvalidError(f"N*group={N * group} (the element count of mean/rstd) must fit in int64")


def groups_fit(C, group):
    """The group rule, written once: ``group`` (> 0) divides C and does not exceed max(C, 1),
    so that each group holds at least one channel (with C = 0, one group)."""
    return C % group == 0 and group <= max(C, 1)


def _check_group_rule(C, group, group_name, c_note=""):
    """groups_fit, or a ParamInvalidError saying which half of the rule ``group`` breaks."""
    if groups_fit(C, group):
        return
    if C % group != 0:
        raise ParamInvalidError(f"C={C}{c_note} is not divisible by {group_name}={group}")
    raise ParamInvalidError(f"{group_name}={group} must not exceed max(C, 1)={max(C, 1)}: a group holds at least one "
                            f"channel (with C = 0, {group_name} must be 1)")


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


def cached_check(check):
    """``check``, cached on its arguments (typed: True, 1 and 1.0 differ here), so that a call
    seen before costs one lookup; an unhashable argument skips the cache, and ``check``
    itself then names it. Wrapped like the op getters of ops.routing: called from functions that GRAPH_MODE
    compiles, the compiler calls it in Python with the constant arguments."""
    cached = functools.lru_cache(maxsize=4096, typed=True)(check)

    @functools.wraps(check)
    def checked(*args):
        try:
            return cached(*args)
        except TypeError as error:
            if isinstance(error, GroupNormParamError):
                raise
            return check(*args)  # unhashable: the uncached check raises our error naming it

    return evaluated_by_graph_compiler(checked)


@evaluated_by_graph_compiler
def check_backward(grad_out, input, mean, rstd, gamma, N, C, HxW, group, output_mask):
    """Check aclnnGroupNormBackward arguments, tensors given as tensor_spec() gives them.
    Returns (N, C, HxW, group, output_mask) as Python ints and a tuple of bools.

    The cache key carries the types of output_mask's items unless they are Python bools:
    (1, 1, 1) equals and hashes as (True, True, True), and must not get its cached answer."""
    # pylint: disable-next=unidiomatic-typecheck
    plain = type(output_mask) is tuple and len(output_mask) == 3 and all(type(bit) is bool for bit in output_mask)
    mask_types = None if plain else tuple(map(type, output_mask)) if isinstance(output_mask, (tuple, list)) else ()
    return _check_backward_arguments(grad_out, input, mean, rstd, gamma, N, C, HxW, group, output_mask, mask_types)


@cached_check
def _check_backward_arguments(grad_out, input, mean, rstd, gamma, N, C, HxW, group, output_mask, mask_types):
    del mask_types  # only part of the cache key
    for name, arg in (("grad_out", grad_out), ("input", input), ("mean", mean), ("rstd", rstd)):
        if arg is None:
            raise ParamNullptrError(f"{name} is a required tensor and must not be None")
    output_mask = as_mask(output_mask)
    for name, arg in (("grad_out", grad_out), ("input", input), ("mean", mean), ("rstd", rstd), ("gamma", gamma)):
        check_is_tensor(name, arg)
    sizes = tuple(as_int(name, value) for name, value in (("N", N), ("C", C), ("HxW", HxW), ("group", group)))
    _check_backward(grad_out, input, mean, rstd, gamma, *sizes)
    return sizes + (output_mask,)


def _check_backward(grad_out, input, mean, rstd, gamma, N, C, HxW, group):
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


# The largest |swish_scale| the fused kernels take. Their sigmoid comes from an exp clamped
# at float32's range, so s * (1 - s) never falls below ~6e-39 where it should be 0, and the
# gradient term k * y * s * (1 - s) is then ~k * |y| * 6e-39: 6e-9 of y at this bound, but
# 15 % off at 1e36 and NaN/inf at 1e38 (measured on the CPU kernels).
MAX_SWISH_SCALE = 1e30


@cached_check
def check_swish_scale(swish_scale):
    """swish_scale (1.0 is SiLU): a number float32 holds, as eps (as_float32_number), of
    magnitude at most MAX_SWISH_SCALE; returned as a Python float."""
    value = as_float32_number("swish_scale", swish_scale)
    if abs(value) > MAX_SWISH_SCALE:
        raise ParamInvalidError(f"swish_scale={value!r} must have a magnitude of at most {MAX_SWISH_SCALE:g}: beyond "
                                f"it the fused kernels' sigmoid gradient is no longer accurate")
    return value


@cached_check
def check_beta_for_backward(beta, mean, C):
    """The fused backward's extra input beta (recomputing y needs it): mean's dtype, C elements."""
    check_is_tensor("beta", beta)
    if beta is not None:
        _check_same_dtype("beta", beta[1], "mean", mean[1])
        _check_numel("beta", beta[0], C, "C")


@cached_check
def check_forward(input, gamma, beta, N, C, HxW, group, eps):
    """Check aclnnGroupNorm arguments, tensors given as tensor_spec() gives them. Returns
    (N, C, HxW, group, eps) as Python ints and a float."""
    if input is None:
        raise ParamNullptrError("input is a required tensor and must not be None")
    for name, arg in (("input", input), ("gamma", gamma), ("beta", beta)):
        check_is_tensor(name, arg)
    sizes = tuple(as_int(name, value) for name, value in (("N", N), ("C", C), ("HxW", HxW), ("group", group)))
    eps = as_float32_number("eps", eps)
    _check_forward(input, gamma, beta, *sizes, eps)
    return sizes + (eps,)


def _check_forward(input, gamma, beta, N, C, HxW, group, eps):
    x_shape, x_dtype = input
    _check_data_dtype("input", x_dtype)
    for name, arg in (("gamma", gamma), ("beta", beta)):
        if arg is not None:
            _check_stat_dtype(name, arg[1], "input", x_dtype)
    if gamma is not None and beta is not None:
        _check_same_dtype("beta", beta[1], "gamma", gamma[1])
    if not eps > 0:
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


@cached_check
def check_group_norm(input, weight, bias, num_groups, eps):
    """Checks group_norm's arguments (``ops.group_norm``'s rules; float64 included), tensors
    given as tensor_spec() gives them. Returns (the dtype to compute the statistics in,
    whether the input is float64); the cached part costs one lookup (comparing MindSpore
    dtypes costs ~2 us each).

    In GRAPH_MODE with dynamic shapes a dimension may be None or negative and the shape
    itself None (dynamic rank): what is unknown is checked by the kernel at run time, what
    is known (dtypes, scalars, rank, C) is checked now.
    """
    return check_group_norm_graph_variables(input, weight, bias, num_groups, None, eps, None)


@functools.lru_cache(maxsize=4096, typed=True)
def check_layer_input(shape, dtype, num_channels, cls_name, gamma_shape=None, beta_shape=None):
    """The GroupNorm layers' input check, with nn.GroupNorm's exception types and message
    style; shape as in check_group_norm (None entries unknown, None rank unknown); the
    parameters' shapes (a Parameter replaced by one of another size) when given.
    Returns what check_group_norm returns."""
    for name, param_shape in (("gamma", gamma_shape), ("beta", beta_shape)):
        if param_shape is not None and _known_numel(param_shape) not in (None, num_channels):
            raise ValueError(f"For '{cls_name}', the parameter '{name}' must hold num_channels={num_channels} "
                             f"elements, but got shape {tuple(param_shape)}.")
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


@cached_check
def check_group_norm_graph_variables(input, weight, bias, num_groups, num_groups_type, eps, eps_type):
    """check_group_norm for a call inside a graph where ``num_groups`` or ``eps`` is a graph
    variable (``ms.mutable``, or a mutable argument of an ``@ms.jit`` function).

    A variable's value is unknown while the graph compiles, and arrives here as None next
    to its MindSpore type (``F.typeof``); a constant arrives as its value with type None.
    A variable is checked by type now (an integer type for num_groups, a number type for
    eps: what ``ops.group_norm`` accepts) and by value when the kernel runs (num_groups
    > 0 and dividing C; see GroupNormRuntimeGroup in kernels/cpu/group_norm_aot.cc).
    Returns what check_group_norm returns."""
    if input is None:
        raise ParamNullptrError("input is a required tensor and must not be None")
    for name, arg in (("input", input), ("weight", weight), ("bias", bias)):
        check_is_tensor(name, arg)
    if num_groups_type is not None and num_groups_type not in mstype.int_type + mstype.uint_type:
        raise ParamTypeError(f"num_groups is a graph variable of type {num_groups_type}, but it must be an int")
    if eps_type is not None and eps_type not in mstype.float_type + mstype.int_type + mstype.uint_type:
        raise ParamTypeError(f"eps is a graph variable of type {eps_type}, but it must be a float")
    num_groups = as_int("num_groups", num_groups) if num_groups_type is None else None
    eps = as_float32_number("eps", eps) if eps_type is None else None
    _check_group_norm_args(input, weight, bias, num_groups, eps)
    return stat_dtype_for(input[1]), input[1] == mstype.float64


def _check_group_norm_args(input, weight, bias, num_groups, eps):
    """On as_int/as_float32_number's values; num_groups/eps None: a graph variable."""
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
    if num_groups is not None and num_groups <= 0:
        raise ParamInvalidError(f"num_groups={num_groups} must be > 0")
    if x_shape is None:  # rank unknown until run time
        return
    _check_rank("input", x_shape, 2)
    C = x_shape[1]
    if C is None or C < 0:
        return
    if num_groups is not None:
        _check_group_rule(C, num_groups, "num_groups", " (the input's dimension 1)")
    for name, arg in (("weight", weight), ("bias", bias)):
        if arg is not None and _known_numel(arg[0]) not in (None, C):
            raise ParamInvalidError(f"numel({name})={_numel(arg[0])} (shape {tuple(arg[0])}) must equal C={C}")
