"""Gemini batch mode on the MockServer (API reference, "Batch Mode"): ``POST
/v1beta/models/{model}:batchGenerateContent`` (inline requests), ``GET
/v1beta/batches/{id}``, ``GET /v1beta/batches?pageSize=N`` (the list), ``POST /v1beta/batches/{id}:cancel``. An expired job answers
no line (the API says to submit it again)."""

from __future__ import annotations

import json
import re
from typing import Any

from ._job import Jobs, MockJob, json_reply

__all__ = ["answer"]

_CREATE = re.compile(r"^(?P<base>.*)/models/(?P<model>[^/:]+):batchGenerateContent$")
_BATCH = re.compile(r"^(?P<base>.*)/batches/(?P<id>gem[^/:]+)(?P<cancel>:cancel)?$")
_STATES = {"running": "JOB_STATE_RUNNING", "completed": "JOB_STATE_SUCCEEDED",
           "expired": "JOB_STATE_EXPIRED", "cancelled": "JOB_STATE_CANCELLED",
           "failed": "JOB_STATE_FAILED"}  # fmt: skip
_TYPE = "type.googleapis.com/google.ai.generativelanguage.v1main."


def _error(status: int, message: str) -> dict[str, Any]:
    return json_reply({"error": {"code": status, "message": message, "status": "NOT_FOUND"}}, status)  # fmt: skip


def _operation(job: MockJob) -> dict[str, Any]:
    ended = job.state != "running"
    name = f"batches/{job.id}"
    meta = {"@type": _TYPE + "GenerateContentBatch", "name": name, "model": job.info["model"],
            "displayName": job.info["display_name"], "state": _STATES[job.state],
            "batchStats": {"requestCount": str(len(job.lines)),
                           "successfulRequestCount": str(job.count("succeeded")),
                           "failedRequestCount": str(job.count("errored"))}}  # fmt: skip
    out: dict[str, Any] = {"name": name, "metadata": meta, "done": ended}
    if job.state == "failed":
        out["error"] = {"code": 3, "message": job.failure, "status": "INVALID_ARGUMENT"}
    if ended and job.state == "completed":
        items = []
        for key, (_, played) in job.results.items():
            assert played is not None
            got = json.loads(played.body)
            item = {"response": got} if played.status == 200 else {"error": got.get("error", got)}
            items.append({**item, "metadata": {"key": key}})
        out["response"] = {"@type": _TYPE + "GenerateContentBatchOutput",
                           "inlinedResponses": {"inlinedResponses": items}}  # fmt: skip
    return out


def answer(mb: Jobs, method: str, path: str, body: bytes, origin: str) -> dict[str, Any] | None:  # fmt: skip
    target = path.split("?", 1)[0]
    if method == "POST" and (m := _CREATE.match(target)):
        batch = json.loads(body)["batch"]
        requests = batch["input_config"]["requests"]["requests"]
        endpoint = f"{m['base']}/models/{m['model']}:generateContent"
        lines = [(str(r.get("metadata", {}).get("key", f"#{i}")), endpoint,
                  json.dumps(r["request"]).encode()) for i, r in enumerate(requests)]  # fmt: skip
        info = {"model": f"models/{m['model']}", "display_name": batch.get("display_name")}
        job = mb.add(MockJob(mb.new_id("gem"), "gemini", lines, info))
        if job.expire_after is not None:
            job.expire_after = 0
        return json_reply(_operation(job))
    if method == "GET" and target.endswith("/batches") and "pageSize=" in path:  # batches.list
        mine = [j for j in reversed(list(mb.jobs.values())) if j.kind == "gemini"]
        return json_reply({"operations": [_operation(j) for j in mine]})
    m = _BATCH.match(target)
    if m is None or (method, bool(m["cancel"])) not in {("GET", False), ("POST", True)}:
        return None
    found = mb.cancel(m["id"]) if m["cancel"] else mb.retrieve(m["id"])
    if found is None:
        return _error(404, f"batches/{m['id']} not found")
    return json_reply({} if m["cancel"] else _operation(found))
