"""One mock batch job: its lines, its state, and how it ends."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple, Protocol

__all__ = ["Jobs", "MockJob", "Played", "json_reply"]


class Played(NamedTuple):
    """A line played through the script: the HTTP status and body it got."""

    status: int
    body: bytes


class MockJob:
    """A job: its lines ``(key, path, JSON body)`` and, once ended, their answers."""

    def __init__(self, job_id: str, kind: str, lines: list[tuple[str, str, bytes]], info: dict[str, Any]) -> None:  # fmt: skip
        self.id = job_id
        self.kind = kind
        self.lines = lines
        self.info = info
        self.state = "running"  # running, completed, expired, cancelled, failed
        self.cancelling = False
        self.polls_left = 0
        self.expire_after: int | None = None
        self.failure: str | None = None  # the job fails as a whole, with this reason
        #: key -> ("succeeded" | "errored" | "expired" | "cancelled", Played | None)
        self.results: dict[str, tuple[str, Played | None]] = {}

    def end(self, play: Callable[[str, bytes, str], Played]) -> None:
        if self.cancelling:
            self.state = "cancelled"
            self.results = {k: ("cancelled", None) for k, _, _ in self.lines}
            return
        if self.failure is not None and self.kind != "anthropic":  # a message batch cannot fail
            self.state = "failed"
            return
        for i, (key, path, body) in enumerate(self.lines):
            if self.expire_after is not None and i >= self.expire_after:
                self.results[key] = ("expired", None)
                continue
            got = play(path, body, self.id)
            self.results[key] = ("succeeded" if got.status == 200 else "errored", got)
        self.state = "expired" if self.expire_after is not None else "completed"

    def count(self, outcome: str) -> int:
        return sum(1 for o, _ in self.results.values() if o == outcome)


def json_reply(obj: Any, status: int = 200) -> dict[str, Any]:
    from ..._apis._server.reply import compact_json

    return {"body": compact_json(obj).encode(), "content_type": "application/json", "status": status}  # fmt: skip


class Jobs(Protocol):
    """What a provider's endpoints ask of :class:`~modelwire.testing._batches.MockBatches`."""

    jobs: dict[str, MockJob]
    files: dict[str, bytes]

    def add(self, job: MockJob) -> MockJob: ...
    def new_id(self, prefix: str) -> str: ...
    def file(self, content: bytes) -> str: ...
    def retrieve(self, job_id: str) -> MockJob | None: ...
    def cancel(self, job_id: str) -> MockJob | None: ...
