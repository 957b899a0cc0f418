"""What every API's embedding facet shares: the parsed answer and the readers of
vectors, each naming the field path of what is wrong
(``data[0].embedding must be a list of numbers``).

A vector is an ``array('f')`` (float32, as the providers compute them: 4 bytes a
number instead of a Python float's 24 plus a list slot). OpenAI's
``encoding_format: "base64"`` sends the same float32 numbers as little-endian bytes
(platform.openai.com/docs/api-reference/embeddings/create): they are copied in
whole, not parsed number by number.
"""

from __future__ import annotations

import base64
import binascii
import sys
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import msgspec

from ..errors import ConfigurationError, MalformedChunkError

if TYPE_CHECKING:
    from .._wire.request import HTTPRequest
    from ..types import Model

__all__ = [
    "INPUT_TYPES",
    "EmbedAnswer",
    "check_count",
    "check_input_type",
    "cohere_vectors",
    "endpoint_root",
    "float_vector",
    "json_object",
    "plain_vector",
    "vector_from_base64",
]

#: The neutral ``input_type`` values (Cohere's names; each API maps them to its own:
#: Gemini's ``taskType``, Vertex's ``task_type``).
INPUT_TYPES = ("search_document", "search_query", "classification", "clustering")


@dataclass(frozen=True, slots=True)
class EmbedAnswer:
    """One embedding request's answer, read by an API's facet.

    Attributes:
        vectors: One vector per input of the request, in input order.
        input_tokens: The input tokens the provider reported (``None``: it reports none).
    """

    vectors: list[array[float]]
    input_tokens: int | None


def endpoint_root(
    request: HTTPRequest, model: Model, suffix: str, what: str
) -> tuple[str, str, str]:
    """The stream request's URL cut before its ``suffix``: ``(root, "?" or "", query)``,
    the embedding endpoint being the stream's sibling; a URL without ``suffix`` (a
    provider's own layout) is a ``ConfigurationError`` naming ``what``."""
    path, sep, query = request.url.partition("?")
    if not path.endswith(suffix):
        raise ConfigurationError(f"{model.provider}/{model.id}: no {what} beside {path}")
    return path[: -len(suffix)], sep, query


def json_object(body: bytes, endpoint: str) -> dict[str, Any]:
    """The answer's JSON object; anything else is a ``malformed_chunk``."""
    try:
        obj = msgspec.json.decode(body)
    except msgspec.DecodeError:
        raise MalformedChunkError(f"{endpoint} did not answer with JSON") from None
    if not isinstance(obj, dict):
        raise MalformedChunkError(f"{endpoint}: the answer must be a JSON object")
    return obj


def float_vector(value: object, where: str) -> array[float]:
    """A JSON list of numbers as a float32 vector (``where`` names its field path)."""
    if not isinstance(value, list) or not value:
        raise MalformedChunkError(f"{where} must be a non-empty list of numbers")
    try:
        return array("f", value)
    except (TypeError, OverflowError):
        raise MalformedChunkError(f"{where} must be a list of numbers") from None


def vector_from_base64(value: str, where: str) -> array[float]:
    """OpenAI's base64 encoding: little-endian float32 bytes."""
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise MalformedChunkError(f"{where} must be base64 (encoding_format base64)") from None
    if not raw or len(raw) % 4:
        raise MalformedChunkError(f"{where} must hold whole float32 numbers ({len(raw)} bytes)")
    out = array("f")
    out.frombytes(raw)
    if sys.byteorder == "big":
        out.byteswap()
    return out


def plain_vector(value: object, where: str) -> array[float]:
    """A vector sent as a list of numbers or as base64 float32 bytes."""
    if isinstance(value, str):
        return vector_from_base64(value, where)
    return float_vector(value, where)


def check_count(vectors: Sequence[object], count: int, where: str) -> None:
    """One vector per input, or a ``malformed_chunk`` saying how many came."""
    if len(vectors) != count:
        raise MalformedChunkError(f"{where} has {len(vectors)} embedding(s) for {count} input(s)")


def check_input_type(input_type: str | None, api: str, allowed: Sequence[str]) -> None:
    """Refuse an ``input_type`` the API has no field for (never dropped silently)."""
    if input_type is None or input_type in allowed:
        return
    takes = f"it takes {', '.join(allowed)}" if allowed else "it has no input_type field"
    raise ConfigurationError(
        f"input_type={input_type!r} cannot be sent to {api}: {takes}; pass input_type=None"
    )


def cohere_vectors(obj: dict[str, Any], count: int) -> list[array[float]]:
    """The float vectors of a Cohere embed answer — ``{"embeddings": {"float":
    [[…]]}}`` when ``embedding_types`` was sent (docs.cohere.com/reference/embed), the
    older ``{"embeddings": [[…]]}`` otherwise — as Cohere's API and Cohere's models on
    Bedrock answer."""
    emb = obj.get("embeddings")
    where = "embeddings"
    if isinstance(emb, dict):
        emb, where = emb.get("float"), "embeddings.float"
    if not isinstance(emb, list):
        raise MalformedChunkError(f"{where} must be a list of embeddings")
    check_count(emb, count, where)
    return [float_vector(v, f"{where}[{i}]") for i, v in enumerate(emb)]
