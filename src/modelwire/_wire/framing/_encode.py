"""The AWS event stream encoder (see :mod:`modelwire._wire.framing.eventstream` for the format)."""

from __future__ import annotations

import struct
import uuid
import zlib
from collections.abc import Mapping

from ...errors import ConfigurationError
from ._headers import HeaderValue, _FixedInt

__all__ = ["encode_event", "encode_exception", "encode_message"]

_OVERHEAD = 16  # the prelude and the message CRC
_UINT32 = struct.Struct(">I")

# The encoder's limits are aws-c-event-stream's (event_stream.h: header names of at most
# INT8_MAX bytes, values of at most INT16_MAX), so that every AWS decoder accepts what it
# writes; the decoder accepts the whole range the wire allows (255 and 65535).
_MAX_NAME_ENCODE = 127
_MAX_VALUE_ENCODE = 32767


def encode_message(
    headers: Mapping[str, HeaderValue], payload: bytes | bytearray | memoryview = b""
) -> bytes:
    """One AWS event stream message with ``headers`` (in their order) and ``payload``.

    Header values are typed (:data:`HeaderValue`): ``bool``, ``str`` (type 7), ``bytes``
    (6), :class:`uuid.UUID` (9), or an int wrapped in :class:`Int8`, :class:`Int16`,
    :class:`Int32`, :class:`Int64` or :class:`Timestamp`. Names must be 1 to 127 bytes of
    UTF-8 and string/byte values at most 32767 bytes (aws-c-event-stream's limits); anything
    else is a :class:`~modelwire.errors.ConfigurationError`.
    """
    parts: list[bytes] = []
    for name, value in headers.items():
        if not isinstance(name, str):
            raise ConfigurationError(f"header names are str, got {name!r}")
        raw_name = _encode_text(name, f"header name {name!r}")
        if not 1 <= len(raw_name) <= _MAX_NAME_ENCODE:
            raise ConfigurationError(
                f"header name {name!r} is {len(raw_name)} bytes; it must be 1 to "
                f"{_MAX_NAME_ENCODE} bytes of UTF-8"
            )
        parts.append(bytes((len(raw_name),)))
        parts.append(raw_name)
        parts.append(_encode_value(name, value))
    header_bytes = b"".join(parts)
    body = bytes(payload) if isinstance(payload, bytearray | memoryview) else payload
    if not isinstance(body, bytes):
        raise ConfigurationError(f"the payload must be bytes, got {type(payload).__name__}")
    total = _OVERHEAD + len(header_bytes) + len(body)
    if total > 0xFFFFFFFF:
        raise ConfigurationError(f"an AWS event stream message is at most 4 GiB, got {total}")
    prelude = struct.pack(">II", total, len(header_bytes))
    message = b"".join((prelude, _UINT32.pack(zlib.crc32(prelude)), header_bytes, body))
    return message + _UINT32.pack(zlib.crc32(message))


def _encode_text(text: str, what: str) -> bytes:
    try:
        return text.encode()
    except UnicodeEncodeError as exc:
        raise ConfigurationError(f"{what} cannot be encoded as UTF-8: {exc.reason}") from None


def _encode_value(name: str, value: object) -> bytes:
    if isinstance(value, bool):
        return b"\x00" if value else b"\x01"
    if isinstance(value, _FixedInt):
        return bytes((value.TYPE,)) + int(value).to_bytes(value.BITS // 8, "big", signed=True)
    if isinstance(value, str | bytes | bytearray | memoryview):
        raw = (
            _encode_text(value, f"the value of header {name!r}")
            if isinstance(value, str)
            else bytes(value)
        )
        if len(raw) > _MAX_VALUE_ENCODE:
            raise ConfigurationError(
                f"the value of header {name!r} is {len(raw)} bytes; at most "
                f"{_MAX_VALUE_ENCODE} are allowed"
            )
        return (b"\x07" if isinstance(value, str) else b"\x06") + len(raw).to_bytes(2) + raw
    if isinstance(value, uuid.UUID):
        return b"\x09" + value.bytes
    if isinstance(value, int):
        raise ConfigurationError(
            f"header {name!r}: a plain int is ambiguous on the wire; wrap it in Int8, Int16, "
            "Int32, Int64 or Timestamp"
        )
    raise ConfigurationError(
        f"header {name!r} has a value of type {type(value).__name__}; use bool, str, bytes, "
        "uuid.UUID, Int8, Int16, Int32, Int64 or Timestamp"
    )


def encode_event(event_type: str, payload: bytes) -> bytes:
    """An ``event`` message as Bedrock sends one: ``:event-type``, ``:content-type:
    application/json`` and ``:message-type: event`` headers, then the JSON ``payload``."""
    return encode_message(
        {
            ":event-type": event_type,
            ":content-type": "application/json",
            ":message-type": "event",
        },
        payload,
    )


def encode_exception(exception_type: str, payload: bytes) -> bytes:
    """An ``exception`` message as Bedrock sends one (``:exception-type`` such as
    ``throttlingException``, ``:content-type: application/json``, ``:message-type:
    exception``), with the JSON ``payload`` (``{"message": "..."}``)."""
    return encode_message(
        {
            ":exception-type": exception_type,
            ":content-type": "application/json",
            ":message-type": "exception",
        },
        payload,
    )
