"""Templates: ``-t NAME``, ``--save NAME`` and ``-p KEY VALUE`` on chat, prompt and run,
and ``modelwire templates list | show | edit | path``.

A template is a JSON file, ``config_dir()/templates/NAME.json`` (JSON, read and written
by the standard library: no YAML dependency for a dozen keys). It holds what the flags
of one call would: ``system``, ``prompt``, ``model``, ``options``, ``defaults`` (of its
parameters), ``schema`` or ``schema_multi``, ``functions`` and ``tool_names``. Its
``prompt`` and ``system`` are :class:`string.Template` text, as in ``llm``: ``$name`` is
the value of ``-p name VALUE`` (else ``defaults``), ``$input`` the prompt given on the
command line or stdin (appended after a blank line when the prompt has no ``$input``),
``$$`` a literal ``$``. A flag given with ``-t`` wins over the template's value.
"""

from __future__ import annotations

import json
import os
import re
import string
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .common import CLIError, config_dir, read_prompt
from .store import did_you_mean, dump, write_atomic

if TYPE_CHECKING:
    import argparse

__all__ = ["add_arguments", "add_parser", "apply", "load", "run", "templates_dir"]

#: The keys of a template file, each with the type it must have.
KEYS: dict[str, type] = {
    "system": str, "prompt": str, "model": str, "options": dict, "defaults": dict,
    "schema": dict, "schema_multi": dict, "functions": list, "tool_names": list,
}  # fmt: skip
# Options that have flags of their own: an explicit flag beats the template's option.
_FLAG_OPTIONS = ("max_tokens", "temperature", "reasoning", "timeout", "max_retries")


# A plain file name on every system: no separator, no "..", no leading dot or dash.
_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,99}")


def check_name(name: str, what: str) -> str:
    """``name`` when it is a safe file name, else a usage error."""
    if not _NAME.fullmatch(name) or ".." in name:
        raise CLIError("usage", f"{what} name {name!r} is not allowed: use letters, digits, "
                       "'_', '-' and '.' (no '/' or '..'), at most 100 characters")  # fmt: skip
    return name


def templates_dir() -> Path:
    """``config_dir()/templates``."""
    return config_dir() / "templates"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``-t``, ``--save`` and ``-p`` on ``chat``, ``prompt`` and ``run``."""
    p.add_argument("-t", "--template", metavar="NAME",
                   help="start from the saved template NAME (flags given here win; see: "
                   "modelwire templates)")  # fmt: skip
    p.add_argument("--save", metavar="NAME",
                   help="save these flags and prompt as the template NAME, and exit without "
                   "calling a model ($input in the prompt: where the input goes)")  # fmt: skip
    p.add_argument("-p", "--param", dest="params", nargs=2, action="append",
                   metavar=("KEY", "VALUE"),
                   help="the value of $KEY in the template; repeatable (with --save: its "
                   "default)")  # fmt: skip


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "templates", help="saved prompts, system prompts, models and options (-t NAME)",
        description="A template holds the flags of a call: system prompt, prompt ($input is "
        "the text given to the call, $name the value of -p name VALUE), model, options, "
        "schema, functions and tools. Save one with chat --save NAME, use it with chat -t "
        "NAME. Kept as ~/.config/modelwire/templates/NAME.json. Without an action: list.",
        epilog="Examples: modelwire chat 'Summarise: $input' --save summarize · "
        "cat notes.txt | modelwire chat -t summarize · modelwire templates edit summarize",
    )  # fmt: skip
    acts = p.add_subparsers(dest="templates_action", metavar="ACTION")
    acts.add_parser("list", help="the templates, with their model and prompt")
    s = acts.add_parser("show", help="print a template's file")
    s.add_argument("name", metavar="NAME")
    e = acts.add_parser("edit", help="open a template in $VISUAL or $EDITOR (created if new)")
    e.add_argument("name", metavar="NAME")
    acts.add_parser("path", help="print the folder the templates are in")


def run(args: argparse.Namespace) -> int:
    action = args.templates_action or "list"
    folder = templates_dir()
    if action == "path":
        print(folder)
        return 0
    if action == "list":
        return _list(folder)
    name = check_name(args.name, "template")
    path = folder / f"{name}.json"
    if action == "show":
        load(name)  # checked: an unknown name says which exist
        sys.stdout.write(path.read_text(encoding="utf-8"))
        return 0
    return _edit(name, path)


# --------------------------------------------------------------------------- files


def _names() -> list[str]:
    folder = templates_dir()
    return sorted(p.stem for p in folder.glob("*.json")) if folder.is_dir() else []


def load(name: str) -> dict[str, Any]:
    """The template ``name``, checked key by key (an error names the file and key)."""
    check_name(name, "template")
    path = templates_dir() / f"{name}.json"
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        names = _names()
        known = f"the templates are {', '.join(names)}" if names else "there are none yet"
        raise CLIError("not_found", f"no template {name!r}{did_you_mean(name, names)}; "
                       f"{known} (save one with --save NAME; see: modelwire templates "
                       "list)") from None  # fmt: skip
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise CLIError("configuration", f"cannot read template {path}: {exc}") from None
    return check(data, path)


def check(data: Any, path: Path) -> dict[str, Any]:
    """``data`` when it is a template: known keys with values of their type."""
    if not isinstance(data, dict):
        raise CLIError("configuration", f"template {path} must be a JSON object")
    for key, value in data.items():
        if key not in KEYS:
            raise CLIError("configuration", f"template {path}: unknown key {key!r}"
                           f"{did_you_mean(key, list(KEYS))} (the keys: {', '.join(KEYS)})")  # fmt: skip
        if not _typed(key, value):
            what = {"options": "an object", "defaults": "an object of strings",
                    "schema": "a JSON Schema (an object) or the concise form (a string)",
                    "functions": "a list of strings", "tool_names": "a list of strings",
                    }.get(key, "a string")  # fmt: skip
            raise CLIError("configuration", f"template {path}: {key!r} must be {what}")
    return data


def _typed(key: str, value: Any) -> bool:
    if key in ("schema", "schema_multi"):
        return isinstance(value, dict | str)
    if not isinstance(value, KEYS[key]):
        return False
    if isinstance(value, list):
        return all(isinstance(x, str) for x in value)
    if isinstance(value, dict) and key == "defaults":
        return all(isinstance(v, str | int | float) for v in value.values())
    return True


def _list(folder: Path) -> int:
    from .output import MUTED, Screen, one_line

    screen = Screen()
    rows = []
    for name in _names():
        try:
            t = load(name)
        except CLIError:  # one broken file does not hide the others
            rows.append([name, "", f"(cannot be read: modelwire templates show {name})"])
            continue
        text = t.get("prompt") or (f"system: {t['system']}" if t.get("system") else "")
        rows.append([name, t.get("model", ""), one_line(text, 60)])
    if rows:
        screen.table(["template", "model", "prompt"], rows)
    else:
        screen.line(f"no templates yet (chat --save NAME saves one in {folder})", MUTED)
    return 0


def _edit(name: str, path: Path) -> int:
    import shlex
    import shutil
    import subprocess

    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or shutil.which("vi")
    if not editor:
        raise CLIError("configuration", "no editor: set $VISUAL or $EDITOR (e.g. "
                       "EDITOR=nano)")  # fmt: skip
    if not path.exists():
        write_atomic(path, dump({"prompt": "$input", "system": ""}))
    try:
        done = subprocess.run([*shlex.split(editor), str(path)], check=False)
    except OSError as exc:
        raise CLIError("configuration", f"cannot run the editor {editor!r}: "
                       f"{exc.strerror}") from None  # fmt: skip
    if done.returncode != 0:
        raise CLIError("editor", f"the editor {editor!r} exited with {done.returncode}; "
                       f"{path} is as it left it")  # fmt: skip
    load(name)  # a mistake is reported now, naming the key, not at the next -t
    print(path)
    return 0


# --------------------------------------------------------------------------- -t / --save


def apply(args: argparse.Namespace) -> bool:
    """Fill ``args`` from ``-t NAME``; with ``--save NAME`` write the template instead and
    return True (the command is done: no model is called)."""
    name, save = getattr(args, "template", None), getattr(args, "save", None)
    if name is None and save is None:
        if getattr(args, "params", None):
            raise CLIError("usage", "-p KEY VALUE fills a template's $KEY: use it with "
                           "-t NAME (or with --save NAME, as a default)")  # fmt: skip
        return False
    template = load(name) if name is not None else {}
    words = "task" if args.command == "run" else "prompt"
    if save is not None:
        _save(args, check_name(save, "template"), template, words)
        return True
    assert name is not None
    _fill(args, name, template, words)
    return False


def _save(args: argparse.Namespace, name: str, base: dict[str, Any], words: str) -> None:
    data = dict(base)  # -t OLD --save NEW: the old one, changed by the flags given
    given = getattr(args, words, None) or []
    if given:
        data["prompt"] = read_prompt(given, stdin_is_prompt=False)
    if args.system is not None:
        data["system"] = args.system
    if args.model is not None:
        data["model"] = args.model
    options = dict(data.get("options", {}))
    for key in _FLAG_OPTIONS:
        if getattr(args, key, None) is not None:
            options[key] = getattr(args, key)
    for key, raw in getattr(args, "option", None) or ():
        options[key] = _parsed(raw)
    if options:
        data["options"] = options
    if getattr(args, "params", None):
        data["defaults"] = {**data.get("defaults", {}), **dict(args.params)}
    for key in ("schema", "schema_multi"):
        if getattr(args, key, None) is not None:
            data.pop("schema", None)
            data.pop("schema_multi", None)
            data[key] = _schema(key, getattr(args, key))
    if getattr(args, "functions", None):
        # A file is saved by its absolute path, so the template works from any folder.
        data["functions"] = [str(Path(f).resolve()) if Path(f).is_file() else f
                             for f in args.functions]  # fmt: skip
    if getattr(args, "tool_names", None):
        data["tool_names"] = list(args.tool_names)
    if not data:
        raise CLIError("usage", f"nothing to save in template {name!r}: give a prompt, "
                       "--system, -m, -o … with --save")  # fmt: skip
    path = templates_dir() / f"{name}.json"
    _check_placeholders(name, data)
    check(data, path)
    write_atomic(path, dump(data))
    print(path)


def _schema(key: str, value: str) -> dict[str, Any]:
    """A --schema value (concise, inline or a file) as the JSON Schema it stands for, so
    the template does not depend on the folder it was saved from."""
    import argparse

    from .schema import schema_of

    flag = "--" + key.replace("_", "-")
    try:
        schema = schema_of(argparse.Namespace(schema=value, schema_multi=None))
    except CLIError as exc:
        raise CLIError(exc.kind, exc.message.replace("--schema", flag, 1)) from None
    assert schema is not None
    return schema


def _fill(args: argparse.Namespace, name: str, t: dict[str, Any], words: str) -> None:
    params = dict(getattr(args, "params", None) or ())
    _check_params(name, t, params)
    values = {k: str(v) for k, v in t.get("defaults", {}).items()} | params
    if "prompt" in t or "input" in _identifiers({"system": t.get("system", "")}):
        if getattr(args, "interactive", False):
            raise CLIError("usage", f"template {name!r} takes its input ($input) from the "
                           "command line or stdin, so it makes one call: leave -i out")  # fmt: skip
        given = read_prompt(getattr(args, words, None) or [], stdin_is_prompt=not _isatty())
        values["input"] = given
        text = given
        if "prompt" in t:
            text = _render(name, "prompt", t["prompt"], values)
            if given and "input" not in string.Template(t["prompt"]).get_identifiers():
                text = f"{text}\n\n{given}" if text else given
        setattr(args, words, [text] if text else [])
    if args.system is None and "system" in t:
        args.system = _render(name, "system", t["system"], values) or None
    if args.model is None and "model" in t:
        args.model = t["model"]
    explicit = {k for k, _ in getattr(args, "option", None) or ()}
    explicit |= {k for k in _FLAG_OPTIONS if getattr(args, k, None) is not None}
    inherited = [[k, v if isinstance(v, str) else json.dumps(v)]
                 for k, v in t.get("options", {}).items() if k not in explicit]  # fmt: skip
    if inherited:
        args.option = inherited + list(getattr(args, "option", None) or ())
    schemas = ("schema", "schema_multi")
    if not any(getattr(args, k, None) is not None for k in schemas):
        for key in schemas:
            if key in t:
                _takes(args, name, key)
                value = t[key]
                setattr(args, key, value if isinstance(value, str) else json.dumps(value))
    for key in ("functions", "tool_names"):
        if t.get(key):
            _takes(args, name, key)
            mine = list(getattr(args, key, None) or ())
            setattr(args, key, [*t[key], *(x for x in mine if x not in t[key])])


def _takes(args: argparse.Namespace, name: str, key: str) -> None:
    if not hasattr(args, key):
        raise CLIError("usage", f"template {name!r} sets {key}, which {args.command} does not "
                       "take")  # fmt: skip


def _isatty() -> bool:
    from .output import _isatty as isatty

    return isatty(sys.stdin)


def _check_params(name: str, t: dict[str, Any], params: dict[str, str]) -> None:
    used = _identifiers(t) - {"input"}
    for key in params:
        if key == "input":
            raise CLIError("usage", "$input is the prompt given on the command line or stdin, "
                           "not a -p parameter")  # fmt: skip
        if key not in used:
            listed = ", ".join(sorted(used)) or "none"
            raise CLIError("usage", f"template {name!r} has no parameter ${key}"
                           f"{did_you_mean(key, sorted(used))} (its parameters: {listed})")  # fmt: skip


def _identifiers(t: dict[str, Any]) -> set[str]:
    return {i for k in ("prompt", "system") if k in t
            for i in string.Template(t[k]).get_identifiers()}  # fmt: skip


def _render(name: str, key: str, text: str, values: dict[str, str]) -> str:
    try:
        return string.Template(text).substitute(values)
    except KeyError as exc:
        param = exc.args[0]
        raise CLIError("usage", f"template {name!r} needs a value for ${param}: pass -p "
                       f"{param} VALUE (or add it to the template's defaults)") from None  # fmt: skip
    except ValueError as exc:
        raise CLIError("usage", f"template {name!r}: a '$' in its {key} starts no $name "
                       f"({exc}); write $$ for a literal $") from None  # fmt: skip


def _check_placeholders(name: str, data: dict[str, Any]) -> None:
    """A --save with a stray ``$`` is refused now, not at the first -t."""
    for key in ("prompt", "system"):
        if key in data and not string.Template(data[key]).is_valid():
            raise CLIError("usage", f"the {key} of template {name!r} has a '$' that starts no "
                           "$name: write $$ for a literal $ (and quote the prompt in single "
                           "quotes, so the shell keeps $input)")  # fmt: skip


def _parsed(raw: str) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw  # a bare word, as -o takes it
