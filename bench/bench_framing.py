"""Throughput of the non-SSE framings in :mod:`modelwire._wire.framing` (a script, not a test).

Run: ``.venv/bin/python bench/bench_framing.py [MB]``. Prints MB/s (10**6 bytes per second)
for

* :class:`~modelwire._wire.framing.NDJSONDecoder` on an Ollama ``/api/chat``-shaped body
  (one JSON object per line, text deltas and a few tool calls);
* :class:`~modelwire._wire.framing.EventStreamDecoder` and the typed
  :class:`~modelwire._wire.framing.EventStreamMessageDecoder` on a Bedrock
  ``ConverseStream``-shaped body (``contentBlockDelta`` events, Bedrock's three headers);

each fed whole and in 1 KiB pieces, and, as the reference measured in the same run,
``json.loads`` over the same payloads (the work every frame gets next, in the wire API).
A framing that costs a fraction of ``json.loads`` is not the bottleneck.

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

from modelwire._wire.framing import (  # noqa: E402
    EventStreamDecoder,
    EventStreamMessageDecoder,
    NDJSONDecoder,
    encode_event,
)

WORDS = ["the", "of", "and", "to", "a", "in", "is", "that", "for", "it", "as", "was", "with"]
WORDS += ["回答", "要", "简洁", "Größe", "naïve", "🙂", "\n", '"quoted"']


def payloads(target: int) -> list[bytes]:
    """Ollama-like chat chunks (JSON, one per frame) adding up to about ``target`` bytes."""
    rng = random.Random(1234)
    out: list[bytes] = []
    size = 0
    n = 0
    while size < target:
        n += 1
        message: dict[str, object] = {"role": "assistant", "content": ""}
        if n % 50 == 0:
            message["tool_calls"] = [
                {"function": {"name": "read_file", "arguments": {"path": rng.choice(WORDS)}}}
            ]
        else:
            message["content"] = " ".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
        value = {
            "model": "llama3.2",
            "created_at": f"2024-11-30T14:{n // 60 % 60:02d}:{n % 60:02d}.123456789Z",
            "message": message,
            "done": False,
        }
        raw = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
        out.append(raw)
        size += len(raw)
    return out


def best(fn: Callable[[], object], runs: int = 5) -> float:
    times = []
    for _ in range(runs):
        start = time.process_time()
        fn()
        times.append(time.process_time() - start)
    return min(times)


def feed_all(make: Callable[[], NDJSONDecoder | EventStreamDecoder | EventStreamMessageDecoder],
             body: bytes, piece: int | None) -> Callable[[], int]:  # fmt: skip
    def go() -> int:
        decoder = make()
        count = 0
        if piece is None:
            count += len(decoder.feed(body))
        else:
            for i in range(0, len(body), piece):
                count += len(decoder.feed(body[i : i + piece]))
        decoder.end()
        return count

    return go


def main() -> None:
    target = int(float(sys.argv[1]) * 1_000_000) if len(sys.argv) > 1 else 5_000_000
    items = payloads(target)
    ndjson = b"".join(p + b"\n" for p in items)
    aws = b"".join(encode_event("contentBlockDelta", p) for p in items)
    frames = len(items)
    for name, body, make in [
        ("NDJSON (Ollama-shaped)", ndjson, NDJSONDecoder),
        ("AWS event stream (Bedrock-shaped) -> frames", aws, EventStreamDecoder),
        ("AWS event stream -> typed messages", aws, EventStreamMessageDecoder),
    ]:
        assert feed_all(make, body, None)() == frames
        for label, piece in (("whole", None), ("1 KiB pieces", 1024)):
            seconds = best(feed_all(make, body, piece))
            print(
                f"{name:45s} {label:13s} {len(body) / seconds / 1e6:8.1f} MB/s "
                f"({frames / seconds / 1e6:.2f} M frames/s, {len(body) / 1e6:.1f} MB)"
            )
    texts = [p.decode() for p in items]
    seconds = best(lambda: [json.loads(t) for t in texts])
    size = sum(map(len, items))
    print(
        f"{'reference: json.loads over the same payloads':45s} {'':13s} "
        f"{size / seconds / 1e6:8.1f} MB/s ({frames / seconds / 1e6:.2f} M frames/s, "
        f"{size / 1e6:.1f} MB of JSON)"
    )


if __name__ == "__main__":
    main()
