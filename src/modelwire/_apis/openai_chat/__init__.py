"""OpenAI Chat Completions, and every server compatible with it.

Reference: https://platform.openai.com/docs/api-reference/chat/create and
https://platform.openai.com/docs/api-reference/chat-streaming. Compatible
servers differ in small ways; :class:`ChatCompat` holds those differences as
data, detected from the provider and base URL and overridable with
``Model(compat={...})`` (the table is in the README).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..._wire.request import HTTPRequest, RequestOptions
from ...types import Capabilities, Context, Model
from .._codec import IdRules, sse_framing
from .._common import bearer_auth, check_context_values, http_request
from . import batch as _batch
from . import spec
from ._compat import ChatCompat, detect_compat
from ._embed import EMBEDDING
from ._leaky import LeakyChatDecoder
from .decode import ChatDecoder, recognizes
from .encode import RESERVED, build_body, encode_messages, tool_id_rule

if TYPE_CHECKING:
    from ..._wire.framing import Framing
    from .._codec import WireCodec

__all__ = ["API", "RESERVED", "ChatCompat", "ChatDecoder", "OpenAIChatAPI", "detect_compat",
           "encode_messages"]  # fmt: skip


class OpenAIChatAPI:
    """The ``openai-chat`` wire API."""

    name = spec.API_NAME
    endpoint = "/chat/completions"
    handoff = IdRules(tool_id_rule)
    counting = None  # Chat Completions has no token-counting endpoint
    batching = _batch.BATCHING  # the provider's batch API (modelwire.batching)
    embedding = EMBEDDING  # POST /embeddings (._embed)

    def capabilities(self, model: Model) -> Capabilities:
        return spec.CAPABILITIES

    def path(self, model_id: str) -> str:
        return self.endpoint

    def build_body(self, model: Model, context: Context, options: RequestOptions) -> dict[str, Any]:
        return build_body(model, context, options)

    def build_request(self, model: Model, context: Context, options: RequestOptions) -> HTTPRequest:
        check_context_values(context)
        return http_request(
            model,
            options,
            url=model.url_root + self.endpoint,
            body=build_body(model, context, options),
            defaults={"Content-Type": "application/json", "Accept": "text/event-stream"},
            auth=bearer_auth,
        )

    def framing(self, max_event_bytes: int) -> Framing:
        return sse_framing(max_event_bytes)

    def new_decoder(self, model: Model | None) -> ChatDecoder:
        compat = detect_compat(model) if model is not None else ChatCompat()
        if compat.leaked_tool_calls:
            return LeakyChatDecoder(compat)
        return ChatDecoder(compat)

    def recognizes(self, payload: bytes) -> bool:
        return recognizes(payload)


API = OpenAIChatAPI()

if TYPE_CHECKING:
    _CODEC: WireCodec = API  # mypy --strict proves the API is a complete codec
