"""The import graph of ``src/modelwire`` has no cycle.

Every import counts: at module level, inside a function (a lazy import), under
``if TYPE_CHECKING:``, and the dynamic imports of module-name discovery (the wire
APIs and providers, found as ``<package>.<name>`` and imported with
``importlib.import_module``: an edge to every public module of that package); a cycle
through any of them means two modules depend on each other, so neither layer can be
read, tested or moved alone. The graph is read from the source with :mod:`ast`
(nothing is imported), and each cycle is reported as a path, e.g.
``modelwire.errors -> modelwire.types -> modelwire.errors``.
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
        graph[name].update(discovered(name, ast.parse(path.read_text(encoding="utf-8")), mods))
    return graph


def discovered(name: str, tree: ast.Module, mods: dict[str, Path]) -> set[str]:
    """The modules a module may import by module-name discovery: when it calls
    ``importlib.import_module``, every public module directly inside each package
    whose name it builds module names from — ``f"{__name__}.{…}"`` (its own package)
    or ``f"{PACKAGE}.{…}"`` with ``PACKAGE = "modelwire.x"`` a module-level string."""
    calls = [
        n for n in ast.walk(tree)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
        and n.func.attr == "import_module"
    ]  # fmt: skip
    if not calls:
        return set()
    consts = {
        t.id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)
        for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
        if isinstance(t, ast.Name)
    }  # fmt: skip
    packages = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.JoinedStr) or len(node.values) < 2:
            continue
        head, dot = node.values[0], node.values[1]
        if not (isinstance(head, ast.FormattedValue) and isinstance(head.value, ast.Name)):
            continue
        if not (isinstance(dot, ast.Constant) and str(dot.value).startswith(".")):
            continue
        package = name if head.value.id == "__name__" else consts.get(head.value.id)
        if package is not None:
            packages.add(package)
    return {
        m for m in mods
        if m.rpartition(".")[0] in packages and not m.rpartition(".")[2].startswith("_")
    }  # fmt: skip


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


def test_the_checker_follows_module_name_discovery(tmp_path: Path) -> None:
    # A registry that imports ``pkg.apis.<name>`` by name, and an API module that
    # imports the registry back: a cycle no import statement shows.
    pkg = tmp_path / "pkg"
    (pkg / "apis").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "apis" / "__init__.py").write_text(
        "import importlib\n\n\ndef find(name):\n"
        '    return importlib.import_module(f"{__name__}.{name}").API\n'
    )
    (pkg / "apis" / "_shared.py").write_text("")  # helpers are not discovered
    (pkg / "apis" / "chat.py").write_text("from . import find\nAPI = 1\n")
    (pkg / "apis" / "plain.py").write_text("from ._shared import x\n")
    (pkg / "rules.py").write_text(
        'import importlib\nPACKAGE = "pkg.providers"\n\n\ndef rules(name):\n'
        '    return importlib.import_module(f"{PACKAGE}.{name}")\n'
    )
    (pkg / "providers").mkdir()
    (pkg / "providers" / "__init__.py").write_text("")
    (pkg / "providers" / "azure.py").write_text("from .. import rules\nfrom ..rules import r\n")
    graph = import_graph(pkg)
    assert graph["pkg.apis"] == {"pkg.apis.chat", "pkg.apis.plain"}
    assert graph["pkg.rules"] == {"pkg.providers.azure"}
    assert sorted(cycles(graph)) == [
        ["pkg.apis", "pkg.apis.chat", "pkg.apis"],
        ["pkg.providers.azure", "pkg.rules", "pkg.providers.azure"],
    ]
    # And in src: the registry reaches every shipped API module this way.
    src = import_graph(SRC)
    from modelwire._apis import api_module, builtin_api_names

    assert {api_module(n) for n in builtin_api_names()} <= src["modelwire._apis"]


def test_the_error_module_imports_no_other_modelwire_module_at_load() -> None:
    # errors is the root of the type layer (types imports it); a top-level import
    # of anything in modelwire from here would be the errors <-> types cycle again.
    tree = ast.parse((SRC / "errors.py").read_text(encoding="utf-8"))
    top = [n for n in tree.body if isinstance(n, ast.ImportFrom) and n.level]
    assert top == []
