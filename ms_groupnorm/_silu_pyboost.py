"""PyNative fast path of the fused GroupNorm + SiLU: a CustomOpBuilder (pyboost) module of
its own (ms_groupnorm/_native/group_norm_silu_pyboost.cc), built on first use in
PYNATIVE_MODE like GroupNorm's (see _pyboost for why, where it is cached, the caveats and
$MS_GROUPNORM_PYBOOST=0, which turns this one off too). A separate module so that the
GroupNorm module's source, and with it its cached build, stays as it is.
"""
import functools
import hashlib
import logging
import sys
import time
from pathlib import Path

from . import _pyboost

SOURCE = Path(__file__).resolve().parent / "_native" / "group_norm_silu_pyboost.cc"
_logger = logging.getLogger("ms_groupnorm")


def build():
    """Builds (or re-checks) and loads the module; raises on any failure."""
    import mindspore
    from mindspore import ops

    from . import _kernel_lib

    if not SOURCE.is_file():
        raise FileNotFoundError(f"ms_groupnorm: pyboost source {SOURCE} is not installed")
    missing = _pyboost.missing_tools()
    if missing:
        raise RuntimeError(f"ms_groupnorm: building the pyboost module needs {', '.join(missing)} on PATH")
    library = Path(_kernel_lib.library_path()).resolve()
    digest = hashlib.sha256()
    for part in (mindspore.__version__, SOURCE.read_bytes(), library):
        digest.update(part if isinstance(part, bytes) else str(part).encode())
        digest.update(b"\0")
    key = digest.hexdigest()[:16]
    name = f"ms_groupnorm_silu_pyboost_{key}"
    build_dir = _pyboost.cache_root() / "pyboost" / f"silu-{key}"
    build_dir.mkdir(parents=True, exist_ok=True)
    _pyboost._remove_stale_lock(build_dir)
    compiling = not (build_dir / f"{name}.so").is_file()
    if compiling:
        sys.stderr.write(f"ms_groupnorm: compiling the fused GroupNorm+SiLU PyNative fast path once (about a "
                         f"minute; cached in {build_dir}; {_pyboost.ENABLE_ENV}=0 skips it)...\n")
        sys.stderr.flush()
    start = time.monotonic()
    builder = ops.CustomOpBuilder(
        name, [str(SOURCE)], backend="CPU",
        ldflags=f"-L{library.parent} -l:{library.name} -Wl,-rpath,{library.parent}",
        build_dir=str(build_dir))
    loaded = builder.load()
    if compiling:
        sys.stderr.write(f"ms_groupnorm: fused PyNative fast path built in {time.monotonic() - start:.0f} s\n")
    return loaded


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
