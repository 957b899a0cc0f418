"""Throughput of :class:`modelwire._wire.sse.SSEDecoder` (a script, not a test).

Run: ``.venv/bin/python bench/bench_sse.py``. Prints MB/s (10**6 bytes per second) for

* a ~20 MB chat-completions-like stream (``data: {...}\\n\\n`` events with text and
  tool-call deltas, a few keep-alive comments) fed whole and in 1 KiB pieces;
* the recorded OpenAI-compatible streams in ``../shared/fixtures/openai-chat`` (when
  present), repeated to ~20 MB, fed in 1 KiB pieces;
* one 2 MB event fed in 64-byte pieces versus whole, versus 2 MB of ordinary events in
  64-byte pieces, and events of 1, 2, 4 and 8 MB in 64-byte pieces: the decoder is
  linear (a decoder that rescanned or re-joined its buffer on every piece would take
  seconds here, and 4x as long for twice the size). Fed whole, the event costs a few memcpy-speed C calls;
  in 64-byte pieces it costs one ``feed()`` call per piece, the same per-call cost as
  ordinary small events.

Each figure is the best of several runs, in CPU time of this process
(``time.process_time``), so that other load on the machine skews it less.
"""

from __future__ import annotations

import json
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from modelwire._wire.sse import SSEDecoder  # noqa: E402

FIXTURES = ROOT.parent / "shared" / "fixtures" / "openai-chat"
WORDS = ["the", "of", "and", "to", "a", "in", "is", "that", "for", "it", "as", "was", "with"]
WORDS += ["回答", "要", "简洁", "Größe", "naïve", "🙂", "\\n", '\\"quoted\\"']


def chat_stream(target: int) -> bytes:
    """A synthetic OpenAI Chat Completions body of about ``target`` bytes."""
    rng = random.Random(1234)
    parts: list[bytes] = []
    size = 0
    n = 0
    head = (
        '{"id":"chatcmpl-AbCdEfGhIjKlMnOpQrStUvWxYz012","object":"chat.completion.chunk",'
        '"created":1727346180,"model":"gpt-4o-2024-08-06","system_fingerprint":"fp_b40fb1c6fb",'
        '"choices":[{"index":0,"delta":'
    )
    while size < target:
        n += 1
        if n % 500 == 0:
            frame = b": keep-alive\n\n"
        elif n % 50 < 5:
            args = json.dumps({"path": "src/" + rng.choice(WORDS)})[: rng.randint(1, 12)]
            delta = json.dumps(
                {"tool_calls": [{"index": 0, "function": {"arguments": args}}]},
                ensure_ascii=False,
            )
            frame = (
                "data: " + head + delta + ',"logprobs":null,"finish_reason":null}]}\n\n'
            ).encode()
        else:
            text = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
            frame = (
                "data: "
                + head
                + '{"content":"'
                + text
                + '"},"logprobs":null,"finish_reason":null}]}\n\n'
            ).encode()
        parts.append(frame)
        size += len(frame)
    parts.append(b"data: [DONE]\n\n")
    return b"".join(parts)


def recorded_stream(target: int) -> bytes | None:
    files = sorted(FIXTURES.glob("*.sse")) if FIXTURES.is_dir() else []
    if not files:
        return None
    one = b"".join(f.read_bytes() for f in files)
    return one * max(1, target // len(one))


def pieces(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def run(chunks: list[bytes]) -> int:
    dec = SSEDecoder(max_event_bytes=64 * 1024 * 1024)
    n = 0
    for chunk in chunks:
        n += len(dec.feed(chunk))
    dec.end()
    return n


def best(fn: Callable[[], object], repeat: int = 7) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.process_time()
        fn()
        times.append(time.process_time() - t0)
    return min(times)


def report(label: str, data: bytes, chunks: list[bytes]) -> float:
    events = run(chunks)
    t = best(lambda: run(chunks))
    mbs = len(data) / t / 1e6
    print(
        f"{label:<44} {len(data) / 1e6:6.1f} MB {events:>8} events {t * 1e3:8.1f} ms "
        f"{mbs:8.1f} MB/s {events / t / 1e6:6.2f} M events/s"
    )
    return t


def main() -> None:
    print(f"python {sys.version.split()[0]}")
    body = chat_stream(20_000_000)
    report("chat stream, whole", body, [body])
    report("chat stream, 1 KiB pieces", body, pieces(body, 1024))
    recorded = recorded_stream(20_000_000)
    if recorded is not None:
        report("recorded openai-chat fixtures, 1 KiB pieces", recorded, pieces(recorded, 1024))

    small = body[: body.rfind(b"\n\n", 0, 2_000_000) + 2]
    t_chat64 = report("chat stream (first 2 MB), 64-byte pieces", small, pieces(small, 64))

    big = b"data: " + b"x" * (2_000_000 - 8) + b"\n\n"
    t_whole = report("2 MB single event, whole", big, [big])
    t_small = report("2 MB single event, 64-byte pieces", big, pieces(big, 64))
    t_1k = report("2 MB single event, 1 KiB pieces", big, pieces(big, 1024))
    print()
    print(f"2 MB event, 64-byte pieces / whole:         {t_small / t_whole:6.1f}x")
    print(f"2 MB event, 1 KiB pieces / whole:           {t_1k / t_whole:6.1f}x")
    print(f"64-byte pieces, 2 MB event / 2 MB of chat:  {t_small / t_chat64:6.2f}x")

    # Scaling: one event of 1, 2, 4, 8 MB in 64-byte pieces, runs interleaved.
    del body, recorded
    sizes = (1, 2, 4, 8)
    inputs = {mb: pieces(b"data: " + b"x" * (mb * 1_000_000 - 8) + b"\n\n", 64) for mb in sizes}
    fastest = dict.fromkeys(sizes, float("inf"))
    for _ in range(9):
        for mb, chunks in inputs.items():
            t0 = time.process_time()
            run(chunks)
            fastest[mb] = min(fastest[mb], time.process_time() - t0)
    print("one event in 64-byte pieces (linear: time doubles with size, ns per feed() flat):")
    for mb in sizes:
        per_feed = fastest[mb] / len(inputs[mb]) * 1e9
        print(f"  {mb} MB: {fastest[mb] * 1e3:7.1f} ms  {per_feed:5.0f} ns per feed()")


if __name__ == "__main__":
    main()
