"""Shared pieces of the CLI commands: exit codes, the one-line error, model lookup."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._catalog import is_loopback
from .exits import EXIT_CONFIG, EXIT_FAILED, EXIT_INTERNAL, EXIT_INTERRUPTED, CLIError
from .settings import (
    apply_config,
    check_config,
    model_config,
    parse_option,
)

if TYPE_CHECKING:
    import argparse

    from ..types import AssistantMessage, Model

__all__ = [
    "EXIT_CONFIG",
    "EXIT_FAILED",
    "EXIT_INTERNAL",
    "EXIT_INTERRUPTED",
    "CLIError",
    "cli_words",
    "config",
    "config_dir",
    "config_value",
    "data_dir",
    "default_model",
    "exit_for",
    "fail",
    "is_loopback",
    "log_path",
    "logging_enabled",
    "note_retries",
    "read_prompt",
    "report_failure",
    "request_options",
    "resolve_model",
    "retry_text",
    "silence_stdout",
]


# The library's advice names its own API; a CLI user is told the flag instead.
_CLI_WORDS: tuple[tuple[str, str], ...] = (
    (r"decode it with api='([\w-]+)' \(mw\.replay\([^)]*\) or a Model with that api\)",
     r"replay it with --api \1 (or chat with --api \1)"),
    (r"\(Model\.reasoning is False\); pass reasoning=None",
     "(not a reasoning model): leave --reasoning out, or add --reasoning-model if it reasons"),
    (r"no API key for provider '([\w.-]+)': set (.+?) or pass api_key=\.\.\.",
     r"no API key for provider '\1': set \2 in the environment, pass --key, or store it "
     r"with: modelwire keys set \1"),
    (r" or pass api_key=\.\.\.", " in the environment, or pass --key"),
    (r"pass base_url=", "pass --base-url "),
)  # fmt: skip


def cli_words(message: str) -> str:
    """``message`` with the library's advice (``api=…``, ``mw.replay``) put in CLI terms."""
    import re

    for pattern, replacement in _CLI_WORDS:
        message = re.sub(pattern, replacement, message)
    return message


def fail(kind: str, message: str) -> None:
    """Print ``modelwire: error [kind]: message`` on one line of stderr."""
    flat = " ".join(cli_words(message).split())
    sys.stderr.write(f"modelwire: error [{kind}]: {flat}\n")
    sys.stderr.flush()


def exit_for(message: AssistantMessage | None) -> int:
    """1 for a failed or missing message, else 0."""
    if message is None or message.stop_reason in ("error", "aborted"):
        return EXIT_FAILED
    return 0


def report_failure(
    message: AssistantMessage | None, model: Model | None = None, then: str = ""
) -> bool:
    """The one error line for a failed message (naming the server a connect failed to;
    ``then``: what the user can do next, ending the line). Whether there was one."""
    if message is not None and message.error is not None:
        from .._redact import redact_url

        text = message.error.message
        if model is not None and message.error.kind == "connect":
            # Which server was tried (e.g. ollama's 127.0.0.1:11434), unless already said.
            from urllib.parse import urlsplit

            where = urlsplit(model.base_url).netloc.rpartition("@")[2]
            if where and where not in text:
                text += f" (tried {redact_url(model.base_url)})"
        fail(message.error.kind, f"{text}; {then}" if then else text)
        return True
    return False


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


def config() -> dict[str, Any]:
    """``config_dir()/config.toml`` as a table (empty when there is none)."""
    import tomllib

    path = config_dir() / "config.toml"
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise CLIError("configuration", f"cannot read {path}: {exc}") from None
    check_config(table, path)
    return table


def config_value(name: str, kind: type, example: str) -> Any:
    """``name`` from the config file, checked to be a ``kind`` (``None`` when unset)."""
    value = config().get(name)
    if value is not None and (
        not isinstance(value, kind) or isinstance(value, bool) != (kind is bool)
    ):
        raise CLIError("configuration", f"{config_dir() / 'config.toml'}: {name} must be {example}")
    return value


def default_model() -> str | None:
    """``$MODELWIRE_MODEL``, else ``model = "…"`` in ``config_dir()/config.toml``."""
    env = os.environ.get("MODELWIRE_MODEL", "").strip()
    if env:
        return env
    model: str | None = config_value("model", str, 'a string like "openai/gpt-4.1-mini"')
    return model


def log_path() -> Path:
    """The CLI's call log: ``data_dir()/logs.db``."""
    return data_dir() / "logs.db"


def logging_enabled(args: argparse.Namespace) -> bool:
    """Every call is logged unless ``--no-log`` or ``log = false`` in the config file."""
    if getattr(args, "no_log", False):
        return False
    value = config_value("log", bool, "true or false")
    return value is not False


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


def _base_url(args: argparse.Namespace, provider: str) -> tuple[str | None, str]:
    """The address to use instead of the catalog's, and where it came from:
    ``--base-url``, the provider's SDK variable (``OPENAI_BASE_URL``…, also read for
    ``local/<id>``), or ``base_url`` in the config file."""
    from .. import _catalog as catalog
    from ..errors import ConfigurationError

    if args.base_url:
        return args.base_url, "--base-url"
    try:
        url, var = catalog.env_base_url(_canonical(provider))
    except ConfigurationError as exc:
        raise CLIError("configuration", str(exc)) from None
    if url:
        return url, var
    configured = config_value("base_url", str, 'a URL like "http://127.0.0.1:8000/v1"')
    if configured:
        _check_url(configured, f"base_url in {config_dir() / 'config.toml'}")
        return configured, "base_url in config.toml"
    return None, ""


def _check_url(url: str, source: str) -> None:
    from urllib.parse import urlsplit

    from .._redact import redact_url

    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise CLIError("configuration", f"{source} must be an http(s) URL, got "
                       f"{redact_url(url)!r}")  # fmt: skip


def resolve_model(args: argparse.Namespace) -> Model:
    """The model for ``-m provider/model`` (+ ``--base-url``/``--api``), by the library's
    one rule (:func:`modelwire._catalog.resolve_model`): with an address of its own
    (``--base-url``, the SDK variables ``OPENAI_BASE_URL``…, or ``base_url`` in
    ``config.toml``) a catalog entry keeps its limits and prices and only changes
    address, and any other id is a model of the provider's default API; ``local/<id>``
    is a model of the compatible API (Chat Completions). The provider's API key is
    checked before anything is sent, so a missing key is reported naming its variable.
    """
    from .. import _catalog as catalog
    from .._client._options import resolve_api_key
    from .store import export_keys, resolve_alias

    spec = resolve_alias((args.model or default_model() or "").strip(), config_dir())
    if not spec:
        raise CLIError(
            "usage",
            "no model: pass -m PROVIDER/MODEL, set MODELWIRE_MODEL, or put "
            f'model = "provider/model" in {config_dir() / "config.toml"}',
        )
    provider, sep, model_id = spec.partition("/")
    base_url, source = _base_url(args, provider) if sep else (args.base_url, "--base-url")
    if base_url and (not sep or not provider or not model_id):
        raise CLIError("usage", f"-m takes PROVIDER/MODEL with {source}, got {spec!r}")
    model = catalog.resolve_model(spec, base_url or None, api=args.api)
    model = _reasoning(args, model)
    export_keys(config_dir())  # --key, then the environment, then keys.json
    resolve_api_key(model.provider, args.key)  # MissingAPIKeyError names the variable
    apply_config(args, model, config())
    return model


def _canonical(provider: str) -> str:
    """A provider's catalog id from any of its aliases (``gemini`` → ``google``)."""
    from .. import _catalog as catalog

    aliases: dict[str, str] = catalog._load().aliases
    return aliases.get(provider.lower(), provider.lower())


def _reasoning(args: argparse.Namespace, model: Model) -> Model:
    """``--reasoning`` for a model the catalog does not say reasons: allowed when the
    user says it does (``--reasoning-model``, or ``reasoning_model = true``)."""
    import msgspec

    wanted = (
        getattr(args, "reasoning", None) or _option(args, "reasoning")
        or (model_config(args, model, config()).get("options") or {}).get("reasoning")
        or (config().get("options") or {}).get("reasoning")
    )  # fmt: skip
    if wanted is None or model.reasoning:
        return model
    says = getattr(args, "reasoning_model", False) or model_config(args, model, config()).get(
        "reasoning_model", config_value("reasoning_model", bool, "true or false"))  # fmt: skip
    if says:
        return msgspec.structs.replace(model, reasoning=True)
    raise CLIError(
        "configuration",
        f"{model.provider}/{model.id} is not known to reason, so --reasoning {wanted} cannot "
        "be sent: add --reasoning-model if it does (or reasoning_model = true in "
        f"{config_dir() / 'config.toml'}), or leave --reasoning out",
    )


def _option(args: argparse.Namespace, key: str) -> Any:
    for k, raw in getattr(args, "option", None) or ():
        if k == key:
            return raw
    return None


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
    # config.toml first, then the flags above, then -o: the command line wins.
    merged: dict[str, Any] = {**(getattr(args, "config_options", None) or {}), **opts}
    for key, raw in args.option or ():
        merged[key] = parse_option(key, raw)
    opts = {k: v for k, v in merged.items() if not k.startswith("extra.")}
    extra = {k.removeprefix("extra."): v for k, v in merged.items() if k.startswith("extra.")}
    if extra:
        opts["extra_body"] = extra
    # One call per process: httpx is imported anyway, and aiohttp (the async default)
    # would add a quarter of a second of imports to every command for no gain.
    opts["transport"] = "httpx"
    return opts


def silence_stdout() -> None:
    """Point fd 1 at /dev/null (stdout went away: a closed pipe)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass
