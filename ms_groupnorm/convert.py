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
"""
import warnings

from mindspore import mint, nn

from .cell import GroupNorm
from .mint import GroupNorm as MintGroupNorm

# original class -> (replacement class, names of its two parameters)
_REPLACEMENTS = {
    nn.GroupNorm: (GroupNorm, ("gamma", "beta")),
    mint.nn.GroupNorm: (MintGroupNorm, ("weight", "bias")),
}


def _replacement_for(layer):
    """The ms_groupnorm layer equivalent to ``layer``, sharing its Parameters; None if
    ``layer`` is not one of the replaced classes."""
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
    new.set_train(layer.training)
    return new


def convert_group_norm(cell):
    """Replace, in place and recursively, every ``mindspore.nn.GroupNorm`` and
    ``mindspore.mint.nn.GroupNorm`` inside ``cell`` by ms_groupnorm's equivalent, with the
    same settings and the same Parameters (values and names), and return ``cell``.

    Children are found wherever MindSpore registers them: attributes, SequentialCell,
    CellList and CellDict. A layer shared by several parents gets one shared replacement.
    If ``cell`` itself is a GroupNorm, its replacement is returned (nothing to modify in
    place).

    Convert before the network first runs in GRAPH_MODE and before
    ``mindspore.amp.auto_mixed_precision``: a graph already compiled from ``cell`` (or
    from a wrapper such as TrainOneStepCell) keeps running the old layers. A warning is
    given when ``cell`` or one of its sub-cells has been compiled.
    """
    top = _replacement_for(cell)
    if top is not None:
        return top
    replaced = {}  # id(original layer) -> its replacement, so shared layers stay shared
    for _, parent in list(cell.cells_and_names()):
        for child_name, child in list(parent.name_cells().items()):
            if id(child) not in replaced:
                new = _replacement_for(child)
                if new is None:
                    continue
                replaced[id(child)] = new
            # insert_child_to_cell rebinds the registered child without renaming any
            # parameter (setattr and SequentialCell.__setitem__ would re-prefix them).
            parent.insert_child_to_cell(child_name, replaced[id(child)])
        if isinstance(parent, nn.SequentialCell):
            parent.cell_list = list(parent._cells.values())  # what its construct iterates
    if replaced and any(sub.compile_cache for _, sub in cell.cells_and_names()):
        warnings.warn("convert_group_norm: this network was already compiled in GRAPH_MODE; the "
                      "compiled graph still runs the replaced layers. Convert before the first call "
                      "(or rebuild the network and its wrappers).", RuntimeWarning, stacklevel=2)
    return cell
