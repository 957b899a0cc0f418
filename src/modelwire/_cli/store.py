"""The small files the CLI keeps under ``config_dir()``: keys.json, aliases.json and
templates/NAME.json. Each is read and checked whole (a bad file is one error naming
it) and written atomically: a crash or a full disk leaves the old file, never half
of the new one.

A leaf: :mod:`.common` resolves aliases and stored keys through it, so it imports
nothing of the CLI (its folder is passed in) and its errors are the library's
``ConfigurationError`` (one line, exit 2, as ``CLIError("configuration")``)."""

from __future__ import annotations

import json
import os
import stat
import sys
from pathlib import Path
from typing import Any

from ..errors import ConfigurationError

__all__ = [
    "ALIASES_FILE",
    "KEYS_FILE",
    "checked_key",
    "did_you_mean",
    "dump",
    "export_keys",
    "load_keys",
    "read_table",
    "resolve_alias",
    "warn",
    "write_atomic",
]

ALIASES_FILE = "aliases.json"
KEYS_FILE = "keys.json"


def did_you_mean(word: str, options: list[str]) -> str:
    """``"; did you mean X?"`` for the nearest of ``options``, else ``""``."""
    import difflib

    close = difflib.get_close_matches(word, options, n=1, cutoff=0.6)
    return f"; did you mean {close[0]}?" if close else ""


def warn(message: str) -> None:
    """One ``modelwire: warning: …`` line on stderr (the command goes on)."""
    sys.stderr.write(f"modelwire: warning: {' '.join(message.split())}\n")
    sys.stderr.flush()


def read_table(path: Path, what: str) -> dict[str, str]:
    """``path`` as a JSON object of strings (empty when the file does not exist)."""
    try:
        data: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        # The reason only: a JSON error quotes the text near it, which may be a key.
        reason = type(exc).__name__ if isinstance(exc, ValueError) else str(exc)
        raise ConfigurationError(f"cannot read {what} {path}: {reason} (fix or remove the "
                                 "file)") from None  # fmt: skip
    if not isinstance(data, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in data.items()
    ):
        raise ConfigurationError(f"{what} {path} must be a JSON object of names to strings "
                                 "(fix or remove the file)")  # fmt: skip
    return data


def write_atomic(path: Path, text: str, mode: int = 0o644) -> None:
    """Replace ``path`` with ``text`` in one step, the new file created with ``mode``."""
    import tempfile

    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        # mkstemp creates it 0600, so a secret is never readable by others, even briefly.
        os.chmod(tmp, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise ConfigurationError(f"cannot write {path}: {exc.strerror or exc}") from None


def dump(table: dict[str, Any]) -> str:
    """The text of a JSON file the user may also edit: sorted, indented, UTF-8."""
    return json.dumps(table, indent=2, ensure_ascii=False, sort_keys=True) + "\n"


def resolve_alias(spec: str, folder: Path) -> str:
    """The model ``spec`` stands for by ``folder/aliases.json``, else ``spec`` itself."""
    path = folder / ALIASES_FILE
    if not spec or not path.exists():
        return spec
    return read_table(path, "the aliases file").get(spec, spec)


def export_keys(folder: Path) -> None:
    """Each key stored in ``folder/keys.json`` put in its provider's variable where that
    is unset: the library then finds it exactly as it finds the environment's, for every
    provider a command reaches (a chat's ``/model``, a batch's lines) and only there,
    after the environment and after an explicit key (``--key``)."""
    from .. import _catalog as catalog
    from .._catalog._records import ENV_KEYS

    path = folder / KEYS_FILE
    if not path.exists():
        return
    aliases: dict[str, str] = catalog._load().aliases
    # A provider's own name before its aliases (google before gemini).
    for name, value in sorted(load_keys(path).items(), key=lambda kv: (kv[0] in aliases, kv[0])):
        variables = ENV_KEYS.get(aliases.get(name, name))
        if not variables or any(os.environ.get(v) for v in variables):
            continue
        try:
            checked_key(value, f"the key stored for {name} in {path}")
        except ConfigurationError as exc:
            warn(f"{exc.message}; it is not used")  # another provider's call goes on
            continue
        os.environ[variables[0]] = value


def load_keys(path: Path) -> dict[str, str]:
    """The keys file; one readable by others is set back to 0600, with a warning."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigurationError(f"cannot read {path}: {exc.strerror}") from None
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        # Narrowed now, and said, since the keys may have been read already.
        try:
            os.chmod(path, 0o600)
            warn(f"{path} was accessible to other users (mode {stat.S_IMODE(mode):o}); "
                 "its mode is now 600 — replace the keys in it if others could read it")  # fmt: skip
        except OSError as exc:
            warn(f"{path} is accessible to other users (mode {stat.S_IMODE(mode):o}) and "
                 f"cannot be changed ({exc.strerror}): chmod 600 it")  # fmt: skip
    return read_table(path, "the keys file")


def checked_key(value: str, source: str) -> str:
    """``value`` when it can be a header value (the error names ``source``, never it)."""
    from .._wire.request import check_credential

    check_credential(value, source)
    return value
