"""``modelwire demo``: the embedded default — an agent reads README.md (or, without one,
another text file in the folder), offline.

A :class:`~modelwire.testing.MockServer` on 127.0.0.1 plays the model. Its two
replies are scripted, but decided when each request arrives:

1. a short text and a ``read`` tool call with ``{"path": "README.md"}``;
2. a final answer built from the tool result *inside the second request* —
   the first line of the real file, its length and its section titles — so
   the answer proves the file travelled: tool → agent → request body → server.

Everything else is real: the agent, the read-only tools rooted at ``--root``,
HTTP over a socket, SSE framing in the chosen wire API, the shared assembler,
tool-call validation and execution. No key, no network.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .common import EXIT_CONFIG, EXIT_FAILED, CLIError
from .output import MUTED, USER, EventPrinter, Screen, format_usage, run_agent

if TYPE_CHECKING:
    import argparse

    from ..testing import RecordedRequest, Reply

__all__ = ["PROMPT", "answer_from_tool_result", "demo_file", "run_demo", "tool_result_text"]

PROMPT = "读取 README.md"
SYSTEM = "回答要简洁。"
FIRST_REPLY = "好的，我先读取 README.md，看看里面写了什么。"
# Illustrative prices ($ per million tokens) so the demo can show a cost line.
DEMO_PRICES = (0.40, 1.60)
# With --trace the demo sends this made-up key, so the trace can show that the
# key never leaves the auth header (the mock server ignores it).
DEMO_KEY = "sk-demo-0000-not-a-real-key"
# Characters per streamed delta: 4 shows text arriving; the trace shows every
# layer of every delta, so it takes bigger pieces.
PIECE_CHARS = 4
TRACE_PIECE_CHARS = 12

_NUMBERED = re.compile(r"^\s*(\d+)\t(.*)$")
_TOTAL = re.compile(r"lines \d+-\d+ of (\d+)")


def tool_result_text(api: str | None, body: Any) -> str | None:
    """The text of the last tool result in a request body of ``api``
    (``WireServer.tool_results``: each API knows where its body carries them)."""
    from .._apis import find_server

    server = find_server(api) if api is not None else None
    found = server.tool_results(body) if server is not None else []
    return found[-1] if found else None


def answer_from_tool_result(result: str | None, name: str = "README.md") -> str:
    """The scripted final answer: what the ``read`` result says about the file."""
    if result is None:
        return f"我在请求里没有找到 read 的结果，所以无法总结 {name}。"
    lines = result.splitlines()
    numbered = [m.group(2) for m in map(_NUMBERED.match, lines) if m]
    if not numbered:
        first = lines[0] if lines else ""
        return f"没能读取 {name}：{first[:200]}"
    first = next((ln for ln in numbered if ln.strip()), "")
    total_m = _TOTAL.search(lines[0]) if lines else None
    total = int(total_m.group(1)) if total_m else len(numbered)
    headings: list[str] = []
    fenced = False
    for ln in numbered:
        if ln.lstrip().startswith("```"):
            fenced = not fenced
        elif not fenced and ln.startswith("#"):
            title = ln.lstrip("#").strip()
            if title and ln.startswith("## "):
                headings.append(title)
    parts = [f"{name} 的第一行是「{first.strip()}」，全文共 {total} 行。"]
    if headings:
        parts.append("主要章节：" + "、".join(headings[:8]) + "。")
    parts.append(
        "（这个回答由模拟服务器根据它收到的工具结果生成；"
        "HTTP、SSE、组装、工具调用校验与执行都是真的。）"
    )
    return "".join(parts)


def _estimate_tokens(text: str) -> int:
    # A rough stand-in for a tokenizer: about 3 UTF-8 bytes per token.
    return max(1, len(text.encode()) // 3)


def demo_file(root: Path) -> str | None:
    """The file the demo reads: ``README.md``, else another README, else the first
    small UTF-8 text file in ``root`` (by name); ``None`` when there is none."""
    if (root / "README.md").is_file():
        return "README.md"
    try:
        files = sorted((p for p in root.iterdir() if p.is_file() and not p.name.startswith(".")),
                       key=lambda p: (not p.name.upper().startswith("README"), p.name))  # fmt: skip
    except OSError:
        return None
    for path in files:
        try:
            with path.open("rb") as f:
                head = f.read(4096)
            head.decode("utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # unreadable or binary (a cut multi-byte character is rare: skip it too)
        if head and b"\0" not in head:
            return path.name
    return None


def _replies(delay: float, piece_chars: int = PIECE_CHARS, name: str = "README.md") -> list[Any]:
    from ..testing import Reply, tool_call
    from ..types import AssistantMessage, TextContent, Usage

    def message(rec: RecordedRequest, *blocks: Any) -> Reply:
        out_text = "".join(
            b.text if isinstance(b, TextContent) else (b.raw_arguments or "") for b in blocks
        )
        u_in = _estimate_tokens(rec.body.decode("utf-8", "replace"))
        u_out = _estimate_tokens(out_text)
        usage = Usage(input=u_in, output=u_out, total_tokens=u_in + u_out)
        msg = AssistantMessage(content=blocks, api="", provider="", model="", usage=usage,
                               stop_reason="stop")  # fmt: skip
        return Reply(message=msg, piece_chars=piece_chars, delay=delay)

    def turn1(rec: RecordedRequest) -> Reply:
        # A fixed id (one call per conversation, so it cannot repeat) keeps the
        # output, and the guide that quotes it, the same on every run.
        first = FIRST_REPLY.replace("README.md", name)
        return message(rec, TextContent(text=first),
                       tool_call("read", {"path": name}, id="call_1"))  # fmt: skip

    def turn2(rec: RecordedRequest) -> Reply:
        answer = answer_from_tool_result(tool_result_text(rec.api, rec.json()), name)
        return message(rec, TextContent(text=answer))

    return [turn1, turn2]


async def _run_traced(agent: Any, tracer: Any, printer: EventPrinter, prompt: str) -> None:
    """The agent run with each model call traced; usage is counted as usual."""
    from ..types import AssistantMessage

    async for ev in agent.stream(prompt):
        tracer.agent_event(ev)
        msg = getattr(ev, "message", None)
        if getattr(ev, "type", "") == "message_end" and isinstance(msg, AssistantMessage):
            printer.message_done(msg, show=False)


def run_demo(args: argparse.Namespace) -> int:
    """Run the demo; 0 when the agent finished with a final answer."""
    from ..testing import MockServer
    from ..types import ModelCost

    root = Path(args.root)
    if not root.is_dir():
        raise CLIError("configuration", f"--root {args.root!r} is not a directory")
    if args.delay < 0:
        raise CLIError("usage", "--delay must be zero or positive")
    name = demo_file(root)
    if name is None:
        raise CLIError("demo", f"the demo has the agent read a file, and {str(root.resolve())!r} "
                       "has no text file to read: run it in a folder with a README.md, or pass "
                       "--root DIR", EXIT_CONFIG)  # fmt: skip
    prompt = PROMPT.replace("README.md", name)
    from ..agent import Agent
    from ..tools import read_only

    tools = read_only(root=root)
    screen = Screen(plain=True if (args.plain or args.json) else None)
    printer = EventPrinter(screen, show_turns=True)
    traced = bool(getattr(args, "trace", False))
    pieces = TRACE_PIECE_CHARS if traced else PIECE_CHARS
    with MockServer(_replies(args.delay, pieces, name)) as server:
        model = server.model(args.api, "demo-model",
                             cost=ModelCost(input=DEMO_PRICES[0], output=DEMO_PRICES[1]))  # fmt: skip
        if traced:
            from .trace_view import DemoTracer, TraceView

            tracer = DemoTracer(TraceView(screen, as_json=args.json))
            agent = Agent(model, tools=tools, system_prompt=SYSTEM, api_key=DEMO_KEY,
                          stream_fn=tracer.stream_fn)  # fmt: skip
        else:
            agent = Agent(model, tools=tools, system_prompt=SYSTEM)
        if not args.json:
            screen.line("modelwire demo — no API key, no network", "bold")
            screen.line(f"  model  {model.provider}/{model.id} at {model.base_url} ({model.api}); "
                        "its replies are scripted, every byte is real HTTP + SSE", MUTED)  # fmt: skip
            screen.line(f"  tools  {', '.join(t.name for t in tools)} (read-only, rooted at "
                        f"{root.resolve()})", MUTED)  # fmt: skip
            screen.line(f"you › {prompt}", USER)
        if traced:
            asyncio.run(_run_traced(agent, tracer, printer, prompt))
        else:
            asyncio.run(run_agent(agent.stream(prompt), printer, args.json))
        requests = list(server.requests)
    if not args.json:
        screen.line(format_usage(printer.usage, turns=printer.responses), MUTED)
        paths = Counter(f"{r.method} {r.path}" for r in requests)
        served = ", ".join(f"{p} ×{n}" for p, n in paths.items())
        screen.line(f"served {len(requests)} requests on loopback: {served}", MUTED)
        screen.line(
            f"(prices are illustrative: ${DEMO_PRICES[0]}/M in, ${DEMO_PRICES[1]}/M out; "
            "token counts are estimated by the mock server)",
            MUTED,
        )
    final = printer.final
    if final is None or final.stop_reason != "stop":
        if final is not None and final.error is not None:
            raise CLIError(final.error.kind, final.error.message, EXIT_FAILED)
        raise CLIError("demo", "the agent did not finish with a final answer", EXIT_FAILED)
    return 0
