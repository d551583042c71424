"""The AscendC operators as ms_groupnorm calls them on Ascend.

``ASCEND_OP`` (GroupNormGradMs) and ``ASCEND_FORWARD_OP`` (GroupNormSiluMs) describe the
operators as kernels/ascendc/op_host defines them (type name, inputs, outputs, attributes,
in CANN's order). What runs where:

* GRAPH_MODE (jit_level O0/O1): ``AscendBackward``, a Cell calling
  ``ops.Custom(func="<group_norm_ascend_infer.cc>:aclnnGroupNormGradMs", func_type="aot")``
  with tensors then scalars in CANN's order; the C++ infer makes dynamic shapes and
  ranks work. The forward is ``AscendForward``: MindSpore's GroupNorm primitive with our
  backward as its bprop.
* PYNATIVE_MODE: the CustomOpBuilder(backend="Ascend") module (``_ascend_pyboost``), which
  launches the operators through AclnnOpRunner: ``PynativeAscendBackward`` for the
  backward; for the forward ``PynativeAscendForward`` (our GroupNormSiluMs, float32
  statistics, autograd through the C++ Function API) when that operator is installed,
  else ``AscendForward`` with the module's backward as its bprop.

``$MS_GROUPNORM_BACKEND=ascend`` selects these routes on any machine (simulation only: the
tests intercept what would reach the device). The CPU twin that runs the kernel source
on this machine is ``ascendc_twin``.
"""
import os
from dataclasses import dataclass
from pathlib import Path

from ._cann_env import check_cann_environment

OP_TYPE = "GroupNormGradMs"
# The ``func`` of ops.Custom and the CustomRegOp name: MindSpore requires them to be the
# same (docs op_custom_ascendc.md, "Precautions: Name Consistency"; its aclnn tests use
# CustomRegOp("aclnnAddCustom") with func="aclnnAddCustom"). The C++ infer hooks are
# looked up as "<func name>InferShape"/"InferType" with this exact name.
ACLNN_FUNC = "aclnn" + OP_TYPE

# GRAPH_MODE on Ascend: MindSpore runs aclnn custom operators as kernels at jit_level O0
# (or O1); its documentation and tests of Ascend C custom ops set exactly this. At O2
# (whole-graph sink) the custom op would have to take only tensors, and ours passes
# num_groups and the output mask as scalar arguments.
GRAPH_JIT_CONFIG = {"jit_level": "O0"}


@dataclass(frozen=True)
class OpDescription:
    """Names and order of the operator's parameters (must match op_host's OpDef)."""
    op_type: str
    inputs: tuple
    outputs: tuple
    attrs: tuple  # (name, value type)


ASCEND_OP = OpDescription(
    op_type=OP_TYPE,
    inputs=("dy", "mean", "rstd", "x", "gamma"),
    outputs=("dx", "dgamma", "dbeta"),
    attrs=(("num_groups", "int"), ("dx_is_require", "bool"), ("dgamma_is_require", "bool"),
           ("dbeta_is_require", "bool")),
)

# Our AscendC forward (kernels/ascendc/op_host/group_norm_silu_ms.cpp), used with
# activate_silu=False as plain GroupNorm: y in x's dtype, mean/rstd float32 (N, G).
# gamma/beta are required inputs (the caller passes ones/zeros for "none").
FORWARD_OP_TYPE = "GroupNormSiluMs"
ASCEND_FORWARD_OP = OpDescription(
    op_type=FORWARD_OP_TYPE,
    inputs=("x", "gamma", "beta"),
    outputs=("y", "mean", "rstd"),
    attrs=(("num_groups", "int"), ("eps", "float"), ("activate_silu", "bool"), ("swish_scale", "float")),
)

# The C++ infers for GRAPH_MODE (compiled by MindSpore's _compile_aot).
INFER_SOURCE = Path(__file__).resolve().parent / "_native" / "group_norm_ascend_infer.cc"
FORWARD_INFER_SOURCE = Path(__file__).resolve().parent / "_native" / "group_norm_silu_ascend_infer.cc"

# (data dtype, statistics dtype) pairs of the OpDef, as MindSpore DataType names.
ASCEND_DTYPE_PAIRS = (("F32_Default", "F32_Default"), ("F16_Default", "F16_Default"),
                      ("BF16_Default", "BF16_Default"), ("F16_Default", "F32_Default"),
                      ("BF16_Default", "F32_Default"))


# Forward: (x, gamma/beta) pairs; mean/rstd always float32.
FORWARD_DTYPE_PAIRS = (("F32_Default", "F32_Default"), ("F16_Default", "F16_Default"),
                       ("BF16_Default", "BF16_Default"), ("F16_Default", "F32_Default"),
                       ("BF16_Default", "F32_Default"))


def _reg_info(description, rows):
    """The CustomRegOp of an operator description. Attributes carry no value: on Ascend,
    MindSpore passes scalars as call arguments after the tensors."""
    from mindspore.ops import CustomRegOp, DataType

    reg = CustomRegOp("aclnn" + description.op_type)  # == func: see ACLNN_FUNC
    for index, name in enumerate(description.inputs):
        reg = reg.input(index, name, "required")
    for index, name in enumerate(description.outputs):
        reg = reg.output(index, name, "required")
    for row in rows:
        reg = reg.dtype_format(*[getattr(DataType, name) for name in row])
    for name, value_type in description.attrs:
        reg = reg.attr(name, "required", value_type)
    return reg.target("Ascend").get_op_info()


def ascend_reg_info():
    """The CustomRegOp of GroupNormGradMs."""
    # dy, mean, rstd, x, gamma | dx, dgamma, dbeta
    return _reg_info(ASCEND_OP, [[data, stat, stat, data, stat, data, stat, stat]
                                 for data, stat in ASCEND_DTYPE_PAIRS])


def ascend_forward_reg_info():
    """The CustomRegOp of GroupNormSiluMs."""
    # x, gamma, beta | y, mean, rstd
    return _reg_info(ASCEND_FORWARD_OP, [[data, param, param, data, "F32_Default", "F32_Default"]
                                         for data, param in FORWARD_DTYPE_PAIRS])


def check_graph_jit_level():
    """Raises when GRAPH_MODE is set with jit_level O2, where the operator cannot run."""
    import mindspore as ms

    level = (ms.get_context("jit_config") or {}).get("jit_level", "")
    if ms.get_context("mode") == ms.GRAPH_MODE and level == "O2":
        raise RuntimeError(
            f"ms_groupnorm: the AscendC operator {ACLNN_FUNC} needs jit_level O0 or O1 in GRAPH_MODE (it takes "
            f"num_groups and the output mask as scalar arguments, which O2 does not pass to aclnn custom "
            f"operators); call ms.set_context(jit_config={GRAPH_JIT_CONFIG!r}) or use PYNATIVE_MODE.")


COMPILER_CACHE_ENV = "MS_COMPILER_CACHE_PATH"


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


def ascend_backward_custom():
    """``ops.Custom`` for the installed AscendC operator, with the C++ infer (so GRAPH_MODE
    takes dynamic shapes and ranks). Needs CANN's environment and ASCEND_CUSTOM_OPP_PATH."""
    from mindspore import ops

    check_graph_jit_level()
    check_cann_environment("GRAPH_MODE on Ascend")
    absolute_compiler_cache()
    return ops.Custom(f"{INFER_SOURCE}:{ACLNN_FUNC}", out_shape=None, out_dtype=None, func_type="aot",
                      reg_info=ascend_reg_info())


def ascend_forward_custom(group):
    """``ops.Custom`` for our installed GroupNormSiluMs forward, with a C++ infer compiled
    for this ``group`` (mean/rstd are (N, group); see group_norm_silu_ascend_infer.cc)."""
    from mindspore import ops

    check_graph_jit_level()
    check_cann_environment("GRAPH_MODE on Ascend")
    source = Path(absolute_compiler_cache()) / "ms_groupnorm" / f"group_norm_silu_infer_g{int(group)}.cc"
    source.parent.mkdir(parents=True, exist_ok=True)
    text = f'#define GNMS_NUM_GROUPS {int(group)}\n#include "{FORWARD_INFER_SOURCE}"\n'
    if not source.is_file() or source.read_text() != text:
        source.write_text(text)
    return ops.Custom(f"{source}:aclnn{FORWARD_OP_TYPE}", out_shape=None, out_dtype=None, func_type="aot",
                      reg_info=ascend_forward_reg_info())


def _backward_cell_class():
    from mindspore import nn, ops

    class AscendBackward(nn.Cell):
        """Our backward interface on top of the Ascend operator.

        Called as ``(dy, x, mean, rstd, gamma) -> (dx, dgamma, dbeta)`` like the CPU op: it
        reorders to CANN's (dy, mean, rstd, x, gamma), replaces the empty "none" gamma by
        ones (as aclnnGroupNormBackward does for a null gamma) and returns (0,) tensors for
        the outputs whose mask bit is off (the operator always writes full-size outputs).
        """

        def __init__(self, group, mask, op=None):
            super().__init__()
            self.group = int(group)
            self.mask = tuple(bool(m) for m in mask)
            self.op = op if op is not None else ascend_backward_custom()

        def construct(self, dy, x, mean, rstd, gamma):
            if gamma.shape[0] == 0:
                gamma = ops.ones((x.shape[1],), mean.dtype)
            dx, dgamma, dbeta = self.op(dy, mean, rstd, x, gamma, self.group, self.mask[0], self.mask[1],
                                        self.mask[2])
            empty_x = ops.zeros((0,), x.dtype)
            empty_stat = ops.zeros((0,), mean.dtype)
            return (dx if self.mask[0] else empty_x, dgamma if self.mask[1] else empty_stat,
                    dbeta if self.mask[2] else empty_stat)

    return AscendBackward


def AscendBackward(group, mask, op=None):  # noqa: N802 (a Cell factory; MindSpore is imported lazily)
    return _backward_cell_class()(group, mask, op)


def _forward_cell_class():
    from mindspore import nn
    from mindspore.ops.auto_generate import group_norm_op

    class AscendForward(nn.Cell):
        """The forward on Ascend: MindSpore's own GroupNorm primitive (aclnnGroupNorm, which
        returns y, mean and rstd), with a bprop that feeds those saved statistics to our
        backward (the AscendC operator). Our CPU forward kernel cannot run there.

        gamma/beta are cast to x's dtype for the primitive, and their gradients back to
        the parameters' dtype; the empty "none" tensors stay none.
        """

        def __init__(self, group, eps, backward):
            super().__init__()
            self.group = int(group)
            self.eps = float(eps)
            self.backward = backward

        def construct(self, x, gamma, beta):
            weight = None if gamma.shape[0] == 0 else gamma.astype(x.dtype)
            bias = None if beta.shape[0] == 0 else beta.astype(x.dtype)
            return group_norm_op(x, self.group, weight, bias, self.eps)

        def bprop(self, x, gamma, beta, out, dout):
            dx, dgamma, dbeta = self.backward(dout[0], x, out[1], out[2], gamma.astype(out[1].dtype))
            return dx, dgamma.astype(gamma.dtype), dbeta.astype(beta.dtype)

    return AscendForward


def AscendForward(group, eps, backward):  # noqa: N802 (a Cell factory; MindSpore is imported lazily)
    return _forward_cell_class()(group, eps, backward)


def _own_forward_cell_class():
    from mindspore import dtype as mstype
    from mindspore import nn, ops

    class AscendOwnForward(nn.Cell):
        """The GRAPH_MODE forward when our GroupNormSiluMs is installed: float32 mean/rstd
        for every input dtype (the mixed kernels then run in the backward), with a bprop
        that feeds them to our backward. gamma/beta go to the operator in float32 (ones/
        zeros for an empty "none"); mean/rstd come back in gamma's dtype, as in
        ``PynativeAscendForward``."""

        def __init__(self, group, eps, backward, op=None):
            super().__init__()
            self.group = int(group)
            self.eps = float(eps)
            self.backward = backward
            self.op = op if op is not None else ascend_forward_custom(group)

        def construct(self, x, gamma, beta):
            channels = x.shape[1]
            weight = ops.ones((channels,), mstype.float32) if gamma.shape[0] == 0 else gamma.astype(mstype.float32)
            bias = ops.zeros((channels,), mstype.float32) if beta.shape[0] == 0 else beta.astype(mstype.float32)
            y, mean, rstd = self.op(x, weight, bias, self.group, self.eps, False, 1.0)
            return y, mean.astype(gamma.dtype), rstd.astype(gamma.dtype)

        def bprop(self, x, gamma, beta, out, dout):
            dx, dgamma, dbeta = self.backward(dout[0], x, out[1], out[2], gamma.astype(out[1].dtype))
            return dx, dgamma.astype(gamma.dtype), dbeta.astype(beta.dtype)

    return AscendOwnForward


def AscendOwnForward(group, eps, backward, op=None):  # noqa: N802 (a Cell factory, as above)
    return _own_forward_cell_class()(group, eps, backward, op)


# ---------------------------------------------------------------- PYNATIVE_MODE
def _masked(outputs, mask, x_dtype, stat_dtype):
    """The operator writes all three outputs; those whose mask bit is off become (0,)."""
    from mindspore import ops

    dx, dgamma, dbeta = outputs
    return (dx if mask[0] else ops.zeros((0,), x_dtype), dgamma if mask[1] else ops.zeros((0,), stat_dtype),
            dbeta if mask[2] else ops.zeros((0,), stat_dtype))


class PynativeAscendBackward:
    """``(dy, x, mean, rstd, gamma) -> (dx, dgamma, dbeta)`` in PYNATIVE_MODE on Ascend:
    the Ascend module's ``group_norm_grad`` (AclnnOpRunner; it reorders to CANN's order).
    An empty "none" gamma becomes ones, as aclnnGroupNormBackward treats a null gamma."""

    def __init__(self, group, mask, module):
        self.group = int(group)
        self.mask = tuple(bool(m) for m in mask)
        self.grad = module.group_norm_grad

    def __call__(self, dy, x, mean, rstd, gamma):
        from mindspore import ops

        if gamma.shape[0] == 0:
            gamma = ops.ones((x.shape[1],), mean.dtype)
        outputs = self.grad(dy, x, mean, rstd, gamma, self.group, *self.mask)
        return _masked(outputs, self.mask, x.dtype, mean.dtype)


class PynativeAscendForward:
    """``(x, gamma, beta) -> (y, mean, rstd)`` in PYNATIVE_MODE on Ascend through our
    GroupNormSiluMs operator (activate_silu off): statistics computed, saved and used in
    float32 for every input dtype, as on CPU. While autograd records, the module's
    ``group_norm_autograd`` (C++ Function API, backward GroupNormGradMs); otherwise its
    plain ``group_norm``.

    gamma/beta go to the operator in float32 (a pair the OpDef has for every x dtype, and
    the statistics dtype the backward needs); an empty "none" one becomes ones/zeros and
    gets no gradient. mean/rstd come back in gamma's dtype (the group_norm_forward
    contract); the layer passes float32 gamma, so they stay float32 there."""

    def __init__(self, group, eps, mask, module):
        self.group = int(group)
        self.eps = float(eps)
        self.mask = tuple(bool(m) for m in mask)
        self.forward = module.group_norm
        self.autograd = module.group_norm_autograd

    def __call__(self, x, gamma, beta):
        from mindspore import ops
        from mindspore import dtype as mstype

        from ._ops import recording_gradient

        stat_dtype = gamma.dtype
        channels = x.shape[1]
        gamma_grad, beta_grad = self.mask[1] and gamma.shape[0] != 0, self.mask[2] and beta.shape[0] != 0
        gamma = ops.cast(gamma, mstype.float32) if gamma.shape[0] else ops.ones((channels,), mstype.float32)
        beta = ops.cast(beta, mstype.float32) if beta.shape[0] else ops.zeros((channels,), mstype.float32)
        if recording_gradient():
            y, mean, rstd = self.autograd(x, gamma, beta, self.group, self.eps, gamma_grad, beta_grad)
        else:
            y, mean, rstd = self.forward(x, gamma, beta, self.group, self.eps)
        if stat_dtype != mstype.float32:
            mean, rstd = ops.cast(mean, stat_dtype), ops.cast(rstd, stat_dtype)
        return y, mean, rstd
