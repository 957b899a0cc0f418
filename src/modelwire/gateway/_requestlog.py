"""The gateway's request log: ``[gateway] log = "gateway.db"``.

The file is the CLI's call log (:mod:`modelwire._client._log`, read by ``modelwire logs
--path``-style tools): every request that reached a backend is one ``responses`` row
(conversation, answer, backend model, usage, cost, duration, error kind). Next to it,
the table ``gateway_requests`` has one row per request the gateway answered — also
those it refused (401, 403, 429…) — with what only the gateway knows: the key's
*name* (never the key or its hash), the model name the client asked for, the client
API, the HTTP status, latency and first-token time, usage and cost, and the
``responses`` row it produced (``response_row``).

Rows are written off the event loop (a thread), after the answer is sent.
"""

from __future__ import annotations

import os
import sqlite3
import threading
from contextlib import closing
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from .._client._log import CallLog, connect, new_conversation_id

if TYPE_CHECKING:
    from ._observe import Exchange

__all__ = ["RequestLog"]

_TABLE = """CREATE TABLE IF NOT EXISTS gateway_requests (
    id INTEGER PRIMARY KEY,
    started REAL NOT NULL,
    key_name TEXT,
    model TEXT,
    api TEXT,
    path TEXT NOT NULL,
    status INTEGER NOT NULL,
    error_kind TEXT,
    latency_ms REAL NOT NULL,
    first_token_ms REAL,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    cache_read_tokens INTEGER NOT NULL DEFAULT 0,
    cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    cost REAL NOT NULL DEFAULT 0,
    response_row INTEGER
)"""


class RequestLog:
    """Appends one request to the log file at ``path``."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)
        self._calls = CallLog(self.path)
        self._ready = False
        self._lock = threading.Lock()

    def append(self, ex: Exchange) -> None:
        """Write the request's rows; a failing disk is reported, never raised (the
        answer was sent already)."""
        try:
            self._append(ex)
        except (sqlite3.Error, OSError) as exc:
            import logging

            logging.getLogger("modelwire.gateway").warning(
                "the request log %s could not be written: %s", self.path, exc
            )

    def _append(self, ex: Exchange) -> None:
        import time

        latency = (time.perf_counter() - ex.t0) * 1000
        row = None
        m = ex.logged()  # no secret, whatever the backend echoed
        if m is not None and ex.target is not None and ex.context is not None:
            target = ex.target
            if target.base_url:  # its userinfo and query values may be credentials
                from .._redact import display_url

                target = msgspec.structs.replace(target, base_url=display_url(target.base_url))
            row = self._calls.append(
                conversation_id=new_conversation_id(), model=target, context=ex.context,
                message=m, started=ex.started, duration_ms=latency,
            )  # fmt: skip
        first = None if ex.first_token is None else (ex.first_token - ex.t0) * 1000
        u = m.usage if m is not None else None
        values: tuple[Any, ...] = (
            ex.started, ex.key, ex.model, ex.frontend, ex.path, ex.status,
            m.error.kind if m is not None and m.error is not None else None, latency, first,
            u.input if u else 0, u.output if u else 0, u.cache_read if u else 0,
            u.cache_write if u else 0, u.cost.total if u else 0.0, row,
        )  # fmt: skip
        with closing(connect(self.path)) as conn:
            if not self._ready:
                with self._lock:
                    conn.execute(_TABLE)
                    self._ready = True
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute(
                    "INSERT INTO gateway_requests (started, key_name, model, api, path, status, "
                    "error_kind, latency_ms, first_token_ms, input_tokens, output_tokens, "
                    "cache_read_tokens, cache_write_tokens, cost, response_row) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    values,
                )
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise

    def requests(self) -> list[dict[str, Any]]:
        """Every ``gateway_requests`` row, oldest first."""
        with closing(connect(self.path)) as conn:
            conn.execute(_TABLE)
            return [dict(r) for r in conn.execute("SELECT * FROM gateway_requests ORDER BY id")]
