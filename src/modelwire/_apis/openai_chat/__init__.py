"""OpenAI Chat Completions, and every server compatible with it.

Reference: https://platform.openai.com/docs/api-reference/chat/create and
https://platform.openai.com/docs/api-reference/chat-streaming. Compatible
servers differ in small ways; :class:`ChatCompat` holds those differences as
data, detected from the provider and base URL and overridable with
``Model(compat={...})`` (the table is in the README).
"""

from __future__ import annotations

from typing import Any

from ..._options import HTTPRequest, RequestOptions
from ...types import Context, Model
from .. import IdRule
from .._common import SSEWireAPI, bearer_auth, check_context_values, http_request
from .._mock import Frame, ScriptedReply
from ._compat import ChatCompat, detect_compat
from ._decode import ChatDecoder
from ._encode import RESERVED, build_body, encode_messages
from ._render import render, tool_id_rule, tool_results

__all__ = ["API", "RESERVED", "ChatCompat", "ChatDecoder", "OpenAIChatAPI", "detect_compat",
           "encode_messages"]  # fmt: skip


class OpenAIChatAPI(SSEWireAPI):
    """The ``openai-chat`` wire API."""

    name = "openai-chat"
    endpoint = "/chat/completions"

    def build_body(self, model: Model, context: Context, options: RequestOptions) -> dict[str, Any]:
        return build_body(model, context, options)

    def build_request(self, model: Model, context: Context, options: RequestOptions) -> HTTPRequest:
        check_context_values(context)
        return http_request(
            model,
            options,
            url=self.url(model),
            body=build_body(model, context, options),
            defaults={"Content-Type": "application/json", "Accept": "text/event-stream"},
            auth=bearer_auth,
        )

    def new_decoder(self, model: Model | None) -> ChatDecoder:
        compat = detect_compat(model) if model is not None else ChatCompat()
        return ChatDecoder(compat)

    def render(
        self, reply: ScriptedReply, model: str, response_id: str, piece_chars: int
    ) -> list[Frame]:
        return render(reply, model, response_id, piece_chars)

    def tool_results(self, body: object) -> list[str]:
        return tool_results(body)

    def tool_id_rule(self, model: Model) -> IdRule | None:
        return tool_id_rule(model)


API = OpenAIChatAPI()
