"""Type checks of a request's JSON values, each failure a 400 naming the field path
(``input[2].content[0].text must be a string``)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import msgspec

from .._frontend import RequestError

__all__ = ["as_list", "as_object", "decode", "fail", "kind", "string"]

_MSGSPEC_PATH = re.compile(r"^(.*) - at `\$(.*)`$", re.S)
_EXPECTED = re.compile(r"^Expected `(.+?)`, got `(.+?)`$")
# msgspec's text for a failed ``Meta`` bound: "Expected `int` >= 1".
_BOUND = re.compile(r"^Expected `(\w+)` ([<>]=? ?\S+)$")
_NAMES = {"str": "a string", "int": "an integer", "float": "a number", "bool": "a boolean",
          "object": "an object", "array": "an array", "null": "null"}  # fmt: skip


def fail(path: str, problem: str) -> RequestError:
    return RequestError(f"{path} {problem}", param=path)


def decode(raw: bytes, decoder: msgspec.json.Decoder[Any], path: str) -> Any:
    """Decode one field, a type error naming its path (``input[2].content``)."""
    try:
        return decoder.decode(raw)
    except msgspec.ValidationError as exc:
        text = str(exc)
        m = _MSGSPEC_PATH.match(text)
        where, what = (path + m.group(2), m.group(1)) if m else (path, text)
        b = _BOUND.match(what)
        if b:
            raise fail(
                where, f"must be {_NAMES.get(b.group(1), b.group(1))} {b.group(2)}"
            ) from None
        e = _EXPECTED.match(what)
        if e:
            want = " or ".join(_NAMES.get(p.strip(), p.strip()) for p in e.group(1).split("|"))
            raise fail(where, f"must be {want} (got {e.group(2)})") from None
        raise fail(where, what) from None
    except msgspec.DecodeError as exc:  # pragma: no cover - the body was valid JSON
        raise fail(path, f"is not valid JSON ({exc})") from None


def string(obj: Mapping[str, Any], key: str, path: str, *, required: bool = True) -> str | None:
    value = obj.get(key)
    if value is None:
        if required:
            raise fail(f"{path}.{key}", "is missing")
        return None
    if not isinstance(value, str):
        raise fail(f"{path}.{key}", f"must be a string (got {kind(value)})")
    return value


def as_object(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise fail(path, f"must be an object (got {kind(value)})")
    return value


def as_list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise fail(path, f"must be an array (got {kind(value)})")
    return value


def kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    return {str: "str", int: "int", float: "float", list: "array", dict: "object"}.get(
        type(value), type(value).__name__
    )
