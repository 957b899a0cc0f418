"""``--schema`` and ``--schema-multi``: structured output from the command line.

SCHEMA is, as in ``llm``, either the concise syntax — fields separated by commas (or
by newlines when there is one), each ``name [type][: description]`` with the type
``str`` (default), ``int``, ``float`` or ``bool`` — or a JSON Schema, inline
(``'{"type": "object", …}'``) or in a file. ``--schema-multi`` asks for
``{"items": [object, …]}``. The library does the rest (``output=``: the request
field, validation, the ``output_invalid`` error); the CLI prints the value.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .common import CLIError

if TYPE_CHECKING:
    import argparse

__all__ = ["add_arguments", "concise_schema", "print_value", "schema_of"]

_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}
_HELP = ("'name, age int, bio: their bio' (fields: name [str|int|float|bool][: description]), "
         "inline JSON Schema, or a JSON Schema file")  # fmt: skip


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``--schema`` / ``--schema-multi`` on ``chat``, ``prompt`` and ``run``."""
    group = p.add_mutually_exclusive_group()
    group.add_argument("--schema", metavar="SCHEMA",
                       help=f"answer with one JSON object of this shape: {_HELP}; stdout is the "
                       "validated value (one line in a pipe or with --json)")  # fmt: skip
    group.add_argument("--schema-multi", metavar="SCHEMA",
                       help='like --schema, for a list: the answer is {"items": [object, ...]}')  # fmt: skip


def concise_schema(text: str) -> dict[str, Any]:
    """The JSON Schema of the concise syntax (``llm``'s): ``ValueError`` naming the field."""
    fields = [f.strip() for f in text.split("\n" if "\n" in text else ",")]
    props: dict[str, Any] = {}
    for field in filter(None, fields):
        head, colon, description = field.partition(":")
        words = head.split()
        if not words:
            raise ValueError(f"field {field!r} has no name")
        if len(words) > 2:
            raise ValueError(f"field {head.strip()!r} should be 'name' or 'name type' (fields are "
                             "separated by commas)")  # fmt: skip
        name, kind = words[0], words[1] if len(words) == 2 else "str"
        if kind not in _TYPES:
            raise ValueError(f"field {name!r} has type {kind!r}; the types are "
                             f"{', '.join(_TYPES)}")  # fmt: skip
        if name in props:
            raise ValueError(f"field {name!r} appears twice")
        prop: dict[str, Any] = {"type": _TYPES[kind]}
        if colon and description.strip():
            prop["description"] = description.strip()
        props[name] = prop
    if not props:
        raise ValueError("it names no field")
    return {"type": "object", "properties": props, "required": list(props)}


def _multi(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {"items": {"type": "array", "items": schema}},
            "required": ["items"]}  # fmt: skip


def _read(flag: str, value: str) -> dict[str, Any]:
    text = value.strip()
    source = "inline JSON Schema"
    path = Path(value).expanduser()
    if not text.startswith(("{", "[")):  # "[": JSON, though not a schema
        looks_like_file = text.endswith(".json") or text.startswith(("/", "./", "../", "~"))
        if path.is_file() or (looks_like_file and "," not in text):
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError) as exc:
                why = exc.strerror if isinstance(exc, OSError) else str(exc)
                raise CLIError("usage", f"{flag}: cannot read the schema file {value!r}: "
                               f"{why}") from None  # fmt: skip
            source = f"the schema file {value!r}"
        else:
            try:
                return concise_schema(text)
            except ValueError as exc:
                raise CLIError("usage", f"{flag} {value!r}: {exc}") from None
    try:
        schema = json.loads(text)
    except ValueError as exc:
        raise CLIError("usage", f"{flag}: {source} is not valid JSON ({exc})") from None
    if not isinstance(schema, dict):
        raise CLIError("usage", f"{flag}: {source} must be a JSON object (a JSON Schema), got "
                       f"{type(schema).__name__}")  # fmt: skip
    return schema


def schema_of(args: argparse.Namespace) -> dict[str, Any] | None:
    """The JSON Schema ``--schema``/``--schema-multi`` asks for (``None`` without one),
    checked by the library's own validator before anything is sent."""
    from .._client._output._schema import output_type
    from ..errors import ConfigurationError

    single, multi = getattr(args, "schema", None), getattr(args, "schema_multi", None)
    value: str | None = single if single is not None else multi
    if value is None:
        return None
    flag = "--schema" if single is not None else "--schema-multi"
    schema = _read(flag, value)
    if multi is not None:
        schema = _multi(schema)
    try:
        output_type(schema)
    except ConfigurationError as exc:
        why = exc.message.removeprefix("output= ").removeprefix("parameters ")
        raise CLIError("usage", f"{flag}: the schema {why}") from None
    return schema


def print_value(value: Any, *, one_line: bool) -> None:
    """The validated value on stdout: indented on a terminal, one line otherwise."""
    if one_line:
        sys.stdout.write(json.dumps(value, ensure_ascii=False) + "\n")
    else:
        sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")
    sys.stdout.flush()
