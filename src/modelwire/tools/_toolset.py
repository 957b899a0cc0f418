"""``Toolset``: tools that live elsewhere and are known only once it is open.

An MCP server (:mod:`modelwire.mcp`) is one: its tools are listed when the
connection opens. An ``Agent`` takes toolsets beside tools; at the start of a run
it opens the ones that are not open yet (and closes them when the run ends), then
adds their tools to the run's — a name given twice is a ``ConfigurationError``
naming both sources. A toolset opened by the caller (``async with server:`` or
``with server:``) stays open across runs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from ..errors import ConfigurationError
from ._core import Tool

__all__ = ["Toolset", "merge_tools"]


class Toolset:
    """Tools from elsewhere: open it, read ``tools``, close it.

    Subclasses implement the four open/close methods; the async ones must not
    block the running event loop, the sync ones must work with or without one.
    """

    #: What error messages call it (an MCP server: its command or URL).
    label: str = "toolset"

    @property
    def is_open(self) -> bool:
        """Whether ``tools`` can be read and called."""
        raise NotImplementedError

    @property
    def tools(self) -> tuple[Tool, ...]:
        """Its tools, as listed when it was opened."""
        raise NotImplementedError

    async def open(self) -> None:
        """Connect and list the tools (no-op when open)."""
        raise NotImplementedError

    async def close(self) -> None:
        """Disconnect (no-op when closed)."""
        raise NotImplementedError

    def open_sync(self) -> None:
        """:meth:`open` without an event loop."""
        raise NotImplementedError

    def close_sync(self) -> None:
        """:meth:`close` without an event loop."""
        raise NotImplementedError


def merge_tools(own: Mapping[str, Tool], toolsets: Iterable[Toolset]) -> dict[str, Tool]:
    """``own`` and the tools of each open toolset, one name once: a clash names both
    sources and says how to keep them apart."""
    merged = dict(own)
    source = dict.fromkeys(own, "the agent's own tools")
    for ts in toolsets:
        for t in ts.tools:
            if t.name in merged:
                raise ConfigurationError(
                    f"two tools are named {t.name!r}: one from {source[t.name]}, one from "
                    f"{ts.label}; give a server prefix= (or leave one out with deny=)"
                )
            merged[t.name] = t
            source[t.name] = ts.label
    return merged
