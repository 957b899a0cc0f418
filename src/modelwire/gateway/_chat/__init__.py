"""The gateway's OpenAI Chat Completions front-end (``POST /v1/chat/completions``).

References: https://platform.openai.com/docs/api-reference/chat/create (request),
https://platform.openai.com/docs/api-reference/chat/object and
https://platform.openai.com/docs/api-reference/chat-streaming (answers). Sans-IO:
:data:`FRONTEND` parses bodies and renders events; the gateway app does the I/O.

Request fields (also in ``docs/gateway-chat.md``):

=====================================  =================================================
translated                             ``model``, ``messages`` (system/developer → the
                                       system prompt; user text, ``image_url`` data
                                       URLs, ``input_audio``, ``file``; assistant text,
                                       refusal, ``reasoning_content``/``reasoning``/
                                       ``reasoning_details`` (sealed or text), ``tool_calls``
                                       with their exact ``arguments``; tool results
                                       and the attachments the encoder sends after
                                       them), ``tools`` (function), ``tool_choice``,
                                       ``parallel_tool_calls``, ``max_completion_tokens``
                                       / ``max_tokens``, ``temperature``,
                                       ``reasoning_effort`` (``none``: no level),
                                       ``response_format`` ``json_schema`` → ``output``
                                       (answered as content),
                                       ``prompt_cache_key`` → ``session_id``, ``stream``,
                                       ``stream_options.include_usage``
passed through (same-API backend only) any other field (``top_p``, ``stop``, ``seed``,
                                       ``frequency_penalty``, ``logit_bias``,
                                       ``service_tier``, ``response_format``
                                       ``json_object``, ``store``/``logprobs`` when true…)
refused (400)                          ``n`` > 1, ``functions``/``function_call``, role
                                       ``function``, image URLs that are not data URLs,
                                       audio other than wav/mp3, a system message after
                                       the first non-system one, assistant ``audio``
ignored (harmless)                     ``user``, ``safety_identifier``, ``metadata``,
                                       ``store``/``logprobs`` false, ``n`` = 1, message
                                       ``name``, ``image_url.detail``,
                                       ``tools[].function.strict``, unknown fields
                                       inside a message
=====================================  =================================================
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from ..._apis._server.request import GatewayRequest, RequestError
from ..._apis.openai_chat._carry import API
from ..._apis.openai_chat._error_shape import error as _error
from ..._apis.openai_chat.parse import parse as _parse
from ..._apis.openai_chat.render import ChatRenderer, message_body
from ..._apis.openai_chat.spec import ID_PREFIX
from ...types import AssistantMessage
from .._frontend import Frontend

__all__ = ["FRONTEND", "ChatFrontend", "ChatRenderer"]


class ChatFrontend:
    """OpenAI Chat Completions as the gateway's clients speak it."""

    api: str = API
    paths: tuple[str, ...] = ("/v1/chat/completions", "/chat/completions")
    id_prefix: str = ID_PREFIX

    def parse(self, body: bytes, headers: Mapping[str, str]) -> GatewayRequest:
        return _parse(body, headers)

    def renderer(self, request: GatewayRequest, response_id: str) -> ChatRenderer:
        return ChatRenderer(request, response_id)

    def message(
        self, request: GatewayRequest, message: AssistantMessage, response_id: str
    ) -> bytes:
        return message_body(request, message, response_id)

    def error(self, error: RequestError | BaseException) -> tuple[int, dict[str, str], bytes]:
        return _error(error)


FRONTEND = ChatFrontend()

if TYPE_CHECKING:
    _FRONTEND: Frontend = FRONTEND  # mypy --strict proves it is a complete front-end
