"""Protocol types: immutable, tagged values (DESIGN §2, §2a).

Every type is a frozen, keyword-only :class:`msgspec.Struct`. Content blocks are
tagged by ``type``, messages by ``role``; the tag is readable as an attribute
(``block.type``, ``message.role``). Constructors turn lists into tuples; frozen
is shallow (``ToolCall.arguments`` stays a dict). ``to_json``/``from_json``
round-trip every type; only ``from_json`` validates field types.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, NoReturn, TypeAlias, TypeVar

import msgspec

# ErrorInfo lives in errors (the exception tree builds it); re-exported here as a
# protocol type, so errors never imports types (no import cycle).
from ._redact import redact_url
from .errors import ConfigurationError, ErrorInfo, from_info

__all__ = [
    "AssistantContent",
    "AssistantMessage",
    "Context",
    "Cost",
    "ErrorInfo",
    "ImageContent",
    "Message",
    "Model",
    "ModelCost",
    "StopReason",
    "TextContent",
    "ThinkingContent",
    "ToolCall",
    "ToolDefinition",
    "ToolResultMessage",
    "Usage",
    "UserContent",
    "UserMessage",
    "check_json",
    "from_json",
    "now_ms",
    "to_json",
]

#: How a response ended. A partial snapshot has ``stop_reason=None``.
StopReason: TypeAlias = Literal["stop", "length", "tool_use", "error", "aborted"]


def now_ms() -> int:
    """Milliseconds since the epoch: the default ``timestamp`` of every message."""
    return time.time_ns() // 1_000_000


def _set(obj: Any, name: str, value: Any) -> None:
    msgspec.structs.force_setattr(obj, name, value)


def _require_str(owner: str, field: str, value: object, *, non_empty: bool = False) -> None:
    if not isinstance(value, str):
        raise ConfigurationError(f"{owner}.{field} must be a string, got {type(value).__name__}")
    if non_empty and not value:
        raise ConfigurationError(f"{owner}.{field} must be a non-empty string")


class _Value(msgspec.Struct, frozen=True, kw_only=True):
    pass


# --------------------------------------------------------------------------- content


class TextContent(_Value, frozen=True, tag_field="type", tag="text", gc=False):
    """Plain text output or input."""

    type: ClassVar[Literal["text"]] = "text"
    """The tag (``text``)."""

    text: str
    """The text."""
    signature: str | None = None
    """Opaque provider data tied to this block (e.g. an OpenAI Responses message
    item id, a Gemini ``thoughtSignature``); replayed only to the same model."""

    def __post_init__(self) -> None:
        _require_str("TextContent", "text", self.text)


class ThinkingContent(_Value, frozen=True, tag_field="type", tag="thinking", gc=False):
    """The model's reasoning, as far as the provider exposes it."""

    type: ClassVar[Literal["thinking"]] = "thinking"
    """The tag (``thinking``)."""

    thinking: str
    """The reasoning text (summary or full, as the provider sent it)."""
    signature: str | None = None
    """Opaque signature needed to replay this block to the same model: an
    Anthropic thinking signature, redacted-thinking data, an OpenAI Responses
    reasoning item (JSON), a Gemini ``thoughtSignature``."""
    redacted: bool = False
    """True when the provider sent the reasoning encrypted (the data is in ``signature``)."""

    def __post_init__(self) -> None:
        _require_str("ThinkingContent", "thinking", self.thinking)


class ImageContent(_Value, frozen=True, tag_field="type", tag="image", gc=False):
    """An image given as base64 data."""

    type: ClassVar[Literal["image"]] = "image"
    """The tag (``image``)."""

    data: str
    """Base64-encoded bytes of the image."""
    mime_type: str
    """e.g. ``image/png``."""

    def __post_init__(self) -> None:
        _require_str("ImageContent", "mime_type", self.mime_type, non_empty=True)


class ToolCall(_Value, frozen=True, tag_field="type", tag="tool_call", gc=False):
    """A call the model proposes; an action only once the response ended ``tool_use``."""

    type: ClassVar[Literal["tool_call"]] = "tool_call"
    """The tag (``tool_call``)."""

    id: str
    """The provider's call id (``tool_result`` messages answer it)."""
    name: str
    """The tool's name."""
    arguments: dict[str, Any]
    """Arguments parsed from ``raw_arguments``: ``{}`` when they were not a JSON
    object or the response ended by ``length`` (never trusted then)."""
    raw_arguments: str | None = None
    """The exact text the provider sent; this is what gets replayed."""
    signature: str | None = None
    """Opaque provider data for this call (e.g. a Gemini ``thoughtSignature``)."""

    def __post_init__(self) -> None:
        _require_str("ToolCall", "name", self.name)
        _require_str("ToolCall", "id", self.id)


UserContent: TypeAlias = TextContent | ImageContent
AssistantContent: TypeAlias = TextContent | ThinkingContent | ToolCall


# --------------------------------------------------------------------------- usage


class Cost(_Value, frozen=True, gc=False):
    """Cost of one response in dollars, by token class."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    total: float = 0.0


class Usage(_Value, frozen=True, gc=False):
    """Token counts of one response.

    ``input`` excludes cached tokens, ``output`` includes reasoning tokens once,
    and ``total_tokens == input + output + cache_read + cache_write``.
    """

    input: int = 0
    """Prompt tokens that were neither read from nor written to the cache."""
    output: int = 0
    """Generated tokens, reasoning included."""
    cache_read: int = 0
    """Prompt tokens served from the provider's cache."""
    cache_write: int = 0
    """Prompt tokens written to the provider's cache."""
    total_tokens: int = 0
    """The sum of the four counts above."""
    cost: Cost = msgspec.field(default_factory=Cost)
    """Dollar cost, from the model's prices (zero when unknown)."""


# --------------------------------------------------------------------------- messages


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
    """What the user says: a string, or text and image blocks."""

    role: ClassVar[Literal["user"]] = "user"
    """The tag (``user``)."""

    content: str | tuple[UserContent, ...]
    """The text, or a tuple of ``TextContent``/``ImageContent``."""
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
                _tuple_content("UserMessage", self.content, (TextContent, ImageContent)),
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
                _tuple_content(
                    "AssistantMessage", self.content, (TextContent, ThinkingContent, ToolCall)
                ),
            )

    @property
    def text(self) -> str:
        """All text blocks joined."""
        return "".join(b.text for b in self.content if isinstance(b, TextContent))

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The tool-call blocks, in order."""
        return tuple(b for b in self.content if isinstance(b, ToolCall))

    def raise_for_error(self) -> None:
        """Raise the matching :mod:`modelwire.errors` exception if the message failed."""
        if self.error is not None:
            _raise(self.error)


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
    """Text and image blocks (a plain string is turned into one text block)."""
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
                _tuple_content("ToolResultMessage", self.content, (TextContent, ImageContent)),
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
        from ._schema_refs import check_refs

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


# --------------------------------------------------------------------------- model


class ModelCost(_Value, frozen=True):
    """Prices in dollars per million tokens."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0

    def __post_init__(self) -> None:
        for name in ("input", "output", "cache_read", "cache_write"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ConfigurationError(f"ModelCost.{name} must be a non-negative number")
            _set(self, name, float(value))


class Model(_Value, frozen=True):
    """Where and how to reach one model.

    ``base_url`` includes the API's version segment (``…/v1``, ``…/v1beta``); the
    adapter appends the endpoint. A trailing slash is ignored.
    """

    id: str
    """The model id sent to the provider."""
    api: str
    """The wire API: a name in ``modelwire._apis`` (``modelwire._apis.api_names()``) or
    one given to ``register_api``."""
    provider: str
    """Provider name (``openai``, ``deepseek``, ``local``…): picks the env var and compat."""
    base_url: str
    """API root including the version segment."""
    name: str | None = None
    """Display name."""
    reasoning: bool = False
    """Whether the model supports a reasoning level."""
    input: tuple[str, ...] = ("text",)
    """Input kinds: ``text`` and/or ``image``."""
    cost: ModelCost = msgspec.field(default_factory=ModelCost)
    """Prices per million tokens."""
    context_window: int = 128_000
    """Maximum prompt + output tokens."""
    max_tokens: int = 16_384
    """Default and maximum output tokens."""
    headers: dict[str, str] | None = None
    """Extra HTTP headers for every request."""
    compat: dict[str, Any] | None = None
    """Overrides of the wire API's compatibility flags (see README, "Compat")."""

    def __post_init__(self) -> None:
        for field in ("id", "api", "provider", "base_url"):
            _require_str("Model", field, getattr(self, field), non_empty=True)
        if type(self.input) is not tuple:
            _set(self, "input", tuple(self.input))
        for limit in ("context_window", "max_tokens"):
            value = getattr(self, limit)
            if type(value) is not int or value <= 0:  # sent as max_tokens when no option is
                raise ConfigurationError(f"Model.{limit} must be a positive integer, got {value!r}")
        if not self.base_url.startswith(("http://", "https://")):
            raise ConfigurationError(
                f"Model.base_url must start with http:// or https://, got "
                f"{redact_url(self.base_url)!r}"
            )

    def __repr__(self) -> str:
        # user:password@ in base_url is a credential (sent as Basic auth): not shown.
        shown = (
            f"{f}={(redact_url(v) if f == 'base_url' else v)!r}"
            for f, v in ((f, getattr(self, f)) for f in self.__struct_fields__)
        )
        return f"Model({', '.join(shown)})"

    @property
    def url_root(self) -> str:
        """``base_url`` without a trailing slash."""
        return self.base_url.rstrip("/")


# --------------------------------------------------------------------------- JSON

_encoder = msgspec.json.Encoder()
T = TypeVar("T")


def to_json(value: Any) -> bytes:
    """Serialize any protocol type (or a container of them) to JSON bytes."""
    try:
        return _encoder.encode(value)
    except (TypeError, UnicodeEncodeError, msgspec.EncodeError) as exc:
        raise ConfigurationError(f"cannot serialize {type(value).__name__}: {exc}") from exc


def check_json(value: Any, path: str) -> None:
    """Raise ``ConfigurationError`` naming the path of the first value in
    ``value`` that JSON (RFC 8259) cannot carry: NaN or an infinity (§6), a str
    with a lone surrogate (§8.2), a key that is neither a str nor a number, a
    type msgspec cannot encode. What msgspec encodes faithfully passes."""
    t = type(value)
    if t is str:
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise ConfigurationError(
                    f"{path or 'value'} contains a lone surrogate, which JSON text cannot "
                    "carry: fix the string (decode bytes with errors='replace')"
                ) from None
    elif t is float:
        if not math.isfinite(value):
            raise ConfigurationError(
                f"{path or 'value'} is {value!r}, which JSON cannot carry: use a finite number"
            )
    elif value is None or t is bool or t is int:
        return
    elif isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                try:  # numbers are written as strings, as msgspec does in the body
                    _encoder.encode({k: None})
                except (TypeError, ValueError):
                    raise ConfigurationError(
                        f"{path or 'value'} has a key {k!r} of type {type(k).__name__}: "
                        "JSON object keys are strings"
                    ) from None
            check_json(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            check_json(v, f"{path}[{i}]")
    elif isinstance(value, float):
        check_json(float(value), path)
    else:
        try:
            _encoder.encode(value)
        except (TypeError, ValueError, OverflowError) as exc:
            raise ConfigurationError(
                f"{path or 'value'} is a {type(value).__name__}, which JSON cannot encode "
                f"({exc}): pass a str, number, bool, None, list or dict"
            ) from None


def from_json(data: bytes | str, type: type[T]) -> T:
    """Parse and validate JSON into ``type``; a mismatch raises ``ConfigurationError``
    naming the field path (e.g. ``Expected `str`, got `int` - at `$.messages[0].content```)."""
    try:
        return msgspec.json.decode(data, type=type)
    except msgspec.ValidationError as exc:
        raise ConfigurationError(f"invalid {_type_name(type)}: {exc}") from exc
    except msgspec.DecodeError as exc:
        raise ConfigurationError(f"invalid JSON for {_type_name(type)}: {exc}") from exc


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp)
