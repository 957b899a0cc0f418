"""How a server speaks one wire API: :class:`WireServer`, the server side of an API.

A client needs only an API's codec (:class:`~modelwire._apis._codec.WireCodec`). A
server — the gateway's front ends and :mod:`modelwire.testing`'s mock server alike —
needs the other direction: modelwire's events rendered as the API's response bytes
(``renderer``, ``message_body``: the API package's ``render`` module) and the API's
routing facts (version segment, non-streaming endpoints, model listing, error shape,
what a request body carries). Each built-in API package exposes one as ``SERVER``;
an extension passes one to :func:`modelwire.ext.register_wire_api` (``server=``).

The mock server renders a script by turning it into events and feeding them to the
same renderer the gateway uses, so a wire format is written once on the server side.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...types import AssistantMessage
from .reply import ErrorReply, function_tools, model_in_body, openai_error, stream_flag
from .request import GatewayRequest, StreamRenderer

__all__ = ["WireServer", "always"]


def always(body: object) -> bool:
    """``True`` whatever the request body says (a usage report always sent)."""
    return True


@dataclass(frozen=True, slots=True)
class WireServer:
    """The server side of one wire API, as functions and data.

    ``renderer`` and ``message_body`` are required; the rest states the API's routing
    facts with the defaults of an OpenAI-style API (SSE under ``/v1``, the model in
    the body's ``model`` field, a stream when the body says ``"stream": true``)."""

    renderer: Callable[[GatewayRequest, str], StreamRenderer]
    """``(request, response id) -> renderer``: one streamed answer's bytes, event by
    event (each ``feed`` returns whole wire events, often none)."""
    message_body: Callable[[GatewayRequest, AssistantMessage, str], bytes]
    """``(request, message, response id) -> body``: the one JSON object the API
    answers a request that asked for no stream with."""
    tool_results: Callable[[object], list[str]]
    """``(request body) -> tool-result texts`` the request carries back."""
    id_prefix: str | None = None
    """How the API's response ids start (``chatcmpl-``, ``msg_``): a scripted reply
    without an id gets ``<prefix>mock``. ``None``: the renderer is given ``""`` and
    picks its own."""
    content_type: str = "text/event-stream"
    version_segment: str = "/v1"
    """The path before the API's endpoint (``/v1``, ``/v1beta``, ``""`` for a server
    root): what ``MockServer.model(api)`` appends to the origin."""
    extra_paths: tuple[str, ...] = ()
    """Other endpoints (after the version segment) the API streams from."""
    complete_paths: tuple[str, ...] = ()
    """Endpoints (after the version segment, ``{model}`` for the model id) that answer
    with :attr:`message_body` whatever the body says (Gemini
    ``/models/{model}:generateContent``, Bedrock ``/model/{model}/converse``)."""
    request_model: Callable[[str, object], str | None] = field(default=model_in_body)
    """``(path, body) -> model id``: the body's ``model`` field by default."""
    streams: Callable[[str, object], bool] = field(default=stream_flag)
    """``(path, body) -> bool``: whether a request to the streaming path asked for a
    stream (the body's ``"stream": true`` by default, as OpenAI and Anthropic read it)."""
    include_usage: Callable[[object], bool] = field(default=always)
    """``(body) -> bool``: whether the stream reports usage (OpenAI Chat: only with
    ``stream_options.include_usage``)."""
    error_body: Callable[[int, str, str | None], ErrorReply] = field(default=openai_error)
    """``(status, message, error type or None) -> ErrorReply``: an HTTP error in the
    API's own shape and headers."""
    in_band_kind: str = "overloaded"
    """The error kind the API's in-stream error (what the renderer writes for an
    ``error`` event) decodes to."""
    models_path: str | None = None
    """The model listing endpoint after the version segment (``None``: none)."""
    render_models: Callable[[Sequence[str]], dict[str, Any]] | None = None
    """``(model ids) -> body`` of the listing."""
    models_header: str | None = None
    """A request header that marks a listing as this API's, when several APIs share
    :attr:`models_path` (Anthropic's ``anthropic-version`` on ``/v1/models``)."""
    request_tools: Callable[[object], list[tuple[str, dict[str, Any]]]] = field(
        default=function_tools
    )
    """``(request body) -> [(tool name, parameters schema)]`` the request declares."""
    tool_id_prefix: str = "call_"
    """How the API's tool-call ids start (Anthropic ``toolu_``, Bedrock ``tooluse_``)."""
    embed_paths: tuple[str, ...] = ()
    """Embedding endpoints (after the version segment, ``{model}`` for the model id)."""
    render_embeddings: Callable[[str, object], dict[str, Any]] | None = None
    """``(path, request body) -> answer body`` of an embedding request, with the mock's
    vectors (:func:`~modelwire._apis._server.embed.mock_vector`); a request it refuses
    raises :class:`~modelwire._apis._server.embed.BadEmbedRequest`."""
    sse_query: str | None = None
    """The query item that asks the streaming path for SSE; without it the path answers
    with a JSON array of the events (Gemini's ``alt=sse``; ``None``: always a stream)."""
