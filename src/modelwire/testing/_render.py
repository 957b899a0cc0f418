"""Render a script as the exact bytes a wire API streams: script → events → the API's renderer.

A script (:mod:`modelwire.testing._normal`) becomes the events a client would see —
the same deltas and the same shared assembler as :class:`ScriptedModel` — and those
events are fed to the API's server-side renderer (``WireServer.renderer``, the
``render`` module of the API's package), the one the gateway uses too. So the mock
server's bytes and the gateway's are one code path, and a new wire API is rendered
with no edit here.

Text and tool-call arguments are cut into pieces of ``piece_chars`` characters, one
wire event each, so a client sees them arrive as deltas. The result decodes back
through ``mw.replay(api, body)`` to the same content.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeAlias

import msgspec

from .._apis import api_for_path as api_for_path
from .._apis import api_names, find_api, find_server, get_api
from .._apis._server.reply import THINKING_SIGNATURE, prefixed
from .._apis._server.request import GatewayRequest
from .._apis._server.wire import WireServer
from .._wire.framing import Framing
from ..errors import ConfigurationError
from ..events import DoneEvent
from ..types import AssistantMessage, Context, ErrorInfo, Model, ProviderItem, ThinkingContent
from ._normal import Script, ScriptedReply, normalize, tool_call, with_id_prefix
from ._scripted import events_from_deltas, reply_deltas, split_failure

__all__ = [
    "Frame",
    "Rendered",
    "Script",
    "api_for_path",
    "in_band_error",
    "render",
    "render_frames",
    "render_reply",
    "tool_call",
    "unframed",
]

#: ``(event name or None, payload)``: one rendered event, unframed. The payload is the
#: decoded JSON value, or the text when it is not JSON (OpenAI Chat's ``[DONE]``).
Frame: TypeAlias = tuple[str | None, Any]


if TYPE_CHECKING:
    APIS: tuple[str, ...]
    """Every wire API the MockServer speaks (the names ``Model.api`` takes),
    read from the registry when asked, so an API registered later is in it too."""


def __getattr__(name: str) -> Any:
    # ``APIS``: every wire API the MockServer speaks, read from the registry when asked.
    if name == "APIS":
        return api_names()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def server_of(api: object) -> WireServer:
    """The server side of ``api``; ``ConfigurationError`` if unknown or it has none."""
    if not isinstance(api, str) or find_api(api) is None:
        raise ConfigurationError(f"cannot render for api {api!r}; known: {', '.join(api_names())}")
    server = find_server(api)
    if server is None:
        raise ConfigurationError(
            f"wire API {api!r} has no server side (register_wire_api(..., server=...)): "
            "it cannot be rendered"
        )
    return server


class Rendered(msgspec.Struct, frozen=True, kw_only=True):
    """A script rendered for one API: the stream's bytes event by event, and the one
    JSON object a request without a stream gets."""

    pieces: tuple[bytes, ...]
    """The stream, one wire event per piece, in order."""
    complete: bytes | None
    """The non-streamed response body (``None``: the script fails, so a request
    without a stream gets an HTTP error instead)."""


def _signed(reply: ScriptedReply) -> ScriptedReply:
    if not any(isinstance(b, ThinkingContent) and not b.signature and not b.redacted
               for b in reply.content):  # fmt: skip
        return reply
    content = tuple(
        msgspec.structs.replace(b, signature=THINKING_SIGNATURE)
        if isinstance(b, ThinkingContent) and not b.signature and not b.redacted
        else b
        for b in reply.content
    )
    return msgspec.structs.replace(reply, content=content)


def render_reply(
    script: Script,
    api: str,
    *,
    model: str = "mock-model",
    response_id: str | None = None,
    piece_chars: int = 8,
    include_usage: bool = True,
) -> Rendered:
    """``script`` as ``api``'s server renders it: events fed to ``WireServer.renderer``.

    A failed ``AssistantMessage`` (``stop_reason="error"``, its ``error``) streams its
    content and then the API's in-stream error of that kind."""
    server = server_of(api)
    script, failure = split_failure(script)
    reply = _signed(with_id_prefix(normalize(script), server.tool_id_prefix))
    for n, block in enumerate(reply.content):
        # A server passes on another API's opaque item as nothing: in a script that is a
        # mistake to say, not content to lose.
        if isinstance(block, ProviderItem) and block.api != api:
            raise ConfigurationError(
                f"script content[{n}]: {api} cannot carry an item of {block.api} "
                f"({block.provider_type}); script it for {block.api} or leave it out"
            )
    rid = response_id or reply.response_id or ""
    if server.id_prefix is not None:
        rid = prefixed(server.id_prefix, rid or "mock")
    origin = Model(id=model, api=api, provider="mock", base_url="http://mock.invalid")
    # An answer of ``api`` itself, so the renderer may say the API's own stop reasons.
    deltas = reply_deltas(reply, piece_chars=piece_chars, failure=failure)
    events = events_from_deltas(deltas, origin)
    request = GatewayRequest(model=model, context=Context(), options={}, stream=True,
                             include_usage=include_usage)  # fmt: skip
    renderer = server.renderer(request, rid)
    codec = get_api(api)
    pieces = tuple(e for out in (renderer.feed(e) for e in events) if out
                   for e in _one_by_one(codec.framing, out))  # fmt: skip
    done = events[-1]
    complete = (server.message_body(request, done.message, rid)
                if isinstance(done, DoneEvent) else None)  # fmt: skip
    return Rendered(pieces=pieces, complete=complete)


def _one_by_one(framing: Callable[[int], Framing], out: bytes) -> list[bytes]:
    """``out`` (whole events) cut after each event, so each is flushed on its own, as a
    provider does: the cuts are where the API's own framing completes a frame."""
    reader = framing(_NO_LIMIT)
    if len(reader.feed(out)) <= 1:
        return [out]
    reader, cuts = framing(_NO_LIMIT), [0]
    for i in range(len(out)):
        if reader.feed(out[i : i + 1]):
            cuts.append(i + 1)
    if cuts[-1] != len(out):
        cuts.append(len(out))
    return [out[a:b] for a, b in itertools.pairwise(cuts)]


def in_band_error(api: str, message: str, kind: str = "overloaded") -> bytes:
    """The one wire event with which ``api`` reports an error of ``kind`` mid-stream
    (what its renderer writes for an ``error`` event)."""
    failed = AssistantMessage(content=(), api=api, provider="mock", model="mock-model",
                              stop_reason="error", error=ErrorInfo(kind=kind, message=message))  # fmt: skip
    return render_reply(failed, api).pieces[-1]


def render_frames(
    script: Script,
    api: str,
    *,
    model: str = "mock-model",
    response_id: str | None = None,
    piece_chars: int = 8,
) -> list[Frame]:
    """The events (name, payload) of ``script`` in ``api``'s format, unframed: the
    rendered bytes read back with the API's own framing.

    For tests that check what a renderer emits event by event, without parsing SSE,
    NDJSON or AWS event-stream framing themselves.

    Args:
        script: Text, a ``ToolCall``, content blocks or an ``AssistantMessage``.
        api: The wire API whose format to render.
        model: The model id the events name.
        response_id: The response id (default: the API's mock id).
        piece_chars: Characters per text delta.

    Returns:
        The ``(event name, payload)`` pairs, in order.

    Raises:
        ConfigurationError: ``api`` is unknown or has no server side.
    """
    pieces = render_reply(
        script, api, model=model, response_id=response_id, piece_chars=piece_chars
    ).pieces
    return unframed(api, pieces)


def unframed(api: str, pieces: Sequence[bytes]) -> list[Frame]:
    """``(event name or None, payload)`` of each event of a body ``api`` rendered,
    read back with the API's own framing (``None`` for the default ``message`` type)."""
    framing = get_api(api).framing(_NO_LIMIT)
    frames = [f for p in pieces for f in framing.feed(p)] + framing.end()
    return [(None if f.event == "message" else f.event, _payload(f.data)) for f in frames]


_NO_LIMIT = 1 << 30  # our own bytes: no event is too big


def _payload(data: bytes) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return data.decode()


def render(
    script: Script,
    api: str,
    *,
    model: str = "mock-model",
    response_id: str | None = None,
    piece_chars: int = 8,
) -> bytes:
    """The complete response body ``api`` would stream for ``script``.

    The bytes a provider would send, without a server: for :func:`modelwire.replay`,
    for a decoder's tests, or to see an API's wire format.

    Args:
        script: Text, a ``ToolCall``, content blocks or an ``AssistantMessage``.
        api: The wire API whose format to render (``"openai-chat"``…).
        model: The model id the body names.
        response_id: The response id (default: the API's mock id).
        piece_chars: Characters per text delta.

    Returns:
        The whole body.

    Raises:
        ConfigurationError: ``api`` is unknown or has no server side.

    Example:
        ```python
        import modelwire as mw
        from modelwire.testing import render

        body = render("Hello!", "anthropic-messages")
        print(mw.replay("anthropic-messages", body).message.text)  # Hello!
        ```
    """
    return b"".join(
        render_reply(
            script, api, model=model, response_id=response_id, piece_chars=piece_chars
        ).pieces
    )


def sse_body(payloads: Sequence[Any], *, done: bool = True, event_names: bool = False) -> bytes:
    """``data: <json>\\n\\n`` frames for ``payloads`` (dicts are JSON-encoded)."""
    out = []
    for p in payloads:
        data = p if isinstance(p, str) else json.dumps(p, ensure_ascii=False)
        if event_names and isinstance(p, dict) and "type" in p:
            out.append(f"event: {p['type']}\n")
        out.append(f"data: {data}\n\n")
    if done:
        out.append("data: [DONE]\n\n")
    return "".join(out).encode()
