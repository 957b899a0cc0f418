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
    """What the user says: a string, or text, image, document and audio blocks.

    Blocks other than text go only to a model whose ``Model.input`` declares their
    kind; anything else is a ``ConfigurationError`` before any request.

    Args:
        content: The text, or a list of ``TextContent``, ``ImageContent``,
            ``DocumentContent`` and ``AudioContent`` blocks.
        timestamp: Milliseconds since the epoch (default: now).

    Raises:
        ConfigurationError: A block of a type a user message cannot hold.

    Example:
        ```python
        import base64

        import modelwire as mw

        png = base64.b64encode(b"...image bytes...").decode()
        message = mw.UserMessage(
            content=[
                mw.TextContent(text="What is in this picture?"),
                mw.ImageContent(data=png, mime_type="image/png"),
            ]
        )
        ```
    """

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
    """One response of a model, final or as a partial snapshot.

    What ``mw.complete`` returns and every stream event carries (``partial``, then
    the terminal event's ``message``). A failed response is still a message:
    ``stop_reason`` ``"error"`` or ``"aborted"`` with ``error`` saying why, and the
    content that arrived before the failure kept; :meth:`raise_for_error` turns it
    into the typed exception. Append it to the context as it is to continue the
    conversation: signatures and ids it carries are what the provider needs back.
    """

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
        """Raise the matching :mod:`modelwire.errors` exception if the message failed.

        Does nothing for a message that did not fail, so a call can be written as
        ``msg = await mw.complete(...); msg.raise_for_error()``.

        Raises:
            modelwire.errors.StreamError: The subclass for ``error.kind``
                (``RateLimitError``, ``AbortedError``…), with the status, code,
                request id and ``retryable`` of the failure.
        """
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
    """The result of executing one tool call, sent back to the model.

    Answer every ``ToolCall`` of a ``tool_use`` response with one, in the next
    request (an ``Agent`` does this for its tools).

    Args:
        tool_call_id: The ``id`` of the ``ToolCall`` this answers.
        tool_name: The tool's name.
        content: The result: a string (one text block), or a list of text, image,
            document and audio blocks.
        is_error: Whether the call failed; the content says why and what to do.
        details: Structured data for the application; never sent to the model.
        timestamp: Milliseconds since the epoch (default: now).

    Raises:
        ConfigurationError: An empty ``tool_call_id``, or a block of the wrong type.
    """

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


class SystemMessage(_Value, frozen=True, tag_field="role", tag="system"):
    """Instructions given partway through the conversation, at their place among the
    turns (``Context.system_prompt`` holds those that come first).

    A long-running agent adds one when it learns something the model must follow from
    here on, without changing the start of the prompt (which keeps the provider's prompt
    cache). Sent where it stands on the APIs that take system messages anywhere (Chat
    Completions and Responses as a ``system``/``developer`` message, Ollama, Cohere),
    and on Anthropic to a model that takes mid-conversation system messages
    (``Capabilities.mid_conversation_system``) where their placement rules allow it;
    elsewhere its text is appended to the system prompt (Gemini
    ``systemInstruction``, Bedrock ``system``), in order, after a blank line.
    """

    role: ClassVar[Literal["system"]] = "system"
    """The tag (``system``)."""

    content: str
    """The instructions."""
    timestamp: int = msgspec.field(default_factory=now_ms)
    """Milliseconds since the epoch."""

    def __post_init__(self) -> None:
        _require_str("SystemMessage", "content", self.content, non_empty=True)


Message: TypeAlias = UserMessage | AssistantMessage | ToolResultMessage | SystemMessage
"""One message of a conversation (``Context.messages``): a user's, the model's, a
tool result, or instructions given partway; ``role`` (``"user"``, ``"assistant"``,
``"tool_result"``, ``"system"``) tells them apart, also in JSON
(``mw.from_json(data, list[mw.Message])``)."""


class ToolDefinition(_Value, frozen=True, omit_defaults=True):
    """A tool the model may call.

    What ``Context.tools`` declares: the name, the description and the arguments
    schema the model sees, without an implementation. Use it to drive tool calls
    yourself; with an ``Agent``, :class:`~modelwire.Tool` (``@mw.tool``) gives one
    as its ``definition``. A ``$ref`` must resolve inside the schema
    (``ConfigurationError`` otherwise).
    """

    name: str
    """Name the model uses to call it."""
    description: str
    """When to use it and what it returns, written for the model."""
    parameters: dict[str, Any]
    """JSON Schema (Draft 2020-12) of the arguments object."""
    defer_loading: bool = False
    """For the provider's own tool search (``Capabilities.tool_search``): the tool stays
    out of the model's context until the search finds it (OpenAI Responses still shows
    its name and description). Anthropic Messages then also gets its tool search tool,
    Responses its ``tool_search``; an API without one sends the tool as any other. An
    ``Agent`` sets it only for a model whose profile says ``tool_search``."""

    def __post_init__(self) -> None:
        _require_str("ToolDefinition", "name", self.name, non_empty=True)
        if not isinstance(self.parameters, dict):
            raise ConfigurationError("ToolDefinition.parameters must be a JSON Schema dict")
        if not isinstance(self.defer_loading, bool):
            raise ConfigurationError("ToolDefinition.defer_loading must be True or False")
        # Every $ref must resolve inside the schema (no fetching): a pure walk that
        # needs neither jsonschema nor the tools package.
        from .._schema_refs import check_refs

        check_refs(self.parameters, f"ToolDefinition {self.name!r}")


#: The provider-run tools modelwire can ask for by a neutral name, each rendered in the
#: API's own form by the APIs that have it (``Capabilities.server_tools`` says which).
SERVER_TOOL_NAMES = ("web_search", "web_fetch", "code_execution")


class ServerTool(_Value, frozen=True):
    """A tool the provider runs itself (web search, code execution…), given to the model
    beside the caller's tools with the ``server_tools`` option.

    Its calls and results come back in the answer as
    :class:`~modelwire.types.ServerToolCall` and :class:`~modelwire.types.ServerToolResult`
    blocks; nothing runs on the caller's side. A model whose profile does not list the
    tool in ``Capabilities.server_tools`` refuses the call with a ``ConfigurationError``
    before any request: a provider-run tool is never dropped silently.

    Example:
        ```python
        import modelwire as mw

        search = mw.ServerTool("web_search", options={"max_uses": 3})
        print(search.name, search.options)  # web_search {'max_uses': 3}
        # then: mw.complete_sync(model, "What happened today?", server_tools=[search])
        ```
    """

    name: str
    """``web_search``, ``web_fetch`` or ``code_execution`` (:data:`SERVER_TOOL_NAMES`)."""
    options: dict[str, Any] | None = None
    """Fields of the API's own tool definition, sent as given (Anthropic's ``max_uses``,
    ``allowed_domains``; Responses' ``search_context_size``, ``filters``…)."""
    api: str | None = None
    """The wire API whose fields ``options`` are (``None``: the model's own API). A tool
    whose options belong to another API is refused: they cannot be translated."""

    def __post_init__(self) -> None:
        _require_str("ServerTool", "name", self.name, non_empty=True)
        if self.name not in SERVER_TOOL_NAMES:
            raise ConfigurationError(
                f"ServerTool.name must be one of {', '.join(SERVER_TOOL_NAMES)}, got {self.name!r}"
            )
        if self.options is not None and not isinstance(self.options, dict):
            raise ConfigurationError("ServerTool.options must be a dict of the API's fields")
        if self.api is not None:
            _require_str("ServerTool", "api", self.api, non_empty=True)


class Context(_Value, frozen=True):
    """A provider-neutral conversation: system prompt, messages and tools.

    What every call sends: the adapters render it in each wire API's own format, so
    one context can go to any provider, and a transcript from one model can be
    continued with another (each call applies ``mw.handoff``, rewriting what that
    model does not accept). It is immutable: :meth:`with_messages` returns the next
    turn's context. A prompt string may stand in for a one-message context in
    ``mw.complete`` and friends.

    Args:
        system_prompt: Instructions sent as the provider's system/developer prompt.
        messages: The transcript, oldest first: ``UserMessage``,
            ``AssistantMessage`` and ``ToolResultMessage`` (a list is fine).
        tools: Tools the model may call (``None``: none declared).

    Raises:
        ConfigurationError: A message or tool of the wrong type.

    Example:
        ```python
        import modelwire as mw

        weather = mw.ToolDefinition(
            name="weather",
            description="The current weather in a city.",
            parameters={"type": "object", "properties": {"city": {"type": "string"}}},
        )
        ctx = mw.Context(
            system_prompt="Answer in one sentence.",
            messages=[mw.UserMessage(content="Weather in Oslo?")],
            tools=[weather],
        )
        ```
    """

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
                    (UserMessage, AssistantMessage, ToolResultMessage, SystemMessage),
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

    @property
    def system_text(self) -> str | None:
        """The system prompt with the text of every :class:`SystemMessage` appended, in
        order, each after a blank line: what an API without system messages among the
        turns sends as its one system prompt."""
        parts = [m.content for m in self.messages if isinstance(m, SystemMessage)]
        if not parts:
            return self.system_prompt
        return "\n\n".join([self.system_prompt, *parts] if self.system_prompt else parts)

    def with_messages(self, *messages: Message) -> Context:
        """A new context with ``messages`` appended (this one is unchanged).

        Args:
            *messages: The messages to append, e.g. the model's reply and the tool
                results answering its calls.

        Returns:
            The new :class:`Context`.
        """
        return msgspec.structs.replace(self, messages=(*self.messages, *messages))
