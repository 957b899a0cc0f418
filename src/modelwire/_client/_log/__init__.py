"""The call log: one SQLite file recording every model call made with ``log=``.

Each row is one response: the prompt (the last user message), the whole
conversation sent plus the answer, model, provider, usage, cost, duration, the
error kind of a failed call, its conversation id and the JSON Schema of a
structured call (``output=``). No request header and no other option is stored, so
no key or credential can reach the file (DESIGN §3 rule 6);
a key that a provider quoted back inside an answer is redacted like everywhere else.
A fragment's text (``chat -f``) and an attachment's bytes (an image, a PDF, audio)
are stored once, by sha256, in ``fragments`` and ``attachments``; a row's
conversation refers to them by hash and the link tables list each row's in order,
so a large file sent with many prompts takes its size once (:class:`Inputs`).

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
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..._wire.trace import TraceRecord
    from ...types import AssistantMessage, Context, Model

from ._inputs import Inputs, add_inputs, expanded, fragment_blocks
from ._schema import SCHEMA_VERSION, LogRow, connect

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


def new_conversation_id() -> str:
    """A fresh conversation id (a UUID's 32 hex digits; sortable enough to read)."""
    return uuid.uuid4().hex


_COLUMNS = (
    "id, conversation_id, started, duration_ms, api, provider, model, prompt, system, "
    "response, stop_reason, error_kind, error_message, response_id, input_tokens, "
    "output_tokens, cache_read_tokens, cache_write_tokens, cost, messages_json, schema_json"
)


def _row(r: sqlite3.Row) -> LogRow:
    values = dict(r)
    messages = json.loads(values.pop("messages_json"))
    schema = values.pop("schema_json", None)
    values["schema"] = json.loads(schema) if schema else None
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
        fragments: Mapping[str, str | None] | None = None,
        attachments: Mapping[str, str] | None = None,
        schema: Mapping[str, Any] | None = None,
    ) -> int:
        """Record one response; returns its row id. ``fragments`` maps the text of each
        fragment the call added to its source, ``attachments`` an attachment's sha256 to
        its source: both are stored once by hash (see :class:`Inputs`). ``schema``: the
        JSON Schema a structured call answered with."""
        from ...types import UserMessage, to_json

        declared = dict(fragments or {})
        prompt = ""
        for m in reversed(context.messages):
            if isinstance(m, UserMessage):
                prompt = _text(m.content, skip=fragment_blocks(declared))
                break
        conversation = json.loads(to_json(context.with_messages(message)))["messages"]
        u = message.usage
        err = message.error
        with closing(connect(self.path)) as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                inputs = Inputs(conn, declared, attachments or {}, started)
                conversation = inputs.store(conversation)
                values = (
                    conversation_id, started, duration_ms, model.api, model.provider, model.id,
                    to_json(model).decode(), prompt, context.system_prompt,
                    json.dumps(conversation, ensure_ascii=False), message.text,
                    message.stop_reason, err.kind if err else None,
                    err.message if err else None, message.response_id, u.input, u.output,
                    u.cache_read, u.cache_write, u.cost.total,
                    None if schema is None else json.dumps(schema, ensure_ascii=False),
                )  # fmt: skip
                cur = conn.execute(
                    "INSERT INTO responses (conversation_id, started, duration_ms, api, "
                    "provider, model, model_json, prompt, system, messages_json, response, "
                    "stop_reason, error_kind, error_message, response_id, input_tokens, "
                    "output_tokens, cache_read_tokens, cache_write_tokens, cost, schema_json) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    values,
                )
                inputs.link(int(cur.lastrowid or 0))
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
            if found:
                add_inputs(conn, found)
        return found[::-1]

    def last_conversation(self) -> str | None:
        """The conversation id of the newest row."""
        with closing(connect(self.path)) as conn:
            r = conn.execute("SELECT conversation_id FROM responses ORDER BY id DESC LIMIT 1")
            found = r.fetchone()
        return None if found is None else str(found[0])

    def conversation_ids(self, prefix: str) -> list[str]:
        """The conversation ids starting with ``prefix``, newest first."""
        with closing(connect(self.path)) as conn:
            found = conn.execute(
                "SELECT conversation_id FROM responses WHERE substr(conversation_id, 1, ?) = ? "
                "GROUP BY conversation_id ORDER BY max(id) DESC",
                (len(prefix), prefix),
            )
            return [str(r[0]) for r in found]

    def conversation(self, conversation_id: str) -> tuple[Model, Context] | None:
        """The model and the conversation as it stood after its newest response."""
        from ...types import Context, Model, from_json

        with closing(connect(self.path)) as conn:
            r = conn.execute(
                "SELECT model_json, system, messages_json FROM responses "
                "WHERE conversation_id = ? ORDER BY id DESC LIMIT 1",
                (conversation_id,),
            ).fetchone()
            if r is None:
                return None
            # The fragments and attachments put back: the same messages as were sent.
            messages = expanded(conn, json.loads(r["messages_json"]), self.path)
        model = from_json(r["model_json"], Model)
        ctx = from_json(json.dumps({"system_prompt": r["system"], "messages": messages}), Context)
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


def _text(content: Any, skip: frozenset[str] = frozenset()) -> str:
    if isinstance(content, str):
        return content
    parts: Sequence[Any] = content
    texts = (getattr(p, "text", None) for p in parts)
    return "\n".join(t for t in texts if t and t not in skip)


def recorder(
    path: str | os.PathLike[str],
    model: Model,
    conversation_id: str | None = None,
    *,
    on_error: Callable[[Exception], None] | None = None,
    fragments: Mapping[str, str | None] | None = None,
    attachments: Mapping[str, str] | None = None,
    schema: Mapping[str, Any] | None = None,
) -> Callable[[TraceRecord], None]:
    """A trace observer that appends the call's final message to the log at ``path``
    (one observer per call; ``model`` is the call's, kept whole so a conversation can
    be continued at the same address). It reads only the context and message records.
    ``fragments``, ``attachments`` and ``schema`` go to :meth:`CallLog.append`."""
    from ..._wire.trace import ContextTrace, MessageTrace

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
                           duration_ms=(time.monotonic() - state["m0"]) * 1000,
                           fragments=fragments, attachments=attachments,
                           schema=schema)  # fmt: skip
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
    from ...errors import ConfigurationError

    if isinstance(log, bool) or not isinstance(log, str | os.PathLike):
        raise ConfigurationError(
            f"log must be the path of a SQLite file to record the call in, got {type(log).__name__}"
        )
    path = Path(log)
    if path.is_dir():
        raise ConfigurationError(f"log={str(path)!r} is a directory; give a file path")
    return path
