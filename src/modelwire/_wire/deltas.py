"""Normalized deltas: what a wire API's decoder hands the shared assembler.

A decoder turns each provider payload into a few of these values, keyed by the
provider's own key (OpenAI Chat: ``("tool", index)``/``"text"``; Anthropic: the
block index; Responses: the item id; Gemini: what its decoder chooses). The
assembler (``modelwire._wire.assemble``) maps keys to content indexes in order of
first appearance and owns everything else: events, snapshots, tool-call rules,
finish semantics. Decoders report failures by raising a
:class:`~modelwire.errors.StreamError` subclass.

Custom APIs registered with ``modelwire.ext.register_wire_api`` may produce these too.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Literal, TypeAlias

import msgspec

if TYPE_CHECKING:
    from ..types import Citation, ImageContent, ProviderItem, ServerToolCall, ServerToolResult

__all__ = [
    "BlockComplete",
    "BlockEnd",
    "BlockSignature",
    "BlockStart",
    "CitationDelta",
    "Delta",
    "EndOfStream",
    "Finish",
    "ResponseMeta",
    "TextDelta",
    "ThinkingDelta",
    "ToolCallArguments",
    "ToolCallDelta",
    "UsageUpdate",
]


class _Delta(msgspec.Struct, frozen=True, gc=False):
    pass


class TextDelta(_Delta, frozen=True):
    """Text appended to the text block ``key`` (started on first use).

    Attributes:
        key: The decoder's own id of the block (an index, an item id…); the
            assembler gives each new key the next content index.
        text: The new text.
    """

    key: Hashable
    text: str


class ThinkingDelta(_Delta, frozen=True):
    """Reasoning text appended to the thinking block ``key`` (started on first use).

    Attributes:
        key: The decoder's own id of the block (an index, an item id…); the
            assembler gives each new key the next content index.
        text: The new reasoning text.
    """

    key: Hashable
    text: str


class BlockStart(_Delta, frozen=True):
    """Start a block explicitly, e.g. a reasoning item that may carry no text.

    ``kind`` is ``text``, ``thinking`` or ``tool_call``; for a tool call, ``id``
    and ``name`` may be given here.

    Attributes:
        key: The decoder's own id of the block (an index, an item id…); the
            assembler gives each new key the next content index.
        kind: ``"text"``, ``"thinking"`` or ``"tool_call"``.
        id: A tool call's id.
        name: A tool call's name.
        signature: The block's opaque signature, when it comes first.
        redacted: A thinking block whose reasoning is encrypted (in ``signature``).
    """

    key: Hashable
    kind: Literal["text", "thinking", "tool_call"]
    id: str | None = None
    name: str | None = None
    signature: str | None = None
    redacted: bool = False


class BlockSignature(_Delta, frozen=True):
    """Set (or, with ``append``, extend) the opaque signature of block ``key``.

    For the data a provider needs back to replay the block to the same model
    (a thinking signature, a ``thoughtSignature``, an item id).

    Attributes:
        key: The decoder's own id of the block (an index, an item id…); the
            assembler gives each new key the next content index.
        signature: The signature, or the piece of it.
        append: Extend the signature already set instead of replacing it.
    """

    key: Hashable
    signature: str
    append: bool = False


class ToolCallDelta(_Delta, frozen=True):
    """A fragment of the tool call ``key``: id/name when known, arguments text to append.

    A fragment carrying an id different from the call already at ``key`` starts
    a new call (Groq/Ollama reuse index 0 for every call).

    Attributes:
        key: The decoder's own id of the block (an index, an item id…); the
            assembler gives each new key the next content index.
        id: The call's id, when this fragment says it.
        name: The tool's name, when this fragment says it.
        arguments: Arguments text to append.
    """

    key: Hashable
    id: str | None = None
    name: str | None = None
    arguments: str = ""


class ToolCallArguments(_Delta, frozen=True):
    """The whole arguments text of tool call ``key`` (replaces what was streamed).

    For APIs that send a call's arguments whole at its end (or restate them there).

    Attributes:
        key: The decoder's own id of the block (an index, an item id…); the
            assembler gives each new key the next content index.
        arguments: The complete arguments' JSON text.
    """

    key: Hashable
    arguments: str


class BlockEnd(_Delta, frozen=True):
    """Block ``key`` is complete (a tool call's arguments may now be parsed).

    Blocks still open when the response finishes are closed then; send it when the
    API says a block ended, so its end event comes in order.

    Attributes:
        key: The decoder's own id of the block (an index, an item id…); the
            assembler gives each new key the next content index.
    """

    key: Hashable


class BlockComplete(_Delta, frozen=True):
    """A whole block that needs no streaming: a provider-run tool call or its result,
    an opaque provider item, or an image the model generated. It takes its content
    index at ``key`` (first appearance, like every block) and is final at once.

    Attributes:
        key: The decoder's own id of the block (an index, an item id…); the
            assembler gives each new key the next content index.
        block: The whole block.
    """

    key: Hashable
    block: ServerToolCall | ServerToolResult | ProviderItem | ImageContent


class CitationDelta(_Delta, frozen=True):
    """A citation for the text block ``key`` (started on first use: a citation may
    arrive before the text it supports).

    Attributes:
        key: The decoder's own id of the block (an index, an item id…); the
            assembler gives each new key the next content index.
        citation: The source.
    """

    key: Hashable
    citation: Citation


class Finish(_Delta, frozen=True):
    """The provider's finish: ``stop_reason`` normalized, ``provider_reason`` raw.

    With ``stop_reason="error"``, ``error_kind`` and ``error_message`` say why
    (e.g. ``content_filter``). The last ``Finish`` before ``EndOfStream`` wins.

    Attributes:
        stop_reason: ``"stop"``, ``"length"``, ``"tool_use"`` or ``"error"``.
        provider_reason: The finish reason as the provider sent it.
        error_kind: With ``"error"``: the error kind (``content_filter``…).
        error_message: With ``"error"``: what the provider said.
    """

    stop_reason: Literal["stop", "length", "tool_use", "error"]
    provider_reason: str | None = None
    error_kind: str | None = None
    error_message: str | None = None


class UsageUpdate(_Delta, frozen=True):
    """Token counts, already normalized (``input`` excludes cached tokens,
    ``output`` includes reasoning). ``None`` leaves a count unchanged.

    Attributes:
        input: Uncached prompt tokens.
        output: Output tokens, reasoning included.
        cache_read: Prompt tokens read from the cache.
        cache_write: Prompt tokens written to the cache.
    """

    input: int | None = None
    output: int | None = None
    cache_read: int | None = None
    cache_write: int | None = None


class ResponseMeta(_Delta, frozen=True):
    """Metadata of the response (its id, the model that answered).

    Becomes the message's ``response_id`` and ``response_model``.

    Attributes:
        response_id: The provider's response id.
        model: The model the provider says answered.
    """

    response_id: str | None = None
    model: str | None = None


class EndOfStream(_Delta, frozen=True):
    """The API's terminal signal (``[DONE]``, ``message_stop``, ``response.completed``,
    or the end of a body whose finish was already seen)."""


Delta: TypeAlias = (
    TextDelta
    | ThinkingDelta
    | BlockStart
    | BlockSignature
    | ToolCallDelta
    | ToolCallArguments
    | BlockEnd
    | BlockComplete
    | CitationDelta
    | Finish
    | UsageUpdate
    | ResponseMeta
    | EndOfStream
)
"""Any normalized delta: what a wire API's decoder returns for each frame.

A decoder turns the provider's chunks into these, keyed by its own block ids
(``key``); the shared assembler alone turns them into the public events, so every
API gets the same ordering, tool-call and error rules."""
