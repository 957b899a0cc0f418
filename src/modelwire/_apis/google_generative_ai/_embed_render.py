"""The server side of Gemini's ``:batchEmbedContents`` and Vertex AI's ``:predict``
(shapes in ``._embed``): the mock server's answers."""

from __future__ import annotations

from typing import Any

from .._server.embed import BadEmbedRequest, mock_vector, texts_field, wanted_dimensions

__all__ = ["EMBED_PATHS", "render_embeddings"]

EMBED_PATHS = ("/models/{model}:batchEmbedContents", "/models/{model}:predict")


def _text(content: object, where: str) -> str:
    parts = content.get("parts") if isinstance(content, dict) else None
    if not isinstance(parts, list) or not parts:
        raise BadEmbedRequest(f"{where}.parts must be a non-empty list")
    texts = [p.get("text") for p in parts if isinstance(p, dict)]
    if not texts or not all(isinstance(t, str) for t in texts):
        raise BadEmbedRequest(f"{where}.parts[].text must be strings")
    return "".join(t for t in texts if isinstance(t, str))


def render_embeddings(path: str, body: object) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise BadEmbedRequest("the body must be a JSON object")
    if path.split("?", 1)[0].endswith(":predict"):
        instances = body.get("instances")
        if not isinstance(instances, list) or not instances:
            raise BadEmbedRequest("instances must be a non-empty list")
        params = body.get("parameters") or {}
        size = wanted_dimensions(params.get("outputDimensionality"), "outputDimensionality")
        out = []
        for i, inst in enumerate(instances):
            text = texts_field(inst, "content")[0] if isinstance(inst, dict) else None
            if text is None:
                raise BadEmbedRequest(f"instances[{i}] must be an object")
            stats = {"token_count": len(text.split()) or 1, "truncated": False}
            out.append({"embeddings": {"values": mock_vector(text, size), "statistics": stats}})
        return {"predictions": out}
    requests = body.get("requests")
    if not isinstance(requests, list) or not requests:
        raise BadEmbedRequest("requests must be a non-empty list")
    embeddings = []
    for i, req in enumerate(requests):
        if not isinstance(req, dict):
            raise BadEmbedRequest(f"requests[{i}] must be an object")
        text = _text(req.get("content"), f"requests[{i}].content")
        size = wanted_dimensions(req.get("outputDimensionality"), "outputDimensionality")
        embeddings.append({"values": mock_vector(text, size)})
    return {"embeddings": embeddings}
