"""Embeddings on Amazon Bedrock: ``POST {base_url}/model/{modelId}/invoke``
(``InvokeModel``), signed or keyed exactly as the stream request is.

The body is the model's own (Bedrock user guide, "Amazon Titan Text Embeddings" and
"Cohere Embed models"):

* Titan Text Embeddings v2 (``amazon.titan-embed-text-v2:0``): one text a request,
  ``{"inputText", "dimensions": 256 | 512 | 1024, "normalize": true}`` →
  ``{"embedding": [...], "inputTextTokenCount"}``;
* Cohere Embed (``cohere.embed-english-v3``, ``cohere.embed-multilingual-v3``,
  ``cohere.embed-v4:0``): up to 96 texts, ``{"texts", "input_type",
  "embedding_types": ["float"], "output_dimension"}`` → ``{"embeddings": {"float":
  [[…]]}}``; the token count is only in a response header, so none is read.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import msgspec

from ...errors import ConfigurationError, MalformedChunkError
from .._codec import Embedding
from .._embed import (
    INPUT_TYPES,
    EmbedAnswer,
    check_input_type,
    cohere_vectors,
    endpoint_root,
    float_vector,
    json_object,
)
from .spec import STREAM_SUFFIX

if TYPE_CHECKING:
    from ..._wire.request import HTTPRequest
    from ...types import Model

__all__ = ["EMBEDDING"]

_COHERE_MAX = 96


def _family(model: Model) -> str:
    if "titan-embed-text" in model.id:
        return "titan"
    if "cohere.embed" in model.id:
        return "cohere"
    raise ConfigurationError(
        f"{model.provider}/{model.id}: Bedrock embeddings are read for Titan Text "
        "Embeddings (amazon.titan-embed-text-v2:0) and Cohere Embed (cohere.embed-*) models"
    )


def _max_inputs(model: Model) -> int:
    return 1 if _family(model) == "titan" else _COHERE_MAX


def embed_request(
    request: HTTPRequest,
    model: Model,
    inputs: Sequence[str],
    dimensions: int | None,
    input_type: str | None,
) -> HTTPRequest:
    family = _family(model)
    root, sep, query = endpoint_root(request, model, STREAM_SUFFIX, "InvokeModel")
    body: dict[str, Any]
    if family == "titan":
        check_input_type(input_type, "Titan Text Embeddings", ())
        if len(inputs) != 1:
            raise ConfigurationError("Titan Text Embeddings takes one text a request")
        body = {"inputText": inputs[0], "normalize": True}
        if dimensions is not None:
            body["dimensions"] = dimensions
    else:
        check_input_type(input_type, "Cohere Embed on Bedrock", INPUT_TYPES)
        body = {"texts": list(inputs), "input_type": input_type or "search_document",
                "embedding_types": ["float"]}  # fmt: skip
        if dimensions is not None:
            body["output_dimension"] = dimensions
    headers = {k: v for k, v in request.headers.items() if k.lower() != "accept"}
    headers["Accept"] = "application/json"
    url = root + "/invoke" + sep + query
    return msgspec.structs.replace(
        request, url=url, headers=headers, body=msgspec.json.encode(body)
    )


def parse_embeddings(body: bytes, count: int) -> EmbedAnswer:
    obj = json_object(body, "InvokeModel")
    if "embedding" in obj:  # Titan: one text, one vector
        if count != 1:
            raise MalformedChunkError(f"embedding is one vector for {count} inputs")
        tokens = obj.get("inputTextTokenCount")
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
            tokens = None
        return EmbedAnswer([float_vector(obj["embedding"], "embedding")], tokens)
    return EmbedAnswer(cohere_vectors(obj, count), None)


EMBEDDING = Embedding(_max_inputs, embed_request, parse_embeddings)
