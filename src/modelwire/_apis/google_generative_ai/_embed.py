"""Gemini embeddings: ``POST {base_url}/models/{id}:batchEmbedContents``, and Vertex
AI's ``…/publishers/google/models/{id}:predict``.

ai.google.dev/api/embeddings (``models.batchEmbedContents``): the body is
``{"requests": [{"model": "models/{id}", "content": {"parts": [{"text"}]},
"taskType", "outputDimensionality"}]}`` (at most 100 requests); the answer
``{"embeddings": [{"values": [numbers]}]}``, in request order, with no token count.

cloud.google.com/vertex-ai/generative-ai/docs/model-reference/text-embeddings-api:
``{"instances": [{"content", "task_type"}], "parameters": {"outputDimensionality"}}``
→ ``{"predictions": [{"embeddings": {"values", "statistics": {"token_count"}}}]}``;
``gemini-embedding-001`` takes one instance per request, the ``text-embedding-*``
models up to 250.

``input_type`` maps to the task type both APIs name the same way.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...errors import MalformedChunkError
from .._codec import Embedding
from .._common import json_request
from .._embed import (
    INPUT_TYPES,
    EmbedAnswer,
    check_count,
    check_input_type,
    endpoint_root,
    float_vector,
    json_object,
)

if TYPE_CHECKING:
    from ..._wire.request import HTTPRequest
    from ...types import Model

__all__ = ["EMBEDDING", "TASK_TYPES"]

_STREAM = ":streamGenerateContent"
#: ``input_type`` → ``taskType`` (Gemini) and ``task_type`` (Vertex AI).
TASK_TYPES = dict(zip(INPUT_TYPES, ("RETRIEVAL_DOCUMENT", "RETRIEVAL_QUERY",
                                    "CLASSIFICATION", "CLUSTERING"), strict=True))  # fmt: skip
_GEMINI_MAX = 100
_VERTEX_MAX = 250


def _vertex(model: Model) -> bool:
    return model.provider == "google-vertex"


def _max_inputs(model: Model) -> int:
    if _vertex(model):
        return 1 if model.id.startswith("gemini-") else _VERTEX_MAX
    return _GEMINI_MAX


def embed_request(
    request: HTTPRequest,
    model: Model,
    inputs: Sequence[str],
    dimensions: int | None,
    input_type: str | None,
) -> HTTPRequest:
    check_input_type(input_type, "the Gemini embeddings API", INPUT_TYPES)
    task = TASK_TYPES.get(input_type) if input_type is not None else None
    root, _sep, query = endpoint_root(request, model, _STREAM, "embedding endpoint")
    # ``alt=sse`` asks for the stream; any other parameter (a key) is kept.
    rest = "&".join(p for p in query.split("&") if p and p != "alt=sse")
    tail = f"?{rest}" if rest else ""
    if "/publishers/" in root:
        instances: list[dict[str, Any]] = []
        for text in inputs:
            instance: dict[str, Any] = {"content": text}
            if task is not None:
                instance["task_type"] = task
            instances.append(instance)
        body: dict[str, Any] = {"instances": instances}
        if dimensions is not None:
            body["parameters"] = {"outputDimensionality": dimensions}
        return json_request(request, root + ":predict" + tail, body)
    resource = root[root.rindex("/models/") + 1 :]
    requests = []
    for text in inputs:
        one: dict[str, Any] = {"model": resource, "content": {"parts": [{"text": text}]}}
        if task is not None:
            one["taskType"] = task
        if dimensions is not None:
            one["outputDimensionality"] = dimensions
        requests.append(one)
    return json_request(request, root + ":batchEmbedContents" + tail, {"requests": requests})


def parse_embeddings(body: bytes, count: int) -> EmbedAnswer:
    obj = json_object(body, "embeddings")
    if "predictions" in obj:
        return _predictions(obj["predictions"], count)
    items = obj.get("embeddings")
    if not isinstance(items, list):
        raise MalformedChunkError("embeddings must be a list")
    check_count(items, count, "embeddings")
    vectors = []
    for i, item in enumerate(items):
        values = item.get("values") if isinstance(item, dict) else None
        vectors.append(float_vector(values, f"embeddings[{i}].values"))
    return EmbedAnswer(vectors, None)


def _predictions(items: object, count: int) -> EmbedAnswer:
    if not isinstance(items, list):
        raise MalformedChunkError("predictions must be a list")
    check_count(items, count, "predictions")
    vectors = []
    tokens = 0
    for i, item in enumerate(items):
        emb = item.get("embeddings") if isinstance(item, dict) else None
        if not isinstance(emb, dict):
            raise MalformedChunkError(f"predictions[{i}].embeddings must be an object")
        vectors.append(float_vector(emb.get("values"), f"predictions[{i}].embeddings.values"))
        stats = emb.get("statistics")
        n = stats.get("token_count") if isinstance(stats, dict) else None
        if isinstance(n, int | float) and not isinstance(n, bool) and n >= 0:
            tokens += int(n)
    return EmbedAnswer(vectors, tokens)


EMBEDDING = Embedding(_max_inputs, embed_request, parse_embeddings)
