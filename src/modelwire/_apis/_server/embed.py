"""The mock server's embeddings: deterministic vectors made from the text, so a
test can compute what the client must get back (:func:`mock_vector`), and the body
helpers every API's embedding renderer shares.

A bad request (no texts, a text that is not a string, a wrong ``dimensions``) is a
:class:`BadEmbedRequest`; the server answers it 400 in the API's error shape.
"""

from __future__ import annotations

import base64
import hashlib
import struct
from typing import Any

__all__ = [
    "DEFAULT_DIMENSIONS",
    "BadEmbedRequest",
    "base64_vector",
    "mock_tokens",
    "mock_vector",
    "texts_field",
    "wanted_dimensions",
]

#: The size of a mock vector when the request asks for none.
DEFAULT_DIMENSIONS = 64
#: The largest size the mock renders (OpenAI's text-embedding-3-large: 3072).
MAX_DIMENSIONS = 4096


class BadEmbedRequest(ValueError):
    """A request the mock refuses with 400 (the message says why)."""


def mock_tokens(texts: list[str]) -> int:
    """The input tokens the mock server reports: a word a token, at least one a text."""
    return sum(len(t.split()) or 1 for t in texts)


def mock_vector(text: str, dimensions: int = DEFAULT_DIMENSIONS) -> list[float]:
    """The vector the mock server returns for ``text``: SHA-256 in counter mode read
    as numbers in [-1, 1), normalised to length 1 — the same text always gives the
    same vector, two texts (almost surely) different ones. Each number is exact in
    float32, so a client's ``array('f')`` holds exactly these values.

    Args:
        text: The input text.
        dimensions: The vector's size.

    Returns:
        ``dimensions`` floats.
    """
    out: list[int] = []
    counter = 0
    seed = text.encode("utf-8", "surrogatepass")
    while len(out) < dimensions:
        digest = hashlib.sha256(seed + counter.to_bytes(4, "big")).digest()
        out.extend(struct.unpack(">16h", digest))
        counter += 1
    values = out[:dimensions]
    norm = sum(v * v for v in values) ** 0.5 or 1.0
    # Rounded through float32 so the JSON numbers and the client's array agree.
    return list(struct.unpack(f"<{dimensions}f", struct.pack(f"<{dimensions}f",
                                                             *(v / norm for v in values))))  # fmt: skip


def base64_vector(vector: list[float]) -> str:
    """``vector`` as OpenAI's ``encoding_format: "base64"`` sends it (little-endian float32)."""
    return base64.b64encode(struct.pack(f"<{len(vector)}f", *vector)).decode("ascii")


def texts_field(body: object, field: str) -> list[str]:
    """The request's texts: ``body[field]``, a string or a non-empty list of strings."""
    value = body.get(field) if isinstance(body, dict) else None
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list) or not value or not all(isinstance(t, str) for t in value):
        raise BadEmbedRequest(f"{field} must be a string or a non-empty list of strings")
    return value


def wanted_dimensions(value: Any, field: str) -> int:
    """The vector size asked for in ``field`` (:data:`DEFAULT_DIMENSIONS` when absent)."""
    if value is None:
        return DEFAULT_DIMENSIONS
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_DIMENSIONS:
        raise BadEmbedRequest(f"{field} must be an integer from 1 to {MAX_DIMENSIONS}")
    return value
