"""Messages, tools and the conversation (``Context``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NoReturn, TypeAlias

import msgspec

from ..errors import ConfigurationError, ErrorInfo, from_info
from ._base import StopReason, _require_str, _set, _Value, now_ms
from ._content import (
    ASSISTANT_BLOCKS,
    USER_BLOCKS,
    AssistantContent,
    ServerToolCall,
    TextContent,
    ToolCall,
    UserContent,
)
from ._usage import Usage


def _tuple_content(
    owner: str, content: Any, allowed: tuple[type, ...], field: str = "content"
) -> tuple[Any, ...]:
    if isinstance(content, list | tuple):
        items = tuple(content)
    else:
        raise ConfigurationError(
            f"{owner}.{field} must be a list or tuple, got {type(content).__name__}"
        )
    for i, block in enumerate(items):
        if not isinstance(block, allowed):
            names = ", ".join(t.__name__ for t in allowed)
            raise ConfigurationError(
                f"{owner}.{field}[{i}] must be one of {names}, got {type(block).__name__}"
            )
    return items


class UserMessage(_Value, frozen=True, tag_field="role", tag="user"):
    """What the user says: a string, or text, image, document and audio blocks."""

    role: ClassVar[Literal["user"]] = "user"
    """The tag (``user``)."""

    content: str | tuple[UserContent, ...]
    """The text, or a tuple of ``TextContent``/``ImageContent``/``DocumentContent``/
    ``AudioContent``."""
    timestamp: int = msgspec.field(default_factory=now_ms)
    """Milliseconds since the epoch."""

    if TYPE_CHECKING:
        # The constructor takes a list too (turned into a tuple, DESIGN §2a).
        def __init__(
            self, *, content: str | Sequence[UserContent], timestamp: int = ...
        ) -> None: ...

    def __post_init__(self) -> None:
        if not isinstance(self.content, str):
            _set(
                self,
                "content",
                _tuple_content("UserMessage", self.content, USER_BLOCKS),
            )


class AssistantMessage(_Value, frozen=True, tag_field="role", tag="assistant", gc=False):
    """One response of a model, final or as a partial snapshot."""

    role: ClassVar[Literal["assistant"]] = "assistant"
    """The tag (``assistant``)."""

    content: tuple[AssistantContent, ...]
    """Blocks in the order they first appeared in the stream."""
    api: str
    """The wire API that produced it."""
    provider: str
    """The provider name from the model."""
    model: str
    """The model id that was requested (``Model.id``; ``""`` in a replay without a
    model). Handoff compares it with the next request's model, so it stays the
    requested id even when the provider answers with a dated snapshot of it."""
    usage: Usage = msgspec.field(default_factory=Usage)
    """Token counts and cost."""
    stop_reason: StopReason | None = None
    """How it ended; ``None`` only on a partial snapshot."""
    error: ErrorInfo | None = None
    """Set when ``stop_reason`` is ``error`` or ``aborted``."""
    provider_stop_reason: str | None = None
    """The raw finish reason the provider sent."""
    response_id: str | None = None
    """The provider's response id."""
    response_model: str | None = None
    """The model the provider says answered, as the stream names it: OpenAI Chat
    and Responses ``model``, Anthropic ``message.model``, Gemini ``modelVersion``
    (e.g. ``gpt-4o-2024-08-06`` for a request of ``gpt-4o``); ``None`` when the
    stream does not say. Kept apart from :attr:`model`, the id that was requested."""
    timestamp: int = msgspec.field(default_factory=now_ms)
    """Milliseconds since the epoch."""

    if TYPE_CHECKING:
        # The constructor takes a list too (turned into a tuple, DESIGN §2a).
        def __init__(
            self,
            *,
            content: Sequence[AssistantContent],
            api: str,
            provider: str,
            model: str,
            usage: Usage = ...,
            stop_reason: StopReason | None = None,
            error: ErrorInfo | None = None,
            provider_stop_reason: str | None = None,
            response_id: str | None = None,
            response_model: str | None = None,
            timestamp: int = ...,
        ) -> None: ...

    def __post_init__(self) -> None:
        if type(self.content) is not tuple:
            _set(
                self,
                "content",
                _tuple_content("AssistantMessage", self.content, ASSISTANT_BLOCKS),
            )

    @property
    def text(self) -> str:
        """All text blocks joined."""
        return "".join(b.text for b in self.content if isinstance(b, TextContent))

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The tool-call blocks, in order."""
        return tuple(b for b in self.content if isinstance(b, ToolCall))

    @property
    def server_tool_calls(self) -> tuple[ServerToolCall, ...]:
        """The tools the provider ran itself, in order (never actions for the caller)."""
        return tuple(b for b in self.content if isinstance(b, ServerToolCall))

    def raise_for_error(self) -> None:
        """Raise the matching :mod:`modelwire.errors` exception if the message failed."""
        if self.error is not None:
            _raise(self.error)

    @property
    def parsed(self) -> Any:
        """The validated value of a response asked for with ``output=``.

        Reading it on a failed message raises that failure (``OutputInvalidError``
        when the output did not validate, naming the failing paths); on a response
        that called tools instead of answering, ``OutputInvalidError``; on a message
        made without ``output=`` (or rebuilt from JSON: the value is not part of
        the message's JSON), ``ConfigurationError``.
        """
        if self.error is not None:
            _raise(self.error)
        state = getattr(self, "__dict__", None)
        if not state or "_output" not in state:
            raise ConfigurationError(
                "this message has no parsed output: ask for one with output= "
                "(mw.complete(model, context, output=Schema))"
            )
        value, pending = state["_output"]
        if pending is not None:
            from ..errors import OutputInvalidError

            raise OutputInvalidError(pending)
        return value


class _OutputMessage(AssistantMessage, frozen=True, tag="assistant", gc=True, dict=True):
    """An :class:`AssistantMessage` that carries the value ``parsed`` returns.

    The value lives in the instance ``__dict__``, not in a field: it is a Python
    object of the caller's type (a pydantic model, a Struct…) and is never part of
    the message's JSON or its equality. (``gc=True``: a ``__dict__`` needs the
    collector, so this is only made once per call, for the final message.)
    """

    def __repr__(self) -> str:
        return "AssistantMessage" + AssistantMessage.__repr__(self)[len(type(self).__name__) :]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AssistantMessage):
            return NotImplemented
        return msgspec.structs.astuple(self) == msgspec.structs.astuple(other)

    __hash__ = AssistantMessage.__hash__


def with_output(message: AssistantMessage, value: Any, pending: str | None) -> AssistantMessage:
    """``message`` carrying ``value`` for ``parsed`` (or the reason it has none yet)."""
    fields = {name: getattr(message, name) for name in message.__struct_fields__}
    out = _OutputMessage(**fields)
    out.__dict__["_output"] = (value, pending)
    return out


def _raise(info: ErrorInfo) -> NoReturn:
    raise from_info(info)


class ToolResultMessage(_Value, frozen=True, tag_field="role", tag="tool_result"):
    """The result of executing one tool call, sent back to the model."""

    role: ClassVar[Literal["tool_result"]] = "tool_result"
    """The tag (``tool_result``)."""

    tool_call_id: str
    """The id of the ``ToolCall`` this answers."""
    tool_name: str
    """The tool's name."""
    content: tuple[UserContent, ...]
    """Text, image, document and audio blocks (a plain string is turned into one text
    block)."""
    is_error: bool = False
    """True when the call failed; the content says why and what to do."""
    details: Any = None
    """Structured data for the application; never sent to the model."""
    timestamp: int = msgspec.field(default_factory=now_ms)
    """Milliseconds since the epoch."""

    if TYPE_CHECKING:
        # The constructor takes a str (one text block) or a list too (DESIGN §2a).
        def __init__(
            self,
            *,
            tool_call_id: str,
            tool_name: str,
            content: str | Sequence[UserContent],
            is_error: bool = False,
            details: Any = None,
            timestamp: int = ...,
        ) -> None: ...

    def __post_init__(self) -> None:
        _require_str("ToolResultMessage", "tool_call_id", self.tool_call_id, non_empty=True)
        _require_str("ToolResultMessage", "tool_name", self.tool_name)
        if isinstance(self.content, str):
            _set(self, "content", (TextContent(text=self.content),))
        else:
            _set(
                self,
                "content",
                _tuple_content("ToolResultMessage", self.content, USER_BLOCKS),
            )

    @property
    def text(self) -> str:
        """All text blocks joined."""
        return "".join(b.text for b in self.content if isinstance(b, TextContent))


Message: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage


class ToolDefinition(_Value, frozen=True):
    """A tool the model may call."""

    name: str
    """Name the model uses to call it."""
    description: str
    """When to use it and what it returns, written for the model."""
    parameters: dict[str, Any]
    """JSON Schema (Draft 2020-12) of the arguments object."""

    def __post_init__(self) -> None:
        _require_str("ToolDefinition", "name", self.name, non_empty=True)
        if not isinstance(self.parameters, dict):
            raise ConfigurationError("ToolDefinition.parameters must be a JSON Schema dict")
        # Every $ref must resolve inside the schema (no fetching): a pure walk that
        # needs neither jsonschema nor the tools package.
        from .._schema_refs import check_refs

        check_refs(self.parameters, f"ToolDefinition {self.name!r}")


class Context(_Value, frozen=True):
    """A provider-neutral conversation: system prompt, messages and tools."""

    system_prompt: str | None = None
    """Instructions sent as the provider's system/developer prompt."""
    messages: tuple[Message, ...] = ()
    """The transcript, oldest first."""
    tools: tuple[ToolDefinition, ...] | None = None
    """Tools the model may call (``None``: none declared)."""

    if TYPE_CHECKING:
        # The constructor takes lists too (turned into tuples, DESIGN §2a).
        def __init__(
            self,
            *,
            system_prompt: str | None = None,
            messages: Sequence[Message] = (),
            tools: Sequence[ToolDefinition] | None = None,
        ) -> None: ...

    def __post_init__(self) -> None:
        if type(self.messages) is not tuple:
            _set(
                self,
                "messages",
                _tuple_content(
                    "Context",
                    self.messages,
                    (UserMessage, AssistantMessage, ToolResultMessage),
                    "messages",
                ),
            )
        if self.tools is not None and type(self.tools) is not tuple:
            if not isinstance(self.tools, list):
                raise ConfigurationError("Context.tools must be a list of ToolDefinition")
            _set(self, "tools", tuple(self.tools))
        for i, tool in enumerate(self.tools or ()):
            if not isinstance(tool, ToolDefinition):
                raise ConfigurationError(
                    f"Context.tools[{i}] must be a ToolDefinition, got {type(tool).__name__}"
                )

    def with_messages(self, *messages: Message) -> Context:
        """A new context with ``messages`` appended."""
        return msgspec.structs.replace(self, messages=(*self.messages, *messages))
