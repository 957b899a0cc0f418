"""The values a tool works with: ``ToolOutput``, ``ToolFailure``, ``ToolContext`` and
the failure texts the model reads (:data:`FAILURE_HINTS`, :func:`failure_text`)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, TypeAlias

import msgspec

from ..errors import ConfigurationError
from ..types import AudioContent, DocumentContent, ImageContent, TextContent, ToolCall
from ..types._content import UserContent

if TYPE_CHECKING:
    from ..types import Message

__all__ = [
    "FAILURE_HINTS",
    "FailureKind",
    "ToolContext",
    "ToolFailure",
    "ToolOutput",
    "ToolResult",
    "failure_text",
]

#: What ``execute`` may return.
ToolResult: TypeAlias = "str | ToolOutput"
#: A failure kind: one of :data:`FAILURE_HINTS` or a tool's own (any non-empty string).
FailureKind: TypeAlias = str

# Kept short, imperative and specific: the model reads this text verbatim in the
# tool result. Read-only: a caller cannot change what every agent in the process
# tells its model.
FAILURE_HINTS: Mapping[str, str] = MappingProxyType(
    {
        "not_found": (
            "Check the path with ls (paths are relative to the workspace root) "
            "or find the file with grep, then try again."
        ),
        "permission_denied": (
            "Do not retry this path: this tool can only reach files inside the workspace root. "
            "Use a relative path under the root."
        ),
        "invalid_arguments": (
            "Fix the arguments so they match the tool's parameter schema, then call the tool again."
        ),
        "too_large": (
            "Read a smaller part: pass offset (first line, 1-based) and limit (number of lines), "
            "or find the lines you need with grep first."
        ),
        "not_text": (
            "This tool only shows UTF-8 text; do not retry it on this file. "
            "Tell the user if its content matters."
        ),
        "stale_version": (
            "The file changed since you read it: read it again to get the current content "
            "and version, then retry."
        ),
        "timeout_unknown": (
            "The call was stopped at its time limit and whether it had any effect is unknown: "
            "check the current state before retrying, and ask for less at once."
        ),
        "unknown_tool": "Call only the tools you were given, by their exact names.",
        "execution_failed": (
            "Retry once if the error looks temporary; otherwise continue without this tool "
            "and tell the user what failed."
        ),
        "in_doubt": (
            "The run stopped while this call was running, so it is not known whether it ran: "
            "check the current state before retrying it."
        ),
        "denied": (
            "The user denied this call: do not retry it unchanged; "
            "continue without it or ask the user."
        ),
        "blocked": (
            "The application did not allow this call: do not retry it unchanged; "
            "continue without it or ask the user."
        ),
        "duplicate_call": (
            "This call was already made and answered earlier in the conversation: "
            "use that result instead of repeating the call."
        ),
        "output_limit": (
            "Nothing was executed. Make the call again with complete arguments; "
            "if they are long, ask for less at once."
        ),
        "context_overflow": (
            "Nothing was executed. The conversation no longer fits the model's context "
            "window: the application must shorten it before continuing."
        ),
        "tool_unavailable": (
            "The server behind this tool stopped or did not answer; whether the call ran is "
            "unknown. Do not retry it now: continue without this tool and tell the user."
        ),
        "aborted": (
            "The user stopped the run before this call finished; whether it had any effect "
            "is unknown. Wait for the user's instructions."
        ),
    }
)
"""What the model is told to do next, per failure kind (a read-only mapping).

The standard kinds of a :class:`ToolFailure`: ``not_found``, ``permission_denied``,
``invalid_arguments``, ``too_large``, ``not_text``, ``stale_version``,
``timeout_unknown``, ``unknown_tool``, ``execution_failed``, ``blocked``,
``denied``, ``in_doubt``, ``duplicate_call``, ``output_limit``, ``context_overflow`` and ``aborted``.
:func:`failure_text` appends the kind's hint to every failed result; raise
``ToolFailure(kind, message, hint=...)`` to say something more specific, and use one
of these kinds where it fits, so the model gets the advice that goes with it.
"""


def failure_text(kind: str, message: str, hint: str | None = None) -> str:
    """The text the model sees for a failed call: the kind, what happened, what to do.

    The agent builds every failed tool result with it; call it to show the same text
    elsewhere (a log, a custom loop).

    Args:
        kind: The failure kind (``not_found``…, or a tool's own).
        message: What happened.
        hint: What to do; default: the kind's :data:`FAILURE_HINTS` entry (that of
            ``execution_failed`` for a kind it lacks).

    Returns:
        ``Error [kind]: message`` and a ``What to do:`` line.

    Example:
        ```python
        from modelwire.tools import failure_text

        print(failure_text("not_found", "no file 'a.txt'", hint="List the folder with ls."))
        # Error [not_found]: no file 'a.txt'
        # What to do: List the folder with ls.
        ```
    """
    what = hint if hint is not None else FAILURE_HINTS.get(kind, FAILURE_HINTS["execution_failed"])
    return f"Error [{kind}]: {message}\nWhat to do: {what}"


class ToolFailure(Exception):
    """A failure the model should act on, raised by a tool (or by the agent's checks).

    ``kind`` is one of :data:`FAILURE_HINTS` (``not_found``, ``permission_denied``,
    ``invalid_arguments``, ``too_large``, ``not_text``, ``stale_version``,
    ``timeout_unknown``, ``unknown_tool``, ``execution_failed``, ``blocked``,
    ``denied``, ``in_doubt``, ``duplicate_call``, ``output_limit``, ``aborted``) or a tool's own kind;
    ``message`` says what happened; ``hint`` replaces the kind's default "what to
    do" line; ``details`` is structured data kept on the result message for the
    application (never sent to the model).

    The agent answers the call with an error result (``is_error=True``) whose text is
    :attr:`text`, and the run goes on: the model reads what went wrong and what to
    do. Any other exception from a tool becomes ``execution_failed``; raise this one
    to say something the model can act on.

    Args:
        kind: The failure kind.
        message: What happened, for the model.
        hint: What to do next (default: the kind's hint).
        details: Data for the application, kept on the result message.

    Raises:
        ConfigurationError: An empty ``kind``.

    Example:
        ```python
        import modelwire as mw


        @mw.tool
        def lookup(order_id: str) -> mw.ToolOutput:
            "The status of an order."
            if not order_id.startswith("A-"):
                raise mw.ToolFailure(
                    "not_found", f"no order {order_id!r}", hint="Order ids look like A-123."
                )
            return mw.ToolOutput("shipped", details={"carrier": "DHL"})


        ctx = mw.ToolContext.for_test("lookup")
        print(lookup.execute({"order_id": "A-1"}, ctx).details)  # {'carrier': 'DHL'}
        try:
            lookup.execute({"order_id": "42"}, ctx)
        except mw.ToolFailure as failure:
            print(failure.text)
        # Error [not_found]: no order '42'
        # What to do: Order ids look like A-123.
        ```
    """

    def __init__(
        self,
        kind: FailureKind,
        message: str,
        *,
        hint: str | None = None,
        details: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(kind, str) or not kind:
            raise ConfigurationError("ToolFailure kind must be a non-empty string")
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.hint = hint
        self.details = dict(details) if details else {}

    def __str__(self) -> str:
        return f"[{self.kind}] {self.message}"

    @property
    def text(self) -> str:
        """What the model sees (see :func:`failure_text`)."""
        return failure_text(self.kind, self.message, self.hint)


class ToolOutput(msgspec.Struct, frozen=True):
    """What a tool returns when it has more than a string to say.

    ``content`` (a string, or text, image, document and audio blocks) is sent to
    the model;
    ``details`` is kept on the ``ToolResultMessage`` for the application and
    never sent to the model.

    Args:
        content: What the model sees: a string, or a list of ``TextContent``,
            ``ImageContent`` (a screenshot, a chart), ``DocumentContent`` and
            ``AudioContent`` blocks.
        details: Structured data for the application.

    Raises:
        ConfigurationError: ``content`` holds another kind of block.
    """

    content: str | tuple[UserContent, ...]
    """Sent to the model."""
    details: Any = None
    """Structured data for the application (e.g. a file's version token)."""

    if TYPE_CHECKING:
        # The constructor takes a list of blocks too (turned into a tuple).
        def __init__(self, content: str | Sequence[UserContent], details: Any = None) -> None: ...

    def __post_init__(self) -> None:
        content = self.content
        if isinstance(content, str):
            return
        if not isinstance(content, list | tuple) or not all(
            isinstance(b, TextContent | ImageContent | DocumentContent | AudioContent)
            for b in content
        ):
            raise ConfigurationError(
                "ToolOutput.content must be a str or a sequence of TextContent, "
                "ImageContent, DocumentContent or AudioContent"
            )
        msgspec.structs.force_setattr(self, "content", tuple(content))

    @property
    def text(self) -> str:
        """The text part of ``content``."""
        if isinstance(self.content, str):
            return self.content
        return "".join(b.text for b in self.content if isinstance(b, TextContent))


class ToolContext:
    """What ``execute(args, ctx)`` gets besides its arguments.

    ``tool_call`` is the call being executed and ``messages`` the transcript up to
    the assistant message that made it. ``update(partial)`` reports progress (the
    agent emits a ``tool_execution_update`` event; callable from any thread).
    ``cancelled`` turns true when the run is aborted or the call's time limit
    passed: a sync tool (which runs in a worker thread and cannot be interrupted)
    should check it in long loops; an async tool is cancelled with
    ``asyncio.CancelledError`` as usual.

    The agent builds one per call; build one with :meth:`for_test` to call a tool's
    ``execute`` yourself.

    Args:
        tool_call: The call being executed.
        messages: The transcript up to the assistant message that made the call.
        on_update: Receives what :meth:`update` reports.
        cancel: The event that :attr:`cancelled` reads (default: a new one).
    """

    __slots__ = ("_cancel", "_on_update", "messages", "tool_call")

    def __init__(
        self,
        tool_call: ToolCall,
        *,
        messages: Sequence[Message] = (),
        on_update: Callable[[str | ToolOutput], None] | None = None,
        cancel: threading.Event | None = None,
    ) -> None:
        self.tool_call = tool_call
        self.messages: tuple[Message, ...] = tuple(messages)
        self._on_update = on_update
        self._cancel = cancel if cancel is not None else threading.Event()

    @classmethod
    def for_test(cls, name: str = "tool", call_id: str = "call_test") -> ToolContext:
        """A context for calling ``execute`` directly (tests, scripts).

        Args:
            name: The tool name of the call.
            call_id: The call id.

        Returns:
            A context with an empty transcript that is never cancelled.
        """
        return cls(ToolCall(id=call_id, name=name, arguments={}))

    @property
    def tool_call_id(self) -> str:
        """The id of the call being executed."""
        return self.tool_call.id

    @property
    def tool_name(self) -> str:
        """The name of the tool called."""
        return self.tool_call.name

    @property
    def cancelled(self) -> bool:
        """True once the call should stop (run aborted or time limit passed)."""
        return self._cancel.is_set()

    def cancel(self) -> None:
        """Mark the call as cancelled (used by the agent)."""
        self._cancel.set()

    def update(self, partial: str | ToolOutput) -> None:
        """Report progress; shown to the application, not sent to the model.

        Args:
            partial: The progress so far: text, or a ``ToolOutput``.

        Raises:
            ConfigurationError: ``partial`` is neither.
        """
        if not isinstance(partial, str | ToolOutput):
            raise ConfigurationError("ToolContext.update takes a str or a ToolOutput")
        if self._on_update is not None:
            self._on_update(partial)
