"""``modelwire aliases``: short names for models, in ``config_dir()/aliases.json``.

An alias stands for one ``PROVIDER/MODEL`` wherever a model is named: ``-m`` of
chat, prompt, run and trace, ``$MODELWIRE_MODEL``, ``model = …`` in config.toml, a
template's model and the chat's ``/model``. It is looked up before the catalog, so
an alias may even be named like a model (``openai/gpt-4o`` → ``openai/gpt-4.1``).
Aliases do not chain: the target is always a model.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .common import CLIError, config_dir
from .output import MUTED, Screen, json_line
from .store import ALIASES_FILE, did_you_mean, dump, read_table, warn, write_atomic

if TYPE_CHECKING:
    import argparse

__all__ = ["add_parser", "aliases_path", "run"]


def aliases_path() -> Path:
    """``config_dir()/aliases.json``."""
    return config_dir() / ALIASES_FILE


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "aliases", help="short names for models (-m ALIAS)",
        description="An alias stands for a PROVIDER/MODEL wherever a model is named: -m, "
        "$MODELWIRE_MODEL, model = ... in config.toml, a template, /model in a chat. Kept "
        "in ~/.config/modelwire/aliases.json. Without an action: list.",
        epilog="Examples: modelwire aliases set fast openai/gpt-4.1-mini · "
        "modelwire chat -m fast 'hi' · modelwire aliases list --json",
    )  # fmt: skip
    acts = p.add_subparsers(dest="aliases_action", metavar="ACTION")
    s = acts.add_parser("set", help="make ALIAS stand for PROVIDER/MODEL",
                        description="Makes ALIAS stand for PROVIDER/MODEL (replacing what it "
                        "stood for). A model the catalog does not know is accepted with a "
                        "warning: it may be served at an address of your own.")  # fmt: skip
    s.add_argument("alias", metavar="ALIAS")
    s.add_argument("model", metavar="PROVIDER/MODEL")
    ls = acts.add_parser("list", help="the aliases and their models")
    ls.add_argument("--json", action="store_true", help="one JSON object per alias")
    ls.add_argument("--plain", action="store_true", help="plain text even on a terminal")
    r = acts.add_parser("remove", help="forget an alias")
    r.add_argument("alias", metavar="ALIAS")
    acts.add_parser("path", help="print where aliases.json is")


def run(args: argparse.Namespace) -> int:
    action = args.aliases_action or "list"
    path = aliases_path()
    if action == "path":
        print(path)
        return 0
    table = read_table(path, "the aliases file")
    if action == "list":
        as_json = getattr(args, "json", False)
        if as_json:
            for alias in sorted(table):
                json_line({"alias": alias, "model": table[alias]})
        else:
            screen = Screen(plain=True if getattr(args, "plain", False) else None)
            if table:
                screen.table(["alias", "model"], [[a, table[a]] for a in sorted(table)])
            else:
                screen.line(f"no aliases yet (modelwire aliases set ALIAS PROVIDER/MODEL adds "
                            f"one to {path})", MUTED)  # fmt: skip
        return 0
    alias = _check_alias(args.alias)
    if action == "set":
        target = args.model.strip()
        provider, _, model_id = target.partition("/")
        if not provider or not model_id or any(c.isspace() for c in target):
            raise CLIError("usage", f"an alias stands for PROVIDER/MODEL, e.g. "
                           f"openai/gpt-4.1-mini; got {args.model!r}")  # fmt: skip
        _check_known(target)
        table[alias] = target
        write_atomic(path, dump(table))
        print(f"{alias} → {target} (in {path})")
        return 0
    if alias not in table:  # remove
        raise CLIError("not_found", f"no alias {alias!r} in {path}"
                       f"{did_you_mean(alias, sorted(table))} (see: modelwire aliases list)")  # fmt: skip
    del table[alias]
    write_atomic(path, dump(table))
    print(f"alias {alias} removed from {path}")
    return 0


def _check_alias(alias: str) -> str:
    # Anything a shell passes as one word, as -m takes it; nothing invisible.
    if not alias or not alias.isprintable() or any(c.isspace() for c in alias):
        raise CLIError("usage", f"alias {alias!r} is not allowed: one word, no spaces or "
                       "control characters")  # fmt: skip
    return alias


def _check_known(target: str) -> None:
    """A target the catalog does not know is kept with a warning (as llm does): it may
    be a new model, or one served at an address of one's own (--base-url)."""
    from .. import _catalog as catalog
    from ..errors import ConfigurationError

    if target.startswith("local/"):
        return
    try:
        catalog.resolve_model(target)
    except ConfigurationError:
        names = [f"{m.provider}/{m.id}" for m in catalog.models()]
        warn(f"{target} is not in the model catalog{did_you_mean(target, names)}; the alias "
             "is kept (it works with --base-url or a base URL of its own; see: modelwire "
             "models)")  # fmt: skip
