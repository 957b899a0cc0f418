"""Embeddings on OpenAI's API and every server compatible with it:
``POST {base_url}/embeddings``.

platform.openai.com/docs/api-reference/embeddings/create: the body is ``{"model",
"input": [texts], "encoding_format": "float" | "base64", "dimensions"}`` (at most 2048
inputs a request); the answer ``{"object": "list", "data": [{"object": "embedding",
"index", "embedding"}], "model", "usage": {"prompt_tokens", "total_tokens"}}``. vLLM,
llama.cpp's ``llama-server --embedding``, Ollama's ``/v1``, Mistral and Together
answer the same shape. ``data`` is put back in input order by ``index``.

``encoding_format: "base64"`` (what the official SDKs ask for: a quarter of the
bytes, no float parsing) is sent to OpenAI and Azure OpenAI; other servers get the
default (float), which every one of them speaks; an answer in either is read.
An Azure deployment's URL (``…/deployments/{d}/chat/completions?api-version=…``) keeps
its query: ``…/deployments/{d}/embeddings?api-version=…``.
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
    json_object,
    plain_vector,
)

if TYPE_CHECKING:
    from ..._wire.request import HTTPRequest
    from ...types import Model

__all__ = ["EMBEDDING", "MAX_INPUTS"]

_CHAT = "/chat/completions"
_ENDPOINT = "/embeddings"
#: OpenAI's limit on inputs per request.
MAX_INPUTS = 2048
#: Providers whose servers take ``encoding_format: "base64"`` (the official ones).
_BASE64 = frozenset({"openai", "azure-openai"})
_WHAT = "embeddings"


def _max_inputs(model: Model) -> int:
    return MAX_INPUTS


def embed_request(
    request: HTTPRequest,
    model: Model,
    inputs: Sequence[str],
    dimensions: int | None,
    input_type: str | None,
) -> HTTPRequest:
    check_input_type(input_type, "the OpenAI embeddings API", ())
    root, sep, query = endpoint_root(request, model, _CHAT, "embeddings endpoint")
    body: dict[str, Any] = {"model": model.id, "input": list(inputs)}
    if model.provider in _BASE64:
        body["encoding_format"] = "base64"
    if dimensions is not None:
        body["dimensions"] = dimensions
    return json_request(request, root + _ENDPOINT + sep + query, body)


def parse_embeddings(body: bytes, count: int) -> EmbedAnswer:
    obj = json_object(body, _WHAT)
    data = obj.get("data")
    if not isinstance(data, list):
        raise MalformedChunkError("data must be a list of embeddings")
    check_count(data, count, "data")
    vectors: list[Any] = [None] * count
    for i, item in enumerate(data):
        if not isinstance(item, dict):
            raise MalformedChunkError(f"data[{i}] must be an object")
        index = item.get("index", i)
        if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < count:
            raise MalformedChunkError(f"data[{i}].index must be an integer below {count}")
        if vectors[index] is not None:
            raise MalformedChunkError(f"data[{i}].index {index} is repeated")
        vectors[index] = plain_vector(item.get("embedding"), f"data[{i}].embedding")
    usage = obj.get("usage")
    tokens = usage.get("prompt_tokens") if isinstance(usage, dict) else None
    if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
        tokens = None  # llama.cpp and some proxies send no usage
    return EmbedAnswer(vectors, tokens)


EMBEDDING = Embedding(_max_inputs, embed_request, parse_embeddings)
