"""PyNative fast path of the fused GroupNorm + SiLU: a CustomOpBuilder (pyboost) module of
its own (ms_groupnorm/_native/group_norm_silu_pyboost.cc), built on first use in
PYNATIVE_MODE like GroupNorm's (see _pyboost for why, where it is cached, the caveats and
$MS_GROUPNORM_PYBOOST=0, which turns this one off too). A separate module so that the
GroupNorm module's source, and with it its cached build, stays as it is.
"""
import functools
import logging
from pathlib import Path

from . import _pyboost

SOURCE = Path(__file__).resolve().parent / "_native" / "group_norm_silu_pyboost.cc"
_logger = logging.getLogger("ms_groupnorm")


def build():
    """Builds (or re-checks) and loads the module; raises on any failure."""
    return _pyboost.build_cpu_module(SOURCE, "ms_groupnorm_silu_pyboost",
                                     "the fused GroupNorm+SiLU PyNative fast path")


@functools.lru_cache(maxsize=None)
def module():
    """The loaded module, or None (one warning) when it cannot be built."""
    try:
        return build()
    except Exception as error:  # any failure: the aot ops keep working
        _logger.warning("ms_groupnorm: the fused PyNative fast path is unavailable, using the aot ops instead "
                        "(set $%s=0 to silence this): %s: %s", _pyboost.ENABLE_ENV, type(error).__name__,
                        str(error).strip()[:2000])
        return None


@functools.lru_cache(maxsize=None)
def forwards(group, eps, swish_scale):
    """(plain, differentiable) ``(x, gamma, beta) -> (z, mean, rstd)`` through the module,
    or None. Use the plain one only where no gradient is recorded (zero-gradient trap)."""
    mod = module()
    if mod is None:
        return None
    group, eps, swish_scale = int(group), float(eps), float(swish_scale)
    plain, recorded = mod.group_norm_silu, mod.group_norm_silu_autograd

    def forward(x, gamma, beta):
        return plain(x, gamma, beta, group, eps, swish_scale)

    def autograd_forward(x, gamma, beta):
        return recorded(x, gamma, beta, group, eps, swish_scale)

    return forward, autograd_forward


@functools.lru_cache(maxsize=None)
def backward(group, swish_scale, mask):
    """``(dz, x, mean, rstd, gamma, beta) -> (dx, dgamma, dbeta)`` through the module, or None."""
    mod = module()
    if mod is None:
        return None
    grad, group, swish_scale = mod.group_norm_silu_grad, int(group), float(swish_scale)
    dx_mask, dgamma_mask, dbeta_mask = (bool(m) for m in mask)

    def silu_backward(dz, x, mean, rstd, gamma, beta):
        return grad(dz, x, mean, rstd, gamma, beta, group, swish_scale, dx_mask, dgamma_mask, dbeta_mask)

    return silu_backward
