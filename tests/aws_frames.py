"""AWS event-stream messages built from readable specs, for the Bedrock recordings.

Each ``tests/data/bedrock-converse/<name>.frames.json`` lists the messages of one
ConverseStream response body as Bedrock sends them: the headers (``:event-type`` or
``:exception-type``, ``:content-type``, ``:message-type``, in that order, all strings)
and the payload as its exact JSON text. :func:`build` turns a spec into the bytes, with
the framing written out here from the AWS event-stream format (prelude: total length,
headers length, CRC32 of those 8 bytes; headers; payload; CRC32 of everything before),
not with modelwire's encoder, so the recordings do not depend on the code under test.

``python tests/aws_frames.py`` rewrites every ``<name>.bin`` next to its spec; the
fidelity suite (tests/test_recorded_fidelity.py) checks that each committed ``.bin`` is
exactly what its spec builds.
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

__all__ = ["DATA", "build", "encode_message", "specs"]

DATA = Path(__file__).resolve().parent / "data" / "bedrock-converse"
_STRING = 7  # header value type 7: a UTF-8 string with a 16-bit length


def encode_message(headers: dict[str, str], payload: bytes) -> bytes:
    """One event-stream message: string headers in their order, then ``payload``."""
    raw = b""
    for name, value in headers.items():
        n, v = name.encode(), value.encode()
        raw += bytes((len(n),)) + n + bytes((_STRING,)) + struct.pack(">H", len(v)) + v
    prelude = struct.pack(">II", 16 + len(raw) + len(payload), len(raw))
    message = prelude + struct.pack(">I", zlib.crc32(prelude)) + raw + payload
    return message + struct.pack(">I", zlib.crc32(message))


def build(spec: Path) -> bytes:
    """The response body a ``.frames.json`` spec describes."""
    frames = json.loads(spec.read_text(encoding="utf-8"))["frames"]
    return b"".join(encode_message(f["headers"], f["payload"].encode()) for f in frames)


def specs() -> list[Path]:
    """Every spec of the Bedrock recordings, sorted."""
    return sorted(DATA.glob("*.frames.json"))


def main() -> None:
    for spec in specs():
        spec.with_name(spec.name.removesuffix(".frames.json") + ".bin").write_bytes(build(spec))


if __name__ == "__main__":
    main()
