"""Cohere embeddings: ``POST {base_url}/embed`` (``https://api.cohere.com/v2/embed``).

docs.cohere.com/reference/embed: the body is ``{"model", "texts": [...],
"input_type", "embedding_types": ["float"], "output_dimension"}`` — ``input_type`` is
required for v3 models and later (``search_document``, ``search_query``,
``classification``, ``clustering``), so ``search_document`` is sent when none is
given; at most 96 texts a request. The answer: ``{"id", "embeddings": {"float":
[[…]]}, "texts", "meta": {"billed_units": {"input_tokens"}}}``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from .._codec import Embedding
from .._common import json_request
from .._embed import (
    INPUT_TYPES,
    EmbedAnswer,
    check_input_type,
    cohere_vectors,
    endpoint_root,
    json_object,
)

if TYPE_CHECKING:
    from ..._wire.request import HTTPRequest
    from ...types import Model

__all__ = ["EMBEDDING", "MAX_TEXTS"]

_CHAT = "/chat"
#: Cohere's limit on texts per request.
MAX_TEXTS = 96


def _max_inputs(model: Model) -> int:
    return MAX_TEXTS


def embed_request(
    request: HTTPRequest,
    model: Model,
    inputs: Sequence[str],
    dimensions: int | None,
    input_type: str | None,
) -> HTTPRequest:
    check_input_type(input_type, "Cohere's embed API", INPUT_TYPES)
    root, sep, query = endpoint_root(request, model, _CHAT, "embed endpoint")
    body: dict[str, Any] = {
        "model": model.id,
        "texts": list(inputs),
        "input_type": input_type or "search_document",
        "embedding_types": ["float"],
    }
    if dimensions is not None:
        body["output_dimension"] = dimensions
    return json_request(request, root + "/embed" + sep + query, body)


def parse_embeddings(body: bytes, count: int) -> EmbedAnswer:
    obj = json_object(body, "embed")
    meta = obj.get("meta")
    billed = meta.get("billed_units") if isinstance(meta, dict) else None
    tokens = billed.get("input_tokens") if isinstance(billed, dict) else None
    if isinstance(tokens, bool) or not isinstance(tokens, int | float) or tokens < 0:
        tokens = None
    return EmbedAnswer(cohere_vectors(obj, count), None if tokens is None else int(tokens))


EMBEDDING = Embedding(_max_inputs, embed_request, parse_embeddings)
