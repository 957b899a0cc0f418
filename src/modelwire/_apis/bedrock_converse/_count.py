"""Bedrock's token counting: ``POST {base_url}/model/{modelId}/count-tokens``.

Bedrock API reference, ``CountTokens``: the body is ``{"input": {"converse":
{"messages", "system"}}}`` (``ConverseTokensRequest`` mirrors the Converse request)
and the answer ``{"inputTokens": 123}``. Signed (SigV4) or sent with a Bedrock API
key exactly as the stream request is: the authorizer signs this URL and body when it
is sent.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import msgspec

from .._common import json_request, read_count

if TYPE_CHECKING:
    from ..._wire.request import HTTPRequest

__all__ = ["count_request", "parse_count"]

_STREAM = "/converse-stream"
_KEEP = ("messages", "system", "toolConfig")


def count_request(request: HTTPRequest) -> HTTPRequest | None:
    path, sep, query = request.url.partition("?")
    if not path.endswith(_STREAM):
        return None
    body = msgspec.json.decode(request.body)
    converse = {k: body[k] for k in _KEEP if k in body}
    url = path[: -len(_STREAM)] + "/count-tokens" + sep + query
    return json_request(request, url, {"input": {"converse": converse}})


def parse_count(body: bytes) -> int:
    return read_count(body, "inputTokens", "CountTokens")
