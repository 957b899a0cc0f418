"""The call log: one SQLite file recording every model call made with ``log=``.

Each row is one response: the prompt (the last user message), the whole
conversation sent plus the answer, model, provider, usage, cost, duration, the
error kind of a failed call and its conversation id. No request header and no
option is stored, so no key or credential can reach the file (DESIGN §3 rule 6);
a key that a provider quoted back inside an answer is redacted like everywhere else.

The file uses SQLite's write-ahead log (https://sqlite.org/wal.html): readers never
block the writer, several processes may append at once (``busy_timeout`` waits for
the lock), and each row is one committed transaction, so a process killed at any
point leaves every earlier row intact. The schema is versioned with
``PRAGMA user_version`` and migrated forward, one step per version, in a transaction.
Full-text search is FTS5 (https://sqlite.org/fts5.html), an external-content
table kept in step by triggers.

The library writes here only when a call passes ``log=PATH``; the CLI passes its
default file (``modelwire logs --path``) unless ``--no-log`` or ``log = false`` in
``config.toml``.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import closing
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .._wire.trace import TraceRecord
    from ..types import AssistantMessage, Context, Model

__all__ = [
    "SCHEMA_VERSION",
    "CallLog",
    "LogRow",
    "check_log_path",
    "connect",
    "new_conversation_id",
    "recorder",
    "rows_json",
]

# Each entry moves the schema from version i to i + 1 (``PRAGMA user_version``).
_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE responses (
            id INTEGER PRIMARY KEY,
            conversation_id TEXT NOT NULL,
            started REAL NOT NULL,
            duration_ms REAL,
            api TEXT NOT NULL,
            provider TEXT NOT NULL,
            model TEXT NOT NULL,
            model_json TEXT,
            prompt TEXT NOT NULL,
            system TEXT,
            messages_json TEXT NOT NULL,
            response TEXT NOT NULL,
            stop_reason TEXT,
            error_kind TEXT,
            error_message TEXT,
            response_id TEXT,
            input_tokens INTEGER NOT NULL DEFAULT 0,
            output_tokens INTEGER NOT NULL DEFAULT 0,
            cache_read_tokens INTEGER NOT NULL DEFAULT 0,
            cache_write_tokens INTEGER NOT NULL DEFAULT 0,
            cost REAL NOT NULL DEFAULT 0
        )""",
        "CREATE INDEX responses_conversation ON responses (conversation_id, id)",
        "CREATE INDEX responses_started ON responses (started)",
        """CREATE VIRTUAL TABLE responses_fts USING fts5(
            prompt, response, system, content='responses', content_rowid='id'
        )""",
        """CREATE TRIGGER responses_ai AFTER INSERT ON responses BEGIN
            INSERT INTO responses_fts (rowid, prompt, response, system)
            VALUES (new.id, new.prompt, new.response, coalesce(new.system, ''));
        END""",
        """CREATE TRIGGER responses_ad AFTER DELETE ON responses BEGIN
            INSERT INTO responses_fts (responses_fts, rowid, prompt, response, system)
            VALUES ('delete', old.id, old.prompt, old.response, coalesce(old.system, ''));
        END""",
    ),
)
SCHEMA_VERSION = len(_MIGRATIONS)


def connect(path: str | os.PathLike[str]) -> sqlite3.Connection:
    """Open (creating and migrating) the log at ``path``."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE below).
    conn = sqlite3.connect(p, timeout=30, isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout = 30000")
        conn.execute("PRAGMA journal_mode = WAL")
        _migrate(conn, p)
    except BaseException:
        conn.close()
        raise
    conn.row_factory = sqlite3.Row
    return conn


def _migrate(conn: sqlite3.Connection, path: Path) -> None:
    from ..errors import ConfigurationError

    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise ConfigurationError(
            f"the log {path} has schema version {version}, newer than this modelwire "
            f"understands ({SCHEMA_VERSION}): upgrade modelwire or use another log file"
        )
    while version < SCHEMA_VERSION:
        # BEGIN IMMEDIATE takes the write lock first: two processes creating the file
        # at once migrate it once (the second sees the new version and does nothing).
        conn.execute("BEGIN IMMEDIATE")
        try:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version < SCHEMA_VERSION:
                for statement in _MIGRATIONS[version]:
                    conn.execute(statement)
                version += 1
                conn.execute(f"PRAGMA user_version = {version}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise


def new_conversation_id() -> str:
    """A fresh conversation id (a UUID's 32 hex digits; sortable enough to read)."""
    return uuid.uuid4().hex


@dataclass(frozen=True)
class LogRow:
    """One logged response, as ``modelwire logs --json`` prints it."""

    id: int
    conversation_id: str
    started: float
    duration_ms: float | None
    api: str
    provider: str
    model: str
    prompt: str
    system: str | None
    response: str
    stop_reason: str | None
    error_kind: str | None
    error_message: str | None
    response_id: str | None
    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    cost: float
    messages: list[Any]

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


_COLUMNS = (
    "id, conversation_id, started, duration_ms, api, provider, model, prompt, system, "
    "response, stop_reason, error_kind, error_message, response_id, input_tokens, "
    "output_tokens, cache_read_tokens, cache_write_tokens, cost, messages_json"
)


def _row(r: sqlite3.Row) -> LogRow:
    values = dict(r)
    messages = json.loads(values.pop("messages_json"))
    return LogRow(**values, messages=messages)


class CallLog:
    """The log file at ``path``: append a response, read rows back."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def append(
        self,
        *,
        conversation_id: str,
        model: Model,
        context: Context,
        message: AssistantMessage,
        started: float,
        duration_ms: float | None,
    ) -> int:
        """Record one response; returns its row id."""
        from ..types import UserMessage, to_json

        prompt = ""
        for m in reversed(context.messages):
            if isinstance(m, UserMessage):
                prompt = _text(m.content)
                break
        conversation = json.loads(to_json(context.with_messages(message)))["messages"]
        u = message.usage
        err = message.error
        values = (
            conversation_id, started, duration_ms, model.api, model.provider, model.id,
            to_json(model).decode(), prompt, context.system_prompt,
            json.dumps(conversation, ensure_ascii=False), message.text, message.stop_reason,
            err.kind if err else None, err.message if err else None, message.response_id,
            u.input, u.output, u.cache_read, u.cache_write, u.cost.total,
        )  # fmt: skip
        with closing(connect(self.path)) as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                cur = conn.execute(
                    "INSERT INTO responses (conversation_id, started, duration_ms, api, "
                    "provider, model, model_json, prompt, system, messages_json, response, "
                    "stop_reason, error_kind, error_message, response_id, input_tokens, "
                    "output_tokens, cache_read_tokens, cache_write_tokens, cost) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    values,
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        return int(cur.lastrowid or 0)

    def rows(
        self,
        *,
        limit: int | None = None,
        search: str | None = None,
        conversation_id: str | None = None,
    ) -> list[LogRow]:
        """The newest ``limit`` rows (all when ``None``), oldest first; ``search`` is an
        FTS5 query over prompt, response and system prompt."""
        where: list[str] = []
        params: list[Any] = []
        if search:
            where.append("id IN (SELECT rowid FROM responses_fts WHERE responses_fts MATCH ?)")
            params.append(_fts_query(search))
        if conversation_id:
            where.append("conversation_id = ?")
            params.append(conversation_id)
        sql = f"SELECT {_COLUMNS} FROM responses"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY id DESC"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        with closing(connect(self.path)) as conn:
            found = [_row(r) for r in conn.execute(sql, params)]
        return found[::-1]

    def last_conversation(self) -> str | None:
        """The conversation id of the newest row."""
        with closing(connect(self.path)) as conn:
            r = conn.execute("SELECT conversation_id FROM responses ORDER BY id DESC LIMIT 1")
            found = r.fetchone()
        return None if found is None else str(found[0])

    def conversation(self, conversation_id: str) -> tuple[Model, Context] | None:
        """The model and the conversation as it stood after its newest response."""
        from ..types import Context, Model, from_json

        with closing(connect(self.path)) as conn:
            r = conn.execute(
                "SELECT model_json, system, messages_json FROM responses "
                "WHERE conversation_id = ? ORDER BY id DESC LIMIT 1",
                (conversation_id,),
            ).fetchone()
        if r is None:
            return None
        model = from_json(r["model_json"], Model)
        ctx = from_json(
            json.dumps({"system_prompt": r["system"], "messages": json.loads(r["messages_json"])}),
            Context,
        )
        return model, ctx

    def totals(self) -> list[dict[str, Any]]:
        """Cost and tokens per model and UTC day, oldest day first."""
        sql = (
            "SELECT date(started, 'unixepoch') AS day, provider || '/' || model AS model, "
            "count(*) AS calls, sum(input_tokens) AS input_tokens, "
            "sum(output_tokens) AS output_tokens, sum(cache_read_tokens) AS cache_read_tokens, "
            "sum(cache_write_tokens) AS cache_write_tokens, sum(cost) AS cost "
            "FROM responses GROUP BY day, provider, model ORDER BY day, model"
        )
        with closing(connect(self.path)) as conn:
            return [dict(r) for r in conn.execute(sql)]


def _fts_query(text: str) -> str:
    # Each word a quoted FTS5 string (https://sqlite.org/fts5.html#fts5_strings): a
    # user's search text is words to find, never query syntax that could fail to parse.
    words = text.split()
    return " ".join('"' + w.replace('"', '""') + '"' for w in words) or '""'


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts: Sequence[Any] = content
    return "\n".join(getattr(p, "text", "") for p in parts if getattr(p, "text", None))


def recorder(
    path: str | os.PathLike[str],
    model: Model,
    conversation_id: str | None = None,
    *,
    on_error: Callable[[Exception], None] | None = None,
) -> Callable[[TraceRecord], None]:
    """A trace observer that appends the call's final message to the log at ``path``
    (one observer per call; ``model`` is the call's, kept whole so a conversation can
    be continued at the same address). It reads only the context and message records."""
    from .._wire.trace import ContextTrace, MessageTrace

    log = CallLog(path)
    cid = conversation_id or new_conversation_id()
    state: dict[str, Any] = {}

    def observe(record: TraceRecord) -> None:
        if isinstance(record, ContextTrace):
            state.update(context=record.context, t0=time.time(), m0=time.monotonic())
        elif isinstance(record, MessageTrace) and "context" in state:
            try:
                log.append(conversation_id=cid, model=model, context=state["context"],
                           message=record.message, started=state["t0"],
                           duration_ms=(time.monotonic() - state["m0"]) * 1000)  # fmt: skip
            except (sqlite3.Error, OSError) as exc:
                if on_error is None:
                    raise
                on_error(exc)

    return observe


def rows_json(rows: Sequence[LogRow]) -> Iterator[str]:
    """One JSON line per row."""
    for r in rows:
        yield json.dumps(r.to_dict(), ensure_ascii=False)


def check_log_path(log: object) -> Path:
    """The ``log=`` option as a path; a ``ConfigurationError`` for anything else."""
    from ..errors import ConfigurationError

    if isinstance(log, bool) or not isinstance(log, str | os.PathLike):
        raise ConfigurationError(
            f"log must be the path of a SQLite file to record the call in, got {type(log).__name__}"
        )
    path = Path(log)
    if path.is_dir():
        raise ConfigurationError(f"log={str(path)!r} is a directory; give a file path")
    return path
