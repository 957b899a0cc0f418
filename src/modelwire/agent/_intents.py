"""What the sans-IO agent core asks its driver to do.

The loop (:mod:`modelwire.agent._loop`), the tool turn
(:mod:`modelwire.agent._tools_turn`) and the per-call judgements
(:mod:`modelwire.agent._execute`) are generators: they make every decision and
``yield`` an intent whenever they must wait for something; the driver
(:mod:`modelwire.agent._drive`) does the waiting — with ``await`` on the async
path, directly on the sync path — and sends the answer back (or throws the
exception the waiting raised into the generator). Agent events are yielded the
same way, and the driver passes them on to the caller. The tool turn's own intent,
``Spawn``, is defined with it (:mod:`modelwire.agent._tools_turn`).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any, TypeAlias

if TYPE_CHECKING:
    from .._call._fallback import Fallback
    from ..tools import Tool, ToolContext
    from ..types import Context, Model
    from .events import AgentEvent

__all__ = [
    "Core",
    "Intent",
    "Invoke",
    "InvokeAborted",
    "InvokeTimedOut",
    "NextModelEvent",
    "NextToolItem",
    "OpenModel",
    "Resolve",
]


class Intent:
    """What every intent is (the drivers tell them apart by class)."""

    __slots__ = ()


class Resolve(Intent):
    """A value a hook or dynamic callable returned: the answer is the value itself,
    or what it resolves to when it is awaitable."""

    __slots__ = ("value",)

    def __init__(self, value: object) -> None:
        self.value = value


class OpenModel(Intent):
    """Start one model call: ``stream_fn(model, context, **options)``; the answer is
    the stream."""

    __slots__ = ("context", "model", "options")

    def __init__(self, model: Model | Fallback, context: Context, options: dict[str, Any]) -> None:
        self.model = model
        self.context = context
        self.options = options


class NextModelEvent(Intent):
    """The next event of a model stream, or ``None`` when it is exhausted."""

    __slots__ = ("stream",)

    def __init__(self, stream: Any) -> None:
        self.stream = stream


class NextToolItem(Intent):
    """The next item from the spawned calls: ``("update", i, partial)`` or
    ``("done", i, (result, failure kind or None))``."""

    __slots__ = ()


class Invoke(Intent):
    """Run ``tool.execute(args, ctx)`` within the tool's time limit; the answer is
    what it returned. The driver throws what it raised into the generator, or
    :class:`InvokeTimedOut` / :class:`InvokeAborted`."""

    __slots__ = ("args", "ctx", "tool")

    def __init__(self, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> None:
        self.tool = tool
        self.args = args
        self.ctx = ctx


class InvokeTimedOut(Exception):
    """The tool's time limit passed (not a ``TimeoutError`` of the tool's own)."""


class InvokeAborted(Exception):
    """The run was aborted while the tool ran."""


#: The core of a run: agent events for the caller, intents for the driver.
Core: TypeAlias = Generator["AgentEvent | Intent", Any, None]
