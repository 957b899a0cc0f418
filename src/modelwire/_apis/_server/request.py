"""What a server of a wire API receives and renders: the request decoded, the refusal of
one, the renderer of a streamed answer.

Each API that modelwire serves (the gateway's front ends) parses a client's request
body into a :class:`GatewayRequest` — the inverse of that API's encoder — in its own
``parse`` module, and renders modelwire's events or final message back into its bytes
in its ``render`` module. Both are sans-IO; the server (:mod:`modelwire.gateway`)
does the I/O, routing, keys, limits and logging.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import msgspec

from ...events import Event
from ...types import Capabilities, Context, ServerTool

__all__ = ["GatewayRequest", "RequestError", "StreamRenderer"]


class RequestError(Exception):
    """A client request the gateway refuses, before any backend is called.

    ``status`` is the HTTP status, ``kind`` a modelwire error kind
    (``invalid_request``, ``authentication``, ``permission``, ``not_found``,
    ``rate_limit``, ...), ``param`` the field path when one field is at fault. The
    front-end's :meth:`Frontend.error` renders it in its API's error shape."""

    def __init__(
        self, message: str, *, status: int = 400, kind: str = "invalid_request",
        param: str | None = None,
    ) -> None:  # fmt: skip
        super().__init__(message)
        self.message = message
        self.status = status
        self.kind = kind
        self.param = param


class GatewayRequest(msgspec.Struct, frozen=True, kw_only=True):
    """A client's request, decoded: what to ask which model, and how to answer.

    What a gateway front-end's ``parse`` returns for a client request in its API's
    format; the gateway calls ``mw.stream`` with it on the configured backend,
    whatever API that backend speaks.
    """

    model: str
    """The model name the client asked for (a key of the gateway's ``[models]``)."""
    context: Context
    """The conversation, with assistant turns carrying the api/provider/model that
    produced them (so :func:`modelwire.handoff` replays signatures only where valid)."""
    options: Mapping[str, Any]
    """``modelwire.stream`` options (``temperature``, ``max_tokens``, ``tool_choice``,
    ``parallel_tool_calls``, ``reasoning``, ``output``, ...)."""
    stream: bool
    """Whether the client asked for a streamed answer."""
    passthrough: Mapping[str, Any] = msgspec.field(default_factory=dict)
    """Fields modelwire does not model, by top-level name: sent as ``extra_body`` to a
    backend of the same API, refused (400 naming the first) for any other."""
    inert: Mapping[str, Any] = msgspec.field(default_factory=dict)
    """Fields modelwire does not model that change no answer (Anthropic's
    ``context_management`` clearing nothing): sent as ``extra_body`` to a backend of
    the same API, left out for any other."""
    forward_headers: Mapping[str, str] = msgspec.field(default_factory=dict)
    """Request headers sent on to a backend of the same API only (Anthropic's
    ``anthropic-beta``: the betas of the fields passed through)."""
    reasoning_field: str | None = None
    """The request field that asked for ``options["reasoning"]`` (``thinking``,
    ``reasoning_effort``, ``reasoning.effort``): named when the backend refuses it."""
    namespaces: Mapping[str, str] = msgspec.field(default_factory=dict)
    """Responses: the namespace of each tool flattened out of a ``namespace`` tool, by
    its name (its calls are rendered with that ``namespace``)."""
    server_tools: tuple[tuple[str, ServerTool], ...] = ()
    """Provider-run tools the client declared (web search…), each with the request field
    that declared it (``tools[4]``): the gateway passes each to a backend that runs it,
    as the client wrote it to a backend of the client's API."""
    include_usage: bool = True
    """Chat Completions: ``stream_options.include_usage`` (a final usage chunk)."""
    echo: Mapping[str, Any] = msgspec.field(default_factory=dict)
    """Request fields the API echoes in its response object (Responses ``metadata``,
    ``instructions``, ...)."""
    backend: Capabilities | None = None
    """What the backend this request is routed to supports (set by the gateway once
    routed; for a fallback, a capability any of its models has): the renderers read
    it, e.g. whether call signatures may come only as a call ends. ``None`` (not
    routed): the profile of the model that wrote the answer."""


class StreamRenderer(Protocol):
    """Turns one stream's events into the client API's bytes, as they come.

    One per response, from a ``WireServer`` (for ``MockServer``) or a gateway
    front-end: the mock server and the gateway feed it every event of a stream and
    send what it returns, so the client sees the API's own stream.
    """

    def feed(self, event: Event) -> bytes:
        """The bytes this event becomes (often ``b""``). A ``done`` event writes the
        API's last events; an ``error`` event writes the API's in-stream error.

        Args:
            event: The next event of the stream.
        """
        ...
