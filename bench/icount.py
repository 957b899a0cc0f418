"""Instructions per event, counted by valgrind: the profile behind bench/RESULTS.md.

Times on a shared 2-core machine move by ±30 % from run to run; instruction counts do
not move at all, so this is how a change to the hot path is judged before it is timed.
Each workload runs in a fresh interpreter under ``valgrind --tool=callgrind`` twice, with
0 and with N repetitions after one warm-up run (imports and lazy set-up are paid before
the count), and the difference divided by N × events is printed.

    python bench/icount.py                 # every workload (a few minutes)
    python bench/icount.py chat anthropic  # some

Needs valgrind (``apt-get install valgrind``). Instructions are not time (memory
stalls are not counted; ``json.loads`` retires more instructions per nanosecond than
modelwire's Python does), so ratios here only compare like with like.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

#: name → (what it measures, events per run)
WORKLOADS: dict[str, tuple[str, int]] = {
    "chat": ("mw.replay, OpenAI Chat text, 2,000 deltas", 2000),
    "chat-floor": ("the floor on the same bytes", 2000),
    "chat-sse": ("SSEFraming.feed only (the pipeline's SSE framing)", 2000),
    "chat-decode": ("ChatDecoder.decode only (msgspec + Python)", 2000),
    "chat-msgspec": ("msgspec typed decode of the payloads only", 2000),
    "chat-assemble": ("Assembler.feed only", 2000),
    "anthropic": ("mw.replay, Anthropic text, 2,000 deltas", 2000),
    "anthropic-floor": ("the floor on the same bytes", 2000),
    "anthropic-sse": ("SSEFraming.feed only", 2000),
    "anthropic-decode": ("AnthropicDecoder.decode only", 2000),
    "anthropic-assemble": ("Assembler.feed only", 2000),
    "tool": ("mw.replay, OpenAI Chat, 100 KB of arguments in 20-char deltas", 5000),
    "tool-floor": ("the floor on the same bytes", 5000),
    "tool-sse": ("SSEFraming.feed only", 5000),
    "tool-decode": ("ChatDecoder.decode only (msgspec + Python)", 5000),
    "tool-msgspec": ("msgspec typed decode of the payloads only", 5000),
    "tool-assemble": ("Assembler.feed only", 5000),
    "fixture": ("mw.replay of claude-haiku-4-5-stop-sequence.sse (per stream)", 1),
    "live-kib": ("mw.stream over aiohttp, 20 loopback streams x 200 deltas, 1 KiB writes", 4000),
    "live-delta": ("the same, one delta per write", 4000),
    "live-delta-total": ("the same with a total deadline (mw.Timeout(total=600))", 4000),
    "live-floor-kib": ("raw aiohttp + split + json.loads, 1 KiB writes", 4000),
    "live-floor-delta": ("raw aiohttp + split + json.loads, one delta per write", 4000),
    # The bodies ``bench/run.py apis`` times: 24,000 characters in 12-character deltas.
    "render-anthropic": ("mw.replay, rendered Anthropic body", 2000),
    "render-gemini": ("mw.replay, rendered Gemini body", 2000),
    "render-bedrock": ("mw.replay, rendered Bedrock body", 2000),
    "render-responses": ("mw.replay, rendered OpenAI Responses body", 2000),
    "render-ollama": ("mw.replay, rendered Ollama body", 2000),
}
_RENDERED = {"anthropic": "anthropic-messages", "gemini": "google-generative-ai",
             "bedrock": "bedrock-converse", "responses": "openai-responses",
             "ollama": "ollama-chat"}  # fmt: skip


def _workload(name: str) -> Callable[[], object]:
    """Build the workload (outside the count) and return the function to repeat."""
    from run import floor
    from streams import (
        anthropic_stream,
        chat_stream,
        chat_tool_stream,
        fixture_bodies,
        pieces,
        tool_arguments,
    )

    import modelwire as mw
    from modelwire._apis import get_api
    from modelwire._apis.openai_chat.decode import _chunk_decoder
    from modelwire._wire.assemble import Assembler
    from modelwire._wire.sse import SSEFraming

    if name.startswith("live-"):
        from live_count import live_workload

        return live_workload(name)
    if name.startswith("render-"):
        from run import expected_text

        from modelwire.testing import render

        rendered_api = _RENDERED[name[7:]]
        text = expected_text(4_000)[:24_000]
        rendered = pieces(render(text, rendered_api, piece_chars=12))
        return lambda: mw.replay(rendered_api, rendered)
    if name == "fixture":
        body = fixture_bodies("anthropic")["claude-haiku-4-5-stop-sequence.sse"]
        return lambda: mw.replay("anthropic-messages", [body])
    kind, _, part = name.partition("-")
    api = "anthropic-messages" if kind == "anthropic" else "openai-chat"
    if kind == "tool":
        body = chat_tool_stream(tool_arguments(100_000))
    else:
        body = (anthropic_stream if kind == "anthropic" else chat_stream)(2000)
    chunks = pieces(body)
    if part == "":
        return lambda: mw.replay(api, chunks)
    if part == "floor":
        return lambda: floor(body)
    if part == "msgspec":
        payloads = [f[6:] for f in body.split(b"\n\n") if f.startswith(b"data: {")]
        decode = _chunk_decoder.decode
        return lambda: [decode(p) for p in payloads]
    # Frames, as the pipeline hands them to the decoder.
    events: list[object] = []
    sse = SSEFraming()
    for c in chunks:
        events += sse.feed(c)
    if part == "sse":

        def run_sse() -> None:
            d = SSEFraming()
            for c in chunks:
                d.feed(c)

        return run_sse
    if part == "decode":

        def run_decode() -> None:
            d = get_api(api).new_decoder(None)
            for e in events:
                d.decode(e)  # type: ignore[arg-type]

        return run_decode
    decoder = get_api(api).new_decoder(None)
    deltas = [decoder.decode(e) for e in events]  # type: ignore[arg-type]

    def run_assemble() -> None:
        a = Assembler(api=api)
        out: list[object] = []
        a.start(out)  # type: ignore[arg-type]
        for ds in deltas:
            a.feed(ds, out)  # type: ignore[arg-type]

    return run_assemble


def _count(name: str, n: int) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "cg.out")
        subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
             sys.executable, __file__, "--run", name, str(n)],
            check=True, capture_output=True,
        )  # fmt: skip
        for line in Path(out).read_text().splitlines():
            if line.startswith(("summary:", "totals:")):
                return int(line.split()[1])
    raise RuntimeError("no instruction total in the callgrind output")


def main() -> None:
    if sys.argv[1:2] == ["--run"]:
        fn = _workload(sys.argv[2])
        fn()  # warm-up: lazy imports and first-call set-up stay out of the count
        for _ in range(int(sys.argv[3])):
            fn()
        return
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    names = sys.argv[1:] or list(WORKLOADS)
    results: dict[str, float] = {}
    print("| workload | what | instructions per event |")
    print("| --- | --- | --- |")
    for name in names:
        what, events = WORKLOADS[name]
        reps = 300 if events == 1 else 2
        per = (_count(name, reps) - _count(name, 0)) / reps / events
        results[name] = per
        print(f"| {name} | {what} | {per:,.0f} |", flush=True)
    print()
    print(json.dumps(results))


if __name__ == "__main__":
    main()
