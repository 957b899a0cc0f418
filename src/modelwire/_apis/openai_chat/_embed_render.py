"""The server side of ``POST /v1/embeddings`` (OpenAI's shape, see ``._embed``): the
mock server's answer, float or base64 as ``encoding_format`` asks."""

from __future__ import annotations

from typing import Any

from .._server.embed import (
    BadEmbedRequest,
    base64_vector,
    mock_tokens,
    mock_vector,
    texts_field,
    wanted_dimensions,
)

__all__ = ["EMBED_PATHS", "render_embeddings"]

EMBED_PATHS = ("/embeddings",)


def render_embeddings(path: str, body: object) -> dict[str, Any]:
    texts = texts_field(body, "input")
    assert isinstance(body, dict)
    size = wanted_dimensions(body.get("dimensions"), "dimensions")
    encoding = body.get("encoding_format", "float")
    if encoding not in ("float", "base64"):
        raise BadEmbedRequest("encoding_format must be 'float' or 'base64'")
    data = []
    for i, text in enumerate(texts):
        vector = mock_vector(text, size)
        embedding: Any = base64_vector(vector) if encoding == "base64" else vector
        data.append({"object": "embedding", "index": i, "embedding": embedding})
    tokens = mock_tokens(texts)
    return {"object": "list", "data": data, "model": body.get("model", ""),
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}  # fmt: skip
