"""Typed AWS event stream header values (see :mod:`modelwire._wire.framing.eventstream`)."""

from __future__ import annotations

import uuid
from typing import ClassVar, Self

from ...errors import ConfigurationError

__all__ = ["HeaderValue", "Int8", "Int16", "Int32", "Int64", "Timestamp"]


class _FixedInt(int):
    """An ``int`` that says which fixed-width header type carries it."""

    __slots__ = ()
    TYPE: ClassVar[int]
    BITS: ClassVar[int]

    def __new__(cls, value: int) -> Self:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigurationError(f"{cls.__name__}() takes an int, got {value!r}")
        low = -(1 << (cls.BITS - 1))
        if not low <= value < -low:
            raise ConfigurationError(
                f"{cls.__name__} must be in [{low}, {-low - 1}] ({cls.BITS}-bit signed), "
                f"got {value}"
            )
        return super().__new__(cls, value)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({int(self)})"


class Int8(_FixedInt):
    """A ``byte`` header value (type 2): a signed 8-bit integer."""

    __slots__ = ()
    TYPE = 2
    BITS = 8


class Int16(_FixedInt):
    """A ``short`` header value (type 3): a signed 16-bit integer."""

    __slots__ = ()
    TYPE = 3
    BITS = 16


class Int32(_FixedInt):
    """An ``integer`` header value (type 4): a signed 32-bit integer."""

    __slots__ = ()
    TYPE = 4
    BITS = 32


class Int64(_FixedInt):
    """A ``long`` header value (type 5): a signed 64-bit integer."""

    __slots__ = ()
    TYPE = 5
    BITS = 64


class Timestamp(_FixedInt):
    """A ``timestamp`` header value (type 8): milliseconds since the Unix epoch (int64)."""

    __slots__ = ()
    TYPE = 8
    BITS = 64


HeaderValue = bool | str | bytes | uuid.UUID | Int8 | Int16 | Int32 | Int64 | Timestamp
"""A typed header value. Plain ``int`` is not one: the wire has five integer types, so the
caller wraps the number in the class of the type it means."""
