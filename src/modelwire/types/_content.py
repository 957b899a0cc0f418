"""Content blocks: what a message is made of."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, TypeAlias

from ..errors import ConfigurationError
from ._base import _require_str, _set, _Value


class Citation(_Value, frozen=True, gc=False):
    """A source the provider says a piece of text rests on.

    Read from Anthropic ``citations_delta``, OpenAI Responses annotations, Chat
    ``delta.annotations`` and Perplexity ``citations``, Gemini grounding supports and
    Bedrock citation deltas. ``raw`` keeps the provider's own object, which is what is
    replayed to the same API.
    """

    kind: str
    """``url`` (a web page), ``document`` (a document sent in the request), ``file``
    (a provider-stored file) or ``other``."""
    url: str | None = None
    """The cited page, for ``url`` citations."""
    title: str | None = None
    """The page's or document's title, when given."""
    cited_text: str | None = None
    """The quoted source text, when given."""
    document: str | None = None
    """The document or file reference as the provider names it (an index, an id)."""
    start: int | None = None
    """Where the cited span starts, as the provider counts (characters, pages, chunks)."""
    end: int | None = None
    """Where the cited span ends (exclusive)."""
    raw: str | None = None
    """The provider's citation object as JSON text, exactly as received."""

    def __post_init__(self) -> None:
        _require_str("Citation", "kind", self.kind, non_empty=True)


class TextContent(_Value, frozen=True, tag_field="type", tag="text", gc=False):
    """Plain text output or input.

    A block of a message's ``content``: what the model wrote (with the sources it
    cites, when the provider says them), or text the user sends next to images or
    documents. A ``UserMessage`` of only text may use a plain string instead.

    Args:
        text: The text.
        signature: Opaque provider data, replayed only to the same model.
        citations: The sources cited for this text.

    Raises:
        ConfigurationError: ``text`` is not a string, or a citation is not a ``Citation``.
    """

    type: ClassVar[Literal["text"]] = "text"
    """The tag (``text``)."""

    text: str
    """The text."""
    signature: str | None = None
    """Opaque provider data tied to this block (e.g. an OpenAI Responses message
    item id, a Gemini ``thoughtSignature``); replayed only to the same model."""
    citations: tuple[Citation, ...] = ()
    """The sources the provider cites for this text, in the order they arrived."""

    if TYPE_CHECKING:
        # The constructor takes a list too (turned into a tuple, DESIGN §2a).
        def __init__(
            self,
            *,
            text: str,
            signature: str | None = None,
            citations: Sequence[Citation] = (),
        ) -> None: ...

    def __post_init__(self) -> None:
        _require_str("TextContent", "text", self.text)
        if type(self.citations) is not tuple:
            if not isinstance(self.citations, list):
                raise ConfigurationError("TextContent.citations must be a list or tuple")
            _set(self, "citations", tuple(self.citations))
        for i, c in enumerate(self.citations):
            if not isinstance(c, Citation):
                raise ConfigurationError(
                    f"TextContent.citations[{i}] must be a Citation, got {type(c).__name__}"
                )


class ThinkingContent(_Value, frozen=True, tag_field="type", tag="thinking", gc=False):
    """The model's reasoning, as far as the provider exposes it.

    A block of an assistant message's ``content``, streamed as ``thinking_*`` events.
    Keep it in the transcript: replayed to the same model with its ``signature``
    (some APIs require it to continue a tool-use turn); another model gets it as
    plain ``<thinking>`` text, and redacted reasoning is dropped (``mw.handoff``).
    """

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
    """An image given as base64 data: input, or an image the model generated (in an
    assistant message)."""

    type: ClassVar[Literal["image"]] = "image"
    """The tag (``image``)."""

    data: str
    """Base64-encoded bytes of the image."""
    mime_type: str
    """e.g. ``image/png``."""
    signature: str | None = None
    """Opaque provider data tied to a generated image (e.g. a Gemini
    ``thoughtSignature``); replayed only to the same model."""

    def __post_init__(self) -> None:
        _require_str("ImageContent", "mime_type", self.mime_type, non_empty=True)


class DocumentContent(_Value, frozen=True, tag_field="type", tag="document", gc=False):
    """A document given as input (a PDF, a text file): base64 data, a URL or a
    provider file id — exactly one of the three."""

    type: ClassVar[Literal["document"]] = "document"
    """The tag (``document``)."""

    mime_type: str
    """e.g. ``application/pdf``, ``text/plain``."""
    data: str | None = None
    """Base64-encoded bytes of the document."""
    url: str | None = None
    """Where the provider fetches the document from."""
    file_id: str | None = None
    """A file stored with the provider (its Files API id or URI)."""
    title: str | None = None
    """A title the model can refer to (and cite)."""

    def __post_init__(self) -> None:
        _require_str("DocumentContent", "mime_type", self.mime_type, non_empty=True)
        given = [n for n in ("data", "url", "file_id") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ConfigurationError(
                "DocumentContent needs exactly one of data=, url= or file_id=, got "
                + (", ".join(given) if given else "none")
            )
        for n in (*given, "title"):
            if getattr(self, n) is not None:
                _require_str("DocumentContent", n, getattr(self, n))


class AudioContent(_Value, frozen=True, tag_field="type", tag="audio", gc=False):
    """Audio given as base64 data.

    Input for a model whose ``Model.input`` includes ``audio``; sending it to
    another is a ``ConfigurationError`` before any request.
    """

    type: ClassVar[Literal["audio"]] = "audio"
    """The tag (``audio``)."""

    data: str
    """Base64-encoded bytes of the audio."""
    mime_type: str
    """e.g. ``audio/wav``, ``audio/mpeg``."""

    def __post_init__(self) -> None:
        _require_str("AudioContent", "data", self.data)
        _require_str("AudioContent", "mime_type", self.mime_type, non_empty=True)


class ToolCall(_Value, frozen=True, tag_field="type", tag="tool_call", gc=False):
    """A call the model proposes; an action only once the response ended ``tool_use``.

    A block of an assistant message's ``content`` (``message.tool_calls`` lists
    them). Execute it only when the response ended ``tool_use``, then answer with a
    :class:`~modelwire.types.ToolResultMessage` naming its ``id``; an ``Agent`` does
    both. ``modelwire.testing.tool_call`` builds one for a scripted reply.
    """

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


class ServerToolCall(_Value, frozen=True, tag_field="type", tag="server_tool_call", gc=False):
    """A tool the provider ran itself (web search, code execution, MCP…).

    Never an action for the caller: an agent does not execute it and it never makes
    a response end ``tool_use``. Replayed as received to the same API.
    """

    type: ClassVar[Literal["server_tool_call"]] = "server_tool_call"
    """The tag (``server_tool_call``)."""

    id: str
    """The provider's id of the call (its result names it)."""
    name: str
    """The tool's name (``web_search``, ``code_execution``, an MCP tool…)."""
    input: dict[str, Any]
    """What the tool was run with, as the provider reports it."""
    provider_type: str
    """The provider's block or item type (``server_tool_use``, ``web_search_call``,
    ``executableCode``…)."""
    raw: str | None = None
    """The provider's block as JSON text, exactly as received (or assembled from its
    deltas): what is replayed to the same API."""

    def __post_init__(self) -> None:
        _require_str("ServerToolCall", "id", self.id)
        _require_str("ServerToolCall", "name", self.name)
        _require_str("ServerToolCall", "provider_type", self.provider_type, non_empty=True)
        if not isinstance(self.input, dict):
            raise ConfigurationError("ServerToolCall.input must be a dict")


class ServerToolResult(_Value, frozen=True, tag_field="type", tag="server_tool_result", gc=False):
    """The result of a :class:`ServerToolCall`, as the provider reported it.

    Informational, like the call: nothing for the caller to answer. Replayed as
    received to the same API; another gets it as text (``mw.handoff``).
    """

    type: ClassVar[Literal["server_tool_result"]] = "server_tool_result"
    """The tag (``server_tool_result``)."""

    tool_call_id: str
    """The id of the call this answers."""
    provider_type: str
    """The provider's block or item type (``web_search_tool_result``,
    ``codeExecutionResult``…)."""
    result: Any = None
    """The result as the provider's JSON value (search hits, program output…)."""
    is_error: bool = False
    """True when the provider says the tool failed."""
    name: str | None = None
    """The tool's name, when the provider says it."""
    raw: str | None = None
    """The provider's block as JSON text, exactly as received."""

    def __post_init__(self) -> None:
        _require_str("ServerToolResult", "tool_call_id", self.tool_call_id)
        _require_str("ServerToolResult", "provider_type", self.provider_type, non_empty=True)


class ProviderItem(_Value, frozen=True, tag_field="type", tag="provider_item", gc=False):
    """Output a provider sent that has no portable meaning (compaction blocks, an
    item type modelwire does not model yet): kept, never dropped, and replayed byte
    for byte to ``api``; other APIs do not receive it."""

    type: ClassVar[Literal["provider_item"]] = "provider_item"
    """The tag (``provider_item``)."""

    api: str
    """The wire API that sent it (and the only one it is replayed to)."""
    provider_type: str
    """The provider's block or item type (e.g. ``compaction``)."""
    data: str
    """The item as JSON text, exactly as received."""

    def __post_init__(self) -> None:
        _require_str("ProviderItem", "api", self.api, non_empty=True)
        _require_str("ProviderItem", "provider_type", self.provider_type)
        _require_str("ProviderItem", "data", self.data, non_empty=True)

    @property
    def value(self) -> Any:
        """``data`` parsed."""
        import msgspec

        return msgspec.json.decode(self.data)


UserContent: TypeAlias = TextContent | ImageContent | DocumentContent | AudioContent
"""What a user message or a tool result may hold."""
AssistantContent: TypeAlias = (
    TextContent
    | ThinkingContent
    | ToolCall
    | ServerToolCall
    | ServerToolResult
    | ProviderItem
    | ImageContent
)
"""What an assistant message may hold (an image: one the model generated)."""
USER_BLOCKS: tuple[type, ...] = (TextContent, ImageContent, DocumentContent, AudioContent)
ASSISTANT_BLOCKS: tuple[type, ...] = (
    TextContent,
    ThinkingContent,
    ToolCall,
    ServerToolCall,
    ServerToolResult,
    ProviderItem,
    ImageContent,
)
