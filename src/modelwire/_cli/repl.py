"""The chat REPL: read a message, stream the answer, repeat.

In a terminal the input is prompt_toolkit's (chosen over the stdlib ``readline``,
which has no bracketed paste: with it a pasted newline is Enter, so a pasted
paragraph became several turns): line editing, history in
``config_dir()/history``, a paste arriving whole as one message whatever it
contains (bracketed paste, https://cirw.in/blog/bracketed-paste), Esc Enter (or
Alt-Enter) for a new line. Ctrl-C clears the line being typed, Ctrl-D on an empty
line exits. Keys typed while an answer streams wait for the next prompt, and
whatever is still unread when the chat ends is discarded (``tcflush``), so nothing
typed or pasted can reach the shell.

Without a terminal (``chat -i`` with piped stdin) each line is a message.
Blank input is ignored either way; ``/exit`` ``/help`` ``/model`` ``/system``
``/save`` are commands when typed alone on a line.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from .common import CLIError, config_dir, fail, report_failure
from .output import MUTED, EventPrinter, Screen, _isatty, format_usage

if TYPE_CHECKING:
    import argparse

    from ..types import AssistantMessage, Context

__all__ = ["HELP", "run_repl"]

PROMPT = "you › "
HELP = """\
commands (alone on a line):
  /model [PROVIDER/MODEL]  show the model, or switch to another
  /system [TEXT]           show the system prompt, or set it (/system - clears it)
  /save FILE               write the conversation to FILE as JSON
  /help                    this list
  /exit                    end the chat (or Ctrl-D)
keys: Esc Enter inserts a new line; a paste is one message; Ctrl-C stops an answer"""


class _Reader:
    """One message at a time: prompt_toolkit on a terminal, lines otherwise."""

    def __init__(self, terminal: bool, prompt: str) -> None:
        self.prompt = prompt
        self.session: Any = None
        if terminal:
            try:
                self.session = _session()
            except ImportError:  # installed without the cli extra: plain lines
                self.session = None

    def read(self) -> str | None:
        """The next message; ``None`` at the end (Ctrl-D, end of input)."""
        while True:
            try:
                if self.session is not None:
                    text: str = self.session.prompt(self.prompt)
                else:
                    text = input(self.prompt)
            except EOFError:
                return None
            except KeyboardInterrupt:
                if self.session is None:
                    raise  # a pipe: Ctrl-C stops the chat, as any filter stops
                continue  # the line is cleared; the chat goes on
            return text


def _session() -> Any:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory
    from prompt_toolkit.key_binding import KeyBindings

    bindings = KeyBindings()

    @bindings.add("escape", "enter")
    def _newline(event: Any) -> None:
        event.current_buffer.insert_text("\n")

    history = config_dir() / "history"
    try:
        history.parent.mkdir(parents=True, exist_ok=True)
        store: Any = FileHistory(str(history))
    except OSError:
        from prompt_toolkit.history import InMemoryHistory

        store = InMemoryHistory()
    return PromptSession(history=store, key_bindings=bindings, multiline=False,
                         enable_open_in_editor=False)  # fmt: skip


def _discard_typeahead() -> None:
    # Whatever was typed or pasted and not read yet would be read by the shell next.
    if not _isatty(sys.stdin):
        return
    try:
        import termios

        termios.tcflush(sys.stdin.fileno(), termios.TCIFLUSH)
    except (ImportError, OSError, ValueError):
        pass


def run_repl(
    args: argparse.Namespace,
    ctx: Context,
    state: dict[str, Any],
    answer: Callable[[Context], AssistantMessage],
    printer: EventPrinter,
    notes: Screen,
    interrupted: type[Exception],
) -> int:
    """The conversation loop; returns the exit code."""
    terminal = _isatty(sys.stdin) and _isatty(sys.stdout)
    model = state["model"]
    if not args.json:
        notes.line(f"chatting with {model.provider}/{model.id} — /help for commands, "
                   "Ctrl-D to end", MUTED)  # fmt: skip
    reader = _Reader(terminal, "" if args.json else PROMPT)
    last: AssistantMessage | None = None
    try:
        while True:
            text = reader.read()
            if text is None:
                if terminal:
                    sys.stdout.write("\n")  # the cursor is still after the prompt
                    sys.stdout.flush()
                break
            if not text.strip():
                continue
            command = text.strip() if "\n" not in text.strip() else ""
            if command.startswith("/"):
                done, ctx = _command(command, ctx, state, notes)
                if done:
                    break
                continue
            ctx = ctx.with_messages(state["message"](text.strip("\n")))  # inputs.Inputs.message
            try:
                last = answer(ctx)
            except interrupted as exc:
                last = exc.message  # type: ignore[attr-defined]
                ctx = ctx.with_messages(last)
                notes.line("(answer stopped; it stays in the conversation)", MUTED)
                continue
            ctx = ctx.with_messages(last)
            if last.error is not None:
                report_failure(last, state["model"])
    finally:
        _discard_typeahead()
    if args.usage and printer.responses:
        notes.line(format_usage(printer.usage, turns=printer.responses), MUTED)
    if last is None or last.stop_reason == "aborted":
        return 0
    return 1 if last.stop_reason == "error" else 0


def _command(line: str, ctx: Context, state: dict[str, Any], notes: Screen) -> tuple[bool, Context]:
    """Run one slash command: (end the chat?, the context after it)."""
    name, _, rest = line.partition(" ")
    rest = rest.strip()
    if name in ("/exit", "/quit"):
        return True, ctx
    if name == "/help":
        notes.line(HELP)
    elif name == "/model":
        if rest:
            state["model"] = _switch_model(rest, state["model"])
        m = state["model"]
        notes.line(f"model: {m.provider}/{m.id} ({m.api} at {m.base_url})", MUTED)
    elif name == "/system":
        if rest:
            ctx = msgspec.structs.replace(ctx, system_prompt=None if rest == "-" else rest)
        notes.line(f"system prompt: {ctx.system_prompt or '(none)'}", MUTED)
    elif name == "/save":
        if not rest:
            fail("usage", "/save takes a file name, e.g. /save chat.json")
        else:
            try:
                _save(Path(rest).expanduser(), ctx, state["model"])
            except CLIError as exc:
                fail(exc.kind, exc.message)  # the chat goes on
            else:
                notes.line(f"saved {len(ctx.messages)} messages to {rest}", MUTED)
    else:
        fail("usage", f"unknown command {name}; /help lists them (a message starting with "
             "'/' needs a second line, Esc Enter)")  # fmt: skip
    return False, ctx


def _switch_model(spec: str, current: Any) -> Any:
    """``/model PROVIDER/MODEL``: a catalog model, or the same address with another id."""
    from .. import _catalog as catalog
    from ..errors import ConfigurationError
    from .store import resolve_alias

    spec = resolve_alias(spec, config_dir())
    try:
        return catalog.resolve_model(spec)
    except ConfigurationError:
        provider, sep, model_id = spec.partition("/")
        if sep and provider == current.provider and model_id:
            return msgspec.structs.replace(current, id=model_id)
        fail("not_found", f"unknown model {spec!r}; the current one stays (see: modelwire "
             "models)")  # fmt: skip
        return current


def _save(path: Path, ctx: Context, model: Any) -> None:
    from ..types import to_json

    data = {"model": json.loads(to_json(model)), "context": json.loads(to_json(ctx))}
    try:
        path.write_text(json.dumps(data, ensure_ascii=False, indent=2), encoding="utf-8")
    except OSError as exc:
        raise CLIError("file", f"cannot write {str(path)!r}: {exc.strerror}") from None
