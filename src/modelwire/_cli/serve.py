"""``modelwire serve``: the gateway (:mod:`modelwire.gateway`) on uvicorn."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from .common import CLIError

if TYPE_CHECKING:
    import argparse

    from ..gateway import GatewayConfig

__all__ = ["add_parser", "run", "summary"]


_CONFIG_EXAMPLE = """\
configuration (TOML):
  [models.smart]                     # the name clients ask for
  api = "anthropic-messages"         # or provider = "anthropic", or fallback = ["a", "b"]
  id = "claude-sonnet-4-5"
  base_url = "https://api.anthropic.com/v1"
  api_key_env = "ANTHROPIC_API_KEY"  # read by the gateway, never sent to clients

  [keys.team-a]
  key_sha256 = "..."                 # modelwire serve --new-key team-a prints this table
  models = ["smart"]                 # "*" for every model
  requests_per_minute = 60           # optional; also tokens_per_minute, budget_usd

  [gateway]                          # optional: host, port, redis = "redis://...", log,
                                     # timeout = { connect = 10, idle = 300, total = 600 }

examples:
  modelwire serve --config gateway.toml
  modelwire serve --config gateway.toml --check
  modelwire serve --new-key team-a >> gateway.toml
  printf %s "$KEY" | modelwire serve --hash-key
"""


def add_parser(sub: Any) -> None:
    import argparse

    p = sub.add_parser(
        "serve", help="an OpenAI- and Anthropic-compatible gateway in front of every provider",
        description="Serves OpenAI Chat Completions (/v1/chat/completions), OpenAI Responses "
        "(/v1/responses), Anthropic Messages (/v1/messages) and GET /v1/models, routing each "
        "request by model name to the backend FILE configures ([models.NAME]), for clients "
        "holding a gateway key ([keys.NAME], stored as its sha256). Provider keys stay in "
        "the gateway's environment.",
        epilog=_CONFIG_EXAMPLE,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    p.add_argument("--config", metavar="FILE", help="the gateway's TOML configuration")
    p.add_argument("--host", help="address to bind (default: [gateway] host, or 127.0.0.1)")
    p.add_argument("--port", type=int, help="port (default: [gateway] port, or 8000)")
    p.add_argument("--check", action="store_true",
                   help="check FILE and list its models and keys, without serving")  # fmt: skip
    p.add_argument("--new-key", nargs="?", const="", metavar="NAME",
                   help="print a new random gateway key (on stderr) and, on stdout, the "
                   "[keys.NAME] table holding its sha256, to add to the config (without "
                   "NAME: the key and its key_sha256 line)")  # fmt: skip
    p.add_argument("--hash-key", action="store_true",
                   help="read a key on stdin and print its key_sha256")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from ..gateway._keys import hash_key, new_key

    if args.new_key is not None:
        key = new_key()
        if not args.new_key:
            print(f"key: {key}")
            print(f'key_sha256 = "{hash_key(key)}"')
            return 0
        # The key on stderr, the table on stdout: `--new-key NAME >> gateway.toml` adds
        # the table, and the key is shown once, never written to the config.
        print(f"the key of {args.new_key!r} (give it to the client; the config keeps only "
              f"its sha256):\n{key}", file=sys.stderr, flush=True)  # fmt: skip
        print(f"\n[keys.{_toml_key(args.new_key)}]")
        print(f'key_sha256 = "{hash_key(key)}"')
        print('models = ["*"]                     # or the names of the models it may use')
        return 0
    if args.hash_key:
        # One line on stdin, its newline dropped (echo and files end with one).
        key = sys.stdin.readline().rstrip("\r\n")
        if not key:
            raise CLIError("usage", "serve --hash-key reads the key on stdin: "
                           "printf %s \"$KEY\" | modelwire serve --hash-key")  # fmt: skip
        print(hash_key(key))
        return 0
    if not args.config:
        raise CLIError("usage", "serve needs --config FILE (the gateway's TOML configuration; "
                       "modelwire serve --help shows its form)")  # fmt: skip
    from ..gateway import load_config

    config = load_config(args.config)
    if args.check:
        print("\n".join(summary(config)))
        return 0
    from ..gateway import serve

    settings = config.gateway
    host = args.host or settings.host
    port = settings.port if args.port is None else args.port
    where = f"[{host}]" if ":" in host else host
    lines = [f"modelwire gateway: http://{where}:{port} (/v1/chat/completions, /v1/responses, "
             "/v1/messages, /v1/models)", *summary(config)]  # fmt: skip
    print("\n".join(lines), flush=True)
    serve(config, args.host, args.port)
    return 0


def summary(config: GatewayConfig) -> list[str]:
    """What ``config`` serves, for the operator: each model and its backend (the key's
    variable, never its value), each gateway key's name and limits, the store, the
    request log, traces."""
    from .._catalog._records import ENV_KEYS
    from .._redact import display_url, redact_url
    from ..types import Model

    lines = []
    default = config.gateway.timeout
    for name, route in config.models.items():
        target = route.target
        if route.members or not isinstance(target, Model):
            what = f"fallback {' → '.join(route.members)}"
        else:
            what = f"{target.api} {target.id}"
            if target.base_url:
                what += f" at {display_url(target.base_url)}"
            names = (route.api_key_env,) if route.api_key_env else ENV_KEYS.get(target.provider)
            if names:
                unset = "" if any(os.environ.get(n) for n in names) else " (not set)"
                what += f", key ${' or $'.join(names)}{unset}"
        if route.timeout is not None and route.timeout != default:
            what += f", timeout {_timeout(route.timeout)}"
        lines.append(f"model {name}: {what}")
    for name, k in config.keys.items():
        models = "*" if k.models is None else ", ".join(sorted(k.models))
        limits = [f"{v:g} {unit}" for v, unit in ((k.requests_per_minute, "requests/min"),
                  (k.tokens_per_minute, "tokens/min"), (k.budget_usd, "USD budget"))
                  if v is not None]  # fmt: skip
        lines.append(f"key {name}: {models}" + (f" ({', '.join(limits)})" if limits else ""))
    g = config.gateway
    store = f"Redis at {redact_url(g.redis)}" if g.redis else "in memory (this process)"
    lines.append(f"limits and budgets: {store}")
    lines.append(f"backend timeout: {_timeout(default)}")
    lines.append(f"request log: {g.log or 'none'}; traces: {'OpenTelemetry' if g.otel else 'off'}")
    return lines


def _timeout(t: Any) -> str:
    parts = [f"{k} {v:g} s" for k, v in (("connect", t.connect), ("idle", t.idle),
             ("total", t.total)) if v is not None]  # fmt: skip
    return ", ".join(parts) or "none"


def _toml_key(name: str) -> str:
    """``name`` as a TOML key: bare when it can be (letters, digits, ``_``, ``-``),
    else a basic string (https://toml.io/en/v1.0.0#keys)."""
    import json
    import re

    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else json.dumps(name)
