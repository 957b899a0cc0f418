"""Runs that survive: paused calls, the run's state as JSON, and the call ledger.

A call that needs approval (``Agent(approval=...)``, default the tool's own
``approval`` flag) with no ``before_tool_call`` hook is not executed: the run ends
``stop_reason="paused"`` with ``run.pending`` and ``run.state``, an
:class:`AgentState` that round-trips through JSON (``mw.to_json`` /
``AgentState.from_json``) and holds no key. ``agent.resume(state, decisions)``
goes on, in any process, with one decision per pending call.

The ledger (``Agent(store=PATH)``, SQLite; in memory when absent) records each
call id, scoped by run id, before it executes and its result after, and the run's
latest state: a resumed run replays a recorded result and never executes a
recorded call again; a call recorded as started with no result is ``in_doubt``
(run again only when the tool is ``idempotent`` or read-only).
"""

from __future__ import annotations

import os
import sqlite3
import threading
from collections.abc import Mapping
from typing import Any, TypeAlias

import msgspec

from ..errors import ConfigurationError, OutputWriteError
from ..tools import ToolOutput
from ..types import Message, ToolResultMessage, Usage
from ..types._json import from_json, to_json

__all__ = [
    "AgentState",
    "Approve",
    "Decision",
    "Deny",
    "Ledger",
    "PendingCall",
    "check_decisions",
    "list_runs",
    "load_state",
]


class PendingCall(msgspec.Struct, frozen=True, kw_only=True):
    """A tool call a paused run waits on: the application approves, denies or answers it.

    Example:
        ```python
        import modelwire as mw

        call = mw.PendingCall(id="call_1", name="delete", arguments={"path": "a.txt"})
        print(call.name, call.arguments)  # delete {'path': 'a.txt'}
        ```
    """

    id: str
    """The call id (the key of its decision in ``agent.resume(state, decisions)``)."""
    name: str
    """The tool's name."""
    arguments: dict[str, Any]
    """The arguments, validated against the tool's schema."""


class AgentState(msgspec.Struct, frozen=True, kw_only=True):
    """Where a run stands: enough to continue it in another process, never a key.

    ``run.state`` of every run; JSON with ``mw.to_json(state)`` and
    ``AgentState.from_json(data)`` (or ``mw.from_json(data, mw.AgentState)``);
    continued with ``agent.resume(state, decisions)``. An agent with a ``store``
    also keeps the latest state of each run: ``AgentState.load(store, run_id)``.

    Example:
        ```python
        import modelwire as mw

        state = mw.AgentState(run_id="r1", messages=(mw.UserMessage(content="Hi"),))
        print(mw.AgentState.from_json(mw.to_json(state)) == state)  # True
        ```
    """

    run_id: str
    """The run's id (scopes its calls in the ledger)."""
    messages: tuple[Message, ...] = ()
    """The transcript."""
    pending: tuple[PendingCall, ...] = ()
    """The calls waiting for a decision (empty unless the run paused)."""
    usage: Usage = msgspec.field(default_factory=Usage)
    """Tokens and cost of the run's responses so far."""
    turns: int = 0
    """Model responses requested so far."""

    @classmethod
    def from_json(cls, data: bytes | str) -> AgentState:
        """The state in ``data`` (what ``mw.to_json(state)`` wrote).

        Args:
            data: JSON text or bytes.

        Returns:
            The state.

        Raises:
            ConfigurationError: ``data`` is not the JSON of a state.
        """
        return from_json(data, cls)

    @classmethod
    def load(cls, store: str | os.PathLike[str], run_id: str) -> AgentState:
        """The latest state of run ``run_id`` kept in the SQLite file ``store``.

        Args:
            store: The ``Agent(store=...)`` path.
            run_id: The run's id.

        Returns:
            The state.

        Raises:
            ConfigurationError: No run ``run_id`` in ``store``.
        """
        if not os.path.exists(store):  # reading creates nothing
            raise ConfigurationError(f"no store at {os.fspath(store)!r} (no run {run_id!r})")
        state = Ledger(store).load(run_id)
        if state is None:
            raise ConfigurationError(f"no run {run_id!r} in {os.fspath(store)!r}")
        return state


class Approve(msgspec.Struct, frozen=True):
    """Decision for a pending call: run it (the remaining judgements still apply).

    Example:
        ```python
        import modelwire as mw

        decisions = {"call_1": mw.Approve()}
        print(type(decisions["call_1"]).__name__)  # Approve
        ```
    """


class Deny(msgspec.Struct, frozen=True):
    """Decision for a pending call: do not run it; the model gets an error result of
    kind ``denied`` carrying ``reason``.

    Example:
        ```python
        import modelwire as mw

        print(mw.Deny("not on Fridays").reason)  # not on Fridays
        ```
    """

    reason: str = "no reason given"
    """Why, for the model."""

    def __post_init__(self) -> None:
        if not isinstance(self.reason, str):
            raise ConfigurationError(f"Deny(reason) must be a string, got {self.reason!r}")


#: A decision for a pending call: ``Approve()``, ``Deny(reason)``, or its result
#: (a ``ToolOutput`` or a ``ToolResultMessage``), used unexecuted.
Decision: TypeAlias = Approve | Deny | ToolOutput | ToolResultMessage


def check_decisions(state: AgentState, decisions: Mapping[str, Any] | None) -> dict[str, Any]:
    """``decisions`` checked against ``state.pending``: one of the right type for
    each pending call, none for another id (``ConfigurationError`` naming it)."""
    if decisions is not None and not isinstance(decisions, Mapping):
        raise ConfigurationError(
            f"decisions must be a dict of call id -> decision, got {type(decisions).__name__}"
        )
    given = dict(decisions or {})
    pending = {p.id for p in state.pending}
    for call_id, decision in given.items():
        if call_id not in pending:
            raise ConfigurationError(
                f"decision for {call_id!r}, which is not a pending call of run "
                f"{state.run_id!r} (pending: {', '.join(sorted(pending)) or 'none'})"
            )
        if not isinstance(decision, Approve | Deny | ToolOutput | ToolResultMessage):
            raise ConfigurationError(
                f"the decision for {call_id!r} is a {type(decision).__name__}; use "
                "mw.Approve(), mw.Deny(reason), a mw.ToolOutput or a mw.ToolResultMessage"
            )
    for p in state.pending:
        if p.id not in given:
            raise ConfigurationError(f"no decision for the pending call {p.id!r} ({p.name})")
    return given


_SCHEMA = """
CREATE TABLE IF NOT EXISTS calls (
    run_id TEXT NOT NULL, call_id TEXT NOT NULL, result BLOB,
    PRIMARY KEY (run_id, call_id));
CREATE TABLE IF NOT EXISTS runs (
    run_id TEXT PRIMARY KEY, state BLOB NOT NULL, updated REAL NOT NULL);
"""

#: What the ledger knows of a call: not recorded, started (no result), or its result.
STARTED = "started"


class Ledger:
    """The call ledger and run checkpoints: a SQLite file (WAL, one transaction per
    record, safe across processes), or memory when ``path`` is ``None``."""

    def __init__(self, path: str | os.PathLike[str] | None) -> None:
        self.path = None if path is None else os.fspath(path)
        self._calls: dict[tuple[str, str], bytes | None] = {}
        self._runs: dict[str, bytes] = {}
        self._lock = threading.Lock()
        if self.path is not None:
            db = self._connect()
            try:
                db.execute("PRAGMA journal_mode=WAL")
                db.executescript(_SCHEMA)
            except sqlite3.Error as exc:
                raise self._unusable(exc) from None
            finally:
                db.close()

    def _unusable(self, exc: sqlite3.Error) -> ConfigurationError:
        return ConfigurationError(
            f"store {self.path!r} cannot be used as the agent's SQLite store ({exc}); "
            "pass the path of a new or existing SQLite file in a writable directory"
        )

    def _connect(self) -> sqlite3.Connection:
        assert self.path is not None
        try:
            db = sqlite3.connect(self.path, timeout=30, isolation_level=None)
            db.execute("PRAGMA busy_timeout=30000")
        except sqlite3.Error as exc:
            raise self._unusable(exc) from None
        return db

    def _write(self, sql: str, params: tuple[Any, ...]) -> None:
        db = self._connect()
        try:
            db.execute("BEGIN IMMEDIATE")
            db.execute(sql, params)
            db.execute("COMMIT")
        except sqlite3.Error as exc:
            raise OutputWriteError(
                f"could not write to the agent's store {self.path!r}: {exc}"
            ) from None
        finally:
            db.close()

    def _read(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        db = self._connect()
        try:
            return db.execute(sql, params).fetchall()
        except sqlite3.Error as exc:
            raise self._unusable(exc) from None
        finally:
            db.close()

    def lookup(self, run_id: str, call_id: str) -> ToolResultMessage | str | None:
        """A recorded result, ``STARTED`` (recorded with no result: in doubt), or ``None``."""
        if self.path is None:
            with self._lock:
                if (run_id, call_id) not in self._calls:
                    return None
                data = self._calls[(run_id, call_id)]
        else:
            rows = self._read(
                "SELECT result FROM calls WHERE run_id = ? AND call_id = ?", (run_id, call_id)
            )
            if not rows:
                return None
            data = rows[0][0]
        return STARTED if data is None else from_json(data, ToolResultMessage)

    def start(self, run_id: str, call_id: str) -> None:
        """Record that ``call_id`` is about to execute (before it does)."""
        if self.path is None:
            with self._lock:
                self._calls[(run_id, call_id)] = None
            return
        self._write(
            "INSERT OR REPLACE INTO calls (run_id, call_id, result) VALUES (?, ?, NULL)",
            (run_id, call_id),
        )

    def finish(self, run_id: str, result: ToolResultMessage) -> None:
        """Record the result of a call."""
        data = to_json(result)
        if self.path is None:
            with self._lock:
                self._calls[(run_id, result.tool_call_id)] = data
            return
        self._write(
            "INSERT OR REPLACE INTO calls (run_id, call_id, result) VALUES (?, ?, ?)",
            (run_id, result.tool_call_id, data),
        )

    def save(self, state: AgentState) -> None:
        """Checkpoint ``state`` as the latest of its run."""
        import time

        data = to_json(state)
        if self.path is None:
            with self._lock:
                self._runs[state.run_id] = data
            return
        self._write(
            "INSERT OR REPLACE INTO runs (run_id, state, updated) VALUES (?, ?, ?)",
            (state.run_id, data, time.time()),
        )

    def load(self, run_id: str) -> AgentState | None:
        """The latest checkpoint of ``run_id``, if any."""
        if self.path is None:
            with self._lock:
                data = self._runs.get(run_id)
        else:
            rows = self._read("SELECT state FROM runs WHERE run_id = ?", (run_id,))
            data = rows[0][0] if rows else None
        return None if data is None else from_json(data, AgentState)

    def runs(self) -> list[str]:
        """The stored run ids, latest first."""
        if self.path is None:
            with self._lock:
                return list(reversed(self._runs))
        return [r[0] for r in self._read("SELECT run_id FROM runs ORDER BY updated DESC", ())]


def list_runs(store: str | os.PathLike[str]) -> list[str]:
    """The ids of the runs kept in the SQLite file ``store`` (``Agent(store=...)``),
    the latest checkpointed first; load one with ``AgentState.load(store, run_id)``.

    Args:
        store: The ``Agent(store=...)`` path.

    Returns:
        Run ids, latest first (empty when the file has none).

    Example:
        ```python
        import tempfile, os
        from modelwire.agent import list_runs

        print(list_runs(os.path.join(tempfile.mkdtemp(), "runs.db")))  # []
        ```
    """
    if not os.path.exists(store):  # reading creates nothing
        return []
    return Ledger(store).runs()


def load_state(store: str | os.PathLike[str], run_id: str) -> AgentState:
    """``AgentState.load(store, run_id)``."""
    return AgentState.load(store, run_id)
