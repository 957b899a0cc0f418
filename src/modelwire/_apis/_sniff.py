"""Which wire API a response body looks like: diagnostics for a stream decoded with
the wrong ``api`` (a Gemini body replayed as ``openai-chat``…).

Each decoder ignores unknown fields and event types (forward compatibility), so a
foreign body often decodes to nothing and the stream would end as merely
"truncated". Until a decoder has recognised its first payload, the pipeline keeps
the first bytes of the body and, when a payload decodes to nothing or decoding
fails, asks :func:`wrong_api_error`: every *other* registered API is asked whether
it recognizes the body (:meth:`modelwire._apis.WireCodec.recognizes`), and if one
does — and the chosen API does not — the stream ends with a ``malformed_chunk``
that names the API the body looks like. After that first payload nothing here runs.
"""

from __future__ import annotations

from ..errors import MalformedChunkError
from . import find_api, recognizing

__all__ = ["looks_like", "wrong_api_error"]


def looks_like(payload: bytes, besides: str | None = None) -> str | None:
    """The registered API whose body ``payload`` (its first bytes) plainly is, or
    ``None`` when no API, or more than one, recognizes it."""
    found = recognizing(payload, besides=besides)
    return found[0] if len(found) == 1 else None


def wrong_api_error(
    api: str, payload: bytes, cause: str | None = None
) -> MalformedChunkError | None:
    """A ``malformed_chunk`` saying the body starting with ``payload`` belongs to
    another API, or ``None`` when it does not clearly look like one (``cause``: the
    decoder's own message)."""
    own = find_api(api)
    try:
        if own is not None and own.recognizes(payload):
            return None  # its own: the decoder's error stands
    except Exception:  # a codec's guess never breaks the stream
        return None
    guess = looks_like(payload, besides=api)
    if guess is None:
        return None
    if cause and cause.startswith("malformed "):
        cause = cause.split(": ", 1)[-1]
    detail = f" ({cause})" if cause else ""
    return MalformedChunkError(
        f"malformed chunk: the body is not {api} output{detail}; it looks like "
        f"{guess} output, not {api}: decode it with api={guess!r} "
        f"(mw.replay({guess!r}, …) or a Model with that api)"
    )
