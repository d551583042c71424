"""The AscendC GroupNormGradMs operator as ms_groupnorm registers it on Ascend.

``ASCEND_OP`` describes the operator as kernels/ascendc/op_host defines it (type name,
inputs, outputs, attributes, in CANN's order); ``ascend_reg_info`` turns it into the
CustomRegOp and ``AscendBackward`` is the Cell that ``_ops.backward_op`` uses when the
device target is Ascend. It takes our backward interface (dy, x, mean, rstd, gamma) and
calls the operator in CANN's order (dy, mean, rstd, x, gamma). ``AscendForward`` is the
forward Cell on Ascend (MindSpore's GroupNorm primitive with our backward as its bprop).

The CPU twin that runs the same kernel source on this machine is ``ascendc_twin``.
"""
from dataclasses import dataclass
OP_TYPE = "GroupNormGradMs"
# The ``func`` of ops.Custom and the CustomRegOp name: MindSpore requires them to be the
# same (docs op_custom_ascendc.md, "Precautions: Name Consistency"; its aclnn tests use
# CustomRegOp("aclnnAddCustom") with func="aclnnAddCustom"). MindSpore strips "aclnn" to
# find the installed op type GroupNormGradMs and its aclnn_group_norm_grad_ms.h.
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

# (data dtype, statistics dtype) pairs of the OpDef, as MindSpore DataType names.
ASCEND_DTYPE_PAIRS = (("F32_Default", "F32_Default"), ("F16_Default", "F16_Default"),
                      ("BF16_Default", "BF16_Default"), ("F16_Default", "F32_Default"),
                      ("BF16_Default", "F32_Default"))


def ascend_reg_info():
    """The CustomRegOp of the Ascend operator. Attributes carry no value: on Ascend,
    MindSpore passes scalars as call arguments after the tensors."""
    from mindspore.ops import CustomRegOp, DataType

    reg = CustomRegOp(ACLNN_FUNC)  # == func: see ACLNN_FUNC
    for index, name in enumerate(ASCEND_OP.inputs):
        reg = reg.input(index, name, "required")
    for index, name in enumerate(ASCEND_OP.outputs):
        reg = reg.output(index, name, "required")
    for data, stat in ASCEND_DTYPE_PAIRS:
        # dy, mean, rstd, x, gamma | dx, dgamma, dbeta
        row = [data, stat, stat, data, stat, data, stat, stat]
        reg = reg.dtype_format(*[getattr(DataType, name) for name in row])
    for name, value_type in ASCEND_OP.attrs:
        reg = reg.attr(name, "required", value_type)
    return reg.target("Ascend").get_op_info()


def check_graph_jit_level():
    """Raises when GRAPH_MODE is set with jit_level O2, where the operator cannot run."""
    import mindspore as ms

    level = (ms.get_context("jit_config") or {}).get("jit_level", "")
    if ms.get_context("mode") == ms.GRAPH_MODE and level == "O2":
        raise RuntimeError(
            f"ms_groupnorm: the AscendC operator {ACLNN_FUNC} needs jit_level O0 or O1 in GRAPH_MODE (it takes "
            f"num_groups and the output mask as scalar arguments, which O2 does not pass to aclnn custom "
            f"operators); call ms.set_context(jit_config={GRAPH_JIT_CONFIG!r}) or use PYNATIVE_MODE.")


def ascend_backward_custom():
    """``ops.Custom`` for the installed AscendC operator (needs CANN and ASCEND_CUSTOM_OPP_PATH)."""
    from mindspore import ops

    check_graph_jit_level()

    def out_shape(dy, mean, rstd, x, gamma, *attrs):
        return x, gamma, gamma

    def out_dtype(dy, mean, rstd, x, gamma, *attrs):
        return x, gamma, gamma

    return ops.Custom(ACLNN_FUNC, out_shape=out_shape, out_dtype=out_dtype, func_type="aot",
                      reg_info=ascend_reg_info())


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
