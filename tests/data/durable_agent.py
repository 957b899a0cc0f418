"""A process of tests/test_agent_durable.py: one agent run (or resume) of a durable run.

``python durable_agent.py WORK MODE [ARG]`` — WORK holds ``model.json`` (the
MockServer's model) and receives ``log`` (one line per tool execution),
``runs.db`` (the agent's store), ``state.json`` and ``out.json`` (the run).
MODE: ``pause`` (run until the approvals pause it), ``resume`` (ARG: a JSON object
of decisions, ``approve``, ``deny:REASON`` or ``output:TEXT`` by call id, for the
state in ``state.json``), ``start`` (a run with id ``r1`` whose ``hang`` tool prints
``started`` and blocks until the process is killed), ``restart`` (``resume("r1")``);
ARG ``idempotent`` makes ``hang`` idempotent.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path
from typing import Any

import modelwire as mw

work, mode = Path(sys.argv[1]), sys.argv[2]
arg = sys.argv[3] if len(sys.argv) > 3 else ""
log = work / "log"


def note(line: str) -> None:
    with log.open("a") as f:
        f.write(line + "\n")


@mw.tool(approval=True)
def delete(path: str) -> str:
    """Delete a file."""
    note(f"delete {path}")
    return f"deleted {path}"


@mw.tool
def count(n: int) -> str:
    """Count."""
    note(f"count {n}")
    return f"counted {n}"


def hang(text: str) -> str:
    """Write, slowly."""
    note(f"hang {text}")
    if mode == "start":
        print("started", flush=True)
        threading.Event().wait()  # until this process is killed
    return f"wrote {text}"


model = mw.from_json((work / "model.json").read_bytes(), mw.Model)
tools = [delete, count, mw.tool(idempotent=arg == "idempotent")(hang)]
agent = mw.Agent(model, tools, store=work / "runs.db", tool_execution="sequential")

if mode == "pause":
    run = agent.run_sync("Clean up.")
elif mode == "resume":
    decisions: dict[str, Any] = {}
    for call_id, what in json.loads(arg).items():
        verb, _, rest = what.partition(":")
        decisions[call_id] = {"approve": mw.Approve, "deny": mw.Deny, "output": mw.ToolOutput}[
            verb
        ](*([rest] if rest else []))
    state = mw.AgentState.from_json((work / "state.json").read_bytes())
    run = agent.resume_sync(state, decisions)
elif mode == "start":
    run = agent.run_sync("Count, then write.", run_id="r1")
else:
    run = agent.resume_sync("r1")

(work / "state.json").write_bytes(mw.to_json(run.state))
results = [
    {
        "id": m.tool_call_id,
        "error": m.is_error,
        "failure": (m.details or {}).get("failure"),
        "text": m.text,
    }
    for m in run.new_messages
    if isinstance(m, mw.ToolResultMessage)
]
out = {"stop_reason": run.stop_reason, "text": run.text, "results": results}
(work / "out.json").write_text(json.dumps(out))
