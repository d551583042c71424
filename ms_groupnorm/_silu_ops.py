"""The ``mindspore.ops.Custom`` operators of the fused GroupNorm + swish (SiLU for
swish_scale = 1), created once and cached, as ``_ops`` does for GroupNorm:

* ``silu_backward_op(group, swish_scale, mask)``: dz, x, mean, rstd, gamma, beta ->
  dx, dgamma, dbeta; masked-off outputs come back as (0,).
* ``silu_forward_op(group, eps, swish_scale, mask)``: x, gamma, beta -> z, mean, rstd,
  with a bprop that feeds x and the saved mean/rstd to ``silu_backward_op``, which
  recomputes y and sigmoid: the forward keeps nothing full-size for the backward but x.

An empty (0,) gamma/beta stands for ones/zeros. Shapes and dtypes come from the library's
C++ InferShape/InferType hooks (GRAPH_MODE dynamic shape works as for GroupNorm).

Backends: "cpu" (kernels/cpu); "ascendc_twin" ($MS_GROUPNORM_BACKEND=ascendc_twin): the
AscendC kernels GroupNormSiluMs (forward) and GroupNormSiluGradMs (backward) run by their CPU
twins, through aot shims with the CPU kernels' ABI (``ascendc_twin_forward.forward_aot_func``,
``ascendc_twin.twin_aot_func``), in both modes and without the PyNative fast path, as for
GroupNorm; and, when our GroupNormSiluMs and GroupNormSiluGradMs operators are installed,
"ascend" (``ascend_silu``: ops.Custom Cells in GRAPH_MODE, the Ascend module in
PYNATIVE_MODE); on Ascend without them ``fused_backend()`` is None and the callers
(``silu``, ``silu_cell``) run the unfused pair, GroupNorm then SiLU.
On the "cpu" backend PYNATIVE_MODE runs these aot ops
through the fused module's pyboost fast path when it is available (``_silu_pyboost``;
$MS_GROUPNORM_PYBOOST=0 opts out): eager calls run the module, graphs (@ms.jit) the aot op.
"""
import functools

from mindspore import context, ops

from . import _kernel_lib, _ops, _pyboost, _silu_pyboost, ascend_silu

FUSED_BACKENDS = ("cpu", "ascend", "ascendc_twin")
# Op names per aot backend: MindSpore registers reg_info per op name (as _ops does for GroupNorm).
_TWIN_SUFFIX = {"cpu": "", "ascendc_twin": "Twin"}


@_ops.evaluated_by_graph_compiler  # also called from functions MindSpore compiles (see there)
def fused_backend():
    """The backend whose fused kernels run now ("cpu", "ascendc_twin", or "ascend" with our
    two fused operators installed), None where the callers fall back to the unfused pair
    (Ascend without them)."""
    backend = _ops.backend_name()
    if backend == "ascend" and not ascend_silu.installed():
        return None  # GroupNormSiluMs/GroupNormSiluGradMs not installed: the unfused pair
    return backend if backend in FUSED_BACKENDS else None


def _ascend_mode_backend(backend):
    """On Ascend, eager PYNATIVE_MODE runs the Ascend module (ops.Custom takes tensors only
    there); a graph compiled by ``@ms.jit`` keeps the aot ops."""
    if backend == "ascend" and _ops.eager_pynative():
        return _ops.ASCEND_PYBOOST_BACKEND
    return backend


@_ops.evaluated_by_graph_compiler
def silu_backward_op(group, swish_scale=1.0, mask=_ops.FULL_MASK):
    """(dz, x, mean, rstd, gamma, beta) -> (dx, dgamma, dbeta)."""
    return _silu_backward_op(int(group), float(swish_scale), tuple(bool(m) for m in mask),
                             _ascend_mode_backend(fused_backend()))


def _op_backend():
    """fused_backend(), or PYBOOST_BACKEND in PYNATIVE_MODE on the "cpu" backend when the
    fused pyboost module is enabled and could be built (see _ops._op_backend)."""
    backend = _ascend_mode_backend(fused_backend())
    if (backend == "cpu" and _pyboost.enabled() and context._get_mode() == context.PYNATIVE_MODE
            and _silu_pyboost.module() is not None):
        return _ops.PYBOOST_BACKEND
    return backend


def _require_fused(backend):
    if backend not in FUSED_BACKENDS + (_ops.PYBOOST_BACKEND, _ops.ASCEND_PYBOOST_BACKEND):
        raise NotImplementedError(f"ms_groupnorm: no fused GroupNorm + SiLU kernels on backend {backend!r}")


def _twin_backward_func():
    """The backward twin's aot shim GroupNormSiluGrad (the CPU kernel's ABI); a clear error,
    not MindSpore's failed symbol lookup at launch, where the twin library has none."""
    import ctypes

    from . import ascendc_twin
    if not hasattr(ctypes.CDLL(ascendc_twin.twin_library_path()), "GroupNormSiluGrad"):
        raise NotImplementedError(
            f"ms_groupnorm: the AscendC twin library has no GroupNormSiluGrad aot shim (the fused backward "
            f"GroupNormSiluGradMs through the twin), so ${_ops.BACKEND_ENV}=ascendc_twin cannot run the fused "
            f"op's backward")
    return ascendc_twin.twin_aot_func("GroupNormSiluGrad")


@functools.lru_cache(maxsize=None)
def _silu_backward_op(group, swish_scale, mask, backend):
    _require_fused(backend)
    if backend in ascend_silu.BACKENDS:
        return ascend_silu.backward(group, swish_scale, mask, backend)
    reg = _ops._reg_info(
        "GroupNormSiluGradMs" + _TWIN_SUFFIX[backend],
        ["dz", "x", "mean", "rstd", "gamma", "beta"],
        ["dx", "dgamma", "dbeta"],
        [("group", "int", group),
         ("swish_scale", "float", swish_scale),
         ("dx_is_require", "bool", mask[0]),
         ("dgamma_is_require", "bool", mask[1]),
         ("dbeta_is_require", "bool", mask[2])],
    )
    func = _twin_backward_func() if backend == "ascendc_twin" else _kernel_lib.aot_func("GroupNormSiluGrad")
    return ops.Custom(func, out_shape=None, out_dtype=None, func_type="aot", reg_info=reg)


@_ops.evaluated_by_graph_compiler
def silu_forward_op(group, eps, swish_scale=1.0, mask=_ops.FULL_MASK):
    """(x, gamma, beta) -> (z, mean, rstd); ``mask`` says which of x, gamma, beta get a
    gradient (an empty "none" gamma/beta gets an empty one)."""
    return _silu_forward_op(int(group), float(eps), float(swish_scale), tuple(bool(m) for m in mask),
                            _op_backend())


@functools.lru_cache(maxsize=None)
def _silu_forward_op(group, eps, swish_scale, mask, backend):
    _require_fused(backend)
    if backend in ascend_silu.BACKENDS:
        return ascend_silu.forward(group, eps, swish_scale, mask, backend)
    # The aot backward in every case: in PyNative the fast path's eager calls record the
    # module's own backward node, and graphs (@ms.jit) run this bprop.
    backward = _silu_backward_op(group, swish_scale, mask, "cpu" if backend == _ops.PYBOOST_BACKEND else backend)

    def bprop(x, gamma, beta, out, dout):
        # Only z's gradient flows back: mean and rstd are saved statistics.
        dx, dgamma, dbeta = backward(dout[0], x, out[1], out[2], gamma, beta)
        return dx, dgamma, dbeta

    reg = _ops._reg_info(
        "GroupNormSiluMs" + _TWIN_SUFFIX["cpu" if backend == _ops.PYBOOST_BACKEND else backend],
        ["x", "gamma", "beta"],
        ["z", "mean", "rstd"],
        [("group", "int", group), ("eps", "float", eps), ("swish_scale", "float", swish_scale)],
    )
    if backend == "ascendc_twin":
        from . import ascendc_twin_forward
        func = ascendc_twin_forward.forward_aot_func("GroupNormSilu")  # the CPU kernel's aot ABI
    else:
        func = _kernel_lib.aot_func("GroupNormSilu")
    op_class = _ops.PynativeForward if backend == _ops.PYBOOST_BACKEND else ops.Custom
    op = op_class(func, out_shape=None, out_dtype=None, func_type="aot", bprop=bprop, reg_info=reg)
    if backend == _ops.PYBOOST_BACKEND:
        op.module_forward, op.module_autograd = _silu_pyboost.forwards(group, eps, swish_scale)
    return op
