"""What a user of ms_groupnorm relies on, as plain data: the public names of the modules the
README and docs/usage.md tell a user to import, each callable's signature (a class's
``__init__``), each class's bases and each error class's status and code, and the names of
the environment variables the package reads.

``python tests/public_surface.py > tests/data/public_surface.json`` regenerates the expected
data; it was generated from the code before the package was restructured, and only a
deliberate change of the public API should ever regenerate it.
"""
import ast
import importlib
import inspect
import json
import re
import sys
from pathlib import Path

# module -> the names it exports (None: its __all__)
PUBLIC_MODULES = {
    "ms_groupnorm": None,
    "ms_groupnorm.mint": ("GroupNorm", "GroupNormSiLU"),
    "ms_groupnorm.convert": ("convert_group_norm",),
    "ms_groupnorm.errors": ("GroupNormParamError", "ParamInvalidError", "ParamNullptrError", "ParamTypeError"),
}
# Environment variables by the shape of their names, as the package's Python source spells them.
ENV_NAME = re.compile(r"^(MS_GROUPNORM_[A-Z0-9_]+|ASCEND_[A-Z_]*PATH|XDG_CACHE_HOME|MS_COMPILER_CACHE_PATH|CXX)$")


def _describe(obj):
    if inspect.ismodule(obj):
        return {"kind": "module", "name": obj.__name__}
    if inspect.isclass(obj):
        entry = {"kind": "class", "bases": [f"{b.__module__}.{b.__qualname__}" for b in obj.__mro__[1:]
                                            if not b.__module__.startswith("ms_groupnorm")]}
        entry["own_bases"] = [b.__qualname__ for b in obj.__mro__[1:] if b.__module__.startswith("ms_groupnorm")]
        entry["init"] = str(inspect.signature(obj.__init__))
        if issubclass(obj, BaseException):
            entry["status"], entry["code"] = getattr(obj, "status", None), getattr(obj, "code", None)
        return entry
    if callable(obj):
        return {"kind": "function", "signature": str(inspect.signature(obj))}
    return {"kind": type(obj).__name__, "value": repr(obj)}


def environment_variables():
    """The environment variable names that string literals in the imported package's
    ms_groupnorm/**/*.py spell."""
    import ms_groupnorm

    names = set()
    for path in Path(ms_groupnorm.__file__).resolve().parent.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and ENV_NAME.match(node.value):
                names.add(node.value)
    return sorted(names)


def public_surface():
    surface = {}
    for module_name, names in PUBLIC_MODULES.items():
        module = importlib.import_module(module_name)
        names = list(module.__all__) if names is None else list(names)
        surface[module_name] = {"__all__": sorted(names),
                                "names": {name: _describe(getattr(module, name)) for name in sorted(names)}}
    surface["environment"] = environment_variables()
    return surface


if __name__ == "__main__":
    json.dump(public_surface(), sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
