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
from typing import Protocol

from .._apis._server.request import GatewayRequest, RequestError, StreamRenderer
from ..types import AssistantMessage

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


class Frontend(Protocol):
    """One client-facing wire API.

    The gateway serves Chat Completions, Responses and Anthropic Messages clients
    with one each (:func:`default_frontends`); implement it and pass it in
    ``Gateway(config, frontends=...)`` to serve another API's clients.
    """

    api: str
    """The wire API it speaks, as ``Model.api`` names it."""
    paths: tuple[str, ...]
    """POST paths it serves (``/v1/chat/completions``; also without ``/v1``)."""
    id_prefix: str
    """How the API's own service starts a response id (its spec's, e.g. ``msg_``)."""

    def parse(self, body: bytes, headers: Mapping[str, str]) -> GatewayRequest:
        """Decode a request body; :class:`RequestError` (400, field path) when it is wrong.

        Args:
            body: The raw request body.
            headers: The request headers, names lower-cased.
        """
        ...

    def renderer(self, request: GatewayRequest, response_id: str) -> StreamRenderer:
        """A renderer for one streamed answer (``text/event-stream``).

        Args:
            request: The parsed request.
            response_id: The id the answer carries (with the API's prefix).
        """
        ...

    def message(
        self, request: GatewayRequest, message: AssistantMessage, response_id: str
    ) -> bytes:
        """The JSON body of a non-streamed answer.

        Args:
            request: The parsed request.
            message: The backend's final message.
            response_id: The id the answer carries.
        """
        ...

    def error(self, error: RequestError | BaseException) -> tuple[int, dict[str, str], bytes]:
        """Status, extra headers (``retry-after``) and JSON body of an error, in the
        API's own shape: a :class:`RequestError`, or a
        :class:`~modelwire.errors.StreamError` raised from a failed backend message.

        Args:
            error: The refusal or the backend's failure.
        """
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
