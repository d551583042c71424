"""Which backend runs an operator now, and its ops, created once per configuration and cached.

* ``backward_op(group, mask)`` / ``silu_backward_op(group, swish_scale, mask)``:
  ``(dy, x, mean, rstd, gamma[, beta]) -> (dx, dgamma, dbeta)``, the aclnn backward
  contracts; outputs whose mask bit is off come back as (0,).
* ``forward_op(group, eps, mask)`` / ``silu_forward_op(group, eps, swish_scale, mask)``:
  ``(x, gamma, beta) -> (out, mean, rstd)``, with a bprop that feeds the saved mean/rstd to
  the backward op: nothing is recomputed (the fused backward recomputes y and sigmoid).

Every backend implements both operators from their descriptions (``ops.descriptions``):

==================  ================  =====================================================
backend             mode              runs
==================  ================  =====================================================
"cpu"               GRAPH_MODE        ``backends.cpu_aot``: ops.Custom aot on kernels/cpu
"cpu_pyboost"       PYNATIVE_MODE     ``backends.cpu_pyboost`` (``$MS_GROUPNORM_PYBOOST=0``
                                      opts out): the aot op in graphs, the module in eager
                                      calls (recorded for autograd by the module itself)
"ascendc_twin"      both              ``backends.cpu_aot`` on the twins' aot shims (twin_build)
"ascend"            GRAPH_MODE        ``backends.ascend`` Cells on the AscendC operators
"ascend_pyboost"    PYNATIVE_MODE     ``backends.ascend`` through ``backends.ascend_pyboost``
"ascend_builtin"    both              MindSpore's own GroupNorm (``backends.ascend.BuiltinForward``):
                                      only on a chip the check refuses, with
                                      ``$MS_GROUPNORM_ASCEND_FALLBACK=mindspore``
==================  ================  =====================================================

On Ascend without our fused operators installed, ``fused_backend()`` is None and the
callers (``functional``, ``layers``) run the unfused pair, GroupNorm then SiLU.
"""
import functools
import os

from mindspore import context

from .. import _compat
from .._compat import evaluated_by_graph_compiler, recording_gradient  # noqa: F401 (used by callers)
from ..backends import ascend, ascend_jit, ascend_pyboost, cpu_aot, cpu_pyboost, reference_ops
from ..backends.cpu_aot import PynativeForward  # noqa: F401 (the fast path's forward op class)
from . import double_backward
from .descriptions import BY_NAME, GROUP_NORM, GROUP_NORM_SILU

FULL_MASK = (True, True, True)
# How many ops each getter keeps (least recently used dropped first): one per configuration
# (group, eps, swish_scale, mask, backend), ~13 KiB each. Bounded so that a computed or
# annealed eps cannot grow the cache without end; a dropped op is created again when asked
# for (a Cell looks its op up per call, a compiled graph keeps its own).
OP_CACHE_SIZE = 256
op_cache = functools.lru_cache(maxsize=OP_CACHE_SIZE)
BACKEND_ENV = "MS_GROUPNORM_BACKEND"
CPU_BACKENDS = ("cpu", "ascendc_twin")
BACKENDS = CPU_BACKENDS + ("ascend",)
PYBOOST_BACKEND = "cpu_pyboost"
ASCEND_PYBOOST_BACKEND = "ascend_pyboost"
ASCEND_BUILTIN_BACKEND = "ascend_builtin"  # MindSpore's own GroupNorm, asked for on a refused chip
FUSED_BACKENDS = ("cpu", "ascend", "ascendc_twin")


def _device_target():
    # The same value as context.get_context("device_target") in ~1 us instead of ~10 us:
    # this runs on every PyNative call of the ops.
    return context._context().get_param(context.ms_ctx_param.device_target)


def backend_name():
    """Which backend runs: "ascend" when MindSpore's device target is Ascend, else
    $MS_GROUPNORM_BACKEND: "cpu" (default, kernels/cpu), "ascendc_twin" (the AscendC
    kernels' source run by their CPU twins, see ms_groupnorm.backends.twin_build) or "ascend" (the
    Ascend routes on any machine: for simulation, where tests intercept what would reach
    the device; on a machine without an Ascend device they cannot run)."""
    if _device_target() == "Ascend":
        return "ascend"
    name = os.environ.get(BACKEND_ENV, "cpu") or "cpu"
    if name not in BACKENDS:
        raise ValueError(f"ms_groupnorm: ${BACKEND_ENV} must be one of {BACKENDS}, got {name!r}")
    return name


def eager_pynative():
    """PYNATIVE_MODE and the op runs now: not while ``@ms.jit`` compiles a graph, where the
    Ascend module's objects (plain Python classes, no graph nodes) cannot serve and the aot
    Custom op does."""
    return context._get_mode() == context.PYNATIVE_MODE and not _compat.compiling_graph()


def _mode_backend(backend):
    """The cache key of the ops to create now for ``backend``: on Ascend, eager
    PYNATIVE_MODE runs the Ascend module (ops.Custom takes tensors only there; a graph
    compiled by ``@ms.jit`` keeps the aot ops); on "cpu" in PYNATIVE_MODE the fast path,
    when not opted out of and its module could be built (else the aot ops, after one
    warning).

    Read once per op creation: a Cell keeps the op it got, so the mode at that moment
    decides. In GRAPH_MODE this runs at compile time and picks the aot op; under @ms.jit in
    PYNATIVE_MODE it picks the pyboost op, which MindSpore also runs there
    (tests/test_pyboost.py checks the results stay bitwise equal)."""
    if backend == "ascend":
        if ascend.fallback_to_mindspore():
            return ASCEND_BUILTIN_BACKEND
        if eager_pynative():
            return ASCEND_PYBOOST_BACKEND
        # A graph is compiling (this getter runs inside it): refuse O2/GE however it was asked
        # for, at every compile, not only when the op was first created.
        ascend_jit.refuse_o2()
        return backend
    # context._get_mode() reads the same value as get_context("mode") for ~0.4 us instead
    # of ~10 us, which matters on a path whose point is per-call cost.
    if (backend == "cpu" and cpu_pyboost.enabled() and context._get_mode() == context.PYNATIVE_MODE
            and cpu_pyboost.module() is not None):
        return PYBOOST_BACKEND
    return backend


def _op_backend():
    return _mode_backend(backend_name())


@evaluated_by_graph_compiler  # also called from functions MindSpore compiles
def fused_backend():
    """The backend whose fused kernels run now ("cpu", "ascendc_twin", or "ascend" with our
    two fused operators installed), None where the callers fall back to the unfused pair
    (Ascend without them)."""
    backend = backend_name()
    if backend == "ascend" and (not ascend_pyboost.fused_installed() or ascend.fallback_to_mindspore()):
        return None  # GroupNormSiluMs/GroupNormSiluGradMs not installed or not run here: the unfused pair
    return backend if backend in FUSED_BACKENDS else None


def _fused_op_backend():
    """As _op_backend for an operator MindSpore does not have (the fused GroupNorm + SiLU)."""
    backend = fused_backend()
    if backend not in FUSED_BACKENDS:
        raise NotImplementedError(f"ms_groupnorm: no fused GroupNorm + SiLU kernels on backend {backend!r}")
    return _mode_backend(backend)


def _bool_triple(mask):
    """``mask`` as a tuple of 3 bools; the usual tuples are looked up (~0.2 us, not ~1 us)."""
    known = _BOOL_TRIPLES.get(mask) if type(mask) is tuple else None  # pylint: disable=unidiomatic-typecheck
    return known if known is not None else tuple(bool(m) for m in mask)


_BOOL_TRIPLES = {(a, b, c): (a, b, c) for a in (False, True) for b in (False, True) for c in (False, True)}


# ---------------------------------------------------------------- one op per backend
def _backward(description, attrs, mask, backend, statistics):
    """The backward op of ``description`` (attributes ``attrs`` before the mask) on ``backend``;
    ``statistics`` says how its bprop treats mean/rstd (``ops.double_backward``)."""
    second_order = None if description.second_order is None else description.second_order(*attrs, mask, statistics)
    if description.entry is None:  # described, no kernel yet: its float64 reference runs
        return reference_ops.backward_op(description, attrs, mask, second_order)
    if backend == ASCEND_BUILTIN_BACKEND:  # no kernel of ours here: say why
        ascend.check_chip_before_launch(description.ascend)
    if backend == PYBOOST_BACKEND:
        return cpu_pyboost.backward(description.name, attrs, mask)
    if backend == ASCEND_PYBOOST_BACKEND:
        return ascend.PynativeAscendBackward(getattr(ascend_pyboost.module(), description.pyboost), attrs, mask,
                                             second_order)
    if backend == "ascend":
        return ascend.backward_cell(description.ascend, attrs, mask, second_order)
    return cpu_aot.backward_op(description, backend, attrs + mask, second_order)


def _our_ascend_forward(description):
    """Whether the AscendC operator that runs ``description``'s forward is installed."""
    return ascend_pyboost.installed(description.ascend.op_type)


def _forward(description, attrs, mask, backend, backward):
    """The forward op of ``description`` on ``backend``, its bprop running ``backward``."""
    if description.entry is None:  # described, no kernel yet: its float64 reference runs
        return reference_ops.forward_op(description, attrs, cpu_aot.bprop_feeding(backward, description.saved))
    if backend == ASCEND_BUILTIN_BACKEND:
        return ascend.BuiltinForward(*attrs)
    if backend in ("ascend", ASCEND_PYBOOST_BACKEND):
        if _our_ascend_forward(description):
            if backend == ASCEND_PYBOOST_BACKEND:
                module = ascend_pyboost.module()
                return ascend.PynativeAscendForward(getattr(module, description.pyboost),
                                                    getattr(module, f"{description.pyboost}_autograd"), attrs, mask)
            return ascend.AscendOwnForward(description.ascend_scalars(attrs), backward,
                                           backward_takes_beta="beta" in description.saved)
        if not description.builtin:  # fused_backend() keeps such calls away: say so if one comes
            raise NotImplementedError(f"ms_groupnorm: {description.ascend.op_type} is not installed, and MindSpore "
                                      f"has no {description.reg_name} of its own")
        return ascend.AscendForward(*attrs, backward)  # MindSpore's forward, our backward
    module_forwards = cpu_pyboost.forwards(description.name, attrs) if backend == PYBOOST_BACKEND else None
    return cpu_aot.forward_op(description, backend, attrs, backward, module_forwards)


def _aot_backend(backend):
    """The pyboost forward's bprop takes the aot backward: the bprop runs only inside a graph
    (an eager PynativeForward call records the module's own backward node), where it must be
    a graph node in STRICT syntax too (calling the pyboost function, a Python callable that
    only LAX's fallback interprets, failed to compile). The same kernel, so the same bits."""
    return "cpu" if backend == PYBOOST_BACKEND else backend


@op_cache
def _backward_op(description, attrs, mask, backend, statistics=double_backward.PARTIAL):
    return _backward(description, attrs, mask, backend, statistics)


@op_cache
def _forward_op(description, attrs, mask, backend):
    # The forward's bprop runs the aot backward; none where the forward records its own
    # backward (the Ascend module with our operator) or MindSpore's runs (the fallback).
    own_backward = backend == ASCEND_BUILTIN_BACKEND or (
        backend == ASCEND_PYBOOST_BACKEND and _our_ascend_forward(description))
    backward = None if own_backward else _backward_op(description.backward, description.backward_attr_values(attrs),
                                                      mask, _aot_backend(backend), double_backward.OF_X)
    return _forward(description, attrs, mask, backend, backward)


def _backend_for(description):
    """The backend key for ``description``'s ops now: an operator MindSpore also has runs on
    every backend, any other where fused_backend() finds its kernels."""
    return _op_backend() if description.builtin else _fused_op_backend()


def backward_op_for(description, attr_values, mask=FULL_MASK):
    """The backward op of ``description`` with attributes ``attr_values`` (before the mask),
    on the current backend; cached per configuration and backend."""
    backend = _backend_for(description)
    if backend == PYBOOST_BACKEND and recording_gradient():
        # The module's backward function records nothing for autograd, and a gradient
        # through it would silently be zero: the aot op, whose bprop differentiates it.
        backend = "cpu"
    return _backward_op(description, description.attr_values(attr_values), _bool_triple(mask), backend)


def forward_op_for(description, attr_values, mask=FULL_MASK):
    """The forward op of ``description``; its bprop runs the backward op of the current
    backend (so the cache is per backend too). ``mask`` says which of x, gamma, beta are
    real inputs whose gradient is wanted: an empty "none" gamma/beta gets an empty gradient."""
    return _forward_op(description, description.attr_values(attr_values), _bool_triple(mask),
                       _backend_for(description))


# The getters the callers name, called inside functions MindSpore compiles too.
@evaluated_by_graph_compiler
def backward_op(group, mask=FULL_MASK):
    """(dy, x, mean, rstd, gamma) -> (dx, dgamma, dbeta) for ``group`` groups and output mask."""
    return backward_op_for(GROUP_NORM.backward, (group,), mask)


@evaluated_by_graph_compiler
def forward_op(group, eps, mask=FULL_MASK):
    """(x, gamma, beta) -> (y, mean, rstd)."""
    return forward_op_for(GROUP_NORM, (group, eps), mask)


@evaluated_by_graph_compiler
def silu_backward_op(group, swish_scale=1.0, mask=FULL_MASK):
    """(dz, x, mean, rstd, gamma, beta) -> (dx, dgamma, dbeta)."""
    return backward_op_for(GROUP_NORM_SILU.backward, (group, swish_scale), mask)


@evaluated_by_graph_compiler
def silu_forward_op(group, eps, swish_scale=1.0, mask=FULL_MASK):
    """(x, gamma, beta) -> (z, mean, rstd)."""
    return forward_op_for(GROUP_NORM_SILU, (group, eps, swish_scale), mask)


def clear_op_caches():
    """Forgets every op made (tests that change the backend's inputs, e.g. what is installed)."""
    _forward_op.cache_clear()
    _backward_op.cache_clear()


# ---------------------------------------------------------------- second order through the PyNative modules
def _module_second_order(backend):
    """What a PyNative module's autograd node runs while it is itself differentiated
    (_native/second_order.h): the backward op of ``backend`` for operator ``name``, recorded
    with a bprop that treats mean/rstd as x's statistics, as the node saved them. The CPU
    module takes the aot op (its own functions record nothing); the Ascend module's backward
    records itself through ascend.PynativeAscendBackward."""
    def run(name, tensors, attrs, mask):
        description = BY_NAME[name].backward
        op = _backward_op(description, description.attr_values(attrs), _bool_triple(tuple(mask)), backend,
                          double_backward.OF_X)
        return tuple(op(*tensors))

    return run


cpu_pyboost.second_order_hook.function = _module_second_order("cpu")
ascend_pyboost.second_order_hook.function = _module_second_order(ASCEND_PYBOOST_BACKEND)


# ---------------------------------------------------------------- num_groups / eps as graph variables
@evaluated_by_graph_compiler
def runtime_group_backward_op(mask=FULL_MASK):
    """The backward op reading group at run time (``backends.cpu_aot``; "cpu" only)."""
    return _runtime_group_backward_op(tuple(bool(m) for m in mask))


@op_cache
def _runtime_group_backward_op(mask):
    return cpu_aot.runtime_group_backward_op(mask)


@evaluated_by_graph_compiler
def runtime_group_forward_op(mask=FULL_MASK):
    """The forward op reading group and eps at run time: (x, gamma, beta, group, eps) ->
    (y, mean, rstd), mean/rstd (N, C); its bprop runs runtime_group_backward_op."""
    return _runtime_group_forward_op(tuple(bool(m) for m in mask))


@op_cache
def _runtime_group_forward_op(mask):
    return cpu_aot.runtime_group_forward_op(_runtime_group_backward_op(mask))
