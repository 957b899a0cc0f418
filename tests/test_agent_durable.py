"""Runs that survive: approvals that pause, the state as JSON, resume, the call ledger.

Over a loopback ``MockServer``, on both drivers, and over real processes
(``tests/data/durable_agent.py``): a run paused in one process is resumed in
another with approve / deny / replace decisions; a process killed with SIGKILL
while a tool runs is resumed by run id in another: the finished call is replayed,
never run again, the interrupted one is ``in_doubt`` (run again when idempotent).
Executions are counted by the tools themselves (a list, or a file across
processes); never inferred from the agent's own output.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import modelwire as mw
from modelwire.agent import list_runs
from modelwire.errors import ConfigurationError
from modelwire.testing import MockServer, tool_call

pytestmark = pytest.mark.anyio

SCRIPT = Path(__file__).resolve().parent / "data" / "durable_agent.py"
DRIVERS = ["async", "sync"]


# --------------------------------------------------------------------------- helpers


class Tools:
    """``delete`` needs approval, ``count`` does not; ``seen`` records executions."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any]]] = []
        seen = self.seen

        @mw.tool(approval=True)
        def delete(path: str) -> str:
            """Delete a file."""
            seen.append(("delete", {"path": path}))
            return f"deleted {path}"

        @mw.tool
        def count(n: int) -> str:
            """Count."""
            seen.append(("count", {"n": n}))
            return f"counted {n}"

        self.all = [delete, count]


async def _run(agent: mw.Agent, driver: str, prompt: str, **kw: Any) -> mw.AgentRun:
    return agent.run_sync(prompt, **kw) if driver == "sync" else await agent.run(prompt, **kw)


async def _resume(agent: mw.Agent, driver: str, state: Any, decisions: Any = None) -> mw.AgentRun:
    if driver == "sync":
        return agent.resume_sync(state, decisions)
    return await agent.resume(state, decisions)


def _results(run: mw.AgentRun) -> dict[str, mw.ToolResultMessage]:
    return {m.tool_call_id: m for m in run.messages if isinstance(m, mw.ToolResultMessage)}


def _kind(result: mw.ToolResultMessage) -> Any:
    return (result.details or {}).get("failure") if result.is_error else None


# --------------------------------------------------------------------------- pausing


@pytest.mark.parametrize("driver", DRIVERS)
async def test_a_call_needing_approval_pauses_and_the_others_of_its_turn_run(
    driver: str,
) -> None:
    tools = Tools()
    script = [
        [
            tool_call("delete", {"path": "a"}, id="d1"),
            tool_call("count", {"n": 1}, id="c1"),
        ],
        "Done.",
    ]
    with MockServer(script) as server:
        agent = mw.Agent(server.model(), tools.all)
        run = await _run(agent, driver, "Go.")
        assert run.stop_reason == "paused"
        assert run.pending == (mw.PendingCall(id="d1", name="delete", arguments={"path": "a"}),)
        assert tools.seen == [("count", {"n": 1})]
        assert run.state.pending == run.pending and run.state.run_id == run.run_id
        assert set(_results(run)) == {"c1"}  # the paused call has no result yet
        assert len(server.requests) == 1
        done = await _resume(agent, driver, run.state, {"d1": mw.Approve()})
    assert done.stop_reason == "stop" and done.text == "Done."
    assert tools.seen == [("count", {"n": 1}), ("delete", {"path": "a"})]
    results = _results(done)
    assert results["d1"].text == "deleted a" and results["c1"].text == "counted 1"
    # The second request carried both results.
    sent = json.dumps(server.requests[1].json())
    assert "deleted a" in sent and "counted 1" in sent


def _three_deletes() -> list[Any]:
    """The script of a model that asks to delete a, b and c at once, then answers."""
    calls = [tool_call("delete", {"path": p}, id=f"d{i}") for i, p in enumerate("abc", 1)]
    return [calls, "Done."]


@pytest.mark.parametrize("driver", DRIVERS)
async def test_deny_and_replace_answer_the_model_without_executing(driver: str) -> None:
    tools = Tools()
    script = _three_deletes()
    with MockServer(script) as server:
        agent = mw.Agent(server.model(), tools.all)
        run = await _run(agent, driver, "Go.")
        state = mw.AgentState.from_json(mw.to_json(run.state))
        decisions = {
            "d1": mw.Deny("keep a"),
            "d2": mw.ToolOutput("pretend b is gone"),
            "d3": mw.ToolResultMessage(
                tool_call_id="whatever",
                tool_name="delete",
                content="c: no such file",
                is_error=True,
            ),
        }
        done = await _resume(agent, driver, state, decisions)
    assert tools.seen == []
    results = _results(done)
    assert _kind(results["d1"]) == "denied" and "keep a" in results["d1"].text
    assert results["d2"].text == "pretend b is gone" and not results["d2"].is_error
    assert results["d3"].text == "c: no such file" and results["d3"].is_error
    assert results["d3"].tool_call_id == "d3"
    assert done.text == "Done."


@pytest.mark.parametrize("driver", DRIVERS)
async def test_the_approval_policy_sees_validated_arguments(driver: str) -> None:
    tools = Tools()
    asked: list[tuple[str, dict[str, Any]]] = []

    def sync_policy(call: mw.ToolCall, args: dict[str, Any]) -> bool:
        asked.append((call.name, args))
        return bool(args.get("n", 0) > 10)

    async def async_policy(call: mw.ToolCall, args: dict[str, Any]) -> bool:
        return sync_policy(call, args)

    # The invalid call never reaches the policy.
    script = [
        [
            tool_call("count", {"n": 1}, id="c1"),
            tool_call("count", {"n": 99}, id="c2"),
            tool_call("count", {"n": "x"}, id="c3"),
            tool_call("delete", {"path": "a"}, id="d1"),
        ],
        "Done.",
    ]
    with MockServer(script) as server:
        policy = sync_policy if driver == "sync" else async_policy
        run = await _run(mw.Agent(server.model(), tools.all, approval=policy), driver, "Go.")
    assert asked == [("count", {"n": 1}), ("count", {"n": 99}), ("delete", {"path": "a"})]
    # The policy replaces the tool's flag: delete (approval=True) runs, count 99 pauses.
    assert [p.id for p in run.pending] == ["c2"]
    assert tools.seen == [("count", {"n": 1}), ("delete", {"path": "a"})]
    assert _kind(_results(run)["c3"]) == "invalid_arguments"


async def test_a_before_tool_call_hook_still_decides_inline() -> None:
    tools = Tools()
    script = [tool_call("delete", {"path": "a"}, id="d1"), "Done."]
    with MockServer(script) as server:
        agent = mw.Agent(server.model(), tools.all, before_tool_call=lambda call, args: True)
        run = await agent.run("Go.")
    assert run.stop_reason == "stop" and run.pending == ()
    assert tools.seen == [("delete", {"path": "a"})]


@pytest.mark.parametrize("driver", DRIVERS)
async def test_bad_decisions_are_refused_before_anything_runs(driver: str) -> None:
    tools = Tools()
    script = [
        [tool_call("delete", {"path": "a"}, id="d1"), tool_call("delete", {"path": "b"}, id="d2")],
        "Done.",
    ]
    with MockServer(script) as server:
        agent = mw.Agent(server.model(), tools.all)
        run = await _run(agent, driver, "Go.")
        bad: list[tuple[Any, str]] = [
            ({"d1": mw.Approve()}, "'d2'"),  # missing
            ({"d1": mw.Approve(), "d2": mw.Approve(), "zz": mw.Approve()}, "'zz'"),  # unknown
            ({"d1": mw.Approve(), "d2": True}, "'d2'"),  # wrong type
            (None, "'d1'"),
        ]
        for decisions, named in bad:
            with pytest.raises(ConfigurationError, match=named):
                await _resume(agent, driver, run.state, decisions)
        assert tools.seen == [] and len(server.requests) == 1
        with pytest.raises(ConfigurationError, match="'nope'"):
            await _resume(agent, driver, "nope")
        # Still resumable after the refusals.
        done = await _resume(agent, driver, run.state, {"d1": mw.Approve(), "d2": mw.Deny()})
    assert tools.seen == [("delete", {"path": "a"})] and done.text == "Done."


def test_the_state_carries_no_key_and_round_trips() -> None:
    tools = Tools()
    secret = "sk-secret-key-123456"
    with MockServer([tool_call("delete", {"path": "a"}, id="d1"), "Done."]) as server:
        agent = mw.Agent(server.model(), tools.all, api_key=secret, options={"temperature": 0.5})
        run = agent.run_sync("Go.")
    data = mw.to_json(run.state)
    assert secret.encode() not in data
    assert mw.AgentState.from_json(data) == run.state
    assert mw.from_json(data, mw.AgentState) == run.state
    assert run.state.turns == 1 and run.state.messages == run.messages


def test_every_run_has_a_state_to_resume_from() -> None:
    tools = Tools()
    script = [tool_call("count", {"n": 1}, id="c1"), "One.", "Two."]
    with MockServer(script) as server:
        first = mw.Agent(server.model(), tools.all, max_turns=1).run_sync("Go.")
        assert first.stop_reason == "max_turns"
        again = mw.Agent(server.model(), tools.all).resume_sync(first.state)
        assert again.text == "One." and again.run_id == first.run_id
        assert again.state.turns == 2
    assert tools.seen == [("count", {"n": 1})]


# --------------------------------------------------------------------------- the ledger


@pytest.mark.parametrize("driver", DRIVERS)
async def test_a_recorded_call_is_replayed_not_run_again(driver: str, tmp_path: Path) -> None:
    tools = Tools()
    store = tmp_path / "runs.db"
    script = [
        [tool_call("count", {"n": 1}, id="c1"), tool_call("delete", {"path": "a"}, id="d1")],
        "Done.",
    ]
    with MockServer(script) as server:
        run = await _run(mw.Agent(server.model(), tools.all, store=store), driver, "Go.")
        assert tools.seen == [("count", {"n": 1})] and run.stop_reason == "paused"
        # The state as it was checkpointed before the calls ran: c1 has no result in it.
        before = mw.AgentState(run_id=run.run_id, messages=run.state.messages[:2])
        assert before.messages[-1].role == "assistant"
        agent = mw.Agent(server.model(), tools.all, store=store)  # a fresh agent
        again = await _resume(agent, driver, before)
        assert again.stop_reason == "paused" and [p.id for p in again.pending] == ["d1"]
        assert tools.seen == [("count", {"n": 1})]  # replayed, not run again
        assert _results(again)["c1"].text == "counted 1"
        # By run id: the latest checkpoint, the paused one.
        done = await _resume(agent, driver, run.run_id, {"d1": mw.Approve()})
    assert tools.seen == [("count", {"n": 1}), ("delete", {"path": "a"})]
    assert done.text == "Done." and len(server.requests) == 2


def test_an_interrupted_call_is_in_doubt_unless_idempotent_or_read_only(tmp_path: Path) -> None:
    from modelwire.agent._durable import Ledger

    store = tmp_path / "runs.db"
    runs: list[str] = []

    @mw.tool
    def once(n: int) -> str:
        """Once."""
        runs.append("once")
        return "once"

    @mw.tool(idempotent=True)
    def again(n: int) -> str:
        """Again."""
        runs.append("again")
        return "again"

    @mw.tool(read_only=True)
    def look(n: int) -> str:
        """Look (changes nothing, so running it again is safe)."""
        runs.append("look")
        return "looked"

    calls = [
        tool_call("once", {"n": 1}, id="o1"),
        tool_call("again", {"n": 1}, id="a1"),
        tool_call("look", {"n": 1}, id="l1"),
    ]
    state = mw.AgentState(
        run_id="r9",
        messages=(
            mw.UserMessage(content="Go."),
            mw.AssistantMessage(
                content=tuple(calls),
                api="openai-chat",
                provider="mock",
                model="m",
                stop_reason="tool_use",
            ),
        ),
    )
    ledger = Ledger(store)  # another process started both, and died
    ledger.start("r9", "o1")
    ledger.start("r9", "a1")
    ledger.start("r9", "l1")
    ledger.save(state)
    assert list_runs(store) == ["r9"] and mw.AgentState.load(store, "r9") == state
    with MockServer(["Done."]) as server:
        done = mw.Agent(server.model(), [once, again, look], store=store).resume_sync("r9")
    results = _results(done)
    assert _kind(results["o1"]) == "in_doubt" and "not known" in results["o1"].text
    assert results["a1"].text == "again" and results["l1"].text == "looked"
    assert runs == ["again", "look"]
    assert "in_doubt" in mw.tools.FAILURE_HINTS


def test_store_and_approval_are_checked() -> None:
    with pytest.raises(ConfigurationError, match="approval"):
        mw.Agent("openai/gpt-4o", approval=True, api_key="k")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="store"):
        mw.Agent("openai/gpt-4o", store=3, api_key="k")  # type: ignore[arg-type]


def test_an_unusable_store_is_a_configuration_error_and_reading_creates_nothing(
    tmp_path: Path,
) -> None:
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"not a database " * 200)
    for store in (garbage, tmp_path, tmp_path / "missing" / "runs.db"):
        with pytest.raises(ConfigurationError, match="cannot be used as the agent's SQLite"):
            mw.Agent("openai/gpt-4o", store=store, api_key="k")
    with pytest.raises(ConfigurationError, match="cannot be used"):
        list_runs(garbage)
    absent = tmp_path / "absent.db"
    assert list_runs(absent) == []
    with pytest.raises(ConfigurationError, match="no store at"):
        mw.AgentState.load(absent, "r1")
    assert not absent.exists()


def test_decisions_of_the_wrong_shape_are_refused() -> None:
    state = mw.AgentState(run_id="r", messages=(mw.UserMessage(content="hi"),))
    agent = mw.Agent("openai/gpt-4o", api_key="k")
    with pytest.raises(ConfigurationError, match="decisions must be a dict"):
        agent.resume_sync(state, ["c1"])  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="reason"):
        mw.Deny(5)  # type: ignore[arg-type]


# --------------------------------------------------------------------------- processes


def _child(work: Path, *args: str) -> dict[str, Any]:
    subprocess.run([sys.executable, str(SCRIPT), str(work), *args], check=True, timeout=60)
    out: dict[str, Any] = json.loads((work / "out.json").read_text())
    return out


def _log(work: Path) -> list[str]:
    path = work / "log"
    return path.read_text().splitlines() if path.exists() else []


def test_a_paused_run_resumes_in_another_process(tmp_path: Path) -> None:
    script = _three_deletes()
    with MockServer(script) as server:
        (tmp_path / "model.json").write_bytes(mw.to_json(server.model()))
        paused = _child(tmp_path, "pause")
        assert paused["stop_reason"] == "paused" and _log(tmp_path) == []
        state = mw.AgentState.from_json((tmp_path / "state.json").read_bytes())
        assert [p.id for p in state.pending] == ["d1", "d2", "d3"]
        decisions = {"d1": "approve", "d2": "deny:keep b", "d3": "output:c was already gone"}
        done = _child(tmp_path, "resume", json.dumps(decisions))
        sent = json.dumps(server.requests[1].json())
    assert _log(tmp_path) == ["delete a"]
    assert done["stop_reason"] == "stop" and done["text"] == "Done."
    by_id = {r["id"]: r for r in done["results"]}
    assert by_id["d1"]["text"] == "deleted a"
    assert by_id["d2"]["failure"] == "denied" and "keep b" in by_id["d2"]["text"]
    assert by_id["d3"]["text"] == "c was already gone" and not by_id["d3"]["error"]
    assert "keep b" in sent and "c was already gone" in sent and "deleted a" in sent


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
@pytest.mark.parametrize("idempotent", [False, True])
def test_a_killed_run_resumes_by_id_in_another_process(tmp_path: Path, idempotent: bool) -> None:
    script = [
        [tool_call("count", {"n": 1}, id="c1"), tool_call("hang", {"text": "x"}, id="h1")],
        "Done.",
    ]
    flag = ["idempotent"] if idempotent else []
    with MockServer(script) as server:
        (tmp_path / "model.json").write_bytes(mw.to_json(server.model()))
        proc = subprocess.Popen(
            [sys.executable, str(SCRIPT), str(tmp_path), "start", *flag],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "started"  # hang is running
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.wait(timeout=60)
            assert proc.stdout is not None
            proc.stdout.close()
        assert proc.returncode == -signal.SIGKILL
        assert _log(tmp_path) == ["count 1", "hang x"]
        assert list_runs(tmp_path / "runs.db") == ["r1"]
        done = _child(tmp_path, "restart", *flag)
    by_id = {r["id"]: r for r in done["results"]}
    assert by_id["c1"]["text"] == "counted 1"  # replayed from the ledger
    if idempotent:
        assert _log(tmp_path) == ["count 1", "hang x", "hang x"]
        assert by_id["h1"]["text"] == "wrote x" and not by_id["h1"]["error"]
    else:
        assert _log(tmp_path) == ["count 1", "hang x"]
        assert by_id["h1"]["failure"] == "in_doubt"
    assert done["text"] == "Done."
