"""OpenAI Responses replay against the floor, on a long synthetic stream.

    python bench/bench_responses.py [N ...]      # default: 20000 200000 deltas

The floor splits the body on blank lines and ``json.loads`` each ``data:``
payload; modelwire runs ``mw.replay("openai-responses", ...)`` on the same
bytes in 4 KiB reads. CPU time, median of 5 alternating rounds.
"""

from __future__ import annotations

import json
import statistics
import sys
import time

import modelwire as mw


def responses_stream(n: int) -> bytes:
    """``response.created``, one message item with ``n`` text deltas, ``response.completed``."""
    out: list[bytes] = []

    def emit(payload: dict[str, object]) -> None:
        out.append(f"event: {payload['type']}\ndata: {json.dumps(payload)}\n\n".encode())

    resp = {"id": "resp_bench", "object": "response", "status": "in_progress", "model": "m"}
    emit({"type": "response.created", "sequence_number": 0, "response": resp})
    item = {"id": "msg_bench", "type": "message", "role": "assistant", "content": []}
    emit({"type": "response.output_item.added", "output_index": 0, "item": item})
    for i in range(n):
        emit({"type": "response.output_text.delta", "sequence_number": i + 2,
              "item_id": "msg_bench", "output_index": 0, "content_index": 0,
              "delta": f"word{i} ", "logprobs": []})  # fmt: skip
    text = "".join(f"word{i} " for i in range(n))
    done = {**item, "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}  # fmt: skip
    emit({"type": "response.output_item.done", "output_index": 0, "item": done})
    usage = {"input_tokens": 10, "output_tokens": n, "total_tokens": n + 10,
             "input_tokens_details": {"cached_tokens": 0},
             "output_tokens_details": {"reasoning_tokens": 0}}  # fmt: skip
    final = {**resp, "status": "completed", "output": [done], "usage": usage}
    emit({"type": "response.completed", "response": final})
    return b"".join(out)


def floor(body: bytes) -> None:
    for frame in body.split(b"\n\n"):
        i = frame.find(b"data: ")
        if i >= 0:
            json.loads(frame[i + 6 :])


def cpu(fn: object) -> float:
    t = time.process_time()
    fn()  # type: ignore[operator]
    return time.process_time() - t


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [20_000, 200_000]
    for n in sizes:
        body = responses_stream(n)
        reads = [body[i : i + 4096] for i in range(0, len(body), 4096)]
        events = mw.replay("openai-responses", reads)
        assert events[-1].type == "done", events[-1]
        assert events[-1].message.text == "".join(f"word{i} " for i in range(n))
        f, m = [], []
        for _ in range(5):
            f.append(cpu(lambda b=body: floor(b)))
            m.append(cpu(lambda r=reads: mw.replay("openai-responses", r)))
        ratio = statistics.median(b / a for a, b in zip(f, m, strict=True))
        print(
            f"openai-responses {n:>7} deltas {len(body) / 1e6:5.1f} MB: "
            f"floor {statistics.median(f) * 1000:8.1f} ms  "
            f"modelwire {statistics.median(m) * 1000:8.1f} ms  ratio {ratio:4.2f}x"
        )


if __name__ == "__main__":
    main()
