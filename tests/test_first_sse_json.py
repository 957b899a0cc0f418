"""``first_sse_json`` (what every codec's ``recognizes`` reads a body's start with):
its quick path for an event written the plain way gives exactly what the full SSE
parser gives, on hand-picked bodies and on random ones."""

from __future__ import annotations

import hypothesis.strategies as st
from hypothesis import given, settings

from modelwire._apis import _codec
from modelwire._apis._codec import first_sse_json

BODIES = [
    b'data: {"a": 1}\n\n',
    b'event: message_start\ndata: {"type": "message_start"}\n\ndata: {"b": 2}\n\n',
    b'id: 7\nevent: x\ndata: {"a": [1, 2]}\n\n',
    b'data: [DONE]\n\ndata: {"after": true}\n\n',  # [DONE] skipped, the next one read
    b'data: \n\ndata: {"second": 1}\n\n',  # an empty data line skipped
    b'event: ping\n\ndata: {"c": 3}\n\n',  # an event without data skipped
    b'data: {"a":\ndata: 1}\n\n',  # two data lines, joined by the parser
    b': comment\ndata: {"d": 4}\n\n',
    b'data:{"no": "space"}\n\n',
    b'data: {"crlf": 1}\r\n\r\n',
    b'\xef\xbb\xbfdata: {"bom": 1}\n\n',
    b'data:  {"two": "spaces"}\n\n',
    b"data: not json\n\n",
    b'data: {"cut": ',
    b'data: {"bad utf8": "\xff"}\n\n',
    b"",
]


def test_the_quick_path_agrees_with_the_parser_on_plain_and_odd_bodies() -> None:
    for body in BODIES:
        assert first_sse_json(body) == _codec._first_sse_json(body), body


def test_the_quick_path_is_taken_for_the_plain_form() -> None:
    # What makes it quick: the plain event's data read without the parser.
    assert _codec._first_plain_data(b'event: e\ndata: {"a": 1}\n\nrest') == b'{"a": 1}'
    for odd in (b'data:{"a":1}\n\n', b"data: 1\r\n\r\n", b": c\ndata: 1\n\n", b"data: 1"):
        assert _codec._first_plain_data(odd) is None, odd


LINES = st.sampled_from([b"data: ", b"data:", b"event: x", b"id: 1", b": c", b"retry: 5",
                         b'data: {"k": 1}', b'data: {"k": "\xc3\xa9"}', b"data: [DONE]",
                         b"data: [1, 2", b"data:  3", b"\xef\xbb\xbfdata: 4"])  # fmt: skip
ENDS = st.sampled_from([b"\n", b"\r\n", b"\r", b"\n\n"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(LINES, ENDS), max_size=8))
def test_the_quick_path_agrees_with_the_parser_on_random_bodies(
    parts: list[tuple[bytes, bytes]],
) -> None:
    body = b"".join(line + end for line, end in parts)
    assert first_sse_json(body) == _codec._first_sse_json(body)
