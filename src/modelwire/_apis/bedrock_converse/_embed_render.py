"""The server side of Bedrock's ``InvokeModel`` for embedding models (bodies in
``._embed``): Titan's one text or Cohere's ``texts``, told apart by the body."""

from __future__ import annotations

from typing import Any

from .._server.embed import BadEmbedRequest, mock_vector, texts_field, wanted_dimensions

__all__ = ["EMBED_PATHS", "render_embeddings"]

EMBED_PATHS = ("/model/{model}/invoke",)


def render_embeddings(path: str, body: object) -> dict[str, Any]:
    if isinstance(body, dict) and "inputText" in body:
        text = body["inputText"]
        if not isinstance(text, str):
            raise BadEmbedRequest("inputText must be a string")
        size = wanted_dimensions(body.get("dimensions"), "dimensions")
        return {"embedding": mock_vector(text, size),
                "inputTextTokenCount": len(text.split()) or 1}  # fmt: skip
    texts = texts_field(body, "texts")
    assert isinstance(body, dict)
    size = wanted_dimensions(body.get("output_dimension"), "output_dimension")
    return {"id": "mock-embed", "response_type": "embeddings_by_type", "texts": texts,
            "embeddings": {"float": [mock_vector(t, size) for t in texts]}}  # fmt: skip
