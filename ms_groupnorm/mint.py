"""``ms_groupnorm.mint.GroupNorm``: a drop-in for ``mindspore.mint.nn.GroupNorm``, and
``ms_groupnorm.mint.GroupNormSiLU``, its fused ``silu(GroupNorm(input))``.

The mint layer differs from ``mindspore.nn.GroupNorm`` only in its interface: no
gamma_init/beta_init, ``dtype=None`` meaning float32, and parameters named ``weight`` and
``bias`` instead of ``gamma`` and ``beta``. Keeping those names is what lets code that
reads ``layer.weight`` and checkpoints saved from a mint network keep working, so this
is a separate class rather than an alias of :class:`ms_groupnorm.GroupNorm`; the
computation (kernels, mixed-precision rule) is the same.
"""
from mindspore import Parameter, nn
from mindspore import dtype as mstype
from mindspore.common.initializer import initializer

# absolute: MindSpore amp O1 re-imports this file as a top-level module
from ms_groupnorm.layers import (PynativeMixedPrecision, _affine_group_norm, _affine_group_norm_silu,
                                 _check_channels, _check_input, _set_checked_arguments)


class GroupNorm(PynativeMixedPrecision, nn.Cell):
    r"""Group Normalization over an (N, C, \*) input with ``mindspore.mint.nn.GroupNorm``'s
    signature and parameter names (``weight``, ``bias``), computed by this project's kernels.

    Parameters may stay float32 while the input is float16/bfloat16; statistics and
    parameter gradients are then computed in float32.
    """

    def __init__(self, num_groups, num_channels, eps=1e-05, affine=True, dtype=None):
        super().__init__()
        param_dtype = mstype.float32 if dtype is None else dtype
        _set_checked_arguments(self, num_groups, num_channels, eps, affine)
        self.weight = Parameter(initializer('ones', self.num_channels, dtype=param_dtype), name="weight",
                                requires_grad=affine)
        self.bias = Parameter(initializer('zeros', self.num_channels, dtype=param_dtype), name="bias",
                              requires_grad=affine)

    def construct(self, input):  # pylint: disable=redefined-builtin  (mint's argument name)
        stat_dtype = _check_input(input.shape, input.dtype, self.num_channels, self.cls_name, self.weight.shape,
                                  self.bias.shape)
        _check_channels(input, self.num_channels, self.cls_name)
        return _affine_group_norm(input, self.weight, self.bias, self.num_groups, self.eps, stat_dtype)

    def extend_repr(self):
        return 'num_groups={}, num_channels={}, eps={}, affine={}'.format(
            self.num_groups, self.num_channels, self.eps, self.affine)


class MintGroupNormSiLU(GroupNorm):
    r"""``silu(mint.nn.GroupNorm(input))``, fused: ``ms_groupnorm.mint.GroupNorm``'s
    signature and parameter names (``weight``, ``bias``). Exported as
    ``ms_groupnorm.mint.GroupNormSiLU``."""

    def construct(self, input):  # pylint: disable=redefined-builtin  (mint's argument name)
        stat_dtype = _check_input(input.shape, input.dtype, self.num_channels, self.cls_name, self.weight.shape,
                                  self.bias.shape)
        _check_channels(input, self.num_channels, self.cls_name)
        return _affine_group_norm_silu(input, self.weight, self.bias, self.num_groups, self.eps, stat_dtype)


GroupNormSiLU = MintGroupNormSiLU
