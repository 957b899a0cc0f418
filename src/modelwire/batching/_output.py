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

import errno
import os
import stat
import sys
import time
from typing import Any

import msgspec

from ..errors import ConfigurationError, OutputWriteError

if sys.platform != "win32":
    import fcntl

__all__ = ["OutputLog", "check_output", "read_done", "write_error"]


_ABSENT = msgspec.Raw(b"")


class _Head(msgspec.Struct):
    """What a line of an existing output file says about itself: a result of ours
    has ``ok``, an OpenAI Batch output line has ``response``; a request line has
    ``prompt``/``context`` (ours) or ``body``/``url`` (OpenAI's input format)."""

    custom_id: str
    ok: bool | None = None
    # Raw: present or not, without decoding what may be a large value ("" = absent).
    response: msgspec.Raw = _ABSENT
    error: msgspec.Raw = _ABSENT
    prompt: msgspec.Raw = _ABSENT
    context: msgspec.Raw = _ABSENT
    body: msgspec.Raw = _ABSENT
    url: msgspec.Raw = _ABSENT


_head_decoder = msgspec.json.Decoder(_Head)


def _given(raw: msgspec.Raw) -> bool:
    return len(raw) > 0 and bytes(raw) != b"null"


def _result_format(head: _Head) -> str | None:
    if head.ok is not None:
        return "modelwire"
    if len(head.response) or len(head.error):
        return "openai"
    return None


def _result_ok(head: _Head, fmt: str) -> bool:
    if fmt == "modelwire":
        return bool(head.ok)
    if _given(head.error) or not _given(head.response):
        return False
    try:
        status = msgspec.json.decode(head.response, type=dict[str, Any]).get("status_code")
    except (msgspec.DecodeError, msgspec.ValidationError):
        return False
    return bool(status == 200)


def read_done(path: str, output_format: str | None = None) -> tuple[dict[str, bool], int]:
    """``({custom_id: ok}, whole_bytes)`` of an existing output file.

    ``whole_bytes`` is the length up to the last ``\\n``: anything after it is a
    torn line from a crash. A whole line that is not a result is refused with its
    line number (the file is not ours, was edited, or is a file of requests); so
    is a result in the other format than ``output_format``."""
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
            head = _head_decoder.decode(line)
        except (msgspec.DecodeError, msgspec.ValidationError):
            raise ConfigurationError(
                f"{path} line {n} is not a batch result (no custom_id): resume only into a "
                "file written by modelwire batch, or choose another -o"
            ) from None
        fmt = _result_format(head)
        if fmt is None:
            if any(len(x) for x in (head.prompt, head.context, head.body, head.url)):
                raise ConfigurationError(
                    f"{path} is a file of requests (line {n} is a request, not a result): "
                    "-o names where the results go; choose another file"
                )
            raise ConfigurationError(
                f"{path} line {n} is not a batch result (no ok or response field): resume "
                "only into a file written by modelwire batch, or choose another -o"
            )
        if output_format is not None and fmt != output_format:
            raise ConfigurationError(
                f"{path} holds results in the {fmt} format (line {n}); resume it with "
                f"output format {fmt!r}, or choose another -o"
            )
        cid = head.custom_id
        if cid in done:
            raise ConfigurationError(f"{path} line {n}: custom_id {cid!r} appears twice")
        done[cid] = _result_ok(head, fmt)
    return done, end


def _same_file(a: os.stat_result, b: os.stat_result) -> bool:
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def check_output(path: str, inputs: tuple[str, ...] = ()) -> None:
    """Refuse an output that cannot hold results, before anything is sent or opened:
    only ``stat`` is used, which never blocks (opening a FIFO for reading waits for
    a writer; ``/dev/stdout`` may be the terminal or a pipe)."""
    if os.path.isdir(path):
        raise ConfigurationError(f"-o {path} is a directory: name a results file in it")
    norm = os.path.abspath(path)
    if norm.startswith(("/dev/", "/proc/")):
        raise ConfigurationError(
            f"-o {path} is not a regular file: results are appended and read back to "
            "resume, so they need a real file (e.g. -o results.jsonl)"
        )
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ConfigurationError(f"cannot use -o {path}: {exc.strerror}") from None
    if not stat.S_ISREG(st.st_mode):
        raise ConfigurationError(
            f"-o {path} is not a regular file (a FIFO, device or socket): results are "
            "appended and read back to resume, so they need a real file"
        )
    for fd in (0, 1, 2):
        try:
            if _same_file(st, os.fstat(fd)):
                raise ConfigurationError(
                    f"-o {path} is this process's standard stream: results need a file of their own"
                )
        except OSError:
            continue
    for source in inputs:
        try:
            if _same_file(st, os.stat(source)):
                raise ConfigurationError(
                    f"-o {path} is the input file {source}: the results need a file of "
                    "their own (e.g. -o results.jsonl)"
                )
        except OSError:
            continue


def write_error(path: str, exc: OSError) -> OutputWriteError:
    reason = {errno.ENOSPC: "the disk is full", errno.EFBIG: "the file size limit was reached",
              errno.EDQUOT: "the disk quota is exceeded"}.get(exc.errno or 0, exc.strerror)  # fmt: skip
    err = OutputWriteError(
        f"cannot write results to {path}: {reason}; the lines already written are kept "
        "whole: free some space (or choose another -o), then run the same command again "
        "to resume"
    )
    err.errno = exc.errno
    return err


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
        output_format: str | None = None,
        inputs: tuple[str, ...] = (),
    ) -> None:
        self.path = path
        self.output_format = output_format
        check_output(path, inputs)
        self.done, whole = read_done(path, output_format)
        try:
            # O_NONBLOCK: should the path have become a FIFO since the check, the
            # open fails at once instead of waiting for a reader.
            self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NONBLOCK, 0o644)  # fmt: skip
        except OSError as exc:
            raise ConfigurationError(f"cannot write {path}: {exc.strerror}") from None
        if not stat.S_ISREG(os.fstat(self._fd).st_mode):
            os.close(self._fd)
            raise ConfigurationError(f"-o {path} is not a regular file")
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
        self.done, whole = read_done(path, output_format)
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
        line = self._encoder.encode(record.get("_line", record)) + b"\n"
        view = memoryview(line)
        try:
            while view:  # a regular file takes it in one write; loop only for safety
                n = os.write(self._fd, view)
                view = view[n:]
        except OSError as exc:
            self._drop_torn(len(line) - len(view))
            raise write_error(self.path, exc) from None
        self.done[cid] = bool(record.get("ok"))
        self._unsynced += 1
        if (
            self._unsynced >= self.fsync_every
            or time.monotonic() - self._last_sync >= self.fsync_seconds
        ):
            self.sync()
        return True

    def _drop_torn(self, written: int) -> None:
        # Part of the line reached the file: cut it so the file ends on a whole
        # line (the next run would cut it too; this keeps the file clean now).
        if written:
            try:
                os.ftruncate(self._fd, os.fstat(self._fd).st_size - written)
            except OSError:
                pass

    def sync(self) -> None:
        if self._unsynced:
            try:
                os.fsync(self._fd)
            except OSError as exc:
                raise write_error(self.path, exc) from None
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
