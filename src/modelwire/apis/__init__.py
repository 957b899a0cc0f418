"""Wire APIs: the seam between provider formats and the shared layers.

A wire API is an object with

* ``name`` — e.g. ``"openai-chat"``;
* ``build_request(model, context, options) -> HTTPRequest`` — pure: the URL,
  headers and JSON body; raises ``ConfigurationError`` for impossible options;
* ``new_decoder(model) -> WireDecoder`` — a fresh per-response decoder whose
  ``decode(event: ServerSentEvent) -> list[Delta]`` validates one payload and
  returns normalized deltas (``modelwire.deltas``), raising a ``StreamError``
  subclass for bad input (a ``MalformedChunkError`` naming the field path), and
  whose ``end() -> list[Delta]`` is called when the body is complete: it returns
  ``[EndOfStream()]`` or raises ``TruncatedStreamError`` if the API's terminal
  signal is missing.

The four built-in APIs are imported lazily on first use, so ``import modelwire``
stays cheap.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any, Protocol

from ..errors import ConfigurationError

if TYPE_CHECKING:
    from ..deltas import Delta
    from ..options import HTTPRequest, RequestOptions
    from ..sse import ServerSentEvent
    from ..types import Context, Model

__all__ = ["BUILTIN_APIS", "WireAPI", "WireDecoder", "get_api", "register_wire_api"]


class WireDecoder(Protocol):
    def decode(self, event: ServerSentEvent) -> list[Delta]: ...

    def end(self) -> list[Delta]: ...


class WireAPI(Protocol):
    name: str

    def build_request(
        self, model: Model, context: Context, options: RequestOptions
    ) -> HTTPRequest: ...

    def new_decoder(self, model: Model | None) -> WireDecoder: ...


BUILTIN_APIS: dict[str, str] = {
    "openai-chat": "modelwire.apis.openai_chat",
    "openai-responses": "modelwire.apis.openai_responses",
    "anthropic-messages": "modelwire.apis.anthropic",
    "google-generative-ai": "modelwire.apis.google",
}

_registry: dict[str, Any] = {}


def register_wire_api(api: Any) -> None:
    """Register a wire API object (see the module docstring for its shape)."""
    _registry[api.name] = api


def get_api(name: str) -> Any:
    """The wire API registered as ``name``; ``ConfigurationError`` if unknown."""
    api = _registry.get(name)
    if api is not None:
        return api
    module = BUILTIN_APIS.get(name)
    if module is None:
        known = ", ".join(sorted({*BUILTIN_APIS, *_registry}))
        raise ConfigurationError(f"unknown api {name!r}; known: {known}")
    mod = importlib.import_module(module)
    api = mod.API
    _registry[name] = api
    return api
