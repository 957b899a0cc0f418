"""Stream events (DESIGN §2).

Every event carries ``partial``: the assistant message as it stood at that
event. It never changes afterwards and is built lazily on first access from
the assembler's append-only state, so producing an event costs O(1) whatever
the length of the output; reading ``partial`` costs O(content).

Events are frozen ``msgspec.Struct`` values that the garbage collector does not
track (``gc=False``), so long streams keep scaling linearly.
"""

from __future__ import annotations

from typing import Any, ClassVar, Literal, TypeAlias

import msgspec

from .types import (
    AssistantMessage,
    Citation,
    ImageContent,
    ProviderItem,
    ServerToolCall,
    ServerToolResult,
    TextContent,
    ThinkingContent,
    ToolCall,
)

__all__ = [
    "BlockEvent",
    "CitationEvent",
    "DoneEvent",
    "ErrorEvent",
    "Event",
    "Replay",
    "RestartEvent",
    "SnapshotSource",
    "StartEvent",
    "TextDeltaEvent",
    "TextEndEvent",
    "TextStartEvent",
    "ThinkingDeltaEvent",
    "ThinkingEndEvent",
    "ThinkingStartEvent",
    "ToolCallDeltaEvent",
    "ToolCallEndEvent",
    "ToolCallStartEvent",
]


class SnapshotSource:
    """Builds the message as it stood at a version; shared by all events of a stream.

    The :class:`~modelwire._wire.assemble.Assembler` is its own snapshot source: events point at it, and it
    points at no event, so a finished stream is freed by reference counting alone
    (no cycle for the garbage collector to find).
    """

    __slots__ = ()

    def snapshot(self, v: int) -> AssistantMessage:
        """The assistant message as it stood at version ``v``."""
        raise NotImplementedError


class _Event(msgspec.Struct, frozen=True, gc=False, kw_only=True, repr_omit_defaults=True):
    type: ClassVar[str]
    # The snapshot is taken from ``_src`` at version ``_v`` on first access.
    _src: SnapshotSource | None = None
    _v: int = 0
    _partial: AssistantMessage | None = None

    @property
    def partial(self) -> AssistantMessage:
        """The assistant message as it stood at this event (immutable)."""
        p = self._partial
        if p is None:
            src = self._src
            assert src is not None
            p = src.snapshot(self._v)
            msgspec.structs.force_setattr(self, "_partial", p)
        return p

    def __repr__(self) -> str:
        fields = ", ".join(
            f"{name}={getattr(self, name)!r}"
            for name in self.__struct_fields__
            if not name.startswith("_")
        )
        return f"{type(self).__name__}({fields})"

    def to_dict(self) -> dict[str, Any]:
        """The public fields as plain data, ``type`` first (used by ``--json`` output)."""
        out: dict[str, Any] = {"type": self.type}
        for name in self.__struct_fields__:
            if not name.startswith("_"):
                out[name] = msgspec.to_builtins(getattr(self, name))
        return out


class StartEvent(_Event, frozen=True):
    """The stream started; always the first event.

    ``partial`` is still empty. Every stream has it, also one that fails before the
    provider answers (a refused connection, an HTTP error): ``start``, then the
    ``error`` event.
    """

    type: ClassVar[Literal["start"]] = "start"


class TextStartEvent(_Event, frozen=True):
    """A text block appeared at ``content_index``.

    Then its ``text_delta`` events, then ``text_end``.

    Attributes:
        content_index: The block's index in ``partial.content``.
    """

    type: ClassVar[Literal["text_start"]] = "text_start"
    content_index: int


class TextDeltaEvent(_Event, frozen=True):
    """Text appended to the block at ``content_index``.

    Print ``delta`` as it comes for a live answer; ``partial`` has the text so far.

    Attributes:
        content_index: The block's index in ``partial.content``.
        delta: The new text.
    """

    type: ClassVar[Literal["text_delta"]] = "text_delta"
    content_index: int
    delta: str


class TextEndEvent(_Event, frozen=True):
    """The text block at ``content_index`` is complete.

    Attributes:
        content_index: The block's index in ``partial.content``.
        content: The whole block, with its citations and signature.
    """

    type: ClassVar[Literal["text_end"]] = "text_end"
    content_index: int
    content: TextContent


class ThinkingStartEvent(_Event, frozen=True):
    """A thinking block appeared at ``content_index``.

    Only from a model that reasons and a provider that shows it (summaries or the
    full text); then ``thinking_delta`` events, then ``thinking_end``.

    Attributes:
        content_index: The block's index in ``partial.content``.
    """

    type: ClassVar[Literal["thinking_start"]] = "thinking_start"
    content_index: int


class ThinkingDeltaEvent(_Event, frozen=True):
    """Reasoning text appended to the block at ``content_index``.

    Attributes:
        content_index: The block's index in ``partial.content``.
        delta: The new reasoning text.
    """

    type: ClassVar[Literal["thinking_delta"]] = "thinking_delta"
    content_index: int
    delta: str


class ThinkingEndEvent(_Event, frozen=True):
    """The thinking block at ``content_index`` is complete.

    Attributes:
        content_index: The block's index in ``partial.content``.
        content: The whole block, with the signature needed to replay it.
    """

    type: ClassVar[Literal["thinking_end"]] = "thinking_end"
    content_index: int
    content: ThinkingContent


class ToolCallStartEvent(_Event, frozen=True):
    """A tool call appeared at ``content_index``; its id and name are in ``partial``.

    Then its ``tool_call_delta`` events (the arguments text) and ``tool_call_end``.
    Show it as progress; do not act on it yet.

    Attributes:
        content_index: The block's index in ``partial.content``.
    """

    type: ClassVar[Literal["tool_call_start"]] = "tool_call_start"
    content_index: int


class ToolCallDeltaEvent(_Event, frozen=True):
    """Arguments text appended to the call at ``content_index`` (not yet an action).

    The arguments arrive as JSON text in pieces; they are parsed at ``tool_call_end``.

    Attributes:
        content_index: The block's index in ``partial.content``.
        delta: The new piece of the arguments' JSON text.
    """

    type: ClassVar[Literal["tool_call_delta"]] = "tool_call_delta"
    content_index: int
    delta: str


class ToolCallEndEvent(_Event, frozen=True):
    """The call at ``content_index`` is complete; ``tool_call.arguments`` parsed.

    Only a ``done(tool_use)`` that follows makes it an action.

    Attributes:
        content_index: The block's index in ``partial.content``.
        tool_call: The complete call: ``id``, ``name``, parsed ``arguments``.
    """

    type: ClassVar[Literal["tool_call_end"]] = "tool_call_end"
    content_index: int
    tool_call: ToolCall


class BlockEvent(_Event, frozen=True):
    """A block that arrives whole appeared at ``content_index``: a tool the provider
    ran (``ServerToolCall``; never an action for the caller), its result
    (``ServerToolResult``), an opaque ``ProviderItem``, or an image the model
    generated (``ImageContent``).

    Attributes:
        content_index: The block's index in ``partial.content``.
        content: The whole block.
    """

    type: ClassVar[Literal["block"]] = "block"
    content_index: int
    content: ServerToolCall | ServerToolResult | ProviderItem | ImageContent


class CitationEvent(_Event, frozen=True):
    """A citation was added to the text block at ``content_index``.

    Sent by providers that ground answers in sources (web search, documents); the
    block's ``citations`` hold them all at ``text_end``.

    Attributes:
        content_index: The block's index in ``partial.content``.
        citation: The source: its title, URL or document and the cited text.
    """

    type: ClassVar[Literal["citation"]] = "citation"
    content_index: int
    citation: Citation


class DoneEvent(_Event, frozen=True):
    """Terminal: the response ended well; ``reason`` is stop, length or tool_use.

    Always the last event of a stream that did not fail. ``length`` means
    ``max_tokens`` cut the answer (its tool calls are not trusted); ``tool_use``
    means the calls in ``message.tool_calls`` are now actions to execute.

    Attributes:
        reason: ``"stop"``, ``"length"`` or ``"tool_use"``.
        message: The final message (``stop_reason`` equals ``reason``).
    """

    type: ClassVar[Literal["done"]] = "done"
    reason: Literal["stop", "length", "tool_use"]
    message: AssistantMessage


class ErrorEvent(_Event, frozen=True):
    """Terminal: the response failed (``error``) or was cancelled (``aborted``).

    ``message`` keeps all content received so far; ``message.error`` says why.

    Attributes:
        reason: ``"error"`` or ``"aborted"``.
        message: The final message; ``message.raise_for_error()`` raises the typed
            error.
    """

    type: ClassVar[Literal["error"]] = "error"
    reason: Literal["error", "aborted"]
    message: AssistantMessage


class RestartEvent(_Event, frozen=True):
    """A :class:`~modelwire.Fallback` with ``after_content="restart"`` starts over on its
    next model after content was delivered: ``message`` is the failed response as it
    stood (its content kept, ``message.error`` says why). The events after it are the
    next model's, from content index 0; the stream's one terminal event is still last."""

    type: ClassVar[Literal["restart"]] = "restart"
    message: AssistantMessage


Event: TypeAlias = (
    StartEvent
    | TextStartEvent
    | TextDeltaEvent
    | TextEndEvent
    | ThinkingStartEvent
    | ThinkingDeltaEvent
    | ThinkingEndEvent
    | ToolCallStartEvent
    | ToolCallDeltaEvent
    | ToolCallEndEvent
    | BlockEvent
    | CitationEvent
    | RestartEvent
    | DoneEvent
    | ErrorEvent
)
"""Any event of a model stream: what iterating ``mw.stream`` gives.

Dispatch on ``event.type`` (``"text_delta"``, ``"tool_call_end"``, ``"done"``…) or
on the class. Every event carries the response so far as ``partial``; exactly one
terminal event, :class:`DoneEvent` or :class:`ErrorEvent`, ends every stream and
carries the final ``message``.
"""


class Replay(list[Event]):
    """What :func:`modelwire.replay` returns: the list of events (DESIGN §2, a
    plain ``list`` in every way) whose last item is the terminal event, with the
    final message typed, so a caller needs no ``events[-1].message`` on the
    :data:`Event` union.

    ``terminal`` is that ``done``/``error`` event and ``message`` its
    :class:`~modelwire.types.AssistantMessage`; both are fixed when the replay is
    built (changing the list afterwards does not change them).
    """

    __slots__ = ("_terminal",)

    def __init__(self, events: list[Event]) -> None:
        super().__init__(events)
        last = events[-1] if events else None
        if not isinstance(last, DoneEvent | ErrorEvent):
            raise ValueError("a replay ends with its terminal done or error event")
        self._terminal: DoneEvent | ErrorEvent = last

    @property
    def terminal(self) -> DoneEvent | ErrorEvent:
        """The ``done`` or ``error`` event that ended the response."""
        return self._terminal

    @property
    def message(self) -> AssistantMessage:
        """The final message: ``terminal.message``."""
        return self._terminal.message
