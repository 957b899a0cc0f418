"""Ollama's native chat API (``api="ollama-chat"``): ``POST {base_url}/api/chat``,
newline-delimited JSON.

Reference: https://github.com/ollama/ollama/blob/main/docs/api.md ("Generate a chat
completion") and https://ollama.com/blog/streaming-tool. ``base_url`` is the server
root (``http://127.0.0.1:11434``, DESIGN §2b). The registry finds this package by the
API's name (``ollama-chat`` → ``modelwire._apis.ollama_chat``).

The tables (done reasons both ways, the failures ``load``/``unload``, the synthetic
tool-call id prefix, reserved body fields) are in :mod:`.spec`; the request in
:mod:`.encode`; the stream in :mod:`.decode`; the server's side in :mod:`.render`.
Ollama's tool calls carry no id: the decoder makes them up and Ollama never needs
them back, so any id is accepted from another API (``handoff`` is ``None``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._wire.request import HTTPRequest, RequestOptions
from ...types import Capabilities, Context, Model
from .._common import bearer_auth, check_context_values, http_request
from ._embed import EMBEDDING
from .decode import OllamaDecoder, recognizes
from .encode import RESERVED, build_body, encode_messages
from .spec import API_NAME, CAPABILITIES, CONTENT_TYPE, ENDPOINT, SYNTHETIC_ID_PREFIX

if TYPE_CHECKING:
    from ..._wire.framing import Framing
    from .._codec import WireCodec

__all__ = [
    "API",
    "RESERVED",
    "SYNTHETIC_ID_PREFIX",
    "OllamaChatAPI",
    "OllamaDecoder",
    "build_body",
    "encode_messages",
]


class OllamaChatAPI:
    """The ``ollama-chat`` wire API."""

    name = API_NAME
    endpoint = ENDPOINT
    handoff = None  # Ollama accepts any tool-call id
    counting = None  # /api/chat has no token-counting endpoint
    embedding = EMBEDDING  # POST /api/embed (._embed)

    def capabilities(self, model: Model) -> Capabilities:
        return CAPABILITIES

    def path(self, model_id: str) -> str:
        return self.endpoint

    def build_request(self, model: Model, context: Context, options: RequestOptions) -> HTTPRequest:
        check_context_values(context)
        return http_request(
            model,
            options,
            url=model.url_root + self.endpoint,
            body=build_body(model, context, options),
            defaults={"Content-Type": "application/json", "Accept": CONTENT_TYPE},
            # Local servers need no key; a proxy or ollama.com takes a bearer token.
            auth=bearer_auth,
        )

    def framing(self, max_event_bytes: int) -> Framing:
        from ..._wire.framing.ndjson import NDJSONDecoder

        return NDJSONDecoder(max_event_bytes=max_event_bytes)

    def new_decoder(self, model: Model | None) -> OllamaDecoder:
        return OllamaDecoder()

    def recognizes(self, payload: bytes) -> bool:
        return recognizes(payload)


API = OllamaChatAPI()

if TYPE_CHECKING:
    _CODEC: WireCodec = API  # mypy --strict proves the API is a complete codec
