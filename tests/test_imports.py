"""The import graph of ``src/modelwire`` has no cycle.

Every import counts: at module level, inside a function (a lazy import) and under
``if TYPE_CHECKING:``; a cycle through any of them means two modules depend on
each other, so neither layer can be read, tested or moved alone. The graph is read
from the source with :mod:`ast` (nothing is imported), and each cycle is reported
as a path, e.g. ``modelwire.errors -> modelwire.types -> modelwire.errors``.
"""

from __future__ import annotations

import ast
from pathlib import Path

import modelwire

SRC = Path(modelwire.__file__).parent


def _modules(root: Path) -> dict[str, Path]:
    out: dict[str, Path] = {}
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


def import_graph(root: Path) -> dict[str, set[str]]:
    """module -> the modelwire modules it imports (the most specific one named:
    ``from ..apis._common import x`` is an edge to ``modelwire._apis._common``)."""
    mods = _modules(root)
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join([*base, *([node.module] if node.module else [])])
                else:
                    target = node.module or ""
                names = [target, *(f"{target}.{a.name}" for a in node.names)]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            graph[name].update(n for n in names if n in mods and n != name)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One path per strongly connected component of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(_path(graph, set(comp)))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def _path(graph: dict[str, set[str]], comp: set[str]) -> list[str]:
    """A concrete cycle inside ``comp``: walk edges inside it until a module repeats."""
    start = min(comp)
    path = [start]
    while True:
        nxt = min(w for w in graph[path[-1]] if w in comp)
        if nxt in path:
            return [*path[path.index(nxt) :], nxt]
        path.append(nxt)


def test_src_has_no_import_cycle() -> None:
    found = cycles(import_graph(SRC))
    assert not found, "import cycles: " + "; ".join(" -> ".join(c) for c in found)


def test_the_checker_finds_a_cycle_through_a_lazy_or_type_checking_import(
    tmp_path: Path,
) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "errors.py").write_text("def f():\n    from .types import Info\n")
    (pkg / "types.py").write_text("from .errors import f\n")
    (pkg / "sub" / "a.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .b import B\n"
    )
    (pkg / "sub" / "b.py").write_text("from ..sub import a\n")
    (pkg / "leaf.py").write_text("from . import errors\nfrom .sub.a import x\n")
    found = cycles(import_graph(pkg))
    assert sorted(found) == [
        ["pkg.errors", "pkg.types", "pkg.errors"],
        ["pkg.sub.a", "pkg.sub.b", "pkg.sub.a"],
    ]


def test_the_error_module_imports_no_other_modelwire_module_at_load() -> None:
    # errors is the root of the type layer (types imports it); a top-level import
    # of anything in modelwire from here would be the errors <-> types cycle again.
    tree = ast.parse((SRC / "errors.py").read_text(encoding="utf-8"))
    top = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.level]
    assert top == []
