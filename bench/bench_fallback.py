"""The overhead of a ``mw.Fallback`` whose first model succeeds, against the plain model.

    python bench/bench_fallback.py [--quick]        # or: make bench-fallback

Two measurements, each a ratio to the plain call measured in the same run, in
alternating rounds (medians; CPU time of this process, ``time.process_time``):

* ``call``: one whole call without a socket — ``mw.stream``'s preparation (options,
  handoff, encoding every model's request before any I/O), the sans-IO ``Call`` and
  its pipeline fed the recorded-shape body of a 200-event OpenAI Chat stream by a fake
  transport. This is what a Fallback adds per call: one more request built per extra
  model, the leg bookkeeping, the breaker's admit and verdict.
* ``loopback``: ``mw.complete`` over a real loopback ``MockServer`` (a short reply), so
  the overhead is seen next to what a call really costs.

Fallbacks of 2 and 4 models (first: OpenAI Chat; then Anthropic, Gemini, Responses),
with the process-wide circuit breaker (the default) and without it.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from streams import chat_stream  # noqa: E402

import modelwire as mw  # noqa: E402
from modelwire._call import Authorize, Close, Emit, Head, Read, ReadError, Send, Sleep  # noqa: E402
from modelwire._client import _call, _plan  # noqa: E402

QUICK = "--quick" in sys.argv
ROUNDS = 5 if QUICK else 15
CALLS = 50 if QUICK else 300
CTX = mw.Context(
    system_prompt="Be brief.",
    messages=[mw.UserMessage(content="Say something long.")],
    tools=[mw.ToolDefinition(name="read", description="Read a file", parameters={
        "type": "object", "properties": {"path": {"type": "string"}}})],
)  # fmt: skip
SSE = {"content-type": "text/event-stream"}


def models(origin: str) -> list[mw.Model]:
    return [
        mw.Model(id="gpt-4o", api="openai-chat", provider="mock", base_url=origin + "/v1"),
        mw.Model(id="claude", api="anthropic-messages", provider="mock", base_url=origin + "/v1"),
        mw.Model(id="gemini", api="google-generative-ai", provider="mock",
                 base_url=origin + "/v1beta"),
        mw.Model(id="gpt-5", api="openai-responses", provider="mock", base_url=origin + "/v1"),
    ]  # fmt: skip


def drive(target: Any, body: list[bytes]) -> int:
    """One whole call on a fake transport; returns the number of events."""
    prepared = _plan(target, CTX, {})
    call = _call(prepared.plan, prepared.context, None, None, lambda: False)  # type: ignore[arg-type]
    reads = iter(body)
    n = 0
    intent = call.first()
    while not isinstance(intent, Close):
        if isinstance(intent, Authorize):
            got: Any = intent.request
        elif isinstance(intent, Send):
            got = Head(200, SSE)
        elif isinstance(intent, Read):
            got = next(reads, None)
        elif isinstance(intent, Emit):
            n += len(intent.events)
            got = None
        elif isinstance(intent, ReadError | Sleep):
            raise AssertionError(f"unexpected {intent}")
        else:
            got = None
        intent = call.send(got)
    return n


def rounds(contenders: dict[str, Callable[[], object]]) -> dict[str, float]:
    """Median CPU seconds per contender, alternating them round by round."""
    times: dict[str, list[float]] = {k: [] for k in contenders}
    for _ in range(ROUNDS):
        for name, fn in contenders.items():
            t0 = time.process_time()
            fn()
            times[name].append(time.process_time() - t0)
    return {k: statistics.median(v) for k, v in times.items()}


def contenders(plain: mw.Model, ms: list[mw.Model], run: Callable[[Any], object]) -> dict[str, Callable[[], object]]:  # fmt: skip
    fb2 = mw.Fallback(ms[:2])
    fb4 = mw.Fallback(ms)
    fb2_off = mw.Fallback(ms[:2], circuit_breaker=None)
    return {
        "plain model": lambda: run(plain),
        "Fallback of 2": lambda: run(fb2),
        "Fallback of 2, no breaker": lambda: run(fb2_off),
        "Fallback of 4": lambda: run(fb4),
    }


def table(title: str, per_call: dict[str, float], unit: str) -> None:
    base = per_call["plain model"]
    print(f"\n### {title}\n")
    print(f"| target | {unit} per call | vs plain |")
    print("|---|---:|---:|")
    for name, t in per_call.items():
        print(f"| {name} | {t * 1e6:.0f} µs | {t / base:.2f}× |")


def main() -> None:
    raw = chat_stream(200)
    body = [raw[i : i + 1024] for i in range(0, len(raw), 1024)]  # network-sized reads
    ms = models("http://127.0.0.1:9")

    def sans_io(target: Any) -> object:
        for _ in range(CALLS):
            drive(target, body)
        return None

    got = rounds(contenders(ms[0], ms, sans_io))
    table(f"call: {CALLS} calls of a 200-event stream, fake transport",
          {k: v / CALLS for k, v in got.items()}, "CPU")  # fmt: skip

    from modelwire.testing import MockServer

    n = max(CALLS // 5, 10)
    with MockServer(["A short answer."], repeat_last=True) as srv:
        live = models(srv.origin)

        def loopback(target: Any) -> object:
            for _ in range(n):
                msg = mw.complete_sync(target, CTX)
                assert msg.text == "A short answer.", msg.error
            return None

        got = rounds(contenders(live[0], live, loopback))
    table(f"loopback: {n} mw.complete_sync calls over a MockServer",
          {k: v / n for k, v in got.items()}, "CPU")  # fmt: skip


if __name__ == "__main__":
    main()
