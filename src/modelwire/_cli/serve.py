"""``modelwire serve``: the gateway (:mod:`modelwire.gateway`) on uvicorn."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

from .common import CLIError

if TYPE_CHECKING:
    import argparse

__all__ = ["add_parser", "run"]


_CONFIG_EXAMPLE = """\
configuration (TOML):
  [models.smart]                     # the name clients ask for
  api = "anthropic-messages"         # or provider = "anthropic", or fallback = ["a", "b"]
  id = "claude-sonnet-4-5"
  base_url = "https://api.anthropic.com/v1"
  api_key_env = "ANTHROPIC_API_KEY"  # read by the gateway, never sent to clients

  [keys.team-a]
  key_sha256 = "..."                 # modelwire serve --new-key prints a key and this line
  models = ["smart"]                 # "*" for every model
  requests_per_minute = 60           # optional; also tokens_per_minute, budget_usd

  [gateway]                          # optional: host, port, redis = "redis://...", log

examples:
  modelwire serve --config gateway.toml
  modelwire serve --config gateway.toml --check
  modelwire serve --new-key
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
    p.add_argument("--new-key", action="store_true",
                   help="print a new random gateway key and the key_sha256 line for it")  # fmt: skip
    p.add_argument("--hash-key", action="store_true",
                   help="read a key on stdin and print its key_sha256")  # fmt: skip


def run(args: argparse.Namespace) -> int:
    from ..gateway._keys import hash_key, new_key

    if args.new_key:
        key = new_key()
        print(f"key: {key}")
        print(f'key_sha256 = "{hash_key(key)}"')
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
        for name, route in config.models.items():
            apis = ", ".join(dict.fromkeys(route.apis))
            what = f"fallback {' → '.join(route.members)}" if route.members else apis
            print(f"model {name}: {what}")
        for name, k in config.keys.items():
            models = "*" if k.models is None else ", ".join(sorted(k.models))
            print(f"key {name}: {models}")
        return 0
    from ..gateway import serve

    serve(config, args.host, args.port)
    return 0
