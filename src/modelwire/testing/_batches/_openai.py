"""OpenAI Batch on the MockServer (API reference, "Files" and "Batch"): ``POST
/v1/files`` (multipart), ``POST /v1/batches``, ``GET /v1/batches/{id}``, ``GET /v1/batches`` (the list), ``POST
/v1/batches/{id}/cancel``, ``GET /v1/files/{id}/content``."""

from __future__ import annotations

import json
import re
import time
from typing import Any

from ._job import Jobs, MockJob, json_reply

__all__ = ["answer"]

_FILES = re.compile(r"^.*/files$")
_CONTENT = re.compile(r"^.*/files/(?P<id>[^/]+)/content$")
_BATCHES = re.compile(r"^(?P<base>.*)/batches$")
_BATCH = re.compile(r"^.*/batches/(?P<id>batch_[^/:]+)(?P<cancel>/cancel)?$")
_STATUS = {"running": "in_progress", "completed": "completed", "expired": "expired",
           "cancelled": "cancelled", "failed": "failed"}  # fmt: skip


def _error(status: int, message: str) -> dict[str, Any]:
    return json_reply({"error": {"message": message, "type": "invalid_request_error",
                                 "param": None, "code": None}}, status)  # fmt: skip


def _upload(body: bytes) -> bytes | None:
    """The file part of a multipart/form-data body."""
    _, sep, rest = body.partition(b'name="file"')
    if not sep:
        return None
    start = rest.find(b"\r\n\r\n")
    end = rest.rfind(b"\r\n--")
    return rest[start + 4 : end] if start >= 0 and end > start else None


def _object(mb: Jobs, job: MockJob) -> dict[str, Any]:
    status = "cancelling" if job.cancelling and job.state == "running" else _STATUS[job.state]
    errors = None
    if job.state == "failed":
        errors = {"object": "list", "data": [{"code": "invalid_file", "message": job.failure,
                                              "param": None, "line": None}]}  # fmt: skip
    out = {"id": job.id, "object": "batch", "endpoint": job.info["endpoint"], "errors": errors,
           "input_file_id": job.info["input_file_id"], "completion_window": "24h",
           "status": status, "output_file_id": None, "error_file_id": None,
           "created_at": job.info["created_at"], "metadata": job.info.get("metadata"),
           "request_counts": {"total": len(job.lines), "completed": job.count("succeeded"),
                              "failed": job.count("errored")}}  # fmt: skip
    if job.state != "running" and "output" not in job.info:
        ok: list[dict[str, Any]] = []
        bad: list[dict[str, Any]] = []
        for key, (outcome, played) in job.results.items():
            rid = f"batch_req_{len(ok) + len(bad) + 1}"
            if played is not None:
                line = {"id": rid, "custom_id": key, "error": None, "response": {
                    "status_code": played.status, "request_id": rid,
                    "body": json.loads(played.body)}}  # fmt: skip
                (ok if played.status == 200 else bad).append(line)
            elif outcome == "expired":
                bad.append({"id": rid, "custom_id": key, "response": None, "error": {
                    "code": "batch_expired",
                    "message": "This request could not be executed before the completion window expired."}})  # fmt: skip
        for name, lines in (("output", ok), ("error", bad)):
            if lines:
                job.info[name] = mb.file(b"".join(json.dumps(x).encode() + b"\n" for x in lines))
        job.info.setdefault("output", None)
    out["output_file_id"] = job.info.get("output")
    out["error_file_id"] = job.info.get("error")
    return out


def answer(mb: Jobs, method: str, path: str, body: bytes, origin: str) -> dict[str, Any] | None:  # fmt: skip
    target = path.split("?", 1)[0]
    if method == "POST" and _FILES.match(target):
        content = _upload(body)
        if content is None:
            return _error(400, "MockServer: expected a multipart upload with a file part")
        file_id = mb.file(content)
        return json_reply({"id": file_id, "object": "file", "purpose": "batch",
                           "bytes": len(content), "filename": "batch.jsonl"})  # fmt: skip
    if method == "GET" and (m := _CONTENT.match(target)):
        content = mb.files.get(m["id"])
        if content is None:
            return _error(404, f"No such File object: {m['id']}")
        return {"body": content, "content_type": "application/jsonl"}
    if method == "POST" and (b := _BATCHES.match(target)) and b"input_file_id" in body:
        req = json.loads(body)
        root = b["base"]
        content = mb.files.get(req.get("input_file_id", ""))
        if content is None:
            return _error(400, "MockServer: input_file_id names no uploaded file")
        lines = []
        for raw in content.splitlines():
            if raw.strip():
                entry = json.loads(raw)
                # Azure's lines name the endpoint alone, under the resource's root.
                url = entry["url"] if entry["url"].startswith(root + "/") else root + entry["url"]
                lines.append((entry["custom_id"], url, json.dumps(entry["body"]).encode()))
        info = {"endpoint": req["endpoint"], "input_file_id": req["input_file_id"],
                "metadata": req.get("metadata"), "created_at": int(time.time())}  # fmt: skip
        job = mb.add(MockJob(mb.new_id("batch_mock"), "openai", lines, info))
        return json_reply(_object(mb, job))
    if method == "GET" and _BATCHES.match(target):  # the list, newest first
        mine = [j for j in reversed(list(mb.jobs.values())) if j.kind == "openai"]
        return json_reply({"object": "list", "data": [_object(mb, j) for j in mine],
                           "has_more": False})  # fmt: skip
    if (m := _BATCH.match(target)) and (method, bool(m["cancel"])) in {("GET", False), ("POST", True)}:  # fmt: skip
        found = mb.cancel(m["id"]) if m["cancel"] else mb.retrieve(m["id"])
        if found is None:
            return _error(404, f"No batch found with id '{m['id']}'.")
        return json_reply(_object(mb, found))
    return None
