"""The ``modelwire`` command (also ``python -m modelwire``).

::

    modelwire demo                                  # the embedded default: no key, no network
    modelwire chat -m provider/model [prompt]       # stream a chat with a real provider (alias: prompt)
    modelwire chat --schema 'name, age int' PROMPT  # answer with validated JSON (--schema-multi: a list)
    modelwire chat -f FILE -a IMAGE.png PROMPT      # text files before the prompt; images, PDFs, audio
    modelwire run -m provider/model --root DIR TASK # the agent with read-only file tools
    modelwire replay --api API FILE.sse [--json]    # decode a recorded stream offline
    modelwire trace --api API FILE.sse [--split N,M] # every layer of one call, linked by ids
    modelwire trace -m provider/model PROMPT        # the same for a live call
    modelwire mock-server [--port N] [--script F]   # a scripted provider on loopback
    modelwire models [provider] [--embeddings]      # the model catalog
    modelwire embed -m provider/model TEXT... [-f F] # embeddings, one vector per input
    modelwire batch IN.jsonl -o OUT.jsonl           # many requests, resumable, exactly once
    modelwire logs [-n N] [search WORDS] [--cid ID] # the log of every chat call (SQLite)
    modelwire serve --config gateway.toml           # an OpenAI/Anthropic-compatible gateway
    modelwire chat 'Summarise: $input' --save NAME  # a template; then chat -t NAME [-p KEY VALUE]
    modelwire templates [list|show|edit|path]       # the saved templates (templates/NAME.json)
    modelwire keys set|get|list|remove|path [NAME]  # API keys in keys.json (0600), after the env
    modelwire aliases set|list|remove|path          # -m ALIAS for a PROVIDER/MODEL (aliases.json)
    modelwire completion bash|zsh|fish              # a shell completion script
    modelwire mcp tools SERVER [--json]             # an MCP server's tools (chat/run --mcp SERVER)

Conventions from the SDKs and ``llm``: ``-m`` defaults to ``$MODELWIRE_MODEL`` or
``model = "…"`` in ``$XDG_CONFIG_HOME/modelwire/config.toml``; ``OPENAI_BASE_URL``,
``ANTHROPIC_BASE_URL``, ``GOOGLE_GEMINI_BASE_URL`` are read without ``--base-url``;
piped stdin (or ``-``) is the prompt; ``--key``, ``--system``, ``-o KEY VALUE``
(checked; ``-o extra.NAME VALUE`` for a body field), ``[options]`` and
``[models."provider/model"]`` in ``config.toml`` (checked: an unknown key is an error),
``--no-stream``, ``-u`` (usage on stderr); every chat answer is recorded in
``$XDG_DATA_HOME/modelwire/logs.db`` (``--no-log``, ``log = false``), ``chat -c``
continues the newest conversation and ``--cid ID`` (or a unique prefix of it) any
other; ``NO_COLOR`` or a pipe gives output without escape sequences.

Every failure prints one line, ``modelwire: error [kind]: message``, on stderr
and exits non-zero — never a traceback (set ``MODELWIRE_DEBUG=1`` to see one
for an unexpected internal error). Exit codes: 0 success, 1 the model call or
the stream failed, 2 a usage or configuration error, 130 interrupted, 70 an
internal error.

The CLI holds no business logic: it parses arguments, calls the library and
renders what comes back (:mod:`modelwire._cli.output`).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import NoReturn

from .._apis import DEFAULT_API, builtin_api_names
from ..errors import ConfigurationError, MissingAPIKeyError, ModelwireError
from .common import (
    EXIT_CONFIG,
    EXIT_FAILED,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    CLIError,
    fail,
    silence_stdout,
)

__all__ = ["build_parser", "main"]

# The --api choices: every wire API modelwire ships (read from modelwire._apis).
APIS = builtin_api_names()


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage mistake is one typed line like every other error, naming
    the help of the command it was made in and the flag that was probably meant."""

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        ns, extras = super().parse_known_args(args, namespace)
        if extras and self._subparsers is None:
            # A subcommand's unknown flag: reported by the subcommand itself, which knows
            # its own flags (the top parser would only point at its own --help).
            self.error(f"unrecognized arguments: {' '.join(extras)}")
        return ns, extras

    def error(self, message: str) -> NoReturn:
        fail("usage", f"{message}{self._suggestion(message)} (see: {self.prog} --help)")
        sys.exit(EXIT_CONFIG)

    def _suggestion(self, message: str) -> str:
        import difflib
        import re

        choice = re.match(
            r"argument [^:]+: invalid choice: '([^']*)' \(choose from (.*)\)", message
        )
        if choice:
            options = re.findall(r"'([^']*)'", choice[2])
            close = difflib.get_close_matches(choice[1], options, n=1, cutoff=0.6)
            return f"; did you mean {close[0]}?" if close else ""
        if not message.startswith("unrecognized arguments:"):
            return ""
        known = [o for o in self._option_string_actions if o.startswith("--")]
        for word in message.split(":", 1)[1].split():
            flag = word.split("=", 1)[0]
            if flag.startswith("-"):
                close = difflib.get_close_matches(flag, known, n=1, cutoff=0.6)
                if close:
                    return f"; did you mean {close[0]}?"
        return ""


def _model_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-m", "--model", metavar="PROVIDER/MODEL",
                   help="e.g. openai/gpt-4.1-mini, or local/qwen3 with --base-url or $OPENAI_BASE_URL, or "
                   "an alias (see: modelwire aliases) (default: "
                   "$MODELWIRE_MODEL, else model = ... in ~/.config/modelwire/config.toml)")  # fmt: skip
    p.add_argument("--key", help="API key (default: the provider's environment variable, else "
                   "the key stored by modelwire keys set PROVIDER)")  # fmt: skip
    p.add_argument("-o", "--option", nargs=2, action="append", metavar=("KEY", "VALUE"),
                   help="a request option (temperature, max_tokens, reasoning, tool_choice, "
                   "parallel_tool_calls, timeout, max_retries, session_id, background, output_mode, cache; "
                   "checked), or extra.NAME for a field of the request body; VALUE is JSON or a "
                   "word; repeatable")  # fmt: skip
    p.add_argument("--base-url", help="API root including the version segment, e.g. "
                   "http://127.0.0.1:8000/v1 (instead of the catalog entry; default: "
                   "$OPENAI_BASE_URL, $ANTHROPIC_BASE_URL, $GOOGLE_GEMINI_BASE_URL, else base_url = ... "
                   "in config.toml); any model id is accepted there")  # fmt: skip
    p.add_argument("--api", choices=APIS, help="wire API for --base-url (default: the provider's; "
                   f"{DEFAULT_API} for local/ and off OpenAI's own host)")  # fmt: skip
    p.add_argument("--system", help="system prompt")
    p.add_argument("--max-tokens", type=int, help="output token limit")
    p.add_argument("--temperature", type=float)
    p.add_argument("--reasoning", choices=("minimal", "low", "medium", "high", "xhigh"),
                   help="reasoning effort (a model outside the catalog needs --reasoning-model)")  # fmt: skip
    p.add_argument("--reasoning-model", action="store_true",
                   help="the model reasons (for a model the catalog does not know; config: "
                   "reasoning_model = true)")  # fmt: skip
    p.add_argument("--timeout", type=float, help="connect and idle timeout in seconds")
    p.add_argument("--max-retries", type=int, metavar="N",
                   help="automatic retries before the first byte (429, 5xx, connect), each "
                   "shown on stderr (default 2; run: 0, a repeated paid call is your choice)")  # fmt: skip


def _output_args(p: argparse.ArgumentParser, json_help: str) -> None:
    p.add_argument("--json", action="store_true", help=json_help)
    if p.prog.split()[-1] in ("chat", "run"):
        p.add_argument("-u", "--usage", action="store_true",
                       help="print token usage and cost on stderr at the end")  # fmt: skip
    p.add_argument("--plain", action="store_true", help="plain text even on a terminal")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (every command and flag)."""
    from .._version import __version__
    from . import functions

    parser = _Parser(
        prog="modelwire",
        description="The boundary between an agent and a language model: stream, replay, "
        "mock and run models from the command line.",
        epilog="Start with: modelwire demo",
    )
    parser.add_argument("--version", action="version", version=f"modelwire {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser(
        "demo", help="an agent reads README.md through a scripted model over loopback HTTP "
        "(no key, no network)",
        description="Starts a MockServer on 127.0.0.1, runs the agent with the read-only tools "
        "rooted at --root on '读取 README.md' and renders it live. The model's replies are "
        "scripted; every byte goes through real HTTP, SSE, the assembler, tool-call validation "
        "and execution.",
    )  # fmt: skip
    p.add_argument("--root", default=".", help="directory the tools may read (default: .)")
    p.add_argument("--api", choices=APIS, default=DEFAULT_API,
                   help=f"wire API the mock server speaks (default {DEFAULT_API})")  # fmt: skip
    p.add_argument("--delay", type=float, default=0.02,
                   help="seconds between streamed chunks (default 0.02; 0 = as fast as possible)")  # fmt: skip
    p.add_argument("--trace", action="store_true",
                   help="show every layer of each model call (see: modelwire trace --help)")  # fmt: skip
    _output_args(p, "one JSON line per agent event (with --trace: per trace record)")

    from . import inputs, schema, templates

    p = sub.add_parser("chat", aliases=["prompt"], help="stream a chat with a real provider",
                       description="Streams one answer to PROMPT (with piped stdin before it), or "
                       "chats in a terminal when no prompt is given: line editing, history, a "
                       "paste is one message, Esc Enter for a new line, /help for commands, "
                       "Ctrl-C stops the answer in flight, Ctrl-D ends. The API key comes from "
                       "--key or the provider's environment variable. Every answer is recorded "
                       "in the log (modelwire logs) unless --no-log.")  # fmt: skip
    _model_args(p)
    p.add_argument("prompt", nargs="*",
                   help="the message; '-' or piped stdin is read too (stdin first); "
                   "interactive in a terminal when omitted")  # fmt: skip
    p.add_argument("-c", "--continue", dest="cont", action="store_true",
                   help="continue the newest conversation in the log (see: modelwire logs)")  # fmt: skip
    p.add_argument("--cid", metavar="ID",
                   help="continue conversation ID from the log, or the one whose id starts "
                   "with ID (modelwire logs shows the ids)")  # fmt: skip
    p.add_argument("--no-log", action="store_true",
                   help="do not record this chat in the log (log = false in config.toml: never)")  # fmt: skip
    p.add_argument("-i", "--interactive", action="store_true",
                   help="chat line by line, even when stdin is not a terminal")  # fmt: skip
    p.add_argument("--no-stream", action="store_true",
                   help="print the answer once, when it is complete")  # fmt: skip
    p.add_argument("--script", metavar="FILE",
                   help="answer from a mock: a loopback MockServer plays FILE (the mock-server "
                   "script format), declaring the tools it calls; no key, no network")  # fmt: skip
    schema.add_arguments(p)
    templates.add_arguments(p)
    _output_args(p, "one JSON line per event, the final message last")
    functions.add_arguments(p)
    inputs.add_arguments(p)

    p = sub.add_parser("run", help="run the agent with read-only file tools on a task",
                       description="The agent with the read-only tools (read, ls, grep) confined "
                       "to --root. File contents are sent to the model's provider, so a "
                       "non-loopback base URL needs --allow-paid-api.")  # fmt: skip
    _model_args(p)
    p.add_argument("--root", help="directory the tools may read (default: ., or the "
                   "resumed run's)")  # fmt: skip
    p.add_argument("--allow-paid-api", action="store_true",
                   help="allow sending file contents to a remote (paid) API")  # fmt: skip
    p.add_argument("--no-log", action="store_true",
                   help="do not record this run's model calls in the log (modelwire logs), nor "
                   "the run itself (no --resume)")  # fmt: skip
    p.add_argument("--resume", nargs="?", const="", metavar="ID",
                   help="continue run ID (or the one whose id starts with ID; alone: the latest) "
                   "where it stopped, with its model and --root unless given again; calls that "
                   "finished are not run again (give --functions, -T and --mcp again)")  # fmt: skip
    p.add_argument(
        "task", nargs="*", help="what the agent should do ('-' or piped stdin is read too)"
    )
    schema.add_arguments(p)
    templates.add_arguments(p)
    _output_args(p, "one JSON line per agent event")
    functions.add_arguments(p)
    inputs.add_arguments(p)

    p = sub.add_parser("replay", help="decode a recorded SSE stream offline",
                       description="Decodes FILE (a response body as the provider sent it) "
                       "through the same pipeline as a live stream and prints the events. "
                       "The wire API is recognised from the body unless --api names it.")  # fmt: skip
    p.add_argument("--api", choices=APIS,
                   help="wire API that produced FILE (default: recognised from its content)")  # fmt: skip
    p.add_argument("file", metavar="FILE.sse")
    _output_args(p, "one JSON line per event, the final message last")

    p = sub.add_parser(
        "trace", help="follow one model call through every layer, linked by ids",
        description="Prints, for one call, each layer in order: the context; the request "
        "(URL, headers with the key shown as [redacted], JSON body); every network read (its "
        "size, and whether it cut a UTF-8 character or a JSON value); every SSE event; the "
        "normalized deltas it produced with provider key -> content index; the model events; "
        "the final message. Errors appear at the layer where they arose. Offline: --api API "
        "FILE.sse; live: -m PROVIDER/MODEL PROMPT.",
        epilog=f"Examples: modelwire trace --api {DEFAULT_API} call.sse --split 40 · "
        "modelwire trace -m openai/gpt-4.1-mini 'say hi' · modelwire demo --trace",
    )  # fmt: skip
    _model_args(p)
    p.add_argument("source", nargs="*", metavar="FILE.sse | PROMPT",
                   help="a recorded response body (offline), or the prompt (with -m)")  # fmt: skip
    p.add_argument("--split", metavar="N,M,...",
                   help="FILE: cut the body into reads at these byte offsets")  # fmt: skip
    p.add_argument("--chunk-size", type=int, metavar="N", help="FILE: reads of N bytes")
    p.add_argument("--loopback", action="store_true",
                   help="FILE: serve it from a loopback HTTP server and trace a real call")  # fmt: skip
    p.add_argument("--cut-after", type=int, metavar="N",
                   help="with --loopback: the server closes the connection after N body bytes")  # fmt: skip
    p.add_argument("--delay", type=float, default=0.02,
                   help="with --loopback: seconds between the server's writes (default 0.02)")  # fmt: skip
    _output_args(p, "one JSON object per trace record")

    p = sub.add_parser("mock-server", help="serve scripted replies on loopback",
                       description="A MockServer speaking every wire API. Without --script it "
                       "echoes the last user message.", epilog=_SCRIPT_HELP,
                       formatter_class=_ScriptHelpFormatter)  # fmt: skip
    p.add_argument("--port", type=int, default=0, help="port (default: a free one)")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    p.add_argument("--script", metavar="FILE", help="JSON list of replies, played in order")
    p.add_argument("--repeat-last", action="store_true", help="repeat the last reply forever")
    _output_args(p, "JSON lines: the address first, then one per request")

    from . import batch, completion, logs, serve

    completion.add_parser(sub)
    batch.add_parser(sub)
    logs.add_parser(sub)
    serve.add_parser(sub)
    from . import aliases, embed, keys, mcp

    embed.add_parser(sub)
    templates.add_parser(sub)
    keys.add_parser(sub)
    aliases.add_parser(sub)
    mcp.add_parser(sub)

    p = sub.add_parser("models", help="list the model catalog")
    p.add_argument("provider", nargs="?", help="only this provider")
    p.add_argument("--embeddings", action="store_true",
                   help="the embedding models (modelwire embed), not the chat models")  # fmt: skip
    _output_args(p, "one JSON line per model")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code."""
    _tolerant_output()
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    from . import aliases, batch, commands, embed, keys, logs, mcp, serve, templates

    handlers = {
        "demo": commands.demo,
        "chat": commands.chat,
        "prompt": commands.chat,
        "completion": lambda args: _completion(args, parser),
        "run": commands.run,
        "replay": commands.replay,
        "trace": commands.trace,
        "mock-server": commands.mock_server,
        "models": lambda a: (embed.list_models if a.embeddings else commands.models)(a),
        "batch": batch.run,
        "embed": embed.run,
        "logs": logs.run,
        "templates": templates.run,
        "keys": keys.run,
        "aliases": aliases.run,
        "mcp": mcp.run,
        "serve": serve.run,
    }
    try:
        if args.command in ("chat", "prompt", "run") and templates.apply(args):
            return 0  # --save NAME: written, no model called
        return handlers[args.command](args)
    except KeyboardInterrupt:
        from .output import end_lines

        end_lines()  # the error starts on a line of its own, after any partial output
        fail("interrupted", "stopped by Ctrl-C")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # stdout closed early (e.g. `| head`): not an error worth a message.
        silence_stdout()
        return 0
    except CLIError as exc:
        fail(exc.kind, exc.message)
        return exc.code
    except MissingAPIKeyError as exc:
        # The library's text ends "or pass api_key=...": fail() says --key instead.
        fail(exc.kind, exc.message)
        return EXIT_CONFIG
    except ConfigurationError as exc:
        fail(exc.kind, exc.message)
        return EXIT_CONFIG
    except ModelwireError as exc:
        fail(exc.kind, exc.message)
        return EXIT_FAILED
    except Exception as exc:
        if os.environ.get("MODELWIRE_DEBUG"):
            raise
        fail("internal", f"{type(exc).__name__}: {exc} (set MODELWIRE_DEBUG=1 for a traceback)")
        return EXIT_INTERNAL


def _completion(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    from .completion import script

    sys.stdout.write(script(parser, args.shell))
    return 0


#: Stands for :func:`script_help` in ``mock-server``'s epilog until help is printed:
#: building it imports modelwire.testing, which no other command needs.
_SCRIPT_HELP = "\0script-help"


class _ScriptHelpFormatter(argparse.RawDescriptionHelpFormatter):
    def add_text(self, text: str | None) -> None:
        super().add_text(script_help() if text == _SCRIPT_HELP else text)


def script_help() -> str:
    """The mock-server script format, from the module that reads it (one source)."""
    import re

    from ..testing import _script

    text = (_script.__doc__ or "").split("\n", 2)[-1]
    text = re.sub(r":\w+:`~?(?:[\w.]+\.)?(\w+)`", r"\1", text)
    return "script format (--script FILE):\n" + text.replace("``", "").replace("::\n", ":\n")


def _tolerant_output() -> None:
    # A terminal or pipe that cannot encode some character (a non-UTF-8 locale)
    # must not turn streamed model text into a UnicodeEncodeError.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            try:
                reconfigure(errors="replace")
            except (ValueError, OSError):
                pass
