"""The package's layers (DESIGN §1): each imports only from the layers below it.

Every ``import`` in ``src/modelwire`` is read (at module level, inside functions and
under ``TYPE_CHECKING`` alike: a lazy import is still a dependency) and resolved to
the top-level unit it reaches. An import that runs up the order fails, naming the
file, the line and both layers; so does a circle between units of one layer.
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "modelwire"

#: Bottom-up. A unit is a top-level module or package of ``modelwire``.
LAYERS: tuple[tuple[str, frozenset[str]], ...] = (
    (
        "values",
        frozenset(
            {
                "types",
                "events",
                "errors",
                "_redact",
                "_url",
                "_schema_refs",
                "_json_schema",
                "_version",
            }
        ),
    ),
    ("wire", frozenset({"_wire"})),
    ("catalog and cloud", frozenset({"_catalog", "cloud"})),
    ("providers", frozenset({"_providers"})),
    ("wire APIs", frozenset({"_apis"})),
    ("call", frozenset({"_call"})),
    ("HTTP", frozenset({"_http"})),
    ("client", frozenset({"_client"})),
    (
        "applications",
        frozenset(
            {
                "tools",
                "agent",
                "batching",
                "gateway",
                "testing",
                "mcp",
                "_cli",
                "otel",
                "trace",
                "ext",
                "__init__",
                "__main__",
            }
        ),
    ),
)
RANK = {unit: rank for rank, (_, units) in enumerate(LAYERS) for unit in units}


def _module(path: Path) -> list[str]:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return parts[:-1] if parts[-1] == "__init__" else parts


def _unit(parts: list[str]) -> str:
    return parts[0] if parts else "__init__"


def imports() -> list[tuple[Path, int, str, str]]:
    """(file, line, importing unit, imported unit) for every import inside the package."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        here = _module(path)
        package = here if path.name == "__init__.py" else here[:-1]
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[list[str]] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[: len(package) - (node.level - 1)]
                    base = base + (node.module.split(".") if node.module else [])
                elif node.module and node.module.split(".")[0] == "modelwire":
                    base = node.module.split(".")[1:]
                else:
                    continue
                # ``from . import x`` reaches ``x`` when it is a unit of its own.
                targets = [base or [a.name] for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [
                    a.name.split(".")[1:] for a in node.names if a.name.split(".")[0] == "modelwire"
                ]
            elif _imports_by_name(node):
                # ``importlib.import_module("modelwire.x")`` is an import too: a layer
                # cannot hide an upward one behind a string.
                name = node.args[0].value  # type: ignore[attr-defined]
                targets = [name.split(".")[1:]]
            for target in targets:
                found.append((path, getattr(node, "lineno", 0), _unit(here), _unit(target)))
    return found


def _imports_by_name(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call) or not node.args:
        return False
    func = node.func
    called = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
    arg = node.args[0]
    return (
        called == "import_module"
        and isinstance(arg, ast.Constant)
        and isinstance(arg.value, str)
        and arg.value.startswith("modelwire.")
    )


def test_every_unit_has_a_layer() -> None:
    units = {_unit(_module(p)) for p in SRC.rglob("*.py")}
    assert units - set(RANK) == set(), "a new top-level unit needs its place in LAYERS"
    assert set(RANK) - units == set(), "LAYERS names a unit that is not in the tree"


def test_no_import_runs_up_the_layers() -> None:
    upward = [
        f"{path.relative_to(SRC.parent)}:{line}: {src} ({LAYERS[RANK[src]][0]}) imports "
        f"{dst} ({LAYERS[RANK[dst]][0]})"
        for path, line, src, dst in imports()
        if RANK[dst] > RANK[src]
    ]
    assert upward == []


def test_no_circle_between_units() -> None:
    edges: dict[str, set[str]] = {}
    for _, _, src, dst in imports():
        if src != dst:
            edges.setdefault(src, set()).add(dst)

    def reach(start: str) -> set[str]:
        seen: set[str] = set()
        todo = [start]
        while todo:
            for nxt in edges.get(todo.pop(), ()):
                if nxt not in seen:
                    seen.add(nxt)
                    todo.append(nxt)
        return seen

    circles = sorted(u for u in edges if u in reach(u))
    assert circles == []


def test_the_reader_finds_relative_and_lazy_imports() -> None:
    # The check is only as good as its reading: relative imports two levels up, and
    # imports inside functions, are found and resolved to their unit.
    found = {(path.relative_to(SRC).as_posix(), src, dst) for path, _, src, dst in imports()}
    assert ("_wire/sse/__init__.py", "_wire", "errors") in found
    assert any(src == "_client" and dst == "_http" for _, src, dst in found)


#: The registry's lookups by name (``modelwire._apis``): the client and the
#: applications resolve an API name to its objects and hand those down.
LOOKUPS = frozenset({"api_names", "builtin_api_names", "find_api", "get_api", "find_server",
                     "get_server", "server_routes", "api_for_path", "recognizing", "api_module"})  # fmt: skip
#: The layers that receive objects, never names (DESIGN §1: "the pipeline gets its codec").
BELOW_THE_CLIENT = frozenset({"_wire", "_catalog", "cloud", "_providers", "_call", "_http"})


def registry_lookups() -> list[str]:
    """``file:line: name`` for every registry lookup imported below the client."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if _unit(_module(path)) not in BELOW_THE_CLIENT:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.ImportFrom) and node.module and "_apis" in node.module:
                found += [
                    f"{path.relative_to(SRC.parent)}:{node.lineno}: {a.name}"
                    for a in node.names
                    if a.name in LOOKUPS
                ]
            elif isinstance(node, ast.Attribute) and node.attr in LOOKUPS:
                found.append(f"{path.relative_to(SRC.parent)}:{node.lineno}: .{node.attr}")
    return found


def test_no_registry_lookup_below_the_client() -> None:
    assert registry_lookups() == []


def test_the_lookup_check_sees_a_lookup(tmp_path: Path, monkeypatch: object) -> None:
    # Read over a copy of one lower module with a lookup written into it.
    import pytest as _pytest

    assert isinstance(monkeypatch, _pytest.MonkeyPatch)
    fake = tmp_path / "modelwire"
    (fake / "_call").mkdir(parents=True)
    (fake / "_call" / "x.py").write_text("from .._apis import find_api\n")
    monkeypatch.setattr(__import__(__name__), "SRC", fake)
    assert registry_lookups() == ["modelwire/_call/x.py:1: find_api"]
