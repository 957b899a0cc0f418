"""Render a scripted assistant reply as the exact bytes a wire API streams.

A *script* is what a test says the model should answer: a string (text), a
:class:`~modelwire.types.ToolCall`, a content block (provider-run tool calls and
results, and opaque items, for the APIs that carry them; text with its citations), a
sequence of those, or a whole :class:`~modelwire.types.AssistantMessage` (its
``stop_reason``, ``provider_stop_reason`` and ``usage`` are rendered too). :func:`render` turns it into the response body the
provider would send, in that API's framing (SSE events, NDJSON lines…). The
bytes of each API are owned by the API itself (the ``render`` and ``encode_frames``
of its mock facet, :class:`modelwire.ext.MockFacet`); this module only normalizes
the script and asks the registry, so a new wire API is rendered with no edit here.

Text and tool-call arguments are cut into pieces of ``piece_chars``
characters, one wire event each, so a client sees them arrive as deltas. The
result decodes back through ``mw.replay(api, body)`` to the same content.
"""

from __future__ import annotations

import builtins
import itertools
from collections.abc import Iterable, Sequence
from typing import Any, Literal, TypeAlias

import msgspec

from .._apis import MockFacet, api_names, find_api
from .._apis import api_for_path as api_for_path
from .._apis._mock import MockFrame as Frame
from .._apis._mock import ScriptedReply, arguments_text, compact_json, split_text
from ..errors import ConfigurationError
from ..types import (
    AssistantContent,
    AssistantMessage,
    ProviderItem,
    ServerToolCall,
    ServerToolResult,
    TextContent,
    ThinkingContent,
    ToolCall,
    Usage,
)

__all__ = [
    "Frame",
    "Script",
    "ScriptedReply",
    "api_for_path",
    "arguments_text",
    "frame",
    "normalize",
    "render",
    "render_frames",
    "split_text",
    "tool_call",
]

Block: TypeAlias = (
    str
    | TextContent
    | ThinkingContent
    | ToolCall
    | ServerToolCall
    | ServerToolResult
    | ProviderItem
)
_BLOCKS = (TextContent, ThinkingContent, ToolCall, ServerToolCall, ServerToolResult, ProviderItem)
#: Anything :func:`render` accepts as a model reply.
Script: TypeAlias = AssistantMessage | Block | Sequence[Block]

_ids = itertools.count(1)


def __getattr__(name: str) -> Any:
    # ``APIS``: every wire API the MockServer speaks, read from the registry when asked.
    if name == "APIS":
        return api_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _dumps(value: Any) -> str:
    return compact_json(value)


def tool_call(
    name: str, arguments: dict[str, Any] | None = None, *, id: str | None = None
) -> ToolCall:
    """A :class:`ToolCall` for a script; ``id`` defaults to a process-unique ``call_<n>``
    (an agent answers calls by id, so ids must not repeat within a conversation),
    sent with the prefix of the API that renders it (``toolu_<n>`` for Anthropic, as
    the provider's own ids look: :func:`for_api`); an ``id`` given is sent as given."""
    args = dict(arguments or {})
    call = ToolCall(
        id=id or f"{_DEFAULT_PREFIX}{next(_ids)}", name=name, arguments=args,
        raw_arguments=_dumps(args),
    )  # fmt: skip
    if not id:
        # Known by identity, not by its text: a script may give the same id itself.
        _made_up[builtins.id(call)] = call
    return call


_DEFAULT_PREFIX = "call_"
# The calls ``tool_call`` made an id for (kept alive, so an identity is never reused).
_made_up: dict[int, ToolCall] = {}


def _is_made_up(block: object) -> bool:
    return _made_up.get(builtins.id(block)) is block


def for_api(reply: ScriptedReply, mock: MockFacet) -> ScriptedReply:
    """``reply`` with every tool-call id :func:`tool_call` made up carrying ``mock``'s
    provider prefix (``MockRendering.tool_id_prefix``) instead of ``call_``."""
    prefix = mock.tool_id_prefix
    if prefix == _DEFAULT_PREFIX or not any(_is_made_up(b) for b in reply.content):
        return reply
    content = tuple(
        msgspec.structs.replace(b, id=prefix + b.id.removeprefix(_DEFAULT_PREFIX))
        if isinstance(b, ToolCall) and _is_made_up(b)
        else b
        for b in reply.content
    )
    return msgspec.structs.replace(reply, content=content)


def normalize(script: Script) -> ScriptedReply:
    """Bring any accepted script to :class:`ScriptedReply`.

    ``ConfigurationError`` for what a successful stream cannot say: a message
    whose ``stop_reason`` is ``error``/``aborted`` (script failures with
    ``Reply(status=…)``, ``cut_after`` or a raw ``body`` instead), or an
    unknown block type.
    """
    provider_stop = None
    if isinstance(script, AssistantMessage):
        if script.stop_reason in ("error", "aborted"):
            raise ConfigurationError(
                f"cannot render a message with stop_reason {script.stop_reason!r} as a "
                "successful stream; script failures with Reply(status=...), cut_after, "
                "stall_after or a raw body"
            )
        blocks: tuple[AssistantContent, ...] = script.content
        usage = script.usage
        response_id = script.response_id
        explicit = script.stop_reason
        provider_stop = script.provider_stop_reason
    else:
        items: Iterable[Any] = (script,) if isinstance(script, (str, *_BLOCKS)) else script
        out: list[AssistantContent] = []
        for i, item in enumerate(items):
            if isinstance(item, str):
                out.append(TextContent(text=item))
            elif isinstance(item, _BLOCKS):
                out.append(item)
            else:
                raise ConfigurationError(
                    f"script[{i}] must be a str, TextContent, ThinkingContent, ToolCall, "
                    f"ServerToolCall, ServerToolResult or ProviderItem, got {type(item).__name__}"
                )
        blocks, usage, response_id, explicit = tuple(out), Usage(), None, None
    # A provider-run tool call is not the caller's to answer: it never makes tool_use.
    has_calls = any(isinstance(b, ToolCall) for b in blocks)
    stop: Literal["stop", "length", "tool_use"] = (
        "length" if explicit == "length" else "tool_use" if has_calls else "stop"
    )
    return ScriptedReply(content=blocks, stop_reason=stop, usage=usage, response_id=response_id,
                         provider_stop_reason=provider_stop)  # fmt: skip


def _wire(api: str) -> MockFacet:
    wire = find_api(api) if isinstance(api, str) else None
    if wire is None:
        raise ConfigurationError(f"cannot render for api {api!r}; known: {', '.join(api_names())}")
    if wire.mock is None:
        raise ConfigurationError(f"wire API {api!r} has no mock facet: it cannot be rendered")
    return wire.mock


def render_frames(
    script: Script,
    api: str,
    *,
    model: str = "mock-model",
    response_id: str | None = None,
    piece_chars: int = 8,
) -> list[Frame]:
    """The events (name, payload) for ``script`` in ``api``'s format, unframed."""
    wire = _wire(api)
    reply = for_api(normalize(script), wire)
    split_text("", piece_chars)  # a bad piece size is refused even for an empty script
    rid = response_id or reply.response_id or ""  # "": the API's own mock id
    frames: list[Frame] = wire.render(reply, model, rid, piece_chars)
    return frames


def frame(api: str, frames: Sequence[Frame]) -> list[bytes]:
    """Each event framed as ``api`` frames it on the wire (``MockFacet.encode_frames``)."""
    out: list[bytes] = _wire(api).encode_frames(frames)
    return out


def render(
    script: Script,
    api: str,
    *,
    model: str = "mock-model",
    response_id: str | None = None,
    piece_chars: int = 8,
) -> bytes:
    """The complete response body ``api`` would stream for ``script``."""
    frames = render_frames(
        script, api, model=model, response_id=response_id, piece_chars=piece_chars
    )
    return b"".join(frame(api, frames))
