"""The public surface: which modules are public, and that none exports mutable state.

A module is public when no part of its dotted name starts with ``_``; everything else
is implementation that may change without notice. The list below is the contract:
a new public module is a decision, made here on purpose.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import ModuleType

import modelwire

PUBLIC = {
    "modelwire",
    "modelwire.agent",
    "modelwire.agent.events",
    "modelwire.batching",
    "modelwire.cloud",
    "modelwire.cloud.aws",
    "modelwire.cloud.azure",
    "modelwire.cloud.google",
    "modelwire.errors",
    "modelwire.events",
    "modelwire.ext",
    "modelwire.gateway",
    "modelwire.mcp",
    "modelwire.testing",
    "modelwire.testing.pytest_plugin",
    "modelwire.tools",
    "modelwire.tools.files",
    "modelwire.otel",
    "modelwire.trace",
    "modelwire.types",
}


def _public_modules() -> dict[str, ModuleType]:
    found = {"modelwire": modelwire}
    for info in pkgutil.walk_packages(modelwire.__path__, "modelwire."):
        if any(part.startswith("_") for part in info.name.split(".")[1:]):
            continue
        found[info.name] = importlib.import_module(info.name)
    return found


def test_the_public_modules_are_exactly_the_listed_ones() -> None:
    assert set(_public_modules()) == PUBLIC


def test_every_public_module_curates_its_names() -> None:
    missing = [name for name, mod in _public_modules().items() if not hasattr(mod, "__all__")]
    assert missing == []


def _mutable_exports(modules: dict[str, ModuleType]) -> list[str]:
    # A dict, list or set exported by name is a global any caller can change for the
    # whole process; read-only views (MappingProxyType), tuples and frozensets are not.
    mutable = (dict, list, set, bytearray)
    return [
        f"{name}.{attr}"
        for name, mod in modules.items()
        for attr in getattr(mod, "__all__", ())
        if isinstance(getattr(mod, attr), mutable)
    ]


def test_no_public_module_exports_mutable_state() -> None:
    assert _mutable_exports(_public_modules()) == []


def test_the_mutable_state_check_finds_an_exported_dict() -> None:
    probe = ModuleType("probe")
    probe.__all__ = ["TABLE", "FROZEN"]  # type: ignore[attr-defined]
    probe.TABLE = {}  # type: ignore[attr-defined]
    probe.FROZEN = frozenset()  # type: ignore[attr-defined]
    assert _mutable_exports({"probe": probe}) == ["probe.TABLE"]
