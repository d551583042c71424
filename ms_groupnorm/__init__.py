"""ms_groupnorm: GroupNorm for MindSpore with this project's own forward and backward
kernels (aclnnGroupNorm / aclnnGroupNormBackward contracts), plugged in through
``mindspore.ops.Custom(func_type="aot")``."""
__version__ = "0.1.0"

from .cell import GroupNorm
from .errors import GroupNormParamError, ParamInvalidError, ParamNullptrError
from .functional import group_norm, group_norm_backward, group_norm_forward

__all__ = [
    "GroupNorm",
    "GroupNormParamError",
    "ParamInvalidError",
    "ParamNullptrError",
    "group_norm",
    "group_norm_backward",
    "group_norm_forward",
]
