"""Recorded provider streams as a server sends them: one piece per wire event.

For the fault matrix (``tests/test_faults.py``): per built-in wire API, one recording
of a plain text answer and one of the API's own mid-stream error, both from
``tests/data`` (in the repository, never ``../shared``, which users do not have). Each
body is split at its own event boundaries — an SSE event with its blank line, an NDJSON
line, an AWS event-stream message — as the independent readers of
``tests/test_recorded_fidelity.py`` find them (``Reading.ends``). What a run of those
pieces holds (the answer text, how it ended) is read with the same readers
(:data:`READERS`: ``json.loads`` of each payload), never with modelwire.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from aws_frames import encode_message
from test_recorded_fidelity import READERS, Reading, api_of, event_stream_messages

__all__ = [
    "ANSWERS",
    "ERRORS",
    "InBand",
    "answer",
    "error_events",
    "reading",
    "text_events",
    "utf8_cut",
]

DATA = Path(__file__).resolve().parent / "data"

#: Per API, a recording that answers with plain text in several text events, one of
#: them (after the first) with a multi-byte UTF-8 character sent raw, ending in success.
ANSWERS: dict[str, Path] = {
    "anthropic-messages": DATA / "anthropic" / "SYNTHETIC-text-utf8.sse",
    "bedrock-converse": DATA / "bedrock-converse" / "nova-text.bin",
    "cohere-chat": DATA / "cohere-chat" / "text.sse",
    "google-generative-ai": DATA / "google" / "SYNTHETIC-text-utf8.sse",
    "ollama-chat": DATA / "ollama" / "SYNTHETIC-text-utf8.ndjson",
    "openai-chat": DATA / "azure" / "chat-text.sse",  # Azure OpenAI: the Chat wire form
    "openai-responses": DATA / "openai-responses" / "SYNTHETIC-text-utf8.sse",
}


@dataclass(frozen=True)
class InBand:
    """A recording that ends in the API's own mid-stream error: the error's message
    text as recorded, and the error kind the provider's documentation gives it."""

    path: Path
    message: str
    kind: str


ERRORS: dict[str, InBand] = {
    # ``event: error`` with ``overloaded_error`` (Anthropic's 529).
    "anthropic-messages": InBand(
        DATA / "anthropic" / "SYNTHETIC-error-overloaded-mid-stream.sse", "Overloaded", "overloaded"
    ),
    # A ``throttlingException`` exception message: the request rate was too high.
    "bedrock-converse": InBand(
        DATA / "bedrock-converse" / "throttling-mid-stream.bin",
        "Too many tokens, please wait before trying again.",
        "rate_limit",
    ),
    # ``message-end`` with ``finish_reason: ERROR``: no status, no type to go by.
    "cohere-chat": InBand(
        DATA / "cohere-chat" / "error-finish.sse",
        "internal server error, this has been reported to our developers",
        "provider_stream",
    ),
    # An ``error`` object with code 503, status UNAVAILABLE.
    "google-generative-ai": InBand(
        DATA / "google" / "SYNTHETIC-error-overloaded.sse",
        "The model is overloaded. Please try again later.",
        "overloaded",
    ),
    # An ``{"error": "..."}`` line: a bare message.
    "ollama-chat": InBand(
        DATA / "ollama" / "error-midstream.ndjson",
        "an error was encountered while running the model: unexpected EOF",
        "provider_stream",
    ),
    # ``data: {"error": {...}}`` of type ``server_error`` (OpenAI's 500).
    "openai-chat": InBand(
        DATA / "openai-chat" / "SYNTHETIC-error-mid-stream.sse",
        "The server had an error while processing your request. Sorry about that!",
        "server",
    ),
    # An ``error`` event with code ``server_error``.
    "openai-responses": InBand(
        DATA / "openai-responses" / "error-event-server-error.sse",
        "The server had an error while processing your request.",
        "server",
    ),
}


def reading(api: str, pieces: list[bytes]) -> Reading:
    """The independent reading of ``pieces`` (whole events) joined."""
    return READERS[api](b"".join(pieces))


def _split(api: str, body: bytes) -> list[bytes]:
    """``body`` as one piece per wire event, cut where the reader says each ends. An SSE
    event ending in CRLF CRLF is complete at the last CR (``Reading.ends``); its piece
    keeps the LF, as the provider writes it. Bytes after the last event (a trailing blank
    line) stay with the last piece; bytes before an event (a comment) with its piece."""
    ends = READERS[api](body).ends
    if api == "bedrock-converse":  # binary: the reader's framing, checked against the messages
        assert ends == [end for end, _, _ in event_stream_messages(body)]
        bounds = list(ends)
    else:
        bounds = [e + 1 if body[e - 1 : e + 1] == b"\r\n" else e for e in ends]
    bounds[-1] = len(body)
    pieces = [body[a:b] for a, b in zip([0, *bounds], bounds, strict=False)]
    assert b"".join(pieces) == body and len(pieces) == len(ends)
    return pieces


@cache
def _recording(path: Path) -> tuple[str, tuple[bytes, ...]]:
    api = api_of(path)
    return api, tuple(_split(api, path.read_bytes()))


def answer(api: str) -> list[bytes]:
    """The events of ``api``'s text answer, checked to be one: it ends in success
    (the reader's ``stop``) with text in several events."""
    found, events = _recording(ANSWERS[api])
    assert found == api, f"{ANSWERS[api].name} is a {found} stream, not {api}"
    whole = reading(api, list(events))
    assert whole.finish == "stop" and whole.text, (ANSWERS[api].name, whole.finish)
    assert len(text_events(api)) >= 3, f"{ANSWERS[api].name}: too few text events"
    return list(events)


@cache
def _text_events(api: str) -> tuple[int, ...]:
    _, events = _recording(ANSWERS[api])
    texts = [reading(api, list(events[:n])).text for n in range(len(events) + 1)]
    return tuple(i for i in range(len(events)) if texts[i + 1] != texts[i])


def text_events(api: str) -> list[int]:
    """The indexes of the answer's events that add to its text."""
    return list(_text_events(api))


def utf8_cut(api: str) -> tuple[int, int]:
    """Where to cut the answer inside a UTF-8 character: (event index, offset in its
    piece) one byte into the first multi-byte character sent raw in a text event after
    the first text event (so the cut keeps some text)."""
    events, indexes = answer(api), text_events(api)
    for i in indexes[1:]:
        added = reading(api, events[: i + 1]).text[len(reading(api, events[:i]).text) :]
        for char in added:
            raw = char.encode()
            if len(raw) > 1 and events[i].count(raw) == 1:
                return i, events[i].index(raw) + 1
    raise AssertionError(
        f"{ANSWERS[api].name}: no text event after the first sends a multi-byte UTF-8 "
        "character raw (not \\u-escaped); pick or write a recording that does"
    )


def error_events(api: str, key: str) -> list[bytes]:
    """The API's mid-stream error as recorded: the error recording's events from its
    terminal (error) event on, with ``key`` written into the error's message, as a
    provider echoing a credential would."""
    spec = ERRORS[api]
    found, events = _recording(spec.path)
    assert found == api, f"{spec.path.name} is a {found} stream, not {api}"
    read = reading(api, list(events))
    assert read.finish == "error" and read.terminal is not None, (spec.path.name, read.finish)
    error, *after = events[read.terminal :]
    echoed = f"{spec.message} Key: {key}"
    if api == "bedrock-converse":  # a new message: its lengths and CRCs change
        [(_, headers, payload)] = event_stream_messages(error)
        assert payload.count(spec.message.encode()) == 1, payload
        error = encode_message(headers, payload.replace(spec.message.encode(), echoed.encode()))
    else:
        quoted = json.dumps(spec.message, ensure_ascii=False)[1:-1].encode()
        assert error.count(quoted) == 1, (spec.path.name, error)
        error = error.replace(quoted, json.dumps(echoed, ensure_ascii=False)[1:-1].encode())
    return [error, *after]
