"""Benchmarks (``make bench``; never part of ``make test``).

Every figure is reported next to a reference measured in the same run, as a
ratio: absolute times vary by machine, ratios much less.

    python bench/run.py            # all
    python bench/run.py replay     # one section: import | replay | sse
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable

import modelwire as mw


def _median_time(fn: Callable[[], object], repeat: int = 5) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def bench_import() -> None:
    def fresh(module: str) -> float:
        code = f"import time; t=time.perf_counter(); import {module}; print(time.perf_counter()-t)"
        runs = [
            float(
                subprocess.run(
                    [sys.executable, "-c", code], capture_output=True, text=True, check=True
                ).stdout
            )
            for _ in range(5)
        ]
        return statistics.median(runs)

    mw_t, httpx_t = fresh("modelwire"), fresh("httpx")
    print(f"import modelwire  {mw_t * 1000:7.1f} ms")
    print(f"import httpx      {httpx_t * 1000:7.1f} ms")
    print(f"ratio             {mw_t / httpx_t:7.2f}x  (goal <= 1.3x)")


def chat_stream(n_chunks: int) -> bytes:
    """A synthetic OpenAI Chat stream of ``n_chunks`` text deltas."""
    parts = []
    for i in range(n_chunks):
        payload = {
            "id": "chatcmpl-bench",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-bench",
            "choices": [{"index": 0, "delta": {"content": f"word{i} "}, "finish_reason": None}],
        }
        parts.append(b"data: " + json.dumps(payload).encode() + b"\n\n")
    final = {
        "id": "chatcmpl-bench",
        "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
    }
    parts.append(b"data: " + json.dumps(final).encode() + b"\n\n")
    parts.append(b'data: {"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":9}}\n\n')
    parts.append(b"data: [DONE]\n\n")
    return b"".join(parts)


def _floor(body: bytes) -> None:
    # The floor: split on blank lines and json.loads each payload.
    for frame in body.split(b"\n\n"):
        if frame.startswith(b"data: ") and frame != b"data: [DONE]":
            json.loads(frame[6:])


def _pieces(body: bytes, size: int) -> list[bytes]:
    return [body[i : i + size] for i in range(0, len(body), size)]


def bench_replay() -> None:
    for n in (20_000, 200_000):
        body = chat_stream(n)
        pieces = _pieces(body, 4096)
        floor = _median_time(lambda b=body: _floor(b))  # type: ignore[misc]
        ours = _median_time(lambda p=pieces: mw.replay("openai-chat", p))  # type: ignore[misc]
        events = mw.replay("openai-chat", pieces)
        assert events[-1].type == "done", events[-1]
        print(
            f"replay openai-chat {n:>7} chunks: floor {floor * 1000:8.1f} ms  "
            f"modelwire {ours * 1000:8.1f} ms  ratio {ours / floor:5.2f}x  "
            f"({len(body) / ours / 1e6:6.1f} MB/s)"
        )


def bench_sse() -> None:
    from bench_sse import main as sse_main  # type: ignore[import-not-found]

    sse_main()


SECTIONS: dict[str, Callable[[], None]] = {
    "import": bench_import,
    "sse": bench_sse,
    "replay": bench_replay,
}


def main() -> None:
    import platform

    print(f"# modelwire bench — {time.strftime('%Y-%m-%d')} — Python {platform.python_version()}"
          f" on {platform.machine()}")  # fmt: skip
    wanted = sys.argv[1:] or list(SECTIONS)
    for name in wanted:
        print(f"\n## {name}")
        SECTIONS[name]()


if __name__ == "__main__":
    main()
