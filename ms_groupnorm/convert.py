"""``convert_group_norm(cell)``: swap MindSpore's GroupNorm layers for this project's.

* ``mindspore.nn.GroupNorm``      -> :class:`ms_groupnorm.GroupNorm`       (``gamma``, ``beta``)
* ``mindspore.mint.nn.GroupNorm`` -> :class:`ms_groupnorm.mint.GroupNorm`  (``weight``, ``bias``)

Each replacement takes over the original layer's Parameter *objects*, not copies. So
values, dtypes, ``requires_grad`` and the full parameter names (``"body.1.gamma"``, the
keys of a checkpoint) stay exactly as they were, and an optimizer created before the
conversion still updates the right parameters. The mint layer maps to the mint-style
class so that attribute access such as ``layer.weight`` keeps working too.

Only those two exact classes are replaced: a user subclass may override ``construct``,
and swapping it would silently drop that behaviour.

``convert_group_norm(cell, fuse_silu=True)`` also fuses GroupNorm -> SiLU pairs where the
order of execution is certain: inside an ``nn.SequentialCell`` (whose construct is
SequentialCell's own), a GroupNorm layer (MindSpore's nn/mint one or ms_groupnorm's)
immediately followed by an ``nn.SiLU``/``mint.nn.SiLU`` becomes one fused
:class:`ms_groupnorm.GroupNormSiLU` (``mint.GroupNormSiLU`` for the mint-style layers) holding
the GroupNorm's Parameter objects, and the SiLU's place an ``nn.Identity`` (no parameters), so
the parameter names, and with them checkpoint keys, do not change. A custom ``construct``
may call its children in any order, or use a GroupNorm's output twice, so no pair is fused
elsewhere; nor where the GroupNorm is shared with another parent or either layer has hooks or
Cell flags a fusion would drop (see ``_fusable_pair``).
"""
import collections
import copy
import logging
import warnings

from mindspore import mint, nn

from .layers import GroupNorm, GroupNormSiLU
from .mint import GroupNorm as MintGroupNorm
from .mint import MintGroupNormSiLU

logger = logging.getLogger(__name__)

# original class -> (replacement class, names of its two parameters)
_REPLACEMENTS = {
    nn.GroupNorm: (GroupNorm, ("gamma", "beta")),
    mint.nn.GroupNorm: (MintGroupNorm, ("weight", "bias")),
}

# Cell state that belongs to one instance and is rebuilt, not copied: its parameters and
# children, identity and compile caches, and what _copy_recompute sets up again.
_NOT_COPIED = frozenset({
    "_params", "_cells", "_buffers", "_params_list", "_primitives", "_create_time", "_id", "_phase_cache",
    "_compile_cache", "_compile_phase", "_compiled", "_exist_objs", "_exist_names", "_recompute_cell",
    "_has_config_recompute", "_scope", "arguments_key", "cls_name", "_cell_init_args", "_cell_backward_hook",
    "_cell_backward_pre_hook", "_lazy_construct_sig", "_jit_graph_name",
})
_MIXED_PRECISION_FLAGS = ("fp16", "fp32", "bf16")


def _copy_recompute(layer, new):
    """Sets up ``new.recompute(...)`` as ``layer`` was set up (the recompute wrapper is
    bound to the old layer's construct, so it cannot be shared)."""
    if not layer._has_config_recompute:  # pylint: disable=protected-access
        return
    wrapper = layer._recompute_cell  # pylint: disable=protected-access
    flags = getattr(layer, "_func_graph_flags", {})
    if wrapper is None:  # configured through a recomputed parent: same scope, no wrapper of its own
        new._recompute(False, flags.get("output_recompute", True))  # pylint: disable=protected-access
        return
    if isinstance(wrapper, nn.Cell):  # use_reentrant=True
        new.recompute()
        return
    # use_reentrant=False: a closure holding early_stop, context_fn, output_recompute.
    closure = dict(zip(wrapper.__code__.co_freevars, (cell.cell_contents for cell in wrapper.__closure__ or ())))
    new.recompute(use_reentrant=False, output_recompute=bool(closure.get("output_recompute", False)),
                  early_stop=closure.get("early_stop", True), context_fn=closure.get("context_fn"))


def _copy_cell_settings(layer, new):
    """Gives ``new`` every Cell setting of ``layer``: to_float / mixed-precision type (also
    on MindSpore's C++ side), other add_flags flags, requires_grad, training, recompute,
    forward hooks, jit config, shard strategies, set_inputs and user attributes."""
    flags = dict(getattr(layer, "_func_graph_flags", {}))
    flags.pop("output_recompute", None)  # set by _copy_recompute
    for key, value in layer.__dict__.items():
        if key not in _NOT_COPIED and key not in flags:
            new.__dict__[key] = copy.copy(value)  # containers (hooks, dicts) shallow-copied
    # add_flags, not a dict copy: it also sets the mixed-precision type of the C++ cell.
    precision = {k: flags.pop(k) for k in _MIXED_PRECISION_FLAGS if k in flags}
    new.add_flags(**flags)
    if precision:
        new.add_flags(**precision)
    _copy_recompute(layer, new)
    # pylint: disable-next=protected-access
    if layer._cell_backward_hook is not None or layer._cell_backward_pre_hook is not None:
        warnings.warn(f"convert_group_norm: the backward hooks of {type(layer).__name__} are not carried over to "
                      f"its replacement; register them on the new layer.", RuntimeWarning, stacklevel=3)


def _replacement_for(layer):
    """The ms_groupnorm layer equivalent to ``layer``, sharing its Parameters and settings;
    None if ``layer`` is not one of the replaced classes."""
    entry = _REPLACEMENTS.get(type(layer))
    if entry is None:
        return None
    new_cls, param_names = entry
    first_param = getattr(layer, param_names[0])
    new = new_cls(layer.num_groups, layer.num_channels, eps=layer.eps, affine=layer.affine,
                  dtype=first_param.dtype)
    for name in param_names:
        # A Parameter that already has a name keeps it when assigned to a cell
        # (Cell.insert_param_to_cell only names unnamed ones), so checkpoint keys survive.
        setattr(new, name, getattr(layer, name))
    _copy_cell_settings(layer, new)
    return new


# GroupNorm class (original or ours) -> (fused class, names of its two parameters)
_FUSED_REPLACEMENTS = {
    nn.GroupNorm: (GroupNormSiLU, ("gamma", "beta")),
    GroupNorm: (GroupNormSiLU, ("gamma", "beta")),
    mint.nn.GroupNorm: (MintGroupNormSiLU, ("weight", "bias")),
    MintGroupNorm: (MintGroupNormSiLU, ("weight", "bias")),
}
_SILU_CLASSES = (nn.SiLU, mint.nn.SiLU)


def _has_hooks(layer):
    """Whether any forward/backward/state-dict hook is registered on ``layer``."""
    # pylint: disable-next=protected-access
    backward = layer._cell_backward_hook is not None or layer._cell_backward_pre_hook is not None
    return backward or any(value for key, value in layer.__dict__.items() if "hook" in key and isinstance(value, dict))


def _fusable_pair(norm, act, uses):
    """Whether ``norm`` then ``act`` (consecutive children of a SequentialCell) may become one
    fused layer: exact classes (a subclass may override construct); ``norm`` used nowhere
    else (its other users want GroupNorm's output); no hooks on either (they would see other
    tensors, or vanish); no Cell flags (to_float, recompute, ...) on the SiLU, which is dropped."""
    return (type(norm) in _FUSED_REPLACEMENTS and type(act) in _SILU_CLASSES and uses[id(norm)] == 1
            and not _has_hooks(norm) and not _has_hooks(act) and not getattr(act, "_func_graph_flags", None)
            and not act._has_config_recompute)  # pylint: disable=protected-access


def _fused_replacement_for(norm):
    """The fused GroupNormSiLU layer for GroupNorm layer ``norm``: its Parameters and settings."""
    new_cls, param_names = _FUSED_REPLACEMENTS[type(norm)]
    new = new_cls(norm.num_groups, norm.num_channels, eps=norm.eps, affine=norm.affine,
                  dtype=getattr(norm, param_names[0]).dtype)
    for name in param_names:
        setattr(new, name, getattr(norm, name))  # named Parameters keep their names (see _replacement_for)
    _copy_cell_settings(norm, new)
    return new


def _fuse_silu_pairs(cell):
    """Fuses every fusable GroupNorm -> SiLU pair of the SequentialCells in ``cell``, in place;
    returns how many."""
    uses = collections.Counter(id(child) for _, parent in cell.cells_and_names()
                               for child in parent.name_cells().values())
    fused = 0
    for _, parent in list(cell.cells_and_names()):
        # Only SequentialCell's own construct says that children run in order, each on the
        # previous one's output and nothing else.
        if not isinstance(parent, nn.SequentialCell) or type(parent).construct is not nn.SequentialCell.construct:
            continue
        names = list(parent._cells)  # pylint: disable=protected-access
        index, fused_here = 0, 0
        while index + 1 < len(names):
            norm, act = parent._cells[names[index]], parent._cells[names[index + 1]]  # pylint: disable=protected-access
            if norm is None or act is None or not _fusable_pair(norm, act, uses):
                index += 1
                continue
            parent.insert_child_to_cell(names[index], _fused_replacement_for(norm))
            parent.insert_child_to_cell(names[index + 1], nn.Identity())
            fused_here += 1
            index += 2
        if fused_here:
            parent.cell_list = list(parent._cells.values())  # pylint: disable=protected-access
            fused += fused_here
    return fused


def _report(cell, converted, subclasses, fused=0):
    skipped = f"; {subclasses} subclass layer(s) left alone" if subclasses else ""
    if fused:
        logger.info("convert_group_norm: fused %d GroupNorm -> SiLU pair(s) in %s", fused, type(cell).__name__)
    if converted or fused:
        logger.info("convert_group_norm: replaced %d GroupNorm layer(s) in %s%s", converted,
                    type(cell).__name__, skipped)
    else:
        warnings.warn(f"convert_group_norm: no mindspore.nn.GroupNorm or mindspore.mint.nn.GroupNorm found in "
                      f"{type(cell).__name__}{skipped}; nothing was converted.", UserWarning, stacklevel=3)


def convert_group_norm(cell, fuse_silu=False):
    """Replace, in place and recursively, every ``mindspore.nn.GroupNorm`` and
    ``mindspore.mint.nn.GroupNorm`` inside ``cell`` by ms_groupnorm's equivalent, with the
    same settings and the same Parameters (values and names), and return ``cell``.

    ``fuse_silu=True`` first replaces each GroupNorm layer (MindSpore's or ms_groupnorm's)
    immediately followed by ``nn.SiLU``/``mint.nn.SiLU`` in an ``nn.SequentialCell`` by one
    fused ``GroupNormSiLU`` with the same Parameters, and the SiLU by ``nn.Identity`` (see
    the module docstring for the pairs left alone). Parameter names do not change.

    Children are found wherever MindSpore registers them: attributes, SequentialCell,
    CellList and CellDict. A layer shared by several parents gets one shared replacement.
    If ``cell`` itself is a GroupNorm, its replacement is returned (nothing to modify in
    place).

    The replacements keep every Cell setting of the layers they replace (``to_float``,
    ``recompute``, ``set_grad``, flags, forward hooks, ...; see ``_copy_cell_settings``).
    The number of layers replaced is logged (logger ``ms_groupnorm.convert``, INFO); a
    ``UserWarning`` says so when nothing was replaced.

    Convert before the network first runs in GRAPH_MODE and before
    ``mindspore.amp.auto_mixed_precision``: a graph already compiled from ``cell`` (or
    from a wrapper such as TrainOneStepCell) keeps running the old layers. A warning is
    given when ``cell`` or one of its sub-cells has been compiled.
    """
    top = _replacement_for(cell)
    if top is not None:
        _report(cell, 1, 0)
        return top
    fused = _fuse_silu_pairs(cell) if fuse_silu else 0
    replaced = {}  # id(original layer) -> its replacement, so shared layers stay shared
    subclasses = set()
    for _, parent in list(cell.cells_and_names()):
        for child_name, child in list(parent.name_cells().items()):
            if id(child) not in replaced:
                new = _replacement_for(child)
                if new is None:
                    if isinstance(child, tuple(_REPLACEMENTS)):
                        subclasses.add(id(child))
                    continue
                replaced[id(child)] = new
            # insert_child_to_cell rebinds the registered child without renaming any
            # parameter (setattr and SequentialCell.__setitem__ would re-prefix them).
            parent.insert_child_to_cell(child_name, replaced[id(child)])
        if isinstance(parent, nn.SequentialCell):
            parent.cell_list = list(parent._cells.values())  # what its construct iterates
    if (replaced or fused) and any(sub.compile_cache for _, sub in cell.cells_and_names()):
        warnings.warn("convert_group_norm: this network was already compiled in GRAPH_MODE; the "
                      "compiled graph still runs the replaced layers. Convert before the first call "
                      "(or rebuild the network and its wrappers).", RuntimeWarning, stacklevel=2)
    _report(cell, len(replaced), len(subclasses), fused)
    return cell
