"""Parameter errors of the aclnnGroupNorm(Backward) contract.

Both classes subclass ValueError (dtype and type errors are ``ParamTypeError``, also a
TypeError) and carry the aclnn status code in ``.code``; their
messages start with the status name and code, then name the parameter and the rule:
``ACLNN_ERR_PARAM_INVALID (161002): C=6 is not divisible by group=4``.
"""


class GroupNormParamError(ValueError):
    """Base class: an argument breaks the aclnnGroupNorm(Backward) contract."""

    status = "ACLNN_ERR_PARAM"
    code = 0

    def __init__(self, detail):
        super().__init__(f"{self.status} ({self.code}): {detail}")
        self.detail = detail


class ParamNullptrError(GroupNormParamError):
    """A required tensor (grad_out, input, mean or rstd) is None."""

    status = "ACLNN_ERR_PARAM_NULLPTR"
    code = 161001


class ParamInvalidError(GroupNormParamError):
    """A parameter has an invalid value, shape or dtype."""

    status = "ACLNN_ERR_PARAM_INVALID"
    code = 161002


class ParamTypeError(ParamInvalidError, TypeError):
    """A tensor has a dtype the contract does not allow, or a scalar has the wrong type.

    Still ``ACLNN_ERR_PARAM_INVALID`` (161002) and a :class:`ParamInvalidError`, and also a
    ``TypeError``: the exception type MindSpore's own GroupNorm raises for the same mistakes.
    """


ERROR_CLASSES = {cls.code: cls for cls in (ParamNullptrError, ParamInvalidError)}
