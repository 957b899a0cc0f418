"""Tools on the command line: ``--functions FILE.py``, ``-T/--tool NAME``, ``--td``, ``--ta``.

``--functions`` loads a Python file (or, when the argument is no file and contains
``def``, Python code) and makes every public function it defines a tool through
``Tool.from_function`` (``@mw.tool``): the schema from the type hints and docstring,
the arguments validated before the function runs. Functions imported into the
file, ``_private`` ones and lambdas are left out; a top-level ``@mw.tool`` defined
in the file is taken as it is.

``-T NAME`` selects tools: the built-in read-only file tools ``read``, ``ls``,
``grep`` (rooted at ``--root``), the functions and the tools of the ``--mcp``
servers (:mod:`.mcp`) by name. ``run`` always has the built-in tools; ``chat`` has
only what ``-T`` names, or every function and server tool when ``-T`` is not given.

The built-in tools only read. A function may change things, so each call of one
needs the user's approval unless it is made with ``@mw.tool(read_only=True)``; so
does a server's tool unless the server marks it ``readOnlyHint``:
on a terminal the CLI asks ``Run NAME(args)? [y/N/a]`` (``a``: yes, and do not ask
again about that tool in this command or chat); without one the call is
refused (the model is told, stderr says to pass ``--ta``), unless ``--ta``
approves every call. ``--td`` prints each call and its result on stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .common import CLIError

# Imported by build_parser for every command: asyncio and the rest load when used.
if TYPE_CHECKING:
    import asyncio

    from ..tools import Tool
    from ..types import AssistantMessage, Context, Message, Model, ToolCall
    from .mcp import Servers
    from .output import EventPrinter

__all__ = ["BUILTIN", "Toolset", "add_arguments", "load_functions", "toolset"]

#: The read-only file tools ``-T`` may name (:func:`modelwire.tools.read_only`).
BUILTIN = ("read", "ls", "grep")

# A long argument list is cut in the approval question and the --td line.
_SHOWN_ARGS = 1000


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The tool flags of ``chat`` (and ``prompt``) and ``run``."""
    p.add_argument("--functions", action="append", metavar="FILE.py",
                   help="a Python file (or code) whose public typed functions become tools "
                   "the model may call; each call needs approval unless the function is "
                   "decorated @mw.tool(read_only=True); repeatable")  # fmt: skip
    from .mcp import add_arguments as add_mcp_arguments

    add_mcp_arguments(p)
    p.add_argument("-T", "--tool", dest="tool_names", action="append", metavar="NAME",
                   help=f"a tool to offer: {', '.join(BUILTIN)} (read-only, rooted at --root), "
                   "a function from --functions or a tool of an --mcp server (then only the "
                   "named ones); repeatable")  # fmt: skip
    p.add_argument("--td", "--tools-debug", dest="tool_debug", action="store_true",
                   help="print each tool call and its result on stderr")  # fmt: skip
    p.add_argument("--ta", "--approve-tools", dest="approve_tools", action="store_true",
                   help="run every tool call without asking (otherwise a call that is not "
                   "read-only is asked about on a terminal, refused without one)")  # fmt: skip
    if "--root" not in p._option_string_actions:
        p.add_argument("--root", default=".",
                       help="directory the read, ls and grep tools may read (default: .)")  # fmt: skip


# --------------------------------------------------------------------------- loading


def load_functions(spec: str, index: int = 0) -> list[Tool]:
    """The tools a ``--functions`` argument defines."""
    import inspect
    import traceback
    import types

    from ..errors import ConfigurationError
    from ..tools import Tool

    path = Path(spec).expanduser()
    if path.is_file():
        try:
            source = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise CLIError("usage", f"--functions {spec}: cannot read it ({exc})") from None
        where = str(path)
    elif "def " in spec and not path.exists():
        source, where = spec, "--functions code"
    else:
        problem = "is a directory" if path.is_dir() else "no such file"
        raise CLIError("usage", f"--functions {spec}: {problem}; give a Python file defining "
                       "typed functions, e.g. --functions tools.py")  # fmt: skip
    name = f"_modelwire_functions_{index}"
    module = types.ModuleType(name)
    module.__file__ = where
    sys.modules[name] = module  # dataclasses and typing look a module up by name
    if path.is_file():
        # The file's own imports of modules beside it, as `python FILE` finds them
        # (appended: nothing installed is shadowed).
        folder = str(path.resolve().parent)
        if folder not in sys.path:
            sys.path.append(folder)
    try:
        exec(compile(source, where, "exec"), module.__dict__)  # the user's own code, as asked
    except SyntaxError as exc:
        raise CLIError("usage", f"cannot load {where}, line {exc.lineno}: SyntaxError: "
                       f"{exc.msg}") from None  # fmt: skip
    except (Exception, SystemExit) as exc:
        line = next((f.lineno for f in reversed(traceback.extract_tb(exc.__traceback__))
                     if f.filename == where), None)  # fmt: skip
        at = f", line {line}" if line else ""
        raise CLIError("usage", f"cannot load {where}{at}: {type(exc).__name__}: {exc}") from None
    found: list[Tool] = []
    seen: set[int] = set()
    for attr, obj in vars(module).items():
        if attr.startswith("_") or id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, Tool):
            fn = obj.function
            if fn is not None and getattr(fn, "__module__", None) == name:
                found.append(obj)
            continue
        if not inspect.isfunction(obj) or obj.__module__ != name or obj.__name__ == "<lambda>":
            continue
        _check_hints(obj, where)
        try:
            made = Tool.from_function(obj)
        except ConfigurationError as exc:
            raise CLIError("usage", f"{where}: {exc}") from None
        found.append(made)
    if not found:
        raise CLIError("usage", f"--functions {where} defines no public function (a function "
                       "whose name does not start with _)")  # fmt: skip
    return found


def _check_hints(fn: Any, where: str) -> None:
    import inspect

    # Without hints the model is told nothing about the values it must send.
    for p in inspect.signature(fn).parameters.values():
        if p.annotation is p.empty and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise CLIError("usage", f"function {fn.__name__} in {where} has no type hint for "
                           f"parameter {p.name!r}: annotate every parameter, e.g. "
                           f"def {fn.__name__}({p.name}: str) -> str")  # fmt: skip


# --------------------------------------------------------------------------- selection


def toolset(args: argparse.Namespace, *, keep_builtins: bool = False) -> Toolset | None:
    """The tools the flags select (``None``: no tool flags and no built-in tools).

    ``keep_builtins`` (``run``): read, ls and grep are always there. The ``--mcp``
    servers are started here, once every other flag was checked, so that ``-T`` can
    name their tools; the caller stops them with :meth:`Toolset.close`."""
    functions: list[Tool] = []
    for i, spec in enumerate(getattr(args, "functions", None) or ()):
        functions.extend(load_functions(spec, i))
    named: list[str] = list(getattr(args, "tool_names", None) or ())
    specs: list[str] = list(getattr(args, "mcp", None) or ())
    if not functions and not named and not specs and not keep_builtins:
        return None
    by_name: dict[str, Tool] = {}
    for tool in functions:
        if tool.name in BUILTIN:
            raise CLIError("usage", f"--functions: {tool.name} is the name of a built-in tool; "
                           "rename the function")  # fmt: skip
        if tool.name in by_name:
            raise CLIError("usage", f"--functions: two functions are named {tool.name}")
        by_name[tool.name] = tool
    builtins = keep_builtins or any(n in BUILTIN for n in named)
    root = getattr(args, "root", ".")
    if builtins and not Path(root).is_dir():
        raise CLIError("configuration", f"--root {root!r} is not a directory")
    servers = None
    if specs:
        from .mcp import open_servers

        servers = open_servers(specs)
    try:
        served = [(t, s.label) for s in (servers.servers if servers else ()) for t in s.tools]
        chosen = _choose(named, by_name, served, root if builtins else None, keep_builtins)
    except BaseException:
        if servers is not None:
            servers.close()
        raise
    return Toolset(chosen, approve_all=bool(getattr(args, "approve_tools", False)),
                   debug=bool(getattr(args, "tool_debug", False)), servers=servers)  # fmt: skip


def _choose(
    named: list[str],
    by_name: dict[str, Tool],
    served: list[tuple[Tool, str]],
    root: str | None,
    keep_builtins: bool,
) -> list[Tool]:
    """What ``-T`` selects (everything when it is not given) from the built-in tools
    (``root``: they are offered), the functions and the servers' tools."""
    import difflib

    known = list(dict.fromkeys([*BUILTIN, *by_name, *(t.name for t, _ in served)]))
    for n in named:
        if n not in known:
            close = difflib.get_close_matches(n, known, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]}?" if close else ""
            more = "" if by_name or served else " (--functions FILE.py adds functions)"
            raise CLIError("usage", f"-T {n}: no tool named {n!r}{hint} (tools: "
                           f"{', '.join(known)}{more})")  # fmt: skip
    chosen: list[Tool] = []
    if root is not None:
        from ..tools import read_only as file_tools

        chosen.extend(t for t in file_tools(root=root) if keep_builtins or t.name in named)
    if named:
        chosen.extend(by_name[n] for n in dict.fromkeys(named) if n in by_name)
        served = [(t, label) for t, label in served if t.name in named]
    else:
        chosen.extend(by_name.values())
    source = {t.name: "a built-in tool" if t.name in BUILTIN else "a --functions function"
              for t in chosen}  # fmt: skip
    for tool, label in served:
        if tool.name in source:
            raise CLIError("usage", f"two tools are named {tool.name}: {source[tool.name]} and "
                           f"a tool of {label}; they cannot be offered together, so leave one "
                           "of them out")  # fmt: skip
        source[tool.name] = f"a tool of {label}"
        chosen.append(tool)
    return chosen


# --------------------------------------------------------------------------- the tool calls


def _shown(call: ToolCall, args: dict[str, Any] | None = None) -> str:
    from .output import one_line

    values = call.arguments if args is None else args
    text = json.dumps(values, ensure_ascii=False)
    if not values and call.raw_arguments and call.raw_arguments.strip() != "{}":
        text = call.raw_arguments  # not a JSON object: shown as the model sent it
    return f"{call.name}({one_line(text, _SHOWN_ARGS)})"


class Toolset:
    """The selected tools, the approval hook and the ``--td`` printout."""

    def __init__(
        self,
        tools: Iterable[Tool],
        *,
        approve_all: bool,
        debug: bool,
        servers: Servers | None = None,
    ) -> None:
        self.tools: list[Tool] = list(tools)
        self._servers = servers  # the --mcp servers, open until close()
        self.read_only = frozenset(t.name for t in self.tools if t.read_only)
        self.approve_all = approve_all
        # The tools answered "a" (always) at the question: not asked again this session.
        self.always: set[str] = set()
        self.debug = debug
        # The answer being waited for at the approval question (set to "no" by Ctrl-C).
        self._pending: asyncio.Future[bytes] | None = None
        # REPL turns: each final answer stands for the messages its run added.
        self._turns: dict[int, tuple[AssistantMessage, tuple[Message, ...]]] = {}

    def close(self) -> None:
        """Stop the ``--mcp`` servers (no-op without any)."""
        if self._servers is not None:
            servers, self._servers = self._servers, None
            servers.close()

    # ------------------------------------------------------------ approval

    async def before(self, call: ToolCall, args: dict[str, Any]) -> str | None:
        """``before_tool_call``: ``None`` runs the call, a reason refuses it."""
        if call.name in self.read_only or call.name in self.always or self.approve_all:
            return None
        from .output import _isatty, end_lines

        shown = _shown(call, args)
        if not _isatty(sys.stdin):
            end_lines()
            sys.stderr.write(f"modelwire: not approved: {shown} was not run: it is not read-only "
                             "and stdin is not a terminal to ask on; pass --ta to approve tool "
                             "calls without asking\n")  # fmt: skip
            sys.stderr.flush()
            return "not approved: the user was not there to approve it"
        answer = await self._ask(f"Run {shown}? [y/N/a] ")
        if answer in ("a", "always"):
            self.always.add(call.name)
        if answer in ("y", "yes", "a", "always"):
            return None
        return "the user declined to run it"

    async def _ask(self, question: str) -> str:
        import asyncio

        from .output import end_lines

        end_lines()
        sys.stderr.write(question)
        sys.stderr.flush()
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[bytes] = loop.create_future()
        fd = sys.stdin.fileno()

        def readable() -> None:
            try:
                data = os.read(fd, 4096)
            except OSError:
                data = b""
            if not answer.done():
                answer.set_result(data)

        try:
            loop.add_reader(fd, readable)
        except (NotImplementedError, OSError, ValueError):  # a loop that cannot watch stdin
            line = sys.stdin.readline().encode()
        else:
            # Waited for on the loop (not in a blocking read), so Ctrl-C stops it at once.
            self._pending = answer
            try:
                line = await answer
            finally:
                self._pending = None
                loop.remove_reader(fd)
        if not line.endswith(b"\n"):
            sys.stderr.write("\n")  # end of input or Ctrl-C: the question's line ends here
        return line.decode(errors="replace").strip().lower()

    def interrupt(self) -> None:
        """Ctrl-C: a pending approval question is answered no."""
        if self._pending is not None and not self._pending.done():
            self._pending.set_result(b"")

    # ------------------------------------------------------------ --td

    def show(self, ev: Any) -> None:
        """``--td``: each call and its result (or failure) on stderr."""
        if not self.debug:
            return
        from .output import end_lines, one_line, trim_block

        t = getattr(ev, "type", "")
        if t == "tool_execution_start":
            end_lines()
            sys.stderr.write(f"Tool call: {_shown(ev.tool_call)}\n")
        elif t == "tool_execution_end":
            end_lines()
            text = ev.result.text
            if ev.is_error:
                # The text the model got; it names the kind ("Error [blocked]: …").
                shown = text if text.lower().startswith("error") else f"error: {text}"
                sys.stderr.write(f"  {one_line(shown, 2000)}\n")
            else:
                block = trim_block(text, max_lines=20, width=200)
                sys.stderr.write("".join(f"  {ln}\n" for ln in block.splitlines()) or "  \n")
        else:
            return
        sys.stderr.flush()

    def observe(self, agent: Any) -> Any:
        """``agent`` whose ``stream`` also feeds :meth:`show` (for ``run``)."""
        return _Observed(agent, self)

    # ------------------------------------------------------------ chat

    def answer(
        self,
        model: Model,
        ctx: Context,
        opts: dict[str, Any],
        printer: EventPrinter,
        args: argparse.Namespace,
        *,
        structured: bool = False,
    ) -> AssistantMessage:
        """One chat turn with tools: the agent runs until the model answers (with
        ``structured``, only the answer's validated value is printed: :mod:`.schema`)."""
        import asyncio

        return asyncio.run(self._answer(model, ctx, opts, printer, bool(args.json),
                                        not getattr(args, "no_stream", False), structured))  # fmt: skip

    def _history(self, messages: Iterable[Message]) -> list[Message]:
        out: list[Message] = []
        for m in messages:
            turn = self._turns.get(id(m))
            if turn is not None and turn[0] is m:
                out.extend(turn[1])
            else:
                out.append(m)
        return out

    async def _answer(
        self,
        model: Model,
        ctx: Context,
        opts: dict[str, Any],
        printer: EventPrinter,
        as_json: bool,
        show_stream: bool,
        structured: bool,
    ) -> AssistantMessage:
        import asyncio

        from ..agent import Agent
        from ..types import UserMessage
        from .exits import Interrupted

        *earlier, prompt = ctx.messages
        if not isinstance(prompt, UserMessage):
            raise CLIError("usage", "the conversation does not end with a message to answer")
        opts = dict(opts)
        key = opts.pop("api_key", None)  # the Agent takes the key itself
        agent = Agent(model, self.tools, system_prompt=ctx.system_prompt, api_key=key,
                      messages=self._history(earlier), before_tool_call=self.before,
                      **opts)  # fmt: skip
        s = agent.stream(prompt)
        task = asyncio.ensure_future(self._render(s, printer, as_json, show_stream, structured))
        interrupted = False
        try:
            await asyncio.shield(task)
        except asyncio.CancelledError:
            # Ctrl-C: the run is aborted and still ends with agent_end, so what it
            # added stays in the conversation.
            interrupted = True
            self.interrupt()
            s.abort()
            await task
        finally:
            printer.screen.stop_spinner()
        run = s.run
        if run is None:
            raise CLIError("internal", "the agent ended without its run", 70)
        self._turns[id(run.final)] = (run.final, run.new_messages[1:])
        if interrupted:
            printer.screen.newline()
            raise Interrupted(run.final)
        if structured and run.final.stop_reason not in ("error", "aborted"):
            from .output import _isatty
            from .schema import print_value

            print_value(run.final.parsed, one_line=as_json or not _isatty(sys.stdout))
        return run.final

    async def _render(
        self, s: Any, printer: EventPrinter, as_json: bool, show_stream: bool, structured: bool
    ) -> None:
        # chat's stdout is the answer's text (and thinking); tool calls go to stderr
        # with --td, so `chat ... > answer.txt` holds only the answer.
        from ..types import AssistantMessage
        from .output import json_line, to_plain

        screen = printer.screen
        async for ev in s:
            self.show(ev)
            t = ev.type
            message = getattr(ev, "message", None)
            if structured:  # the validated value alone, printed once the run ends
                if t == "message_end" and isinstance(message, AssistantMessage):
                    printer.message_done(message, show=False)
            elif as_json:
                json_line(to_plain(ev))
                if t == "message_end" and isinstance(message, AssistantMessage):
                    printer.message_done(message, show=False)
            elif t == "turn_start":
                screen.spinner("waiting for the model…")
            elif t == "message_update" and show_stream:
                inner = ev.event
                if not inner.type.startswith("tool_call") and inner.type not in ("done", "error"):
                    printer.model_event(inner)
            elif t == "message_end" and isinstance(message, AssistantMessage):
                screen.stop_spinner()
                if not show_stream and message.text:
                    screen.line(message.text)
                screen.newline()
                printer.message_done(message)
            elif t == "tool_execution_start":
                screen.spinner(f"running {ev.tool_call.name}…")
            elif t == "tool_execution_end":
                screen.stop_spinner()


class _Observed:
    """An agent whose events also go to a :class:`Toolset`'s ``--td`` printout."""

    def __init__(self, agent: Any, tools: Toolset) -> None:
        self._agent = agent
        self._tools = tools

    async def stream(self, prompt: Any, *, run_id: str | None = None) -> AsyncIterator[Any]:
        async for ev in self._agent.stream(prompt, run_id=run_id):
            self._tools.show(ev)
            yield ev

    async def resume_stream(self, state: Any, decisions: Any) -> AsyncIterator[Any]:
        async for ev in self._agent.resume_stream(state, decisions):
            self._tools.show(ev)
            yield ev
