"""ms_groupnorm: GroupNorm for MindSpore with this project's own forward and backward
kernels (aclnnGroupNorm / aclnnGroupNormBackward contracts), plugged in through
``mindspore.ops.Custom(func_type="aot")``."""
__version__ = "0.1.0"

from ._compat import check_mindspore_version

check_mindspore_version()  # before anything imports MindSpore: one clear error outside the supported range

from . import mint
from .convert import convert_group_norm
from .errors import GroupNormParamError, ParamInvalidError, ParamNullptrError, ParamTypeError
from .functional import (group_norm, group_norm_backward, group_norm_forward, group_norm_silu, group_norm_silu_backward,
                         group_norm_silu_forward)
from .layers import GroupNorm, GroupNormSiLU

__all__ = [
    "GroupNorm",
    "GroupNormSiLU",
    "GroupNormParamError",
    "ParamInvalidError",
    "ParamNullptrError",
    "ParamTypeError",
    "convert_group_norm",
    "group_norm",
    "group_norm_backward",
    "group_norm_forward",
    "group_norm_silu",
    "group_norm_silu_backward",
    "group_norm_silu_forward",
    "mint",
]
