"""The server side of Cohere's ``POST /v2/embed`` (shape in ``._embed``): the mock
server's answer; like Cohere, it refuses a request without ``input_type``."""

from __future__ import annotations

from typing import Any

from .._server.embed import (
    BadEmbedRequest,
    mock_tokens,
    mock_vector,
    texts_field,
    wanted_dimensions,
)

__all__ = ["EMBED_PATHS", "render_embeddings"]

EMBED_PATHS = ("/embed",)


def render_embeddings(path: str, body: object) -> dict[str, Any]:
    texts = texts_field(body, "texts")
    assert isinstance(body, dict)
    if not isinstance(body.get("input_type"), str):
        raise BadEmbedRequest("input_type is required for this model")
    size = wanted_dimensions(body.get("output_dimension"), "output_dimension")
    vectors = [mock_vector(t, size) for t in texts]
    tokens = mock_tokens(texts)
    return {"id": "mock-embed", "embeddings": {"float": vectors}, "texts": texts,
            "meta": {"billed_units": {"input_tokens": tokens}}}  # fmt: skip
