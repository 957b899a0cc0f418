"""Anthropic Message Batches on the MockServer (API reference, "Message Batches"):
``POST /v1/messages/batches``, ``GET /v1/messages/batches/{id}``, ``GET
/v1/messages/batches/{id}/results``, ``POST /v1/messages/batches/{id}/cancel``."""

from __future__ import annotations

import json
import re
from typing import Any

from ._job import Jobs, MockJob, json_reply

__all__ = ["answer"]

_CREATE = re.compile(r"^(?P<base>.*)/messages/batches$")
_BATCH = re.compile(r"^(?P<base>.*)/messages/batches/(?P<id>[^/]+)(?P<tail>/cancel|/results)?$")
_TYPES = {"succeeded": "succeeded", "errored": "errored", "expired": "expired",
          "cancelled": "canceled"}  # fmt: skip


def _error(status: int, message: str) -> dict[str, Any]:
    return json_reply({"type": "error", "error": {"type": "not_found_error", "message": message}}, status)  # fmt: skip


def _object(job: MockJob, origin: str) -> dict[str, Any]:
    ended = job.state != "running"
    counts = {"processing": 0 if ended else len(job.lines), "succeeded": job.count("succeeded"),
              "errored": job.count("errored"), "canceled": job.count("cancelled"),
              "expired": job.count("expired")}  # fmt: skip
    status = "ended" if ended else ("canceling" if job.cancelling else "in_progress")
    return {"id": job.id, "type": "message_batch", "processing_status": status,
            "request_counts": counts, "ended_at": "2026-01-01T00:00:00Z" if ended else None,
            "created_at": "2026-01-01T00:00:00Z", "expires_at": "2026-01-02T00:00:00Z",
            "cancel_initiated_at": "2026-01-01T00:00:00Z" if job.cancelling else None,
            "archived_at": None,
            "results_url": f"{origin}{job.info['base']}/messages/batches/{job.id}/results"
            if ended else None}  # fmt: skip


def _results(job: MockJob) -> bytes:
    out = []
    for key, (outcome, played) in job.results.items():
        result: dict[str, Any] = {"type": _TYPES[outcome]}
        if played is not None and outcome == "succeeded":
            result["message"] = json.loads(played.body)
        elif played is not None:
            result["error"] = json.loads(played.body)
        out.append(json.dumps({"custom_id": key, "result": result}).encode() + b"\n")
    return b"".join(out)


def answer(mb: Jobs, method: str, path: str, body: bytes, origin: str) -> dict[str, Any] | None:  # fmt: skip
    target = path.split("?", 1)[0]
    if method == "POST" and (m := _CREATE.match(target)):
        req = json.loads(body)
        lines = [(r["custom_id"], f"{m['base']}/messages", json.dumps(r["params"]).encode())
                 for r in req["requests"]]  # fmt: skip
        job = mb.add(MockJob(mb.new_id("msgbatch_mock"), "anthropic", lines, {"base": m["base"]}))
        return json_reply(_object(job, origin))
    m = _BATCH.match(target)
    if m is None or not m["id"].startswith("msgbatch_"):
        return None
    tail = m["tail"]
    found: MockJob | None
    if (method, tail) == ("GET", None):
        found = mb.retrieve(m["id"])
    elif (method, tail) == ("POST", "/cancel"):
        found = mb.cancel(m["id"])
    elif (method, tail) == ("GET", "/results"):
        done = mb.jobs.get(m["id"])
        if done is None or done.state == "running":
            return _error(404, f"no results for batch {m['id']}")
        return {"body": _results(done), "content_type": "application/binary"}
    else:
        return None
    if found is None:
        return _error(404, f"batch {m['id']} not found")
    return json_reply(_object(found, origin))
