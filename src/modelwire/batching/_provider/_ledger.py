"""The jobs ledger: which provider jobs a run submitted, next to its results file.

``OUT.jobs`` holds one JSON line per step, each written whole with ``O_APPEND`` and
flushed to disk (``fsync``) before the run goes on:

* ``{"t": "submit", "job", "api", "keys": {key: custom_id}}`` before a job is sent;
* ``{"t": "created", "job", "id"}`` as soon as the provider's create answer is read,
  before anything else (so a ``kill -9`` after it leaves the id on disk);
* ``{"t": "done", "job", "state"}`` once every result of the job is in OUT, synced.

A run reads it first: a job created and not done is polled, not submitted again; a
line's attempts are the jobs it was in. A ``submit`` never followed by ``created``
(the process died while the create request was in flight) is looked for among the
provider's jobs by its name where the provider keeps one (OpenAI's ``metadata``,
Gemini's ``display_name``) and adopted if found; otherwise (Anthropic, or not found)
it is marked done as ``not created`` and its lines are sent again.
"""

from __future__ import annotations

import os
from typing import Any

import msgspec

from ...errors import ConfigurationError
from .._output import write_error

__all__ = ["Job", "Ledger", "ledger_path"]


def ledger_path(out: str) -> str:
    return out + ".jobs"


class Job(msgspec.Struct, kw_only=True):
    """A job as the ledger knows it."""

    name: str
    api: str
    keys: dict[str, str]
    id: str | None = None
    state: str | None = None  # set once done


class Ledger:
    """Append-only, fsync'd job records (one writer: the run holding OUT's lock)."""

    def __init__(self, out: str, *, read_only: bool = False) -> None:
        """Read the ledger of ``out``; open it to append unless ``read_only`` (a reader
        beside a running run, which holds OUT's lock, must not cut its last line)."""
        self.path = ledger_path(out)
        self.jobs: dict[str, Job] = {}
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            data = b""
        except OSError as exc:
            raise ConfigurationError(f"cannot read {self.path}: {exc.strerror}") from None
        end = data.rfind(b"\n") + 1  # a torn last record (power cut) is dropped
        for n, line in enumerate(data[:end].splitlines(), 1):
            if line.strip():
                self._apply(line, n)
        self._fd = -1
        if read_only:
            return
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        if os.fstat(self._fd).st_size > end:
            os.ftruncate(self._fd, end)

    def _apply(self, line: bytes, n: int) -> None:
        try:
            rec: Any = msgspec.json.decode(line)
            kind, name = rec["t"], rec["job"]
            if kind == "submit":
                self.jobs[name] = Job(name=name, api=rec["api"], keys=dict(rec["keys"]))
            elif kind == "created":
                self.jobs[name].id = rec["id"]
            elif kind == "done":
                self.jobs[name].state = rec["state"]
        except (msgspec.DecodeError, KeyError, TypeError) as exc:
            raise ConfigurationError(
                f"{self.path} line {n} is not a job record ({exc!r}): it is written by "
                "modelwire batch --via provider; move it away to start over"
            ) from None

    def _append(self, rec: dict[str, Any]) -> None:
        line = msgspec.json.encode(rec) + b"\n"
        try:
            os.write(self._fd, line)
            os.fsync(self._fd)
        except OSError as exc:
            raise write_error(self.path, exc) from None

    def submitting(self, job: Job) -> None:
        self._append({"t": "submit", "job": job.name, "api": job.api, "keys": job.keys})
        self.jobs[job.name] = job

    def created(self, job: Job, job_id: str) -> None:
        job.id = job_id
        self._append({"t": "created", "job": job.name, "id": job_id})

    def done(self, job: Job, state: str) -> None:
        job.state = state
        self._append({"t": "done", "job": job.name, "state": state})

    def attempts(self) -> dict[str, int]:
        """How many jobs the provider created with each line (by ``custom_id``)."""
        counts: dict[str, int] = {}
        for j in self.jobs.values():
            if j.id is not None:
                for cid in j.keys.values():
                    counts[cid] = counts.get(cid, 0) + 1
        return counts

    def open_jobs(self) -> list[Job]:
        """Jobs the provider created whose results are not all in OUT yet."""
        return [j for j in self.jobs.values() if j.id is not None and j.state is None]

    def unsure_jobs(self) -> list[Job]:
        """Jobs sent but with no id on record: the process died while their create
        request was in flight, so the provider may or may not hold them."""
        return [j for j in self.jobs.values() if j.id is None and j.state is None]

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
