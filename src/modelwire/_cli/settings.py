"""Request options from ``-o KEY VALUE`` and ``config.toml``, checked before anything is sent.

``-o`` takes the library's options that a command line can set (:data:`OPTION_NAMES`),
each checked by the library's own rules (:func:`modelwire._client._options.resolve_checked`);
``-o extra.NAME VALUE`` puts ``NAME`` into the request body on purpose (``extra_body``).
An unknown key is a usage error naming the nearest option, so a typo is never sent to
the provider as a body field.

``config.toml`` (:data:`.common.CONFIG_KEYS`) is checked the same way: an unknown key
names the nearest known one, a wrong type says what it must be. Its ``[options]`` and
``[models."provider/model"]`` tables apply to every call of that model, under the
command-line flags.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .exits import CLIError

if TYPE_CHECKING:
    import argparse

    from ..types import Model

__all__ = [
    "CONFIG_KEYS", "DIRECT_OPTIONS", "MODEL_CONFIG_KEYS", "OPTION_NAMES", "apply_config",
    "check_config", "check_option", "model_config", "parse_option",
]  # fmt: skip

#: Options ``-o KEY VALUE`` sets directly; any other key goes into ``extra_body``.
DIRECT_OPTIONS = frozenset({
    "temperature", "max_tokens", "reasoning", "tool_choice", "parallel_tool_calls",
    "timeout", "max_retries", "session_id", "background",
})  # fmt: skip

#: The keys of ``config.toml``: name -> (type, what it must be). Anything else is an
#: error naming the nearest key (:mod:`.settings`); a command reading a new key adds it here.
CONFIG_KEYS: dict[str, tuple[type, str]] = {
    "model": (str, 'a string like "openai/gpt-4.1-mini"'),
    "base_url": (str, 'a URL like "http://127.0.0.1:8000/v1"'),
    "log": (bool, "true or false"),
    "reasoning_model": (bool, "true or false"),
    "system": (str, "a string"),
    "max_tokens": (int, "a positive integer"),
    "temperature": (float, "a number"),
    "options": (dict, "a table of request options (as -o KEY VALUE takes them)"),
    "models": (dict, 'a table of models, e.g. [models."openai/gpt-4.1-mini"]'),
}
#: The keys of a ``[models."provider/model"]`` table (each as at the top level).
MODEL_CONFIG_KEYS = ("system", "max_tokens", "temperature", "reasoning_model", "options")

#: The ``-o`` keys: the library's options a command line sets (the rest have flags).
OPTION_NAMES = DIRECT_OPTIONS | {"output_mode", "cache"}
_EXTRA = "extra."
# Library options with a flag (or no meaning) on the command line: said, not guessed.
_FLAGGED = {
    "api_key": "--key", "base_url": "--base-url", "output": "--schema", "log": "--no-log",
    "extra_body": "-o extra.NAME VALUE", "system": "--system",
}  # fmt: skip


def _unknown(key: str, label: str) -> str:
    from .._client._options import did_you_mean

    if key in _FLAGGED:
        return f"{label}: set it with {_FLAGGED[key]}"
    hint = did_you_mean([key], OPTION_NAMES | set(_FLAGGED))
    return (f"{label}: unknown option{hint}; the options are "
            f"{', '.join(sorted(OPTION_NAMES))}, and extra.NAME for a field of the request "
            "body")  # fmt: skip


def check_option(key: str, value: Any) -> str | None:
    """Why ``value`` is wrong for option ``key`` (``None``: it is right), by the library's
    rules where it has them."""
    from .._client._options import resolve_checked
    from .._wire.request import OUTPUT_MODES
    from ..errors import ConfigurationError

    if key.startswith(_EXTRA):
        from ..types import check_json

        try:
            check_json({key[len(_EXTRA) :]: value}, "extra_body")
        except ConfigurationError as exc:
            return exc.message
        return None
    if key == "output_mode":
        ok = value in OUTPUT_MODES
        return None if ok else f"output_mode must be one of {', '.join(OUTPUT_MODES)}"
    if key == "cache":
        return None if isinstance(value, bool) else "cache must be true or false"
    try:
        # No provider: only the option itself is checked (the key comes later).
        resolve_checked("", {key: value})  # type: ignore[misc]
    except ConfigurationError as exc:
        return exc.message
    return None


def parse_option(key: str, raw: str, where: str = "-o") -> Any:
    """The value of ``-o KEY RAW`` (JSON, else the word itself), checked; a usage
    error for an unknown key or a wrong value."""
    if key.startswith(_EXTRA):
        if not key[len(_EXTRA) :]:
            raise CLIError("usage", f"{where} {key}: name the body field, e.g. -o extra.top_k 5")
    elif key not in OPTION_NAMES:
        raise CLIError("usage", _unknown(key, f"{where} {key}"))
    value: Any
    if key == "session_id":
        value = raw  # an id, even one of digits
    else:
        try:
            value = json.loads(raw)
        except ValueError:
            value = raw  # a bare word: -o reasoning high
    problem = check_option(key, value)
    if problem is not None:
        raise CLIError("usage", f"{where} {key} {raw}: {problem}")
    return value


# --------------------------------------------------------------------------- config.toml


def _nearest(key: str, known: Any, where: str, path: Path) -> CLIError:
    from .._client._options import did_you_mean

    names = sorted(known)
    return CLIError("configuration", f"{path}: unknown key {where}{key!r}"
                    f"{did_you_mean([key], names)}; the keys are {', '.join(names)}")  # fmt: skip


def _check_type(name: str, value: Any, kind: type, what: str, path: Path) -> None:
    ok = isinstance(value, kind) and isinstance(value, bool) == (kind is bool)
    if kind is float:
        ok = isinstance(value, int | float) and not isinstance(value, bool)
    if not ok:
        shown = (
            json.dumps(value)
            if isinstance(value, str | int | float | bool)
            else type(value).__name__
        )
        raise CLIError("configuration", f"{path}: {name} must be {what}, got {shown}")


def _check_options(table: dict[str, Any], where: str, path: Path) -> None:
    for key, value in table.items():
        if key == "extra":
            if not isinstance(value, dict):
                raise CLIError("configuration", f"{path}: {where}.extra must be a table of body "
                               "fields (extra.top_k = 5)")  # fmt: skip
            for name, field in value.items():
                problem = check_option(_EXTRA + name, field)
                if problem is not None:
                    raise CLIError("configuration", f"{path}: {where}.extra.{name}: {problem}")
            continue
        if key not in OPTION_NAMES:
            raise CLIError("configuration", f"{path}: {_unknown(key, f'{where}.{key}')}")
        problem = check_option(key, value)
        if problem is not None:
            raise CLIError("configuration", f"{path}: {where}.{key}: {problem}")


def _check_table(table: dict[str, Any], keys: dict[str, tuple[type, str]], where: str,
                 path: Path) -> None:  # fmt: skip
    for key, value in table.items():
        if key not in keys:
            raise _nearest(key, keys, where, path)
        kind, what = keys[key]
        name = f"{where}{key}"
        _check_type(name, value, kind, what, path)
        if key in ("max_tokens", "temperature"):
            problem = check_option(key, value)
            if problem is not None:
                raise CLIError("configuration", f"{path}: {name}: {problem}")
        elif key == "options":
            _check_options(value, name, path)
        elif key == "models" and not where:
            for spec, entry in value.items():
                if "/" not in spec:
                    raise CLIError("configuration", f'{path}: models."{spec}": name a model as '
                                   '"provider/model", e.g. [models."openai/gpt-4.1-mini"]')  # fmt: skip
                _check_type(f'models."{spec}"', entry, dict, "a table", path)
                per_model = {k: CONFIG_KEYS[k] for k in MODEL_CONFIG_KEYS}
                _check_table(entry, per_model, f'models."{spec}".', path)


def check_config(table: dict[str, Any], path: Path) -> None:
    """Refuse an unknown key or a wrong type anywhere in ``config.toml``."""
    _check_table(table, CONFIG_KEYS, "", path)


def model_config(
    args: argparse.Namespace, model: Model | None, table: dict[str, Any]
) -> dict[str, Any]:
    """The ``[models."provider/model"]`` table of this model in the config ``table``
    (by ``-m`` as typed, or its provider/id), empty when there is none."""
    models: dict[str, Any] = table.get("models") or {}
    names = [f"{model.provider}/{model.id}"] if model is not None else []
    if getattr(args, "model", None):
        names.insert(0, args.model.strip())
    for name in names:
        if name in models:
            entry: dict[str, Any] = models[name]
            return entry
    return {}


def apply_config(args: argparse.Namespace, model: Model | None, table: dict[str, Any]) -> None:
    """Fill what the command line left unset from ``config.toml``: the system prompt
    and the options (``args.config_options``; ``[models."provider/model"]`` over the
    top level). Flags win: :func:`.common.request_options` applies them last."""
    per_model = model_config(args, model, table)
    options: dict[str, Any] = {}
    for source in (table, per_model):
        for key in ("max_tokens", "temperature"):
            if key in source:
                options[key] = source[key]
        for key, value in (source.get("options") or {}).items():
            if key == "extra":
                options.update({_EXTRA + k: v for k, v in value.items()})
            else:
                options[key] = value
    args.config_options = options
    if getattr(args, "system", None) is None:
        system = per_model.get("system", table.get("system"))
        if system is not None:
            args.system = system
