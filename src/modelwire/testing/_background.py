"""The MockServer's OpenAI Responses background responses.

A ``POST /v1/responses`` with ``"background": true`` that the server answers with a
stream is remembered by its response id: every event of the scripted reply, whole,
whatever fault cut the stream that carried it (the provider keeps generating while
the client is away). Then, as OpenAI's API reference describes them:

* ``GET /v1/responses/{id}?stream=true&starting_after=N`` streams the events whose
  ``sequence_number`` is greater than ``N`` (all of them without ``starting_after``);
* ``GET /v1/responses/{id}`` answers the response object (its last state);
* ``POST /v1/responses/{id}/cancel`` cancels it: the object with status ``cancelled``.

None of them consumes a scripted reply; every one is recorded in
``MockServer.requests``. :class:`Retrieval` faults, queued on
``MockServer.retrievals``, apply to the next streamed retrievals in order.
"""

from __future__ import annotations

import json
import re
import threading
from typing import Any

import msgspec

from .._apis._server.reply import compact_json, openai_error

__all__ = ["Backgrounds", "Retrieval"]

_PATH = re.compile(r"^(?P<base>.*)/responses/(?P<id>[^/?]+)(?P<cancel>/cancel)?(?:\?(?P<q>.*))?$")


class Retrieval(msgspec.Struct, kw_only=True):
    """A fault of one streamed retrieval (``GET /v1/responses/{id}?stream=true``).

    ``cut_after`` closes the connection after that many body bytes; ``stall_after``
    stops sending after that many bytes for ``stall_seconds``; ``resend`` repeats that
    many events at or before ``starting_after`` first (a server that sends again what
    was delivered); ``status`` other than 200 answers an OpenAI error instead.
    """

    cut_after: int | None = None
    stall_after: int | None = None
    stall_seconds: float = 30.0
    resend: int = 0
    status: int = 200


class _Stored:
    __slots__ = ("cancelled", "events", "response")

    def __init__(self) -> None:
        self.events: list[tuple[int, bytes]] = []  # (sequence_number, the SSE frame)
        self.response: dict[str, Any] = {}
        self.cancelled = False


class Backgrounds:
    """The background responses one MockServer remembers, by id."""

    def __init__(self) -> None:
        self.responses: dict[str, _Stored] = {}
        #: Faults of the next streamed retrievals, in order (:class:`Retrieval`).
        self.retrievals: list[Retrieval] = []
        self._lock = threading.Lock()

    def remember(self, method: str, path: str, body: bytes, reply: Any) -> None:
        """Keep the events of a background response's stream (a ``200`` SSE reply)."""
        if method != "POST" or not path.split("?", 1)[0].endswith("/responses"):
            return
        if reply.status != 200 or not reply.content_type.startswith("text/event-stream"):
            return
        try:
            sent = json.loads(body)
        except ValueError:
            return
        if not isinstance(sent, dict) or sent.get("background") is not True:
            return
        stored = _Stored()
        rid = None
        for frame in reply.body.split(b"\n\n"):
            data = next(
                (ln[5:].strip() for ln in frame.split(b"\n") if ln.startswith(b"data:")), None
            )
            if not data or not data.startswith(b"{"):
                continue
            event = json.loads(data)
            response = event.get("response")
            if isinstance(response, dict):
                rid = rid or response.get("id")
                stored.response = response
            stored.events.append((int(event.get("sequence_number", -1)), frame + b"\n\n"))
        if rid:
            with self._lock:
                self.responses[rid] = stored

    def answer(self, method: str, path: str) -> dict[str, Any] | None:
        """The reply to a retrieval or a cancel, as ``Reply`` fields (``None``: not one
        of those paths)."""
        m = _PATH.match(path)
        if m is None or (method, bool(m["cancel"])) not in {("GET", False), ("POST", True)}:
            return None
        with self._lock:
            stored = self.responses.get(m["id"])
        if stored is None:
            return _error(404, f"No response found with id '{m['id']}'.")
        if m["cancel"]:
            stored.cancelled = True
        query = dict(p.partition("=")[::2] for p in (m["q"] or "").split("&") if p)
        if query.get("stream") != "true":
            obj = dict(stored.response)
            if stored.cancelled:
                obj["status"] = "cancelled"
            return {"body": compact_json(obj).encode(), "content_type": "application/json"}
        with self._lock:
            fault = self.retrievals.pop(0) if self.retrievals else Retrieval()
        if fault.status != 200:
            return _error(fault.status, "MockServer: the scripted retrieval failed")
        after = int(query.get("starting_after", "-1"))
        first = next((i for i, (n, _) in enumerate(stored.events) if n > after), len(stored.events))
        frames = [f for _, f in stored.events[max(0, first - fault.resend) :]]
        points = []
        at = 0
        for f in frames:
            at += len(f)
            points.append(at)
        return {"body": b"".join(frames), "split_points": tuple(points),
                "cut_after": fault.cut_after, "stall_after": fault.stall_after,
                "stall_seconds": fault.stall_seconds}  # fmt: skip


def _error(status: int, message: str) -> dict[str, Any]:
    error = openai_error(status, message)
    return {"status": status, "body": compact_json(error.body).encode(),
            "headers": dict(error.headers), "content_type": "application/json"}  # fmt: skip
