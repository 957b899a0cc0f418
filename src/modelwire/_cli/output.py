"""Terminal output for the CLI: live rendering of model and agent events.

Two backends behind one :class:`Screen`: ``rich`` when stdout is a terminal
(thinking dimmed, tool calls highlighted, a spinner while waiting), plain text
otherwise (pipes, files, tests) — the same words, no escape codes. rich is
imported only here and only for a terminal, so ``import modelwire`` and plain
runs never load it. ``--json`` output bypasses both: one JSON object per line.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterable, Iterable
from typing import Any, TextIO

import msgspec

from ..types import AssistantMessage, ToolCall, ToolResultMessage, Usage

__all__ = [
    "EventPrinter",
    "Screen",
    "end_lines",
    "format_usage",
    "one_line",
    "run_agent",
    "sources_lines",
    "trim_block",
]

#: Styles (rich markup names); the plain backend ignores them.
THINKING = "dim italic"
TOOL = "bold cyan"
RESULT = "green"
FAILED = "bold red"
MUTED = "dim"
USER = "bold"


def one_line(text: str, limit: int = 400) -> str:
    """``text`` on one line (newlines shown as spaces), cut to ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def trim_block(text: str, max_lines: int = 6, width: int = 100) -> str:
    """The first ``max_lines`` lines of ``text``, each cut to ``width``, with a count
    of what was left out."""
    # Tabs expanded here, so the width cut and every terminal agree.
    lines = [ln.expandtabs() for ln in text.splitlines()] or [""]
    shown = [ln if len(ln) <= width else ln[: width - 1] + "…" for ln in lines[:max_lines]]
    if len(lines) > max_lines:
        shown.append(f"… ({len(lines) - max_lines} more lines)")
    return "\n".join(shown)


def format_usage(usage: Usage, *, turns: int = 1) -> str:
    """``usage: 812 in · 64 out · 0 cache read · 0 cache write · 876 total · $0.000160``."""
    cost = usage.cost.total
    price = f"${cost:.6f}" if cost else "$0 (no prices known)"
    per = f" over {turns} responses" if turns > 1 else ""
    return (
        f"usage{per}: {usage.input} in · {usage.output} out · {usage.cache_read} cache read · "
        f"{usage.cache_write} cache write · {usage.total_tokens} total · cost {price}"
    )


def add_usage(a: Usage, b: Usage) -> Usage:
    """The sum of two usages, costs included."""
    from ..types import Cost

    c = Cost(
        input=a.cost.input + b.cost.input,
        output=a.cost.output + b.cost.output,
        cache_read=a.cost.cache_read + b.cost.cache_read,
        cache_write=a.cost.cache_write + b.cost.cache_write,
        total=a.cost.total + b.cost.total,
    )
    return Usage(
        input=a.input + b.input,
        output=a.output + b.output,
        cache_read=a.cache_read + b.cache_read,
        cache_write=a.cache_write + b.cache_write,
        total_tokens=a.total_tokens + b.total_tokens,
        cost=c,
    )


_SCREENS: list[Screen] = []


class Screen:
    """Where the CLI writes: rich on a terminal, plain text elsewhere.

    It tracks whether the cursor is at the start of a line so streamed text
    and whole lines can be mixed without blank or glued lines.
    """

    def __init__(self, *, plain: bool | None = None, out: TextIO | None = None) -> None:
        self.out = out or sys.stdout
        if plain is None:
            # https://no-color.org: NO_COLOR set and not empty disables colour; rich's
            # spinner and cursor codes go with it, so the output has no escape at all.
            plain = not _isatty(self.out) or bool(os.environ.get("NO_COLOR"))
            plain = plain or os.environ.get("TERM") == "dumb"
        self._console: Any = None
        if not plain:
            try:
                from rich.console import Console
            except ImportError:  # rich is an optional extra ("modelwire[cli]")
                plain = True
            else:
                self._console = Console(file=self.out, highlight=False, soft_wrap=True)
        self.plain = plain
        self._status: Any = None
        self._bol = True
        _SCREENS.append(self)

    @property
    def width(self) -> int | None:
        """The terminal's width in columns (``None``: not a terminal, no limit)."""
        return int(self._console.width) if self._console is not None else None

    def write(self, text: str, style: str | None = None) -> None:
        """Append ``text`` (no newline added)."""
        if not text:
            return
        self.stop_spinner()
        if self._console is not None:
            self._console.print(text, style=style, end="", markup=False, highlight=False)
        else:
            self.out.write(text)
            self.out.flush()
        self._bol = text.endswith("\n")

    def line(self, text: str = "", style: str | None = None) -> None:
        """``text`` on a line of its own."""
        self.newline()
        self.write(text + "\n", style)

    def newline(self) -> None:
        """End the current line unless the cursor is already at a line start."""
        if not self._bol:
            self.write("\n")

    def spinner(self, text: str) -> None:
        """Show a spinner with ``text`` until the next write (terminal only)."""
        if self._console is None:
            return
        self.stop_spinner()
        self.newline()
        self._status = self._console.status(text, spinner="dots")
        self._status.start()

    def stop_spinner(self) -> None:
        status, self._status = self._status, None
        if status is not None:
            status.stop()

    def table(self, headers: list[str], rows: Iterable[list[str]]) -> None:
        """A table: rich's on a terminal, aligned columns otherwise."""
        rows = list(rows)
        self.stop_spinner()
        if self._console is not None:
            from rich.table import Table

            t = Table(*headers, header_style="bold", box=None)
            for r in rows:
                t.add_row(*r)
            self._console.print(t)
            return
        widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h)
                  for i, h in enumerate(headers)]  # fmt: skip
        for r in [headers, *rows]:
            self.line("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip())


def end_lines() -> None:
    """Stop spinners and end every partly written line (before an error on stderr)."""
    for screen in _SCREENS:
        try:
            screen.stop_spinner()
            screen.newline()
        except (OSError, ValueError):
            pass


def _isatty(f: TextIO) -> bool:
    try:
        return f.isatty()
    except (AttributeError, ValueError):
        return False


def json_line(value: Any, out: TextIO | None = None) -> None:
    """One JSON object on one line (non-ASCII kept readable)."""
    out = out or sys.stdout
    out.write(json.dumps(value, ensure_ascii=False, default=_default) + "\n")
    out.flush()


def _default(value: Any) -> Any:
    return msgspec.to_builtins(value)


def to_plain(event: Any) -> dict[str, Any]:
    """An event (model or agent) as plain data for ``--json``."""
    to_dict = getattr(event, "to_dict", None)
    if callable(to_dict):
        return dict(to_dict())
    data = msgspec.to_builtins(event)
    if isinstance(data, dict) and "type" not in data:
        data = {"type": getattr(event, "type", type(event).__name__), **data}
    return data  # type: ignore[no-any-return]


class EventPrinter:
    """Renders model events and agent events live on a :class:`Screen`.

    Text streams as it arrives; thinking streams dimmed; a tool call shows its
    name, then its arguments as they arrive; tool results are trimmed.
    """

    def __init__(self, screen: Screen, *, result_lines: int = 6, show_turns: bool = False) -> None:
        self.screen = screen
        self.result_lines = result_lines
        self.show_turns = show_turns
        self.usage = Usage()
        self.responses = 0
        self.final: AssistantMessage | None = None
        self.failed: AssistantMessage | None = None

    # ------------------------------------------------------------ model events

    def model_event(self, ev: Any) -> None:
        s = self.screen
        t = ev.type
        if t == "thinking_start":
            s.newline()
            s.write("thinking: ", THINKING)
        elif t == "thinking_delta":
            s.write(ev.delta, THINKING)
        elif t == "text_start":
            s.newline()
        elif t == "text_delta":
            s.write(ev.delta)
        elif t in ("thinking_end", "text_end"):
            s.newline()
        elif t == "tool_call_start":
            block = ev.partial.content[ev.content_index]
            name = block.name if isinstance(block, ToolCall) else "?"
            s.newline()
            s.write(f"→ {name} ", TOOL)
        elif t == "tool_call_delta":
            s.write(ev.delta, TOOL)
        elif t == "tool_call_end":
            s.newline()
        elif t in ("done", "error"):
            s.newline()
            self.message_done(ev.message)

    def message_done(self, message: AssistantMessage, *, show: bool = True) -> None:
        """Count a finished response (usage, final, failed); say how it ended badly."""
        self.responses += 1
        self.usage = add_usage(self.usage, message.usage)
        self.final = message
        if message.stop_reason in ("error", "aborted"):
            self.failed = message
        if not show:
            return
        for line in sources_lines(message):
            self.screen.line(line, MUTED)
        # A failure is reported once, by the caller, as the one stderr error line.
        if message.stop_reason == "length":
            self.screen.line("(the response was cut off at the output token limit)", MUTED)

    # ------------------------------------------------------------ agent events

    def agent_event(self, ev: Any) -> None:
        s = self.screen
        t = getattr(ev, "type", "")
        if t == "turn_start":
            if self.show_turns:
                s.line(f"── turn {getattr(ev, 'turn', '?')} " + "─" * 30, MUTED)
            s.spinner("waiting for the model…")
        elif t == "message_update":
            inner = _inner_event(ev)
            if inner is not None and inner.type not in ("done", "error"):
                self.model_event(inner)
        elif t == "message_end":
            msg = getattr(ev, "message", None)
            if isinstance(msg, AssistantMessage):
                s.newline()
                self.message_done(msg)
        elif t == "tool_execution_start":
            s.spinner(f"running {_tool_name(ev)}…")
        elif t == "tool_execution_end":
            self.tool_result(ev)

    def tool_result(self, ev: Any) -> None:
        s = self.screen
        name = _tool_name(ev)
        result = getattr(ev, "result", None)
        is_error = bool(getattr(ev, "is_error", False))
        text = _result_text(result)
        s.newline()
        if is_error:
            failure = getattr(ev, "failure", None)
            kind = f" [{failure}]" if failure else ""
            s.line(f"✗ {name} failed{kind}: {one_line(text, 300)}", FAILED)
            return
        s.line(f"← {name} result:", RESULT)
        # On a terminal each result line fits its width (two columns of indent).
        width = 100 if s.width is None else max(20, min(100, s.width - 2))
        for ln in trim_block(text, self.result_lines, width).splitlines():
            s.line("  " + ln, MUTED)


def sources_lines(message: AssistantMessage) -> list[str]:
    """The citations of a message's text as numbered sources, each source once (by
    URL or document), in the order first cited: ``[1] Title <url>``."""
    seen: dict[str, str] = {}
    for block in message.content:
        for c in getattr(block, "citations", ()):
            where = c.url or (f"document {c.document}" if c.document is not None else None)
            key = where or c.title or c.cited_text or ""
            if key and key not in seen:
                seen[key] = " ".join(p for p in (c.title, f"<{where}>" if where else None) if p)
    if not seen:
        return []
    return ["Sources:"] + [f"[{n}] {text}" for n, text in enumerate(seen.values(), 1)]


def _tool_name(ev: Any) -> str:
    call = getattr(ev, "tool_call", None)
    return call.name if isinstance(call, ToolCall) else "tool"


def _inner_event(ev: Any) -> Any:
    # message_update wraps the model's own event (modelwire.agent.events).
    return getattr(ev, "event", None)


def _result_text(result: Any) -> str:
    if isinstance(result, ToolResultMessage):
        return result.text
    return "" if result is None else str(result)


async def run_agent(events: AsyncIterable[Any], printer: EventPrinter, as_json: bool) -> None:
    """Stream an agent run's ``events``, rendering or printing JSON lines (``run`` and
    ``demo``)."""
    try:
        async for ev in events:
            if as_json:
                json_line(to_plain(ev))
                msg = getattr(ev, "message", None)
                if getattr(ev, "type", "") == "message_end" and isinstance(msg, AssistantMessage):
                    printer.message_done(msg, show=False)
            else:
                printer.agent_event(ev)
    finally:
        printer.screen.stop_spinner()
