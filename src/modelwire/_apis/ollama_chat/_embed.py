"""Ollama's native embeddings: ``POST {base_url}/api/embed``.

github.com/ollama/ollama/blob/main/docs/api.md ("Generate Embeddings"): the body is
``{"model", "input": [texts], "dimensions"}`` (``dimensions`` on the models that can
truncate, Ollama 0.11 and later); the answer ``{"model", "embeddings": [[…]],
"prompt_eval_count"}``. Ollama sets no limit on inputs a request; batches of
:data:`MAX_INPUTS` keep one request's work bounded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...errors import MalformedChunkError
from .._codec import Embedding
from .._common import json_request
from .._embed import (
    EmbedAnswer,
    check_count,
    check_input_type,
    endpoint_root,
    float_vector,
    json_object,
)
from .spec import ENDPOINT

if TYPE_CHECKING:
    from ..._wire.request import HTTPRequest
    from ...types import Model

__all__ = ["EMBEDDING", "MAX_INPUTS"]

#: Inputs per request (Ollama has no limit of its own).
MAX_INPUTS = 256


def _max_inputs(model: Model) -> int:
    return MAX_INPUTS


def embed_request(
    request: HTTPRequest,
    model: Model,
    inputs: Sequence[str],
    dimensions: int | None,
    input_type: str | None,
) -> HTTPRequest:
    check_input_type(input_type, "Ollama's /api/embed", ())
    root, sep, query = endpoint_root(request, model, ENDPOINT, "/api/embed")
    body: dict[str, Any] = {"model": model.id, "input": list(inputs)}
    if dimensions is not None:
        body["dimensions"] = dimensions
    return json_request(request, root + "/api/embed" + sep + query, body)


def parse_embeddings(body: bytes, count: int) -> EmbedAnswer:
    obj = json_object(body, "/api/embed")
    items = obj.get("embeddings")
    if not isinstance(items, list):
        raise MalformedChunkError("embeddings must be a list")
    check_count(items, count, "embeddings")
    vectors = [float_vector(v, f"embeddings[{i}]") for i, v in enumerate(items)]
    tokens = obj.get("prompt_eval_count")
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
        tokens = None
    return EmbedAnswer(vectors, tokens)


EMBEDDING = Embedding(_max_inputs, embed_request, parse_embeddings)
