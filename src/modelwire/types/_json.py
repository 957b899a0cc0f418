"""JSON in and out of every protocol type (RFC 8259)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, TypeVar

import msgspec

from ..errors import ConfigurationError

_encoder = msgspec.json.Encoder()
T = TypeVar("T")


def to_json(value: Any) -> bytes:
    """Serialize any protocol type (or a container of them) to JSON bytes.

    Messages, contexts, events, models, usage and the rest of :mod:`modelwire.types`
    encode to the compact JSON that :func:`from_json` reads back, e.g. to store a
    conversation and continue it later.

    Args:
        value: A protocol value, or a list, tuple or dict of them (plain JSON
            values mixed in are fine).

    Returns:
        UTF-8 JSON bytes.

    Raises:
        ConfigurationError: Something in ``value`` cannot be serialized.

    Example:
        ```python
        import modelwire as mw

        ctx = mw.Context(system_prompt="Be brief.", messages=[mw.UserMessage(content="Hi")])
        data = mw.to_json(ctx)
        assert mw.from_json(data, mw.Context) == ctx
        ```
    """
    try:
        return _encoder.encode(value)
    except (TypeError, UnicodeEncodeError, msgspec.EncodeError) as exc:
        raise ConfigurationError(f"cannot serialize {type(value).__name__}: {exc}") from exc


def check_json(value: Any, path: str) -> None:
    """Raise ``ConfigurationError`` naming the path of the first value in
    ``value`` that JSON (RFC 8259) cannot carry: NaN or an infinity (§6), a str
    with a lone surrogate (§8.2), a key that is neither a str nor a number, a
    type msgspec cannot encode. What msgspec encodes faithfully passes."""
    t = type(value)
    if t is str:
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise ConfigurationError(
                    f"{path or 'value'} contains a lone surrogate, which JSON text cannot "
                    "carry: fix the string (decode bytes with errors='replace')"
                ) from None
    elif t is float:
        if not math.isfinite(value):
            raise ConfigurationError(
                f"{path or 'value'} is {value!r}, which JSON cannot carry: use a finite number"
            )
    elif value is None or t is bool or t is int:
        return
    elif isinstance(value, Mapping):
        for k, v in value.items():
            if not isinstance(k, str):
                try:  # numbers are written as strings, as msgspec does in the body
                    _encoder.encode({k: None})
                except (TypeError, ValueError):
                    raise ConfigurationError(
                        f"{path or 'value'} has a key {k!r} of type {type(k).__name__}: "
                        "JSON object keys are strings"
                    ) from None
            check_json(v, f"{path}.{k}" if path else str(k))
    elif isinstance(value, list | tuple):
        for i, v in enumerate(value):
            check_json(v, f"{path}[{i}]")
    elif isinstance(value, float):
        check_json(float(value), path)
    else:
        try:
            _encoder.encode(value)
        except (TypeError, ValueError, OverflowError) as exc:
            raise ConfigurationError(
                f"{path or 'value'} is a {type(value).__name__}, which JSON cannot encode "
                f"({exc}): pass a str, number, bool, None, list or dict"
            ) from None


def from_json(data: bytes | str, type: type[T]) -> T:
    """Parse and validate JSON into ``type``: the inverse of :func:`to_json`.

    Args:
        data: JSON text or bytes.
        type: The type to decode into: a protocol type (``mw.Context``,
            ``mw.AssistantMessage``…) or a container of them
            (``list[mw.Message]``).

    Returns:
        The decoded, validated value.

    Raises:
        ConfigurationError: ``data`` is not JSON, or does not match ``type``; the
            message names the field path (e.g.
            ``Expected `str`, got `int` - at `$.messages[0].content```).

    Example:
        ```python
        import modelwire as mw

        messages = mw.from_json(b'[{"role": "user", "content": "Hi"}]', list[mw.Message])
        print(messages[0].content)  # Hi
        ```
    """
    try:
        return msgspec.json.decode(data, type=type)
    except msgspec.ValidationError as exc:
        raise ConfigurationError(f"invalid {_type_name(type)}: {exc}") from exc
    except msgspec.DecodeError as exc:
        raise ConfigurationError(f"invalid JSON for {_type_name(type)}: {exc}") from exc


def _type_name(tp: Any) -> str:
    return getattr(tp, "__name__", None) or str(tp)
