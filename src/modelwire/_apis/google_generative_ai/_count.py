"""Gemini's token counting: ``POST {base_url}/models/{id}:countTokens``.

ai.google.dev/api/tokens (``models.countTokens``): the Gemini API takes the whole
generate request as ``{"generateContentRequest": {"model": "models/{id}", "contents",
"systemInstruction", "tools", "toolConfig", "generationConfig", "safetySettings"}}``
so system instructions and tools are counted too; Vertex AI
(cloud.google.com/vertex-ai, ``publishers.models.countTokens``) takes ``contents``,
``systemInstruction``, ``tools`` and ``generationConfig`` at the top level. The
answer is ``{"totalTokens": 31, …}``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import msgspec

from .._common import json_request, read_count

if TYPE_CHECKING:
    from ..._wire.request import HTTPRequest

__all__ = ["count_request", "parse_count"]

_STREAM = ":streamGenerateContent"
_GEMINI_KEEP = ("contents", "systemInstruction", "tools", "toolConfig", "generationConfig",
                "safetySettings", "cachedContent")  # fmt: skip
_VERTEX_KEEP = ("contents", "systemInstruction", "tools", "generationConfig")


def count_request(request: HTTPRequest) -> HTTPRequest | None:
    path, _sep, query = request.url.partition("?")
    if not path.endswith(_STREAM):
        return None
    # ``alt=sse`` asks for the stream; any other parameter (a key) is kept.
    rest = "&".join(p for p in query.split("&") if p and p != "alt=sse")
    url = path[: -len(_STREAM)] + ":countTokens" + (f"?{rest}" if rest else "")
    body = msgspec.json.decode(request.body)
    count: dict[str, Any]
    if "/publishers/" in path:
        count = {k: body[k] for k in _VERTEX_KEEP if k in body}
    else:
        resource = path[path.rindex("/models/") + 1 : -len(_STREAM)]
        inner = {k: body[k] for k in _GEMINI_KEEP if k in body}
        count = {"generateContentRequest": {"model": resource, **inner}}
    return json_request(request, url, count)


def parse_count(body: bytes) -> int:
    return read_count(body, "totalTokens", "models.countTokens")
