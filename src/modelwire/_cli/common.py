"""Shared pieces of the CLI commands: exit codes, the one-line error, model lookup."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._apis import DEFAULT_API
from .._catalog import is_loopback

if TYPE_CHECKING:
    import argparse

    from ..types import Model

__all__ = [
    "EXIT_CONFIG",
    "EXIT_FAILED",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "CLIError",
    "config_dir",
    "data_dir",
    "default_model",
    "fail",
    "is_loopback",
    "note_retries",
    "read_prompt",
    "request_options",
    "resolve_model",
    "retry_text",
    "silence_stdout",
]

#: Options ``-o KEY VALUE`` sets directly; any other key goes into ``extra_body``.
DIRECT_OPTIONS = frozenset({
    "temperature", "max_tokens", "reasoning", "tool_choice", "parallel_tool_calls",
    "timeout", "max_retries", "session_id",
})  # fmt: skip

EXIT_FAILED = 1
EXIT_CONFIG = 2
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130


class CLIError(Exception):
    """A failure the CLI reports in one line: ``kind``, ``message``, exit ``code``."""

    def __init__(self, kind: str, message: str, code: int = EXIT_CONFIG) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.code = code


def fail(kind: str, message: str) -> None:
    """Print ``modelwire: error [kind]: message`` on one line of stderr."""
    flat = " ".join(message.split())
    sys.stderr.write(f"modelwire: error [{kind}]: {flat}\n")
    sys.stderr.flush()


def note_retries(opts: dict[str, Any]) -> dict[str, Any]:
    """``opts`` with a trace observer that prints one stderr line per automatic retry
    (every retry is visible), e.g. ``modelwire: retry [rate_limit]: attempt 1
    got HTTP 429; next attempt in 1.5 s``. An observer already in ``opts`` still gets
    every record."""
    from ..trace import RetryTrace

    inner = opts.get("trace")

    def observe(record: Any) -> None:
        if isinstance(record, RetryTrace):
            sys.stderr.write(f"modelwire: {retry_text(record)}\n")
            sys.stderr.flush()
        if inner is not None:
            inner(record)

    return {**opts, "trace": observe}


def retry_text(record: Any) -> str:
    """One retry record as text: ``retry [kind]: attempt N got …; next attempt in W s``."""
    got = f"HTTP {record.status}" if record.status is not None else "no response"
    return (
        f"retry [{record.kind}]: attempt {record.attempt} got {got}; "
        f"next attempt in {record.wait:.1f} s"
    )


def _xdg(var: str, fallback: str) -> Path:
    # XDG Base Directory spec: a relative value is invalid and ignored.
    value = os.environ.get(var, "")
    return Path(value) if os.path.isabs(value) else Path.home() / fallback


def config_dir() -> Path:
    """``$XDG_CONFIG_HOME/modelwire`` (``~/.config/modelwire``)."""
    return _xdg("XDG_CONFIG_HOME", ".config") / "modelwire"


def data_dir() -> Path:
    """``$XDG_DATA_HOME/modelwire`` (``~/.local/share/modelwire``; on macOS
    ``~/Library/Application Support/modelwire``)."""
    if sys.platform == "darwin" and not os.environ.get("XDG_DATA_HOME"):
        return Path.home() / "Library" / "Application Support" / "modelwire"
    return _xdg("XDG_DATA_HOME", ".local/share") / "modelwire"


def default_model() -> str | None:
    """``$MODELWIRE_MODEL``, else ``model = "…"`` in ``config_dir()/config.toml``."""
    import tomllib

    env = os.environ.get("MODELWIRE_MODEL", "").strip()
    if env:
        return env
    path = config_dir() / "config.toml"
    try:
        config = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise CLIError("configuration", f"cannot read {path}: {exc}") from None
    model = config.get("model")
    if model is not None and not isinstance(model, str):
        raise CLIError(
            "configuration", f'{path}: model must be a string like "openai/gpt-4.1-mini"'
        )
    return model


def read_prompt(parts: list[str], *, stdin_is_prompt: bool) -> str:
    """The prompt from the arguments and stdin, as ``llm`` reads it: ``-`` is stdin;
    piped stdin (``stdin_is_prompt``) comes first and the arguments are appended."""
    words = list(parts)
    if "-" in words:
        text = sys.stdin.read()
        words = [text if w == "-" else w for w in words]
        return " ".join(words).strip()
    prompt = " ".join(words).strip()
    if stdin_is_prompt:
        piped = sys.stdin.read().strip()
        if piped:
            return f"{piped}\n\n{prompt}" if prompt else piped
    return prompt


def resolve_model(args: argparse.Namespace) -> Model:
    """The model for ``-m provider/model`` (+ ``--base-url``/``--api``).

    Without ``--base-url`` the catalog resolves the name (aliases and local
    templates included). With it, a catalog entry keeps its limits and prices
    and only changes address (and API); an unknown name becomes a plain
    ``Model``. The provider's API key is checked before anything is sent, so a
    missing key is reported naming its variable.
    """
    import msgspec

    from .. import _catalog as catalog
    from .._options import resolve_api_key
    from ..errors import ConfigurationError
    from ..types import Model

    spec = (args.model or default_model() or "").strip()
    if not spec:
        raise CLIError(
            "usage",
            "no model: pass -m PROVIDER/MODEL, set MODELWIRE_MODEL, or put "
            f'model = "provider/model" in {config_dir() / "config.toml"}',
        )
    model: Model | None = None
    if args.base_url:
        provider, sep, model_id = spec.partition("/")
        if not sep or not provider or not model_id:
            raise CLIError("usage", f"-m takes PROVIDER/MODEL with --base-url, got {spec!r}")
        try:
            model = catalog.resolve_model(spec)
        except ConfigurationError:
            model = None  # not in the catalog: any server, any id
        if model is not None:
            model = msgspec.structs.replace(model, base_url=args.base_url,
                                            api=args.api or model.api)  # fmt: skip
        else:
            model = Model(id=model_id, api=args.api or DEFAULT_API, provider=provider,
                          base_url=args.base_url)  # fmt: skip
    else:
        model = catalog.resolve_model(spec)
        if args.api and args.api != model.api:
            model = msgspec.structs.replace(model, api=args.api)
    resolve_api_key(model.provider, args.key)  # MissingAPIKeyError names the variable
    return model


def request_options(args: argparse.Namespace) -> dict[str, Any]:
    """``mw.stream`` options from the common flags."""
    opts: dict[str, Any] = {}
    if args.max_tokens is not None:
        opts["max_tokens"] = args.max_tokens
    if args.temperature is not None:
        opts["temperature"] = args.temperature
    if args.reasoning is not None:
        opts["reasoning"] = args.reasoning
    if args.timeout is not None:
        opts["timeout"] = args.timeout
    if getattr(args, "max_retries", None) is not None:
        if args.max_retries < 0:
            raise CLIError("usage", "--max-retries must be 0 or more", EXIT_CONFIG)
        opts["max_retries"] = args.max_retries
    if args.key:
        opts["api_key"] = args.key
    extra: dict[str, Any] = {}
    for key, raw in args.option or ():
        try:
            value: Any = json.loads(raw)
        except ValueError:
            value = raw  # a bare word: -o reasoning high
        if key in DIRECT_OPTIONS:
            opts[key] = value
        else:
            extra[key] = value
    if extra:
        opts["extra_body"] = extra
    return opts


def silence_stdout() -> None:
    """Point fd 1 at /dev/null (stdout went away: a closed pipe)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass
