"""``modelwire keys``: API keys stored in ``config_dir()/keys.json`` (mode 0600).

A stored key is the last resort: ``--key`` wins, then the provider's environment
variable (``OPENAI_API_KEY``…), then the key stored under the provider's name
(``openai``, ``anthropic``, ``google`` or its alias ``gemini``…). No command prints
a key except ``keys get``, on stdout, where it was asked for.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .common import CLIError, config_dir
from .store import KEYS_FILE, checked_key, did_you_mean, dump, load_keys, warn, write_atomic

if TYPE_CHECKING:
    import argparse

__all__ = ["add_parser", "keys_path", "run"]


def keys_path() -> Path:
    """``config_dir()/keys.json``."""
    return config_dir() / KEYS_FILE


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "keys", help="store API keys (keys.json, readable only by you)",
        description="API keys kept in ~/.config/modelwire/keys.json (mode 0600), under the "
        "provider's name: openai, anthropic, google (or gemini), mistral… A call uses --key "
        "first, then the provider's environment variable (OPENAI_API_KEY…), then the stored "
        "key. Without an action: list.",
        epilog="Examples: modelwire keys set openai (asks for the key, hidden) · "
        "printf %s \"$KEY\" | modelwire keys set anthropic · modelwire keys list",
    )  # fmt: skip
    acts = p.add_subparsers(dest="keys_action", metavar="ACTION")
    s = acts.add_parser("set", help="store a key (asked for hidden, or read from stdin)",
                        description="Stores the key for NAME. On a terminal it is asked for "
                        "without echo; piped stdin is read instead. It is never printed.")  # fmt: skip
    s.add_argument("name", metavar="NAME", help="the provider, e.g. openai")
    s.add_argument("--value", help="the key itself (it stays in your shell history: prefer "
                   "the prompt or stdin)")  # fmt: skip
    g = acts.add_parser("get", help="print a stored key on stdout",
                        description="Prints the key stored for NAME, e.g. "
                        'export OPENAI_API_KEY="$(modelwire keys get openai)".')  # fmt: skip
    g.add_argument("name", metavar="NAME")
    acts.add_parser("list", help="the names of the stored keys (never the keys)")
    acts.add_parser("path", help="print where keys.json is")
    r = acts.add_parser("remove", help="forget a stored key")
    r.add_argument("name", metavar="NAME")


def run(args: argparse.Namespace) -> int:
    action = args.keys_action or "list"
    path = keys_path()
    if action == "path":
        print(path)
        return 0
    keys = load_keys(path)
    if action == "list":
        for name in sorted(keys):
            print(name)
        if not keys:
            sys.stderr.write(f"no keys stored (modelwire keys set NAME stores one in {path})\n")
        return 0
    name = args.name
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}", name):
        raise CLIError("usage", f"key name {name!r} is not allowed: a provider's name, e.g. "
                       "openai (letters, digits, '_', '-', '.')")  # fmt: skip
    if action == "set":
        value = _read_value(args.value, name)
        _known_provider(name)
        keys[name] = value
        write_atomic(path, dump(keys), 0o600)
        print(f"key {name} stored in {path}")
        return 0
    if name not in keys:
        raise CLIError("not_found", f"no key stored for {name!r} in {path}"
                       f"{did_you_mean(name, sorted(keys))} (see: modelwire keys list)")  # fmt: skip
    if action == "get":
        print(keys[name])
        return 0
    del keys[name]  # remove
    write_atomic(path, dump(keys), 0o600)
    print(f"key {name} removed from {path}")
    return 0


def _read_value(given: str | None, name: str) -> str:
    if given is not None:
        value = given
    elif sys.stdin.isatty():
        import getpass

        try:
            value = getpass.getpass(f"Key for {name} (not shown): ")
        except EOFError:
            value = ""
    else:
        value = sys.stdin.read()
        # One trailing newline (echo, a file) is not part of the key.
        value = value.removesuffix("\n").removesuffix("\r")
    if not value.strip():
        raise CLIError("usage", f"no key given for {name}: type it at the prompt, pipe it on "
                       "stdin, or pass --value")  # fmt: skip
    return checked_key(value, "the key given")


def _known_provider(name: str) -> None:
    """A name no provider is looked up by is stored, with a warning: it would never be
    used for a call (perhaps a typo)."""
    from .. import _catalog as catalog
    from .._catalog._records import ENV_KEYS

    aliases: dict[str, str] = catalog._load().aliases
    known = sorted(set(ENV_KEYS) | {a for a, p in aliases.items() if p in ENV_KEYS})
    if name not in known:
        warn(f"no provider is named {name!r}, so modelwire will not use this key for a call"
             f"{did_you_mean(name, known)} (providers: modelwire models)")  # fmt: skip
