"""The Ascend backends: the installed AscendC operators (``ascend_operators``) as
ms_groupnorm calls them, for both operators (GroupNorm through GroupNormGradMs and
GroupNormSiluMs with activate_silu off; the fused GroupNorm + swish through GroupNormSiluMs
with it on and GroupNormSiluGradMs). What runs where (``ops.routing`` chooses):

* GRAPH_MODE (jit_level O0/O1): Cells calling ``ops.Custom(func="<infer>.cc:aclnn<Op>",
  func_type="aot")`` with tensors then scalars in CANN's order; the C++ infers make dynamic
  shapes and ranks work. The backward Cells reorder our ``(dy, x, mean, rstd, gamma[, beta])``
  to CANN's; the forward Cells carry a bprop feeding the saved statistics to them. Without
  our GroupNormSiluMs installed, GroupNorm's forward is ``AscendForward``: MindSpore's own
  GroupNorm primitive with our backward as its bprop.
* PYNATIVE_MODE: the CustomOpBuilder(backend="Ascend") module (``ascend_pyboost``), which
  launches the operators through AclnnOpRunner; its forwards record their backward for
  autograd through the C++ Function API.

dtypes as on CPU: float32/float16/bfloat16 data; gamma/beta go to the forward operator in
float32, mean/rstd come back float32 and are returned in gamma's dtype (the forward
contracts; the layers pass float32 gamma for 16-bit input, so their statistics stay
float32); the backwards take gamma, (beta,) mean, rstd in one statistics dtype, one of the
OpDef's five (data, statistics) columns.

``$MS_GROUPNORM_BACKEND=ascend`` selects these routes on any machine (simulation only: the
tests intercept what would reach the device). The CPU twins that run the kernel source on
this machine are built by ``twin_build``.
"""
import functools
import os
import warnings
from pathlib import Path

from mindspore import dtype as mstype
from mindspore import nn, ops
from mindspore.ops.auto_generate import group_norm_op

from .._compat import compiling_graph, recording_gradient
from .ascend_chip import UnsupportedChipError, check_chip
from .ascend_jit import refuse_o2
from .ascend_operators import GROUP_NORM_GRAD_MS, GROUP_NORM_SILU_GRAD_MS, GROUP_NORM_SILU_MS, installed_header, vendor_dir
from .cann_env import check_cann_environment

# GRAPH_MODE on Ascend: MindSpore runs aclnn custom operators as kernels at jit_level O0
# (or O1); its documentation and tests of Ascend C custom ops set exactly this. O2 is
# refused however it is asked for (ascend_jit).
GRAPH_JIT_CONFIG = {"jit_level": "O0"}
COMPILER_CACHE_ENV = "MS_COMPILER_CACHE_PATH"


def reg_info(operator):
    """The CustomRegOp of an AscendC operator. Attributes carry no value: on Ascend,
    MindSpore passes scalars as call arguments after the tensors."""
    from mindspore.ops import CustomRegOp, DataType

    reg = CustomRegOp(operator.aclnn_func)  # == func: see AscendOperator.aclnn_func
    for index, name in enumerate(operator.inputs):
        reg = reg.input(index, name, "required")
    for index, name in enumerate(operator.outputs):
        reg = reg.output(index, name, "required")
    for row in operator.dtype_rows:
        reg = reg.dtype_format(*[getattr(DataType, name) for name in row])
    for name, value_type in operator.attrs:
        reg = reg.attr(name, "required", value_type)
    return reg.target("Ascend").get_op_info()


def check_graph_jit_level(operator=None):
    """Raises ``ascend_jit.GraphJitLevelError`` when a graph that would run ``operator`` is
    compiled at jit_level O2 / with the GE backend, whichever way that was asked for (see
    ``ascend_jit``). Called where the ops are created and by the op getters at every graph
    compile, so a Cell built at O0 and compiled later at O2 is refused too. ``operator``
    None: all of ours (the getters' check)."""
    import mindspore as ms

    if ms.get_context("mode") == ms.GRAPH_MODE or compiling_graph():
        refuse_o2("ms_groupnorm's AscendC operators" if operator is None else
                  f"the AscendC operator {operator.aclnn_func}")


def check_chip_before_launch(operator):
    """The chip check (``ascend_chip``) against the package that holds ``operator`` (where it
    is installed; otherwise against our list only, and the missing operator is reported later)."""
    header = installed_header(operator.op_type)
    check_chip(None if header is None else vendor_dir(header))


FALLBACK_ENV = "MS_GROUPNORM_ASCEND_FALLBACK"
FALLBACK_VALUE = "mindspore"


def fallback_to_mindspore():
    """True when ``$MS_GROUPNORM_ASCEND_FALLBACK=mindspore`` and the chip check refuses this
    chip (or the installed package): then GroupNorm runs MindSpore's own primitive, forward and
    backward (``BuiltinForward``), with one warning naming the chip. Unset: the check raises.
    Read per op request, cached per value (the chip does not change within a process)."""
    return _fallback_to_mindspore(os.environ.get(FALLBACK_ENV, ""))


@functools.lru_cache(maxsize=4)
def _fallback_to_mindspore(value):
    if value not in ("", FALLBACK_VALUE):
        raise ValueError(f"ms_groupnorm: ${FALLBACK_ENV} must be unset or {FALLBACK_VALUE!r}, got {value!r}")
    if not value:
        return False
    try:
        check_chip_before_launch(GROUP_NORM_GRAD_MS)
    except UnsupportedChipError as error:
        warnings.warn(f"{error} ${FALLBACK_ENV}={FALLBACK_VALUE}: running MindSpore's own GroupNorm (forward "
                      f"and backward) instead; the fused GroupNorm + SiLU runs as GroupNorm then SiLU, and "
                      f"group_norm_backward / group_norm_silu_backward have no kernel.", stacklevel=2)
        return True
    return False


def absolute_compiler_cache():
    """Makes $MS_COMPILER_CACHE_PATH absolute (default: ./custom_kernel_meta, made absolute).

    Why: MindSpore compiles the aclnn callback and our infer into that directory and
    remembers them by that path (custom_ops.py _get_cache_path/_compile_aot); a relative
    one stops resolving as soon as the working directory changes ("couldn't find the AOT
    binary file")."""
    path = os.environ.get(COMPILER_CACHE_ENV) or "custom_kernel_meta"
    if not os.path.isabs(path):
        os.environ[COMPILER_CACHE_ENV] = os.path.abspath(path)
    return os.environ[COMPILER_CACHE_ENV]


def backward_custom(operator=GROUP_NORM_GRAD_MS):
    """``ops.Custom`` for an installed AscendC backward operator, with its C++ infer (so
    GRAPH_MODE takes dynamic shapes and ranks). Needs CANN's environment and
    ASCEND_CUSTOM_OPP_PATH."""
    check_graph_jit_level(operator)
    check_chip_before_launch(operator)
    check_cann_environment("GRAPH_MODE on Ascend")
    absolute_compiler_cache()
    return ops.Custom(f"{operator.infer_source}:{operator.aclnn_func}", out_shape=None, out_dtype=None,
                      func_type="aot", reg_info=reg_info(operator))


def silu_backward_custom():
    """``ops.Custom`` for the installed GroupNormSiluGradMs."""
    return backward_custom(GROUP_NORM_SILU_GRAD_MS)


def ascend_forward_custom(group):
    """``ops.Custom`` for our installed GroupNormSiluMs forward, with a C++ infer compiled
    for this ``group`` (mean/rstd are (N, group); see group_norm_silu_ascend_infer.cc)."""
    operator = GROUP_NORM_SILU_MS
    check_graph_jit_level(operator)
    check_chip_before_launch(operator)
    check_cann_environment("GRAPH_MODE on Ascend")
    source = Path(absolute_compiler_cache()) / "ms_groupnorm" / f"group_norm_silu_infer_g{int(group)}.cc"
    source.parent.mkdir(parents=True, exist_ok=True)
    text = f'#define GNMS_NUM_GROUPS {int(group)}\n#include "{operator.infer_source}"\n'
    if not source.is_file() or source.read_text() != text:
        source.write_text(text)
    return ops.Custom(f"{source}:{operator.aclnn_func}", out_shape=None, out_dtype=None, func_type="aot",
                      reg_info=reg_info(operator))


def _real_params(x, gamma, beta, dtype):
    """gamma/beta as the operators take them: ones/zeros of C elements for an empty "none".
    (Also compiled inside the GRAPH_MODE forward Cells below.)"""
    channels = x.shape[1]
    gamma = ops.ones((channels,), dtype) if gamma.shape[0] == 0 else gamma.astype(dtype)
    beta = ops.zeros((channels,), dtype) if beta.shape[0] == 0 else beta.astype(dtype)
    return gamma, beta


def _real_gamma(x, gamma, dtype):
    """An empty "none" gamma becomes ones, as aclnnGroupNormBackward treats a null gamma."""
    return ops.ones((x.shape[1],), dtype) if gamma.shape[0] == 0 else gamma


# The backward Cells run inside a forward's bprop, where a second-order gradient compiles
# them too: they choose without a branch (see _or_filled).
def _real_params_unbranched(x, gamma, beta, dtype):
    return _or_filled(gamma, x.shape[1], _ONES, dtype), _or_filled(beta, x.shape[1], _ZEROS, dtype)


def _or_filled(param, channels, fill, dtype):
    """``param`` (C,) in ``dtype``, or ``fill`` (ones or zeros) for the empty "none" (0,), chosen
    without a branch: MindSpore 2.10 fails to compile a second-order gradient in GRAPH_MODE
    through a branch here, even on a constant ("The func graph is empty")."""
    return _CONCAT((param.astype(dtype), fill((channels,), dtype)))[:channels]


_ONES, _ZEROS, _CONCAT = ops.Ones(), ops.Zeros(), ops.Concat()


def _kept(grad):
    return grad


def _dropped(grad):
    """A masked-off output: the operators write all three, ours returns (0,) there."""
    return _ZEROS((0,), grad.dtype)


def _masked(outputs, mask, x_dtype, stat_dtype):
    """The operators write all three outputs; those whose mask bit is off become (0,)."""
    dx, dgamma, dbeta = outputs
    return (dx if mask[0] else ops.zeros((0,), x_dtype), dgamma if mask[1] else ops.zeros((0,), stat_dtype),
            dbeta if mask[2] else ops.zeros((0,), stat_dtype))


# ---------------------------------------------------------------- GRAPH_MODE
class _StatisticsBprop(nn.Cell):
    """A forward Cell whose bprop feeds x, the saved mean/rstd and the parameters (in the
    statistics' dtype) to ``self.backward``, and casts the parameter gradients back."""

    def bprop(self, x, gamma, beta, out, dout):
        stat_dtype = out[1].dtype
        if self.backward_takes_beta:
            dx, dgamma, dbeta = self.backward(dout[0], x, out[1], out[2], gamma.astype(stat_dtype),
                                              beta.astype(stat_dtype))
        else:
            dx, dgamma, dbeta = self.backward(dout[0], x, out[1], out[2], gamma.astype(stat_dtype))
        return dx, dgamma.astype(gamma.dtype), dbeta.astype(beta.dtype)


class AscendBackward(nn.Cell):
    """``(dy, x, mean, rstd, gamma) -> (dx, dgamma, dbeta)`` on GroupNormGradMs, like the CPU
    op: reordered to CANN's (dy, mean, rstd, x, gamma); an empty "none" gamma becomes ones;
    masked-off outputs come back as (0,) (the operator always writes full-size outputs).
    ``second_order`` (ops.double_backward) is the operator's bprop: gradients of gradients."""

    def __init__(self, group, mask, second_order, op=None):
        super().__init__()
        self.mask = tuple(bool(m) for m in mask)
        # Chosen here, not by a branch in construct (see _or_filled for why).
        self.finish_dx, self.finish_dgamma, self.finish_dbeta = (_kept if m else _dropped for m in self.mask)
        self.grad = _GradInCannOrder(op if op is not None else backward_custom(), int(group), self.mask,
                                     second_order)

    def construct(self, dy, x, mean, rstd, gamma):
        gamma = _or_filled(gamma, x.shape[1], _ONES, mean.dtype)
        dx, dgamma, dbeta = self.grad(dy, mean, rstd, x, gamma)
        return self.finish_dx(dx), self.finish_dgamma(dgamma), self.finish_dbeta(dbeta)


class AscendSiluBackward(nn.Cell):
    """``(dz, x, mean, rstd, gamma, beta) -> (dx, dgamma, dbeta)`` on GroupNormSiluGradMs,
    reordered to CANN's (dy, mean, rstd, x, gamma, beta); an empty "none" gamma/beta
    becomes ones/zeros in mean's dtype; masked-off outputs come back as (0,).
    ``second_order`` as for AscendBackward."""

    def __init__(self, group, swish_scale, mask, second_order, op=None):
        super().__init__()
        self.swish_scale = float(swish_scale)
        self.mask = tuple(bool(m) for m in mask)
        # Chosen here, not by a branch in construct (see _or_filled for why).
        self.finish_dx, self.finish_dgamma, self.finish_dbeta = (_kept if m else _dropped for m in self.mask)
        self.grad = _SiluGradInCannOrder(op if op is not None else silu_backward_custom(), int(group),
                                         self.swish_scale, self.mask, second_order)

    def construct(self, dz, x, mean, rstd, gamma, beta):
        gamma, beta = _real_params_unbranched(x, gamma, beta, mean.dtype)
        dx, dgamma, dbeta = self.grad(dz, mean, rstd, x, gamma, beta)
        return self.finish_dx(dx), self.finish_dgamma(dgamma), self.finish_dbeta(dbeta)


def backward_cell(operator, attrs, mask, second_order):
    """The GRAPH_MODE backward Cell on the AscendC ``operator`` with attributes ``attrs``
    (before the mask): one Cell per argument list, since MindSpore parses construct and bprop
    from their signatures (beta among the operator's inputs or not)."""
    if "beta" in operator.inputs:
        return AscendSiluBackward(*attrs, mask, second_order)
    return AscendBackward(*attrs, mask, second_order)


# The operator calls themselves, with their bprop. A Cell of its own without control flow:
# MindSpore 2.10 fails to compile a second-order gradient through a bprop Cell whose
# construct branches, even on constants ("The func graph is empty" for the branch).
class _GradInCannOrder(nn.Cell):
    def __init__(self, op, group, mask, second_order):
        super().__init__()
        self.op, self.group, self.mask, self.second_order = op, group, mask, second_order

    def construct(self, dy, mean, rstd, x, gamma):
        return self.op(dy, mean, rstd, x, gamma, self.group, self.mask[0], self.mask[1], self.mask[2])

    def bprop(self, dy, mean, rstd, x, gamma, out, dout):
        g_dy, g_x, g_mean, g_rstd, g_gamma = self.second_order(dy, x, mean, rstd, gamma, out, dout)
        return g_dy, g_mean, g_rstd, g_x, g_gamma


class _SiluGradInCannOrder(nn.Cell):
    def __init__(self, op, group, swish_scale, mask, second_order):
        super().__init__()
        self.op, self.group, self.swish_scale, self.mask = op, group, swish_scale, mask
        self.second_order = second_order

    def construct(self, dz, mean, rstd, x, gamma, beta):
        return self.op(dz, mean, rstd, x, gamma, beta, self.group, self.swish_scale, self.mask[0], self.mask[1],
                       self.mask[2])

    def bprop(self, dz, mean, rstd, x, gamma, beta, out, dout):
        g_dz, g_x, g_mean, g_rstd, g_gamma, g_beta = self.second_order(dz, x, mean, rstd, gamma, beta, out, dout)
        return g_dz, g_mean, g_rstd, g_x, g_gamma, g_beta


class AscendForward(_StatisticsBprop):
    """GroupNorm's forward on Ascend without our GroupNormSiluMs: MindSpore's own GroupNorm
    primitive (aclnnGroupNorm, which returns y, mean and rstd), with a bprop that feeds those
    saved statistics to our backward. gamma/beta are cast to x's dtype for the primitive,
    and their gradients back to the parameters' dtype; the empty "none" tensors stay none."""
    backward_takes_beta = False

    def __init__(self, group, eps, backward):
        super().__init__()
        self.group = int(group)
        self.eps = float(eps)
        self.backward = backward

    def construct(self, x, gamma, beta):
        weight = None if gamma.shape[0] == 0 else gamma.astype(x.dtype)
        bias = None if beta.shape[0] == 0 else beta.astype(x.dtype)
        return group_norm_op(x, self.group, weight, bias, self.eps)


class AscendOwnForward(_StatisticsBprop):
    """A forward on our GroupNormSiluMs with its attributes ``scalars`` (num_groups, eps,
    activate_silu: off for GroupNorm, on for the fused swish, swish_scale): float32 mean/rstd
    for every input dtype, with a bprop that feeds them (and beta where
    ``backward_takes_beta``: the fused backward recomputes y) to ``backward``. gamma/beta go
    to the operator in float32 (ones/zeros for an empty "none"); mean/rstd come back in
    gamma's dtype, as in ``PynativeAscendForward``."""

    def __init__(self, scalars, backward, backward_takes_beta=False, op=None):
        super().__init__()
        group, eps, activate_silu, swish_scale = scalars  # GROUP_NORM_SILU_MS.attrs, in order
        self.group = int(group)
        self.eps = float(eps)
        self.activate_silu = bool(activate_silu)
        self.swish_scale = float(swish_scale)
        self.backward_takes_beta = bool(backward_takes_beta)
        self.backward = backward
        self.op = op if op is not None else ascend_forward_custom(group)

    def construct(self, x, gamma, beta):
        weight, bias = _real_params(x, gamma, beta, mstype.float32)
        out, mean, rstd = self.op(x, weight, bias, self.group, self.eps, self.activate_silu, self.swish_scale)
        return out, mean.astype(gamma.dtype), rstd.astype(gamma.dtype)


class BuiltinForward(nn.Cell):
    """GroupNorm as MindSpore itself runs it: its GroupNorm primitive, and through autograd its
    own backward (no bprop here), for a chip our operators do not run on when the user asks
    for that (``fallback_to_mindspore``). gamma/beta in x's dtype; an empty "none" stays none."""

    def __init__(self, group, eps):
        super().__init__()
        self.group = int(group)
        self.eps = float(eps)

    def construct(self, x, gamma, beta):
        weight = None if gamma.shape[0] == 0 else gamma.astype(x.dtype)
        bias = None if beta.shape[0] == 0 else beta.astype(x.dtype)
        return group_norm_op(x, self.group, weight, bias, self.eps)


# ---------------------------------------------------------------- PYNATIVE_MODE
class PynativeAscendBackward:
    """``(dy, x, mean, rstd, gamma[, beta]) -> (dx, dgamma, dbeta)`` in PYNATIVE_MODE on
    Ascend: the Ascend module's ``group_norm_grad`` or ``group_norm_silu_grad`` (``function``;
    the module reorders to CANN's order) with the attributes ``attrs`` (group[, swish_scale])
    and the mask. "none" gamma/beta become ones/zeros in mean's dtype; masked-off outputs (0,).

    While autograd records (a gradient of this gradient: the public backward functions, or
    an autograd node's Backward run under an outer gradient), the call goes through a Cell
    whose bprop is ``second_order`` (ops.double_backward): the module's function records
    nothing, and that gradient would silently be zero."""

    def __init__(self, function, attrs, mask, second_order):
        self.grad = function
        self.mask = tuple(bool(m) for m in mask)
        self.scalars = tuple(attrs) + self.mask
        recorded = _RecordedFusedBackward if len(attrs) == 2 else _RecordedBackward
        self.recorded = recorded(self.run, second_order)

    def __call__(self, dy, x, mean, rstd, gamma, beta=None):
        inputs = (dy, x, mean, rstd, gamma) if beta is None else (dy, x, mean, rstd, gamma, beta)
        return self.recorded(*inputs) if recording_gradient() else self.run(*inputs)

    def run(self, dy, x, mean, rstd, gamma, beta=None):
        if beta is None:
            params = (_real_gamma(x, gamma, mean.dtype),)
        else:
            params = _real_params(x, gamma, beta, mean.dtype)
        outputs = self.grad(dy, x, mean, rstd, *params, *self.scalars)
        return _masked(outputs, self.mask, x.dtype, mean.dtype)


class _RecordedBackward(nn.Cell):
    """A PyNative backward call that autograd records with ``second_order`` as its bprop
    (one Cell per arity: a bprop takes the construct's inputs, then out and dout)."""

    def __init__(self, run, second_order):
        super().__init__()
        self.run, self.second_order = run, second_order

    def construct(self, dy, x, mean, rstd, gamma):
        return self.run(dy, x, mean, rstd, gamma)

    def bprop(self, dy, x, mean, rstd, gamma, out, dout):
        return self.second_order(dy, x, mean, rstd, gamma, out, dout)


class _RecordedFusedBackward(_RecordedBackward):
    def construct(self, dz, x, mean, rstd, gamma, beta):  # pylint: disable=arguments-differ
        return self.run(dz, x, mean, rstd, gamma, beta)

    def bprop(self, dz, x, mean, rstd, gamma, beta, out, dout):  # pylint: disable=arguments-differ
        return self.second_order(dz, x, mean, rstd, gamma, beta, out, dout)


class PynativeAscendForward:
    """``(x, gamma, beta) -> (out, mean, rstd)`` in PYNATIVE_MODE on Ascend through our
    GroupNormSiluMs: the module's ``plain`` function, or while autograd records its
    ``autograd`` one (C++ Function API, backward GroupNormGradMs or GroupNormSiluGradMs),
    with the attributes ``attrs`` (group, eps[, swish_scale]). Statistics computed, saved
    and used in float32 for every input dtype, as on CPU.

    gamma/beta go to the operator in float32 (a pair the OpDef has for every x dtype, and
    the statistics dtype the backward needs); an empty "none" one becomes ones/zeros and
    gets no gradient. mean/rstd come back in gamma's dtype (the forward contracts); the
    layers pass float32 gamma, so they stay float32 there."""

    def __init__(self, plain, autograd, attrs, mask):
        self.forward = plain
        self.autograd = autograd
        self.attrs = tuple(attrs)
        self.mask = tuple(bool(m) for m in mask)

    def __call__(self, x, gamma, beta):
        stat_dtype = gamma.dtype
        gamma_grad, beta_grad = self.mask[1] and gamma.shape[0] != 0, self.mask[2] and beta.shape[0] != 0
        gamma, beta = _real_params(x, gamma, beta, mstype.float32)
        if recording_gradient():
            y, mean, rstd = self.autograd(x, gamma, beta, *self.attrs, gamma_grad, beta_grad)
        else:
            y, mean, rstd = self.forward(x, gamma, beta, *self.attrs)
        if stat_dtype != mstype.float32:
            mean, rstd = ops.cast(mean, stat_dtype), ops.cast(rstd, stat_dtype)
        return y, mean, rstd
