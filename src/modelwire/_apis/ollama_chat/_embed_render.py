"""The server side of Ollama's ``POST /api/embed`` (shape in ``._embed``): the mock
server's answer."""

from __future__ import annotations

from typing import Any

from .._server.embed import mock_tokens, mock_vector, texts_field, wanted_dimensions

__all__ = ["EMBED_PATHS", "render_embeddings"]

EMBED_PATHS = ("/api/embed",)


def render_embeddings(path: str, body: object) -> dict[str, Any]:
    texts = texts_field(body, "input")
    assert isinstance(body, dict)
    size = wanted_dimensions(body.get("dimensions"), "dimensions")
    return {"model": body.get("model", ""), "embeddings": [mock_vector(t, size) for t in texts],
            "prompt_eval_count": mock_tokens(texts)}  # fmt: skip
