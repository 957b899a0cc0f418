"""The log's tables, a row as it is read back (:class:`LogRow`), and the migrations:
the schema is versioned with ``PRAGMA user_version`` and migrated forward, one step per
version, each in a transaction that holds the write lock (two processes opening a new
file migrate it once)."""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["SCHEMA_VERSION", "LogRow", "connect"]

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
    (
        # Fragments (chat -f) and attachments (chat -a), each stored once by the sha256
        # of its content however many calls send it: messages_json refers to them by
        # hash ({"type": "text", "fragment": H}, an image's {"attachment": H} instead
        # of its base64 "data"), and the link tables list each row's, in order.
        """CREATE TABLE fragments (
            id INTEGER PRIMARY KEY,
            sha256 TEXT NOT NULL UNIQUE,
            content TEXT NOT NULL,
            source TEXT,
            created REAL NOT NULL
        )""",
        """CREATE TABLE response_fragments (
            response_id INTEGER NOT NULL REFERENCES responses (id),
            fragment_id INTEGER NOT NULL REFERENCES fragments (id),
            position INTEGER NOT NULL,
            PRIMARY KEY (response_id, position)
        )""",
        "CREATE INDEX response_fragments_fragment ON response_fragments (fragment_id)",
        """CREATE TABLE attachments (
            id INTEGER PRIMARY KEY,
            sha256 TEXT NOT NULL UNIQUE,
            mime_type TEXT NOT NULL,
            size INTEGER NOT NULL,
            content BLOB NOT NULL,
            source TEXT,
            created REAL NOT NULL
        )""",
        """CREATE TABLE response_attachments (
            response_id INTEGER NOT NULL REFERENCES responses (id),
            attachment_id INTEGER NOT NULL REFERENCES attachments (id),
            position INTEGER NOT NULL,
            PRIMARY KEY (response_id, position)
        )""",
        "CREATE INDEX response_attachments_attachment ON response_attachments (attachment_id)",
    ),
    # The JSON Schema a structured call (``output=``, ``--schema``) answered with.
    ("ALTER TABLE responses ADD COLUMN schema_json TEXT",),
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
    from ...errors import ConfigurationError

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
    fragments: list[dict[str, Any]] = field(default_factory=list)
    """The fragments the call sent, in order: ``sha256``, ``source``, ``bytes``."""
    attachments: list[dict[str, Any]] = field(default_factory=list)
    """Its attachments: ``sha256``, ``mime_type``, ``bytes``, ``source``."""
    schema: dict[str, Any] | None = None
    """The JSON Schema of a structured call (``output=``, ``--schema``), else ``None``."""

    def to_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)
