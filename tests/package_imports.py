"""The import graph inside the ms_groupnorm package, read from the source (ast), nothing imported.

An arrow A -> B is any ``import``/``from ... import`` in module A, at module level or inside
a function or class body (a deferred import still ties A to B: A cannot be read, moved or
tested without B), that names module B of the package. ``from pkg import name`` points at
the submodule ``pkg.name`` when that file exists, else at ``pkg`` itself. Importing a
submodule also runs its package's ``__init__``; that implied arrow is not counted (the
subpackages' ``__init__`` files are documentation only).
"""
import ast
from pathlib import Path

PACKAGE = "ms_groupnorm"


def package_modules(root):
    """{dotted module name: path} of every .py file of the package under ``root``."""
    modules = {}
    for path in sorted((Path(root) / PACKAGE).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _resolve(module, is_package, node):
    """The absolute module a ``from`` import starts from."""
    if node.level == 0:
        return node.module or ""
    base = module.split(".") if is_package else module.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def import_arrows(root):
    """{module: sorted list of the package modules it imports}."""
    modules = package_modules(root)
    arrows = {}
    for module, path in modules.items():
        targets = set()
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(module, path.name == "__init__.py", node)
                names = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                         for alias in node.names]
            else:
                continue
            for name in names:
                while name and name not in modules:  # `import a.b.c` of a module a.b (c a name)
                    name = name.rpartition(".")[0]
                if name and name != module:
                    targets.add(name)
        arrows[module] = sorted(targets)
    return arrows


def cycles(arrows):
    """The strongly connected components with more than one module (Tarjan), sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in arrows.get(node, ()):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(arrows):
        if node not in index:
            visit(node)
    return sorted(found)


def longest_chain(arrows):
    """The longest chain of imports ``[m0, m1, ..., mk]`` (m0 imports m1, ...), each module
    at most once; its number of import levels is its number of arrows, ``len(chain) - 1``. A plain depth-first walk
    over simple paths (the package has a few dozen modules), so cycles are handled too."""
    def walk(node, seen):
        chain = [node]
        for target in arrows.get(node, ()):
            if target not in seen:
                candidate = [node] + walk(target, seen | {target})
                if len(candidate) > len(chain):
                    chain = candidate
        return chain

    return max((walk(node, {node}) for node in sorted(arrows)), key=len, default=[])
