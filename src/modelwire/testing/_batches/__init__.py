"""The MockServer's provider batch endpoints: OpenAI Batch (files and batches),
Anthropic Message Batches and Gemini batch mode, one module each.

A job created here holds its lines; it answers "in progress" to its first
:attr:`MockBatches.polls` retrievals, then ends. When it ends, each line is answered
by the server's next scripted reply, rendered as the line's endpoint would answer it
without streaming (a ``chat.completion``, a ``message``, a ``GenerateContentResponse``;
an ``error_reply`` gives that line the provider's error) and recorded in
``MockServer.requests`` with the header ``x-mock-batch: <job id>``. Controls:

* :attr:`MockBatches.polls` — retrievals a job answers "in progress" before the one
  that ends it;
* :meth:`MockBatches.expire_next` — the next job created expires after answering its
  first ``answered`` lines (the rest come back expired);
* :meth:`MockBatches.fail_next` — the next job fails as a whole (OpenAI, Gemini);
* :meth:`MockBatches.lose_next_create` — the next job is created but its create
  request answered with an error;
* a cancel request (each provider's own) ends the job at its next retrieval as
  cancelled, its lines unanswered.

None of these endpoints consumes a scripted reply for the job itself; every request
is recorded. :attr:`MockBatches.created` lists the jobs created, in order.
"""

from __future__ import annotations

import threading
from typing import Any

import msgspec

from . import _anthropic, _gemini, _openai
from ._job import MockJob, Played, json_reply

__all__ = ["MockBatches", "MockJob"]

# Gemini first: its list (``/batches?pageSize=``) would otherwise be taken for OpenAI's.
_KINDS = (_gemini, _openai, _anthropic)


class MockBatches:
    """The batch jobs one MockServer holds, and the controls of the next ones."""

    def __init__(self, server: Any) -> None:
        # The MockServer (its script plays the lines); typed loosely: it imports this.
        self._server = server
        self._local = threading.local()  # the request being answered, per server thread
        self._lock = threading.Lock()
        #: Retrievals a job answers "in progress" before it ends.
        self.polls = 1
        #: Every job created, by id (each provider's own spelling).
        self.jobs: dict[str, MockJob] = {}
        #: The ids of the jobs created, in order.
        self.created: list[str] = []
        #: Uploaded files (OpenAI), by id.
        self.files: dict[str, bytes] = {}
        self._expiring: list[int] = []
        self._failing: list[str] = []
        self._losing: list[int] = []

    def fail_next(self, message: str = "the input file did not validate") -> None:
        """The next job created fails as a whole (OpenAI ``failed`` with ``errors``,
        Gemini ``JOB_STATE_FAILED`` with ``error``), answering no line."""
        with self._lock:
            self._failing.append(message)

    def lose_next_create(self, status: int = 500) -> None:
        """The next job is created, but its create request is answered with ``status``
        (as when the answer is lost on the way: the client cannot tell it exists)."""
        with self._lock:
            self._losing.append(status)

    def expire_next(self, answered: int = 0) -> None:
        """The next job created expires after answering its first ``answered`` lines."""
        with self._lock:
            self._expiring.append(answered)

    def add(self, job: MockJob) -> MockJob:
        with self._lock:
            job.polls_left = self.polls
            job.expire_after = self._expiring.pop(0) if self._expiring else None
            job.failure = self._failing.pop(0) if self._failing else None
            self.jobs[job.id] = job
            self.created.append(job.id)
        return job

    def new_id(self, prefix: str) -> str:
        with self._lock:
            return f"{prefix}{len(self.jobs) + len(self.files) + 1}"

    def file(self, content: bytes) -> str:
        file_id = self.new_id("file-mock")
        with self._lock:
            self.files[file_id] = content
        return file_id

    def retrieve(self, job_id: str) -> MockJob | None:
        """The job, one retrieval later (it may end now)."""
        with self._lock:
            job = self.jobs.get(job_id)
            if job is None:
                return None
            ending = job.state == "running" and (job.cancelling or job.polls_left <= 0)
            job.polls_left -= 1
        if ending:
            job.end(self._play)
        return job

    def _play(self, path: str, body: bytes, job_id: str) -> Played:
        """One line through the server's script, as a live call to ``path`` without
        streaming would be answered (recorded with ``x-mock-batch: <job id>``)."""
        server = self._server
        headers = {"content-type": "application/json", "x-mock-batch": job_id}
        rec = msgspec.structs.replace(self._local.rec, method="POST", path=path, body=body,
                                      headers=headers)  # fmt: skip
        reply = server._resolve(rec, server._next_reply(rec))
        return Played(reply.status, reply.body)

    def cancel(self, job_id: str) -> MockJob | None:
        with self._lock:
            job = self.jobs.get(job_id)
            if job is not None and job.state == "running":
                job.cancelling = True
        return job

    def answer(self, rec: Any, origin: str) -> dict[str, Any] | None:
        """The reply to a batch request (a ``RecordedRequest``), as ``Reply`` fields
        (``None``: not one)."""
        self._local.rec = rec
        before = len(self.created)
        for kind in _KINDS:
            found: dict[str, Any] | None = kind.answer(self, rec.method, rec.path, rec.body, origin)
            if found is not None:
                with self._lock:
                    lost = self._losing.pop(0) if len(self.created) > before and self._losing else None  # fmt: skip
                if lost is not None:
                    error = {
                        "message": "MockServer: the create answer was lost",
                        "type": "api_error",
                    }
                    return json_reply({"type": "error", "error": error}, lost)
                return found
        return None
