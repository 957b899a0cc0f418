"""OpenAI Responses input token counting: ``POST {base_url}/responses/input_tokens``.

platform.openai.com/docs/api-reference/responses/input-tokens: the body takes the
fields of a create request that shape the prompt — ``model``, ``input``,
``instructions``, ``tools``, ``tool_choice``, ``parallel_tool_calls``, ``reasoning``,
``text``, ``truncation``, ``previous_response_id``, ``conversation`` — and the answer
is ``{"object": "response.input_tokens", "input_tokens": 11}``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from .._common import json_request, read_count

if TYPE_CHECKING:
    from ..._wire.request import HTTPRequest

__all__ = ["count_request", "parse_count"]

_KEEP = ("model", "input", "instructions", "tools", "tool_choice", "parallel_tool_calls",
         "reasoning", "text", "truncation", "previous_response_id", "conversation")  # fmt: skip
_ENDPOINT = "/responses"


def count_request(request: HTTPRequest) -> HTTPRequest | None:
    path, sep, query = request.url.partition("?")
    if not path.endswith(_ENDPOINT):
        return None
    body = msgspec.json.decode(request.body)
    kept = {k: body[k] for k in _KEEP if k in body}
    return json_request(request, f"{path}/input_tokens{sep}{query}", kept)


def parse_count(body: bytes) -> int:
    return read_count(body, "input_tokens", "responses/input_tokens")
