"""``ms_groupnorm.GroupNorm``: a drop-in for ``mindspore.nn.GroupNorm``."""
from mindspore import Parameter, nn, ops
from mindspore import _checkparam as validator  # MindSpore's own checker: identical messages
from mindspore import dtype as mstype
from mindspore.common.initializer import initializer
from mindspore.ops.primitive import _primexpr

from ms_groupnorm import _ops  # absolute: MindSpore amp O1 re-imports this file as a top-level module
from ms_groupnorm._checks import DATA_DTYPES, MAX_RANK


@_primexpr
def _check_input(shape, dtype, num_channels, cls_name):
    # Runs at graph compile time in GRAPH_MODE (shapes are constants there).
    if not 2 <= len(shape) <= MAX_RANK:
        raise ValueError(f"For '{cls_name}', the input must have rank 2 to {MAX_RANK} (N, C, *), "
                         f"but got shape {shape}.")
    if shape[1] != num_channels and shape[1] != -1:
        raise ValueError(f"For '{cls_name}', the channel (the second dim of the input 'x') must be equal "
                         f"to num_channels, but got channel: {shape[1]}, num_channels: {num_channels}.")
    if dtype not in DATA_DTYPES:
        raise TypeError(f"For '{cls_name}', the input dtype must be float32, float16 or bfloat16, "
                        f"but got {dtype}.")


def _set_checked_arguments(cell, num_groups, num_channels, eps, affine):
    """Checks the GroupNorm layers' arguments as mindspore.nn.GroupNorm does (same
    messages) and stores them on ``cell``."""
    cell.num_groups = validator.check_positive_int(num_groups, "num_groups", cell.cls_name)
    cell.num_channels = validator.check_positive_int(num_channels, "num_channels", cell.cls_name)
    if num_channels % num_groups != 0:
        raise ValueError(f"For '{cell.cls_name}', the 'num_channels' must be divided by 'num_groups', "
                         f"but got 'num_channels': {num_channels}, 'num_groups': {num_groups}.")
    cell.eps = validator.check_value_type('eps', eps, (float,), type(cell).__name__)
    cell.affine = validator.check_bool(affine, arg_name="affine", prim_name=cell.cls_name)


def _affine_group_norm(x, gamma, beta, num_groups, eps):
    """y of GroupNorm with parameters gamma/beta, for the GroupNorm layers' construct."""
    # The kernel takes parameters in x's dtype or in float32; anything else is cast.
    if gamma.dtype != x.dtype and gamma.dtype != mstype.float32:
        gamma = ops.cast(gamma, x.dtype)
        beta = ops.cast(beta, x.dtype)
    # The op is looked up per call (a cached dictionary lookup; in GRAPH_MODE once, while
    # compiling), not fixed in __init__: a cell created in PyNative may later run in a
    # graph, and the op that suits each mode differs (see _ops._op_backend).
    return _ops.forward_op(num_groups, eps)(x, gamma, beta)[0]


class GroupNorm(nn.Cell):
    r"""Group Normalization over an (N, C, \*) input, computed by this project's kernels.

    Same signature, parameters (``gamma``, ``beta``), argument errors and repr as
    :class:`mindspore.nn.GroupNorm`; inputs of rank 2 to 8. Parameters may stay float32
    while the input is float16/bfloat16: statistics and parameter gradients are then
    computed and returned in float32.
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
        _check_input(x.shape, x.dtype, self.num_channels, self.cls_name)
        return _affine_group_norm(x, self.gamma, self.beta, self.num_groups, self.eps)

    def extend_repr(self):
        return 'num_groups={}, num_channels={}'.format(self.num_groups, self.num_channels)

