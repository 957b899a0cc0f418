"""Anthropic's token counting: ``POST {base_url}/messages/count_tokens``.

docs.anthropic.com, "Count message tokens" (``/en/api/messages-count-tokens``): the
body is a Messages request without the sampling fields — ``model``, ``messages``,
``system``, ``tools``, ``tool_choice``, ``thinking``, ``mcp_servers`` — and the answer
is ``{"input_tokens": 2095}``. The same auth headers and ``anthropic-version``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from .._common import json_request, read_count

if TYPE_CHECKING:
    from ..._wire.request import HTTPRequest

__all__ = ["count_request", "parse_count"]

_KEEP = ("model", "messages", "system", "tools", "tool_choice", "thinking", "mcp_servers")
_ENDPOINT = "/messages"


def count_request(request: HTTPRequest) -> HTTPRequest | None:
    """The counting request for a Messages stream request (``None``: a URL this does
    not know how to turn into the counting endpoint, e.g. Vertex's rawPredict)."""
    path, sep, query = request.url.partition("?")
    if not path.endswith(_ENDPOINT):
        return None
    body = msgspec.json.decode(request.body)
    kept = {k: body[k] for k in _KEEP if k in body}
    return json_request(request, f"{path}/count_tokens{sep}{query}", kept)


def parse_count(body: bytes) -> int:
    return read_count(body, "input_tokens", "messages/count_tokens")
