"""``GroupNormSiLU`` layers: ``silu(GroupNorm(x))`` in one fused kernel, forward and backward.

``ms_groupnorm.GroupNormSiLU`` has ``GroupNorm``'s (that is ``mindspore.nn.GroupNorm``'s)
signature, checks, parameters (``gamma``, ``beta``) and repr; ``ms_groupnorm.mint.GroupNormSiLU``
those of ``ms_groupnorm.mint.GroupNorm`` (``weight``, ``bias``). Both subclass the GroupNorm
layers and only replace ``construct``, so argument checks, mixed precision and repr are
theirs. float64 input, and MindSpore on Ascend without our fused GroupNormSiluMs/
GroupNormSiluGradMs operators installed, run the unfused pair (see ms_groupnorm.silu).
"""
from mindspore import dtype as mstype
from mindspore import ops
from mindspore.ops.primitive import constexpr

# absolute: MindSpore amp O1 re-imports layer files as top-level modules
from ms_groupnorm import _silu_ops
from ms_groupnorm.cell import GroupNorm, _affine_group_norm, _check_input
from ms_groupnorm.mint import GroupNorm as MintGroupNorm


@constexpr(check=False)
def _runs_fused(stat_dtype):
    """Whether the fused kernel runs for statistics in ``stat_dtype`` on the current backend
    (the CPU kernels, or the AscendC ones through their CPU twins)."""
    return _silu_ops.fused_backend() is not None and stat_dtype in _FUSED_STAT_DTYPES


_FUSED_STAT_DTYPES = (mstype.float32, mstype.float16, mstype.bfloat16)  # float64 runs the unfused pair


def _affine_group_norm_silu(x, gamma, beta, num_groups, eps, stat_dtype):
    """z = silu(GroupNorm(x)) for the layers' construct; ``stat_dtype`` from _check_input.
    Parameters are cast to ``stat_dtype`` (float32 for float16/bfloat16 input), as in
    cell._affine_group_norm."""
    if not _runs_fused(stat_dtype):
        return ops.silu(_affine_group_norm(x, gamma, beta, num_groups, eps, stat_dtype))
    if gamma.dtype != stat_dtype:
        gamma = ops.cast(gamma, stat_dtype)
    if beta.dtype != stat_dtype:
        beta = ops.cast(beta, stat_dtype)
    return _silu_ops.silu_forward_op(num_groups, eps, 1.0)(x, gamma, beta)[0]


class GroupNormSiLU(GroupNorm):
    r"""``silu(GroupNorm(x))`` over an (N, C, \*) input, fused: the GroupNorm layer's
    arguments, parameters (``gamma``, ``beta``), checks and repr. The backward stores
    nothing full-size but x (y and sigmoid(y) are recomputed from x, mean, rstd, gamma, beta).
    """

    def construct(self, x):
        stat_dtype = _check_input(x.shape, x.dtype, self.num_channels, self.cls_name)
        return _affine_group_norm_silu(x, self.gamma, self.beta, self.num_groups, self.eps, stat_dtype)


class MintGroupNormSiLU(MintGroupNorm):
    r"""``silu(mint.nn.GroupNorm(input))``, fused: ``ms_groupnorm.mint.GroupNorm``'s
    signature and parameter names (``weight``, ``bias``). Exported as
    ``ms_groupnorm.mint.GroupNormSiLU``."""

    def construct(self, input):  # pylint: disable=redefined-builtin  (mint's argument name)
        stat_dtype = _check_input(input.shape, input.dtype, self.num_channels, self.cls_name)
        return _affine_group_norm_silu(input, self.weight, self.bias, self.num_groups, self.eps, stat_dtype)
