"""The fused GroupNorm + swish (SiLU for swish_scale = 1) on Ascend: our two AscendC operators.

* forward: GroupNormSiluMs with activate_silu=True: z = y * sigmoid(swish_scale * y),
  y = gamma * xhat + beta, with float32 mean/rstd for every input dtype;
* backward: GroupNormSiluGradMs (kernels/ascendc/op_host/group_norm_silu_grad_ms.cpp),
  (dy, mean, rstd, x, gamma, beta; num_groups, swish_scale, dx/dgamma/dbeta_is_require)
  -> (dx, dgamma, dbeta), recomputing y and sigmoid from x, mean, rstd, gamma, beta: the
  forward keeps nothing full-size for the backward but x.

What runs where (``_silu_ops`` dispatches here):

* GRAPH_MODE (jit_level O0/O1): ``AscendSiluForward``, a Cell calling
  ``ops.Custom("<infer>.cc:aclnnGroupNormSiluMs")`` (``ascend.ascend_forward_custom``, the
  C++ infer compiled per num_groups) with ``AscendSiluBackward`` as its bprop, which calls
  ``ops.Custom("<group_norm_ascend_infer.cc>:aclnnGroupNormSiluGradMs")``; tensors then
  scalars in CANN's order; the C++ infers take dynamic shapes and ranks.
* PYNATIVE_MODE: the Ascend CustomOpBuilder module (``_ascend_pyboost``):
  ``group_norm_silu`` / ``group_norm_silu_autograd`` (C++ Function API, backward
  GroupNormSiluGradMs) and ``group_norm_silu_grad``.

Only when both operators are installed (``installed()``); otherwise
``_silu_ops.fused_backend()`` is None on Ascend and the callers run the unfused pair as
before the fused operators existed: ``group_norm_silu``/``GroupNormSiLU`` GroupNorm then
``ops.silu``, ``group_norm_silu_forward`` GroupNorm then swish, and
``group_norm_silu_backward`` raises NotImplementedError with ``NOT_INSTALLED``.

dtypes as on CPU: float32/float16/bfloat16 data; gamma/beta go to the forward operator in
float32, mean/rstd come back float32 and are returned in gamma's dtype (the
group_norm_silu_forward contract; the layers pass float32 gamma for 16-bit input, so their
statistics stay float32); the backward takes gamma, beta, mean, rstd in one statistics
dtype, one of the OpDef's five (data, statistics) columns.
"""
import functools
import os

from mindspore import dtype as mstype
from mindspore import nn, ops

from . import _ascend_pyboost, _ops, ascend
from ._cann_env import check_cann_environment

OP_TYPE = "GroupNormSiluGradMs"
ACLNN_FUNC = "aclnn" + OP_TYPE
# Backends of _silu_ops that run here: GRAPH_MODE ("ascend") and PYNATIVE_MODE.
BACKENDS = ("ascend", _ops.ASCEND_PYBOOST_BACKEND)

SILU_GRAD_OP = ascend.OpDescription(
    op_type=OP_TYPE,
    inputs=("dy", "mean", "rstd", "x", "gamma", "beta"),
    outputs=("dx", "dgamma", "dbeta"),
    attrs=(("num_groups", "int"), ("swish_scale", "float"), ("dx_is_require", "bool"),
           ("dgamma_is_require", "bool"), ("dbeta_is_require", "bool")),
)

NOT_INSTALLED = (
    "ms_groupnorm: on Ascend the fused GroupNorm + SiLU needs the AscendC operators GroupNormSiluMs and "
    "GroupNormSiluGradMs installed where $ASCEND_CUSTOM_OPP_PATH points (run `bash kernels/ascendc/build.sh` "
    "and export the ASCEND_CUSTOM_OPP_PATH it prints); without them group_norm_silu, GroupNormSiLU and "
    "group_norm_silu_forward run GroupNorm then SiLU, and group_norm_silu_backward has no kernel")


def installed():
    """True when GroupNormSiluMs and GroupNormSiluGradMs are both installed. Read once per
    process and $ASCEND_CUSTOM_OPP_PATH value: it is asked on every call of the fused
    functions, and the operators are installed before MindSpore starts."""
    return _installed(os.environ.get("ASCEND_CUSTOM_OPP_PATH", ""))


@functools.lru_cache(maxsize=8)
def _installed(_custom_opp_path):
    return _ascend_pyboost.silu_installed()


def silu_grad_reg_info():
    """The CustomRegOp of GroupNormSiluGradMs."""
    # dy, mean, rstd, x, gamma, beta | dx, dgamma, dbeta
    return ascend._reg_info(SILU_GRAD_OP, [[data, stat, stat, data, stat, stat, data, stat, stat]
                                           for data, stat in ascend.ASCEND_DTYPE_PAIRS])


def silu_backward_custom():
    """``ops.Custom`` for the installed GroupNormSiluGradMs, with the C++ infer of
    GroupNormGradMs (same outputs, same positions of x and gamma)."""
    ascend.check_graph_jit_level()
    check_cann_environment("GRAPH_MODE on Ascend")
    ascend.absolute_compiler_cache()
    return ops.Custom(f"{ascend.INFER_SOURCE}:{ACLNN_FUNC}", out_shape=None, out_dtype=None, func_type="aot",
                      reg_info=silu_grad_reg_info())


def _real_params(x, gamma, beta, dtype):
    """gamma/beta as the operators take them: ones/zeros of C elements for an empty "none".
    (Also compiled inside the GRAPH_MODE Cells below.)"""
    channels = x.shape[1]
    gamma = ops.ones((channels,), dtype) if gamma.shape[0] == 0 else gamma.astype(dtype)
    beta = ops.zeros((channels,), dtype) if beta.shape[0] == 0 else beta.astype(dtype)
    return gamma, beta


def _masked(outputs, mask, x_dtype, stat_dtype):
    """The operator writes all three outputs; those whose mask bit is off become (0,)."""
    dx, dgamma, dbeta = outputs
    return (dx if mask[0] else ops.zeros((0,), x_dtype), dgamma if mask[1] else ops.zeros((0,), stat_dtype),
            dbeta if mask[2] else ops.zeros((0,), stat_dtype))


# ---------------------------------------------------------------- GRAPH_MODE
class AscendSiluBackward(nn.Cell):
    """``(dz, x, mean, rstd, gamma, beta) -> (dx, dgamma, dbeta)`` on GroupNormSiluGradMs,
    reordered to CANN's (dy, mean, rstd, x, gamma, beta); an empty "none" gamma/beta
    becomes ones/zeros in mean's dtype; masked-off outputs come back as (0,)."""

    def __init__(self, group, swish_scale, mask, op=None):
        super().__init__()
        self.group = int(group)
        self.swish_scale = float(swish_scale)
        self.mask = tuple(bool(m) for m in mask)
        self.op = op if op is not None else silu_backward_custom()

    def construct(self, dz, x, mean, rstd, gamma, beta):
        gamma, beta = _real_params(x, gamma, beta, mean.dtype)
        outputs = self.op(dz, mean, rstd, x, gamma, beta, self.group, self.swish_scale, self.mask[0],
                          self.mask[1], self.mask[2])
        return _masked(outputs, self.mask, x.dtype, mean.dtype)


class AscendSiluForward(nn.Cell):
    """``(x, gamma, beta) -> (z, mean, rstd)`` on GroupNormSiluMs with SiLU on, with a
    bprop feeding x, the saved mean/rstd, gamma and beta to ``backward`` (which
    recomputes y and sigmoid). gamma/beta go to the operator in float32; mean/rstd come
    back in gamma's dtype, as ascend.AscendOwnForward does."""

    def __init__(self, group, eps, swish_scale, backward, op=None):
        super().__init__()
        self.group = int(group)
        self.eps = float(eps)
        self.swish_scale = float(swish_scale)
        self.backward = backward
        self.op = op if op is not None else ascend.ascend_forward_custom(group)

    def construct(self, x, gamma, beta):
        weight, bias = _real_params(x, gamma, beta, mstype.float32)
        z, mean, rstd = self.op(x, weight, bias, self.group, self.eps, True, self.swish_scale)
        return z, mean.astype(gamma.dtype), rstd.astype(gamma.dtype)

    def bprop(self, x, gamma, beta, out, dout):
        stat_dtype = out[1].dtype
        dx, dgamma, dbeta = self.backward(dout[0], x, out[1], out[2], gamma.astype(stat_dtype),
                                          beta.astype(stat_dtype))
        return dx, dgamma.astype(gamma.dtype), dbeta.astype(beta.dtype)


# ---------------------------------------------------------------- PYNATIVE_MODE
class PynativeAscendSiluBackward:
    """``(dz, x, mean, rstd, gamma, beta) -> (dx, dgamma, dbeta)`` through the Ascend module's
    ``group_norm_silu_grad`` (which reorders to CANN's order); "none" gamma/beta become
    ones/zeros; masked-off outputs (0,)."""

    def __init__(self, group, swish_scale, mask, module):
        self.group = int(group)
        self.swish_scale = float(swish_scale)
        self.mask = tuple(bool(m) for m in mask)
        self.grad = module.group_norm_silu_grad

    def __call__(self, dz, x, mean, rstd, gamma, beta):
        gamma, beta = _real_params(x, gamma, beta, mean.dtype)
        outputs = self.grad(dz, x, mean, rstd, gamma, beta, self.group, self.swish_scale, *self.mask)
        return _masked(outputs, self.mask, x.dtype, mean.dtype)


class PynativeAscendSiluForward(ascend.PynativeAscendForward):
    """``(x, gamma, beta) -> (z, mean, rstd)`` through the module's ``group_norm_silu``, or
    while autograd records its ``group_norm_silu_autograd`` (backward GroupNormSiluGradMs);
    the parameter and statistics handling of ascend.PynativeAscendForward (float32 to the
    operator, mean/rstd returned in gamma's dtype, no gradient for a "none" gamma/beta)."""

    def __init__(self, group, eps, swish_scale, mask, module):
        super().__init__(group, eps, mask, module)
        self.swish_scale = swish_scale = float(swish_scale)
        silu, silu_autograd = module.group_norm_silu, module.group_norm_silu_autograd
        self.forward = lambda x, gamma, beta, group, eps: silu(x, gamma, beta, group, eps, swish_scale)
        self.autograd = lambda x, gamma, beta, group, eps, gamma_grad, beta_grad: silu_autograd(
            x, gamma, beta, group, eps, swish_scale, gamma_grad, beta_grad)


# ---------------------------------------------------------------- the ops _silu_ops hands out
@functools.lru_cache(maxsize=None)
def backward(group, swish_scale, mask, backend):
    """The fused backward for ``backend`` (one of BACKENDS), called as
    ``(dz, x, mean, rstd, gamma, beta)``."""
    if backend == _ops.ASCEND_PYBOOST_BACKEND:
        return PynativeAscendSiluBackward(group, swish_scale, mask, _ascend_pyboost.module())
    return AscendSiluBackward(group, swish_scale, mask)


@functools.lru_cache(maxsize=None)
def forward(group, eps, swish_scale, mask, backend):
    """The fused forward for ``backend``, called as ``(x, gamma, beta)`` -> (z, mean, rstd)."""
    if backend == _ops.ASCEND_PYBOOST_BACKEND:
        return PynativeAscendSiluForward(group, eps, swish_scale, mask, _ascend_pyboost.module())
    return AscendSiluForward(group, eps, swish_scale, backward(group, swish_scale, mask, backend))
