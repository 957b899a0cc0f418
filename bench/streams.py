"""The byte streams the benchmarks run on: synthetic ones made here, and the recorded fixtures.

Synthetic streams copy the shape of real recordings (see ``../shared/fixtures``): OpenAI
Chat chunks carry ``id``/``object``/``created``/``model``/``system_fingerprint`` and
``logprobs: null`` on every chunk, as gpt-4o sends them; Anthropic events carry an
``event:`` line before each ``data:`` line and a ``ping``, as the Messages API sends them.
Text deltas are one to four words, some of them non-ASCII, so JSON escapes and UTF-8 are
exercised. Every generator is deterministic.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

__all__ = [
    "FIXTURES",
    "anthropic_stream",
    "anthropic_tool_stream",
    "chat_stream",
    "chat_tool_stream",
    "expected_text",
    "fixture_bodies",
    "pieces",
    "tool_arguments",
]

FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures"

_WORDS = ["the", "of", "and", "to", "a", "in", "is", "that", "for", "it", "as", "was", "with"]
_WORDS += ["回答", "要", "简洁", "Größe", "naïve", "🙂", "\n", '"quoted"', "tab\there"]

_CHAT_HEAD = (
    '{"id":"chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz012","object":"chat.completion.chunk",'
    '"created":1727346180,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_b40fb1c6fb",'
    '"choices":[{"index":0,"delta":'
)
_CHAT_TAIL = ',"logprobs":null,"finish_reason":null}]}'


def _texts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(_WORDS) for _ in range(rng.randint(1, 4))) + " " for _ in range(n)]


def expected_text(n: int, seed: int = 1) -> str:
    """The text a synthetic stream of ``n`` deltas made with ``seed`` spells."""
    return "".join(_texts(n, seed))


def _jdump(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _chat_frame(delta: dict[str, object], finish: str | None = None) -> bytes:
    tail = _CHAT_TAIL if finish is None else f',"logprobs":null,"finish_reason":"{finish}"}}]}}'
    return ("data: " + _CHAT_HEAD + _jdump(delta) + tail + "\n\n").encode()


def _chat_end(prompt: int, completion: int) -> list[bytes]:
    usage = {
        "id": "chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz012",
        "object": "chat.completion.chunk",
        "created": 1727346180,
        "model": "gpt-4o-2024-08-06",
        "system_fingerprint": "fp_b40fb1c6fb",
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                  "total_tokens": prompt + completion},
    }  # fmt: skip
    return [("data: " + _jdump(usage) + "\n\n").encode(), b"data: [DONE]\n\n"]


def chat_stream(n: int, seed: int = 1) -> bytes:
    """An OpenAI Chat Completions body with ``n`` text deltas (``n + 4`` payloads)."""
    frames = [_chat_frame({"role": "assistant", "content": "", "refusal": None})]
    frames += [_chat_frame({"content": t}) for t in _texts(n, seed)]
    frames.append(_chat_frame({}, "stop"))
    frames += _chat_end(17, n)
    return b"".join(frames)


def tool_arguments(size: int, seed: int = 7) -> str:
    """A JSON object of exactly ``size`` characters, at most (a file-writing call)."""
    rng = random.Random(seed)
    lines: list[str] = []
    length = 0
    while length < size:
        line = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 12)))
        lines.append(line)
        length += len(_jdump(line))
    content = "\n".join(lines)
    text = _jdump({"path": "notes/draft.md", "content": content})
    while len(text) > size:  # trim the content by the excess (escapes shrink with it)
        content = content[: len(content) - (len(text) - size)]
        text = _jdump({"path": "notes/draft.md", "content": content})
    return text


def _fragments(text: str, size: int) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def chat_tool_stream(arguments: str, delta_chars: int = 20) -> bytes:
    """An OpenAI Chat body with one tool call whose arguments come ``delta_chars`` at a time."""
    first = {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"index": 0, "id": "call_Bench0001", "type": "function",
                        "function": {"name": "write_file", "arguments": ""}}],
    }  # fmt: skip
    frames = [_chat_frame(first)]
    for frag in _fragments(arguments, delta_chars):
        frames.append(_chat_frame({"tool_calls": [{"index": 0, "function": {"arguments": frag}}]}))
    frames.append(_chat_frame({}, "tool_calls"))
    frames += _chat_end(40, len(arguments) // 4)
    return b"".join(frames)


def _anthropic_frame(payload: dict[str, object]) -> bytes:
    return f"event: {payload['type']}\ndata: {_jdump(payload)}\n\n".encode()


def _anthropic_start() -> bytes:
    return _anthropic_frame(
        {
            "type": "message_start",
            "message": {
                "model": "claude-haiku-4-5-20251001",
                "id": "msg_01T8kTq7cYyYJeQ5DxcVUc6D",
                "type": "message",
                "role": "assistant",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 10, "cache_creation_input_tokens": 0,
                          "cache_read_input_tokens": 0, "output_tokens": 2,
                          "service_tier": "standard"},
            },
        }
    )  # fmt: skip


def _anthropic_end(stop_reason: str, output_tokens: int) -> list[bytes]:
    return [
        _anthropic_frame({"type": "content_block_stop", "index": 0}),
        _anthropic_frame(
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            }
        ),
        _anthropic_frame({"type": "message_stop"}),
    ]


def anthropic_stream(n: int, seed: int = 1) -> bytes:
    """An Anthropic Messages body with ``n`` text deltas (``n + 6`` events)."""
    frames = [
        _anthropic_start(),
        _anthropic_frame(
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            }
        ),
        _anthropic_frame({"type": "ping"}),
    ]
    for t in _texts(n, seed):
        frames.append(
            _anthropic_frame(
                {"type": "content_block_delta", "index": 0,
                 "delta": {"type": "text_delta", "text": t}}
            )
        )  # fmt: skip
    frames += _anthropic_end("end_turn", n)
    return b"".join(frames)


def anthropic_tool_stream(arguments: str, delta_chars: int = 20) -> bytes:
    """An Anthropic body with one ``tool_use`` block whose input streams ``delta_chars`` at a time."""
    frames = [
        _anthropic_start(),
        _anthropic_frame(
            {"type": "content_block_start", "index": 0,
             "content_block": {"type": "tool_use", "id": "toolu_Bench0001",
                               "name": "write_file", "input": {}}}
        ),
    ]  # fmt: skip
    for frag in _fragments(arguments, delta_chars):
        frames.append(
            _anthropic_frame(
                {"type": "content_block_delta", "index": 0,
                 "delta": {"type": "input_json_delta", "partial_json": frag}}
            )
        )  # fmt: skip
    frames += _anthropic_end("tool_use", len(arguments) // 4)
    return b"".join(frames)


def pieces(body: bytes, size: int = 4096) -> list[bytes]:
    """``body`` cut into network-read-sized pieces (which split events anywhere)."""
    return [body[i : i + size] for i in range(0, len(body), size)]


def fixture_bodies(api_dir: str) -> dict[str, bytes]:
    """The recorded ``.sse`` bodies of one API directory (empty when not present)."""
    folder = FIXTURES / api_dir
    if not folder.is_dir():
        return {}
    return {p.name: p.read_bytes() for p in sorted(folder.glob("*.sse"))}
