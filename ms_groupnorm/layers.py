"""The layers: ``ms_groupnorm.GroupNorm``, a drop-in for ``mindspore.nn.GroupNorm``, and
``ms_groupnorm.GroupNormSiLU``, ``silu(GroupNorm(x))`` in one fused kernel, forward and
backward, with GroupNorm's signature, checks, parameters (``gamma``, ``beta``) and repr
(it subclasses GroupNorm and only replaces ``construct``). Their mint-style twins
(``weight``, ``bias``) are ``ms_groupnorm.mint``; the helpers here serve both.

float64 input, and MindSpore on Ascend without our fused GroupNormSiluMs/GroupNormSiluGradMs
operators installed, run the unfused pair (see ms_groupnorm.functional).
"""
from mindspore import Parameter, context, nn, ops
from mindspore import _checkparam as validator  # MindSpore's own checker: identical messages
from mindspore import dtype as mstype
from mindspore._c_expression import MixedPrecisionType
from mindspore.common.initializer import initializer
from mindspore.ops.primitive import constexpr

# absolute: MindSpore amp O1 re-imports layer files as top-level modules
from ms_groupnorm import _compat
from ms_groupnorm.ops import routing
from ms_groupnorm.ops.checks import as_float32_number, as_int, check_layer_input, groups_fit


@constexpr(check=False)
def _check_input(shape, dtype, num_channels, cls_name, gamma_shape=None, beta_shape=None):
    """Checks what is known of the input while a graph compiles (or per call in PyNative)
    and returns the dtype to compute the statistics in.

    A constexpr, not a primexpr: with a dynamic shape it still runs in Python, with None
    for the unknown dimensions (or for the whole shape when the rank is unknown), instead
    of being compiled into the graph, which STRICT syntax cannot do (a primexpr returning
    nothing broke STRICT graphs)."""
    stat_dtype, is_float64 = check_layer_input(None if shape is None else tuple(shape), dtype, num_channels,
                                               cls_name, _shape_of(gamma_shape), _shape_of(beta_shape))
    if is_float64 and routing.backend_name() != "cpu":
        raise TypeError(f"For '{cls_name}', float64 input runs on the CPU kernels only (the backend is "
                        f"{routing.backend_name()!r}); use float32.")
    return stat_dtype


def _check_channels(x, num_channels, cls_name):
    """x's channel count where only the run knows it (a graph with a dynamic shape or rank):
    nn.GroupNorm's ValueError, raised when the graph runs, instead of the kernel's status.
    Where the shape is known, _check_input has checked it and this folds away."""
    if x.shape[1] != num_channels:
        raise ValueError(f"For '{cls_name}', the channel (the second dim of the input 'x') must be equal to "
                         f"num_channels, but got channel: {x.shape[1]}, num_channels: {num_channels}.")


def _shape_of(shape):
    return None if shape is None else tuple(shape)


def _set_checked_arguments(cell, num_groups, num_channels, eps, affine):
    """Checks the GroupNorm layers' arguments as mindspore.nn.GroupNorm does (same types and
    messages), plus what the kernels need and nn does not check: sizes within int64 and an
    eps that float32 holds (nn.GroupNorm silently turns eps=1e300 into inf, giving beta,
    and eps=1e-320 into 0); the rule of ops.checks.as_int / as_float32_number. Stores them on
    ``cell``."""
    cell.num_groups = as_int("num_groups", validator.check_positive_int(num_groups, "num_groups", cell.cls_name))
    cell.num_channels = as_int("num_channels",
                               validator.check_positive_int(num_channels, "num_channels", cell.cls_name))
    if not groups_fit(num_channels, num_groups):  # both > 0 here: the divisibility half
        raise ValueError(f"For '{cell.cls_name}', the 'num_channels' must be divided by 'num_groups', "
                         f"but got 'num_channels': {num_channels}, 'num_groups': {num_groups}.")
    cell.eps = validator.check_value_type('eps', eps, (float,), type(cell).__name__)
    as_float32_number("eps", eps)
    cell.affine = validator.check_bool(affine, arg_name="affine", prim_name=cell.cls_name)


def _affine_group_norm(x, gamma, beta, num_groups, eps, stat_dtype):
    """y of GroupNorm with parameters gamma/beta, for the GroupNorm layers' construct.

    ``stat_dtype`` comes from _check_input. Statistics are float32 for float16/bfloat16
    input, whatever the parameters' dtype
    (float16/bfloat16 parameters are cast up and their gradients cast back): the forward
    normalises with float32 mean/rstd and the backward gets exactly those. For float32 and
    float64 input the parameters are cast to the input's dtype, as nn.GroupNorm does.
    """
    # The op is looked up per call (a cached dictionary lookup; in GRAPH_MODE once, while
    # compiling), not fixed in __init__: a cell created in PyNative may later run in a
    # graph, and the op that suits each mode differs (see ops.routing._mode_backend).
    # Written out here rather than calling functional._run_group_norm: amp O1 copies the
    # Python functions a layer calls into its rewritten network, without their helpers.
    if gamma.dtype != stat_dtype:
        gamma = ops.cast(gamma, stat_dtype)
    if beta.dtype != stat_dtype:
        beta = ops.cast(beta, stat_dtype)
    return routing.forward_op(num_groups, eps)(x, gamma, beta)[0]


_MIXED_PRECISION_DTYPES = {MixedPrecisionType.FP16: mstype.float16, MixedPrecisionType.FP32: mstype.float32,
                           MixedPrecisionType.BF16: mstype.bfloat16}
_FLOAT_DTYPES = (mstype.float16, mstype.float32, mstype.bfloat16, mstype.float64)


class PynativeMixedPrecision:
    """Applies the cell's ``to_float`` type to its floating-point inputs in PYNATIVE_MODE.

    Why: in PyNative, MindSpore applies ``to_float`` by casting the inputs of each
    *primitive* run inside the cell. The PyNative fast path (``backends.cpu_aot.PynativeForward``)
    runs a CustomOpBuilder function, not a primitive, so that cast would not happen and a
    layer forced to float32 behind a float16 layer would return float16. Graphs (GRAPH_MODE,
    ``@ms.jit``) parse ``construct`` and apply ``to_float`` themselves: ``__call__`` is not run.
    """

    def __call__(self, *args, **kwargs):
        target = _MIXED_PRECISION_DTYPES.get(self.mixed_precision_type)
        if target is not None and context._get_mode() == context.PYNATIVE_MODE:
            args = tuple(_cast_float(arg, target) for arg in args)
            if kwargs:  # layer(x=t), mint's layer(input=t): cast as the positional ones are
                kwargs = {name: _cast_float(arg, target) for name, arg in kwargs.items()}
        try:
            return super().__call__(*args, **kwargs)
        except Exception:
            # MindSpore (2.10) sets the cell's to_float type for every op run in the call and
            # resets it only when construct returns: after one of our argument errors every
            # later op of the process, anywhere, would run in float16. Reset it as the normal
            # exit does.
            if target is not None and context._get_mode() == context.PYNATIVE_MODE:
                _compat.reset_mixed_precision()
            raise


def _cast_float(arg, target):
    """``arg`` cast to ``target`` where it is a floating-point tensor of another dtype."""
    return ops.cast(arg, target) if getattr(arg, "dtype", None) in _FLOAT_DTYPES and arg.dtype != target else arg


class GroupNorm(PynativeMixedPrecision, nn.Cell):
    r"""Group Normalization over an (N, C, \*) input, computed by this project's kernels.

    Same signature, parameters (``gamma``, ``beta``), argument errors and repr as
    :class:`mindspore.nn.GroupNorm`; inputs of rank 2 to 8 in float32, float16, bfloat16 or
    float64 (CPU). With float16/bfloat16 input the statistics are float32 (also with
    float16/bfloat16 parameters); parameters may stay float32 while the input is
    float16/bfloat16, and their gradients are then float32.
    """

    def __init__(self, num_groups, num_channels, eps=1e-05, affine=True, gamma_init='ones', beta_init='zeros',
                 dtype=mstype.float32):
        super().__init__()
        _set_checked_arguments(self, num_groups, num_channels, eps, affine)
        self.gamma = Parameter(initializer(gamma_init, self.num_channels, dtype=dtype), name="gamma",
                               requires_grad=affine)
        self.beta = Parameter(initializer(beta_init, self.num_channels, dtype=dtype), name="beta",
                              requires_grad=affine)

    def construct(self, x):
        stat_dtype = _check_input(x.shape, x.dtype, self.num_channels, self.cls_name, self.gamma.shape,
                                  self.beta.shape)
        _check_channels(x, self.num_channels, self.cls_name)
        return _affine_group_norm(x, self.gamma, self.beta, self.num_groups, self.eps, stat_dtype)

    def extend_repr(self):
        return 'num_groups={}, num_channels={}'.format(self.num_groups, self.num_channels)


@constexpr(check=False)
def _runs_fused(stat_dtype):
    """Whether the fused kernel runs for statistics in ``stat_dtype`` on the current backend
    (the CPU kernels, or the AscendC ones through their CPU twins)."""
    return routing.fused_backend() is not None and stat_dtype in _FUSED_STAT_DTYPES


_FUSED_STAT_DTYPES = (mstype.float32, mstype.float16, mstype.bfloat16)  # float64 runs the unfused pair


def _affine_group_norm_silu(x, gamma, beta, num_groups, eps, stat_dtype):
    """z = silu(GroupNorm(x)) for the layers' construct; ``stat_dtype`` from _check_input.
    Parameters are cast to ``stat_dtype`` (float32 for float16/bfloat16 input), as in
    _affine_group_norm."""
    if not _runs_fused(stat_dtype):
        return ops.silu(_affine_group_norm(x, gamma, beta, num_groups, eps, stat_dtype))
    if gamma.dtype != stat_dtype:
        gamma = ops.cast(gamma, stat_dtype)
    if beta.dtype != stat_dtype:
        beta = ops.cast(beta, stat_dtype)
    return routing.silu_forward_op(num_groups, eps, 1.0)(x, gamma, beta)[0]


class GroupNormSiLU(GroupNorm):
    r"""``silu(GroupNorm(x))`` over an (N, C, \*) input, fused: the GroupNorm layer's
    arguments, parameters (``gamma``, ``beta``), checks and repr. The backward stores
    nothing full-size but x (y and sigmoid(y) are recomputed from x, mean, rstd, gamma, beta).
    """

    def construct(self, x):
        stat_dtype = _check_input(x.shape, x.dtype, self.num_channels, self.cls_name, self.gamma.shape,
                                  self.beta.shape)
        _check_channels(x, self.num_channels, self.cls_name)
        return _affine_group_norm_silu(x, self.gamma, self.beta, self.num_groups, self.eps, stat_dtype)
