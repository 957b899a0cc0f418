"""Type checks of a request's JSON values, each failure a 400 naming the field path
(``input[2].content[0].text must be a string``); :func:`decode` is the three
front-ends' shared one (:mod:`.._fields`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._server.fields import decode, fail

__all__ = ["as_list", "as_object", "decode", "fail", "kind", "string"]


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
