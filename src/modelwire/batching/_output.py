"""The output file: exactly one whole line per ``custom_id``, across crashes.

Why it holds (the resume rule):

* Each result is one ``write()`` of one complete line on a descriptor opened
  with ``O_APPEND`` — on a local filesystem the kernel writes it at the end in
  one piece, so a ``kill -9`` leaves the line whole or absent; only a power
  loss or a full disk can leave a torn *last* line.
* ``fsync`` runs every ``fsync_every`` lines or ``fsync_seconds`` (small groups:
  one fsync per line would cap throughput at the disk's sync rate).
* One run at a time writes a file (an exclusive ``flock``, released by the
  kernel when the process dies).
* On open, the file is read: ids on whole lines are *done* and skipped; a
  trailing partial line (no ``\\n``) is cut away with ``ftruncate`` before the
  first new write, so it can never glue onto the next line.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import msgspec

from ..errors import ConfigurationError

if sys.platform != "win32":
    import fcntl

__all__ = ["OutputLog", "read_done"]


class _IdOnly(msgspec.Struct):
    custom_id: str
    ok: bool = False


_id_decoder = msgspec.json.Decoder(_IdOnly)


def read_done(path: str) -> tuple[dict[str, bool], int]:
    """``({custom_id: ok}, whole_bytes)`` of an existing output file.

    ``whole_bytes`` is the length up to the last ``\\n``: anything after it is a
    torn line from a crash. A whole line that is not a result is refused with its
    line number (the file is not ours, or was edited)."""
    done: dict[str, bool] = {}
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return done, 0
    except OSError as exc:
        raise ConfigurationError(f"cannot read {path}: {exc.strerror}") from None
    end = data.rfind(b"\n") + 1
    for n, line in enumerate(data[:end].splitlines(), 1):
        if not line.strip():
            continue
        try:
            head = _id_decoder.decode(line)
        except (msgspec.DecodeError, msgspec.ValidationError):
            raise ConfigurationError(
                f"{path} line {n} is not a batch result (no custom_id): resume only into a "
                "file written by modelwire batch, or choose another -o"
            ) from None
        cid = head.custom_id
        if cid in done:
            raise ConfigurationError(f"{path} line {n}: custom_id {cid!r} appears twice")
        done[cid] = head.ok
    return done, end


class OutputLog:
    """Append-only result lines with the resume rule above. Not thread-safe:
    one writer (the runner's event loop, or the Ray sink actor)."""

    def __init__(
        self,
        path: str,
        *,
        fsync_every: int = 64,
        fsync_seconds: float = 0.5,
        lock_wait: float = 0.0,
    ) -> None:
        self.path = path
        self.done, whole = read_done(path)
        try:
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as exc:
            raise ConfigurationError(f"cannot write {path}: {exc.strerror}") from None
        if sys.platform != "win32":
            # Two runs appending to one file would each skip only what they saw
            # at start and write the rest twice: one writer at a time. The kernel
            # drops the lock when the process dies, even by kill -9. ``lock_wait``
            # lets a Ray sink wait out the sink of a killed driver, which the
            # cluster stops a few seconds later.
            deadline = time.monotonic() + lock_wait
            while True:
                try:
                    fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError:
                    if time.monotonic() < deadline:
                        time.sleep(0.1)
                        continue
                    os.close(self._fd)
                    raise ConfigurationError(
                        f"{path} is being written by another modelwire batch run: wait for "
                        "it to finish (or stop it), then run again to resume"
                    ) from None
        # Re-read under the lock: the run that held it may have appended since.
        self.done, whole = read_done(path)
        if os.fstat(self._fd).st_size > whole:
            # A torn last line from a crash: cut it before appending anything.
            os.ftruncate(self._fd, whole)
            os.fsync(self._fd)
        self.fsync_every = fsync_every
        self.fsync_seconds = fsync_seconds
        self._unsynced = 0
        self._last_sync = time.monotonic()
        self._encoder = msgspec.json.Encoder()

    def write(self, record: dict[str, Any]) -> bool:
        """Append one result; ``False`` (and nothing written) when its id is done."""
        cid = record["custom_id"]
        if cid in self.done:
            return False
        line = self._encoder.encode(record) + b"\n"
        view = memoryview(line)
        while view:  # a regular file takes it in one write; loop only for safety
            n = os.write(self._fd, view)
            view = view[n:]
        self.done[cid] = bool(record.get("ok"))
        self._unsynced += 1
        if (
            self._unsynced >= self.fsync_every
            or time.monotonic() - self._last_sync >= self.fsync_seconds
        ):
            self.sync()
        return True

    def sync(self) -> None:
        if self._unsynced:
            os.fsync(self._fd)
            self._unsynced = 0
        self._last_sync = time.monotonic()

    def close(self) -> None:
        if self._fd >= 0:
            self.sync()
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> OutputLog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
