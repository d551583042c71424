"""The ``mindspore.ops.Custom`` operators behind ms_groupnorm, created once and cached.

* ``backward_op(group, mask)``: dy, x, mean, rstd, gamma -> dx, dgamma, dbeta (the
  aclnnGroupNormBackward contract); outputs whose mask bit is off come back as (0,).
* ``forward_op(group, eps, mask)``: x, gamma, beta -> y, mean, rstd, with a bprop that
  feeds the saved mean/rstd to ``backward_op``: nothing is recomputed.

An empty (0,) gamma/beta stands for "none" (ones/zeros), so that one operator serves
both affine and functional calls without building ones/zeros tensors per call.

Shapes and dtypes are inferred by the library's C++ ``*InferShape``/``*InferType``
hooks (out_shape/out_dtype None): that is what lets GRAPH_MODE run with dynamic shapes,
and it needs a reg_info carrying an op name.

PyNative fast path (on by default, $MS_GROUPNORM_PYBOOST=0 opts out, see ``_pyboost``):
when an op is chosen in PYNATIVE_MODE on the "cpu" backend, ``backward_op`` is the pyboost
backward and ``forward_op`` is a ``PynativeForward``: the aot op in graphs, the pyboost
forward in eager calls (recorded for autograd by the module itself while autograd records).
GRAPH_MODE and the AscendC twin are unchanged. On Ascend, PYNATIVE_MODE uses the Ascend
module instead (``_ascend_pyboost``, see ``ascend.py``), GRAPH_MODE the aot op.
"""
import functools
import os

from mindspore import context, ops
from mindspore.ops import CustomRegOp, DataType

from . import _compat, _kernel_lib, _pyboost

FULL_MASK = (True, True, True)
_pynative_executor = _compat.pynative_executor()


def _reg_info(op_name, inputs, outputs, attrs):
    reg = CustomRegOp(op_name)
    for index, name in enumerate(inputs):
        reg = reg.input(index, name)
    for index, name in enumerate(outputs):
        reg = reg.output(index, name)
    # The CPU backend does not enforce dtype rows; the kernel validates dtypes itself.
    reg = reg.dtype_format(*([DataType.None_None] * (len(inputs) + len(outputs))))
    for name, value_type, value in attrs:
        reg = reg.attr(name, "required", value_type, value=value)
    return reg.target("CPU").get_op_info()


def _device_target():
    # The same value as context.get_context("device_target") in ~1 us instead of ~10 us:
    # this runs on every PyNative call of the ops.
    return context._context().get_param(context.ms_ctx_param.device_target)


BACKEND_ENV = "MS_GROUPNORM_BACKEND"
CPU_BACKENDS = ("cpu", "ascendc_twin")
BACKENDS = CPU_BACKENDS + ("ascend",)


def backend_name():
    """Which backward runs: "ascend" when MindSpore's device target is Ascend, else
    $MS_GROUPNORM_BACKEND: "cpu" (default, kernels/cpu), "ascendc_twin" (the AscendC
    kernel's source run by its CPU twin, see ms_groupnorm.ascendc_twin) or "ascend" (the
    Ascend routes on any machine: for simulation, where tests intercept what would reach
    the device; on a machine without an Ascend device they cannot run)."""
    if _device_target() == "Ascend":
        return "ascend"
    name = os.environ.get(BACKEND_ENV, "cpu") or "cpu"
    if name not in BACKENDS:
        raise ValueError(f"ms_groupnorm: ${BACKEND_ENV} must be one of {BACKENDS}, got {name!r}")
    return name


PYBOOST_BACKEND = "cpu_pyboost"
ASCEND_PYBOOST_BACKEND = "ascend_pyboost"


def _op_backend():
    """The cache key for the op to create now: ``backend_name()``, or PYBOOST_BACKEND when
    the fast path is not opted out of ($MS_GROUPNORM_PYBOOST=0), applies (PyNative on the
    "cpu" backend) and its module could be built (else the aot ops, after one warning).

    Read once per op creation: a Cell keeps the op it got in __init__, so the mode at
    that moment decides. In GRAPH_MODE this runs at compile time and picks the aot op;
    under @ms.jit in PYNATIVE_MODE it picks the pyboost op, which MindSpore also runs
    there (tests/test_pyboost.py checks the results stay bitwise equal)."""
    backend = backend_name()
    if backend == "ascend" and eager_pynative():
        return ASCEND_PYBOOST_BACKEND  # ops.Custom takes tensors only in PyNative on Ascend
    # context._get_mode() reads the same value as get_context("mode") for ~0.4 us instead
    # of ~10 us, which matters on a path whose point is per-call cost.
    if (_pyboost.enabled() and backend == "cpu" and context._get_mode() == context.PYNATIVE_MODE
            and _pyboost.module() is not None):
        return PYBOOST_BACKEND
    return backend


def eager_pynative():
    """PYNATIVE_MODE and the op runs now: not while ``@ms.jit`` compiles a graph, where the
    Ascend module's objects (plain Python classes, no graph nodes) cannot serve and the aot
    Custom op does."""
    return context._get_mode() == context.PYNATIVE_MODE and not _compat.compiling_graph()


def evaluated_by_graph_compiler(function):
    """``function``, wrapped so that MindSpore's graph compiler calls it in Python while
    compiling instead of parsing its body.

    ``backward_op``/``forward_op`` are called inside functions that MindSpore compiles
    (``functional.py`` in GRAPH_MODE, ``@ms.jit``). Their bodies read the environment and
    the context, which graph syntax cannot express; but MindSpore treats a callable
    implemented in C as opaque and calls it with the (constant) arguments at compile time,
    using the op it returns as a graph node. ``functools.lru_cache`` is the standard
    library's C-implemented wrapper around a Python function; ``maxsize=0`` makes it cache
    nothing, because the answer depends on the backend and mode at each call (the ops
    themselves are cached per backend in ``_backward_op``/``_forward_op``)."""
    return functools.lru_cache(maxsize=0)(function)


def _bool_triple(mask):
    """``mask`` as a tuple of 3 bools; the usual tuples are looked up (~0.2 us, not ~1 us)."""
    known = _BOOL_TRIPLES.get(mask) if type(mask) is tuple else None  # pylint: disable=unidiomatic-typecheck
    return known if known is not None else tuple(bool(m) for m in mask)


_BOOL_TRIPLES = {(a, b, c): (a, b, c) for a in (False, True) for b in (False, True) for c in (False, True)}


@evaluated_by_graph_compiler
def backward_op(group, mask=FULL_MASK):
    """The backward op for ``group`` groups and output mask (dx, dgamma, dbeta), called as
    ``(dy, x, mean, rstd, gamma)`` on every backend; cached per backend."""
    return _backward_op(int(group), _bool_triple(mask), _op_backend())


@functools.lru_cache(maxsize=None)
def _backward_op(group, mask, backend):
    if backend == PYBOOST_BACKEND:
        return _pyboost.backward(group, mask)
    if backend == ASCEND_PYBOOST_BACKEND:
        from . import _ascend_pyboost, ascend
        return ascend.PynativeAscendBackward(group, mask, _ascend_pyboost.module())
    if backend == "ascend":
        # The AscendC operator takes CANN's order (dy, mean, rstd, x, gamma); the Cell adapts.
        from . import ascend
        return ascend.AscendBackward(group, mask)
    if backend == "ascendc_twin":
        from . import ascendc_twin
        func = ascendc_twin.twin_aot_func("GroupNormGrad")  # same aot ABI as the CPU kernel
    else:
        func = _kernel_lib.aot_func("GroupNormGrad")
    # Distinct op names: MindSpore registers reg_info per op name.
    reg = _reg_info(
        "GroupNormGradMs" if backend == "cpu" else "GroupNormGradMsTwin",
        ["dy", "x", "mean", "rstd", "gamma"],
        ["dx", "dgamma", "dbeta"],
        [("group", "int", int(group)),
         ("dx_is_require", "bool", bool(mask[0])),
         ("dgamma_is_require", "bool", bool(mask[1])),
         ("dbeta_is_require", "bool", bool(mask[2]))],
    )
    return ops.Custom(func, out_shape=None, out_dtype=None, func_type="aot", reg_info=reg)


@evaluated_by_graph_compiler
def forward_op(group, eps, mask=FULL_MASK):
    """The forward Custom op; its bprop runs ``backward_op(group, mask)`` of the current
    backend (so the cache is per backend too).

    ``mask`` says which of x, gamma, beta are real inputs whose gradient is wanted: a
    gamma or beta passed as the empty "none" tensor gets an empty gradient.
    """
    return _forward_op(int(group), float(eps), _bool_triple(mask), _op_backend())


@functools.lru_cache(maxsize=None)
def _forward_op(group, eps, mask, backend):
    if backend == ASCEND_PYBOOST_BACKEND:
        from . import _ascend_pyboost, ascend
        if _ascend_pyboost.forward_installed():
            return ascend.PynativeAscendForward(group, eps, mask, _ascend_pyboost.module())
    # The bprop runs only inside a graph (an eager PynativeForward call records the module's
    # own backward node), so the pyboost forward's bprop takes the aot backward: a graph
    # node in STRICT syntax too, where calling the pyboost function (a Python callable that
    # only LAX's fallback interprets) failed to compile. The same kernel, so the same bits.
    backward = _backward_op(group, mask, "cpu" if backend == PYBOOST_BACKEND else backend)
    if backend == "ascend":
        from . import _ascend_pyboost, ascend
        if _ascend_pyboost.forward_installed():  # our forward: float32 statistics
            return ascend.AscendOwnForward(group, eps, backward)
        return ascend.AscendForward(group, eps, backward)
    if backend == ASCEND_PYBOOST_BACKEND:
        from . import ascend
        return ascend.AscendForward(group, eps, backward)

    def bprop(x, gamma, beta, out, dout):
        # Only y's gradient flows back: mean and rstd are saved statistics.
        dx, dgamma, dbeta = backward(dout[0], x, out[1], out[2], gamma)
        return dx, dgamma, dbeta

    reg = _reg_info(
        "GroupNormMs",
        ["x", "gamma", "beta"],
        ["y", "mean", "rstd"],
        [("group", "int", group), ("eps", "float", eps)],
    )
    op_class = PynativeForward if backend == PYBOOST_BACKEND else ops.Custom
    op = op_class(_kernel_lib.aot_func("GroupNorm"), out_shape=None, out_dtype=None,
                  func_type="aot", bprop=bprop, reg_info=reg)
    if backend == PYBOOST_BACKEND:
        op.module_forward = _pyboost.forward(group, eps)
        op.module_autograd = _pyboost.autograd_forward(group, eps)
    return op


# ---- num_groups / eps as graph variables (ms.mutable inside a graph) ----
# A graph variable has no value while the graph compiles, so it cannot become the
# "group"/"eps" attribute of the ops above (an attribute is fixed at compile time), and
# mean/rstd of shape (N, group) cannot be inferred. These ops take group (int64) and eps
# (float32) as one-element tensor inputs that the kernel reads when it runs, as
# MindSpore's own GroupNorm primitive takes num_groups as an input; their mean/rstd are
# (N, C) buffers holding the N*group statistics first (kernels/cpu/group_norm_aot.cc,
# GroupNormRuntimeGroup). Only the "cpu" backend has them (functional.group_norm checks
# this while compiling); they are only ever created inside a graph, where the PyNative
# fast path does not apply.


@evaluated_by_graph_compiler
def runtime_group_backward_op(mask=FULL_MASK):
    """The backward op reading group at run time: (dy, x, mean, rstd, gamma, group) ->
    (dx, dgamma, dbeta), mean/rstd as runtime_group_forward_op returns them."""
    return _runtime_group_backward_op(tuple(bool(m) for m in mask))


@functools.lru_cache(maxsize=None)
def _runtime_group_backward_op(mask):
    reg = _reg_info(
        "GroupNormGradRuntimeGroupMs",
        ["dy", "x", "mean", "rstd", "gamma", "group"],
        ["dx", "dgamma", "dbeta"],
        [("dx_is_require", "bool", mask[0]), ("dgamma_is_require", "bool", mask[1]),
         ("dbeta_is_require", "bool", mask[2])],
    )
    return ops.Custom(_kernel_lib.aot_func("GroupNormGradRuntimeGroup"), out_shape=None, out_dtype=None,
                      func_type="aot", reg_info=reg)


@evaluated_by_graph_compiler
def runtime_group_forward_op(mask=FULL_MASK):
    """The forward op reading group and eps at run time: (x, gamma, beta, group, eps) ->
    (y, mean, rstd), mean/rstd (N, C); its bprop runs runtime_group_backward_op."""
    return _runtime_group_forward_op(tuple(bool(m) for m in mask))


@functools.lru_cache(maxsize=None)
def _runtime_group_forward_op(mask):
    backward = _runtime_group_backward_op(mask)

    def bprop(x, gamma, beta, group, eps, out, dout):
        dx, dgamma, dbeta = backward(dout[0], x, out[1], out[2], gamma, group)
        return dx, dgamma, dbeta, ops.zeros_like(group), ops.zeros_like(eps)

    reg = _reg_info("GroupNormRuntimeGroupMs", ["x", "gamma", "beta", "group", "eps"], ["y", "mean", "rstd"], [])
    return ops.Custom(_kernel_lib.aot_func("GroupNormRuntimeGroup"), out_shape=None, out_dtype=None,
                      func_type="aot", bprop=bprop, reg_info=reg)


def recording_gradient():
    """True while PyNative autograd records the ops being run (inside ms.grad,
    value_and_grad, a training step...); ~2 us."""
    return _pynative_executor.requires_grad()


class PynativeForward(ops.Custom):
    """The forward aot op, whose eager PyNative calls go through the pyboost module.

    In a graph (GRAPH_MODE, ``@ms.jit``) this is the aot Custom primitive and nothing else:
    a compiled graph never calls ``__call__``. An eager call runs the module instead, for
    a fraction of the Custom op's per-call cost and bitwise the same outputs: while
    autograd records, its ``group_norm_autograd``, which records its own backward node
    (the plain module forward has no bprop, and a gradient through it would silently be
    zero); otherwise (inference, evaluation, ``ms.no_grad``) the plain forward."""

    module_forward = None   # set by _forward_op: pyboost (x, gamma, beta) -> (y, mean, rstd)
    module_autograd = None  # the same, differentiable

    def __call__(self, x, gamma, beta):
        if recording_gradient():
            return self.module_autograd(x, gamma, beta)
        return self.module_forward(x, gamma, beta)
