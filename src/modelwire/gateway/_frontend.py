"""What a front-end API is to the gateway: a request parser and two renderers.

A *front-end* is a wire API the gateway speaks to its clients (OpenAI Chat
Completions, OpenAI Responses, Anthropic Messages). It is sans-IO, like every wire
API in modelwire: it turns the bytes of a client's request into a
:class:`GatewayRequest` (the inverse of that API's encoder), and turns modelwire's
events or final message back into that API's bytes. The ASGI app
(:mod:`modelwire.gateway._app`) does all the I/O: it authenticates, routes
``GatewayRequest.model`` to a backend, runs ``modelwire.stream`` and writes what the
renderer returns.

Rule for fields (documented in ``docs/gateway.md``): a field the front-end models is
translated; a field of the client's API that modelwire does not model is passed on
unchanged in ``extra_body`` when the backend speaks the same API, and refused with
that API's 400 naming the field's path otherwise; a value of the wrong type is a 400
naming its path (``messages[2].content[0].text must be a string``).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from typing import Any, Protocol

import msgspec

from ..events import Event
from ..types import AssistantMessage, Capabilities, Context

__all__ = [
    "FRONTEND_MODULES",
    "Frontend",
    "GatewayRequest",
    "RequestError",
    "StreamRenderer",
    "default_frontends",
]

#: The front-end modules the gateway serves when present (each exports ``FRONTEND``).
FRONTEND_MODULES = ("_chat", "_responses", "_anthropic")


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
    """A client's request, decoded: what to ask which model, and how to answer."""

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
    """Turns one stream's events into the client API's bytes, as they come."""

    def feed(self, event: Event) -> bytes:
        """The bytes this event becomes (often ``b""``). A ``done`` event writes the
        API's last events; an ``error`` event writes the API's in-stream error."""
        ...


class Frontend(Protocol):
    """One client-facing wire API."""

    api: str
    """The wire API it speaks, as ``Model.api`` names it."""
    paths: tuple[str, ...]
    """POST paths it serves (``/v1/chat/completions``; also without ``/v1``)."""
    id_prefix: str
    """How the API's own service starts a response id (its spec's, e.g. ``msg_``)."""

    def parse(self, body: bytes, headers: Mapping[str, str]) -> GatewayRequest:
        """Decode a request body; :class:`RequestError` (400, field path) when it is wrong."""
        ...

    def renderer(self, request: GatewayRequest, response_id: str) -> StreamRenderer:
        """A renderer for one streamed answer (``text/event-stream``)."""
        ...

    def message(
        self, request: GatewayRequest, message: AssistantMessage, response_id: str
    ) -> bytes:
        """The JSON body of a non-streamed answer."""
        ...

    def error(self, error: RequestError | BaseException) -> tuple[int, dict[str, str], bytes]:
        """Status, extra headers (``retry-after``) and JSON body of an error, in the
        API's own shape: a :class:`RequestError`, or a
        :class:`~modelwire.errors.StreamError` raised from a failed backend message."""
        ...


def default_frontends() -> list[Frontend]:
    """The front-ends of :data:`FRONTEND_MODULES` that are installed."""
    out: list[Frontend] = []
    for name in FRONTEND_MODULES:
        module = f"{__package__}.{name}"
        try:
            mod = importlib.import_module(module)
        except ModuleNotFoundError as exc:
            if exc.name != module:  # the front-end exists but fails to import: say so
                raise
            continue
        out.append(mod.FRONTEND)
    return out
