"""Google Gemini (``api="google-generative-ai"``): ``POST
{base_url}/models/{id}:streamGenerateContent?alt=sse`` (Gemini API and Vertex AI),
Server-Sent Events.

References: https://ai.google.dev/api/generate-content (the request, ``Candidate``,
``UsageMetadata``, ``promptFeedback``), https://ai.google.dev/api/caching#Schema (the
``Schema`` subset of OpenAPI 3.0), https://ai.google.dev/gemini-api/docs/function-calling,
https://ai.google.dev/gemini-api/docs/thinking,
https://ai.google.dev/gemini-api/docs/thought-signatures and, for streamed
function-call arguments (Vertex AI),
https://cloud.google.com/vertex-ai/generative-ai/docs/multimodal/function-calling#streaming-fc.

The tables (finish reasons both ways, roles, grounding and code parts, capabilities)
are in :mod:`.spec`; the request (contents, tools, tool config, thinking, compat flags,
the model's resource name) in :mod:`.encode`, tool schemas reduced by :mod:`._schema`;
the stream in :mod:`.decode`; the server's side in :mod:`.render`. The key travels only
in the ``x-goog-api-key`` header, never as ``?key=`` in the URL, so it cannot leak
through logs of URLs (DESIGN §3 rule 6).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..._wire.request import HTTPRequest, RequestOptions
from ...types import Capabilities, Context, Model
from .._codec import Counting, sse_framing
from .._common import check_context_values, http_request
from . import _count, spec
from . import batch as _batch
from ._embed import EMBEDDING
from ._schema import gemini_schema
from .decode import SYNTHETIC_ID_PREFIX, GoogleDecoder, recognizes
from .encode import (
    RESERVED,
    SKIP_SIGNATURE,
    GoogleCompat,
    build_body,
    detect_compat,
    encode_contents,
    model_resource,
    replay_signatures,
)

if TYPE_CHECKING:
    from ..._wire.framing import Framing
    from .._codec import WireCodec

__all__ = [
    "API",
    "RESERVED",
    "SKIP_SIGNATURE",
    "SYNTHETIC_ID_PREFIX",
    "GoogleAPI",
    "GoogleCompat",
    "GoogleDecoder",
    "build_body",
    "detect_compat",
    "encode_contents",
    "gemini_schema",
    "model_resource",
    "replay_signatures",
]


class GoogleAPI:
    """The ``google-generative-ai`` wire API."""

    name = "google-generative-ai"
    handoff = None  # Gemini ids are its own or synthetic: any id is accepted
    counting = Counting(_count.count_request, _count.parse_count)
    batching = _batch.BATCHING  # the provider's batch API (modelwire.batching)
    embedding = EMBEDDING  # embedding requests (._embed)

    def capabilities(self, model: Model) -> Capabilities:
        return spec.capabilities(model)

    def path(self, model_id: str) -> str:
        return f"/{model_resource(model_id)}:streamGenerateContent?alt=sse"

    def build_body(self, model: Model, context: Context, options: RequestOptions) -> dict[str, Any]:
        return build_body(model, context, options)

    def build_request(self, model: Model, context: Context, options: RequestOptions) -> HTTPRequest:
        check_context_values(context)
        return http_request(
            model,
            options,
            url=model.url_root + self.path(model.id),
            body=self.build_body(model, context, options),
            defaults={"Content-Type": "application/json", "Accept": "text/event-stream"},
            auth=lambda key: {"x-goog-api-key": key},
        )

    def new_decoder(self, model: Model | None) -> GoogleDecoder:
        return GoogleDecoder()

    def framing(self, max_event_bytes: int) -> Framing:
        return sse_framing(max_event_bytes)

    def recognizes(self, payload: bytes) -> bool:
        return recognizes(payload)


API = GoogleAPI()

if TYPE_CHECKING:
    _CODEC: WireCodec = API  # mypy --strict proves the API is a complete codec
