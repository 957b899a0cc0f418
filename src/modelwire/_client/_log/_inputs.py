"""What a call sends that the log stores once, by sha256, however many calls send it:
a fragment's text (``chat -f``) and an attachment's bytes (an image, a PDF, audio). A
row's conversation refers to them by hash and the link tables list each row's in order;
reading a conversation back puts their content in again."""

from __future__ import annotations

import base64
import binascii
import hashlib
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ._schema import LogRow

__all__ = ["Inputs", "add_inputs", "expanded", "fragment_blocks"]


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fragment_blocks(fragments: Mapping[str, Any]) -> frozenset[str]:
    """The texts a fragment's block may have: its content, or the content and the
    newline that separates it from the next block (``_cli/inputs.py``)."""
    return frozenset(t for c in fragments for t in (c, c + "\n"))


_BINARY_BLOCKS = ("image", "audio", "document")


class Inputs:
    """Within one append's transaction: stores fragments and attachments once by
    sha256 and rewrites the conversation's JSON to refer to them.

    A user message's text block is a fragment when its text (less one trailing
    newline, kept as ``suffix``) is a fragment of this call or one already stored —
    so a continued conversation's earlier fragments stay references. A block with
    base64 ``data`` is an attachment whatever its message, if the data is canonical
    base64 (so re-encoding the stored bytes gives back the very same string)."""

    def __init__(
        self,
        conn: sqlite3.Connection,
        fragments: Mapping[str, str | None],
        sources: Mapping[str, str],
        now: float,
    ) -> None:
        self.conn = conn
        self.sources = sources
        self.now = now
        self.fragment_ids: dict[int, None] = {}  # insertion-ordered sets
        self.attachment_ids: dict[int, None] = {}
        for content, source in fragments.items():
            if content:
                conn.execute(
                    "INSERT OR IGNORE INTO fragments (sha256, content, source, created) "
                    "VALUES (?, ?, ?, ?)",
                    (_sha256(content.encode("utf-8")), content, source, now),
                )

    def store(self, messages: list[Any]) -> list[Any]:
        for m in messages:
            content = m.get("content") if isinstance(m, dict) else None
            if not isinstance(content, list):
                continue
            for i, block in enumerate(content):
                if not isinstance(block, dict):
                    continue
                if (m.get("role") == "user" and block.get("type") == "text"
                        and not block.get("signature") and not block.get("citations")):  # fmt: skip
                    content[i] = self._fragment(block)
                elif block.get("type") in _BINARY_BLOCKS and isinstance(block.get("data"), str):
                    content[i] = self._attachment(block)
        return messages

    def _fragment(self, block: dict[str, Any]) -> dict[str, Any]:
        text = block["text"]
        if not isinstance(text, str) or not text:
            return block
        candidates = [(text, "")]
        if text.endswith("\n") and len(text) > 1:
            candidates.append((text[:-1], "\n"))
        for candidate, suffix in candidates:
            sha = _sha256(candidate.encode("utf-8"))
            found = self.conn.execute("SELECT id FROM fragments WHERE sha256 = ?", (sha,))
            row = found.fetchone()
            if row is not None:
                self.fragment_ids[int(row[0])] = None
                ref = {k: v for k, v in block.items() if k != "text"}
                ref["fragment"] = sha
                if suffix:
                    ref["suffix"] = suffix
                return ref
        return block

    def _attachment(self, block: dict[str, Any]) -> dict[str, Any]:
        data: str = block["data"]
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            return block
        if base64.b64encode(raw).decode("ascii") != data:
            return block
        sha = _sha256(raw)
        self.conn.execute(
            "INSERT OR IGNORE INTO attachments (sha256, mime_type, size, content, source, "
            "created) VALUES (?, ?, ?, ?, ?, ?)",
            (sha, str(block.get("mime_type") or ""), len(raw), raw, self.sources.get(sha),
             self.now),
        )  # fmt: skip
        row = self.conn.execute("SELECT id FROM attachments WHERE sha256 = ?", (sha,)).fetchone()
        self.attachment_ids[int(row[0])] = None
        ref = {k: v for k, v in block.items() if k != "data"}
        ref["attachment"] = sha
        return ref

    def link(self, response_id: int) -> None:
        self.conn.executemany(
            "INSERT INTO response_fragments (response_id, fragment_id, position) VALUES (?, ?, ?)",
            [(response_id, f, i) for i, f in enumerate(self.fragment_ids)],
        )
        self.conn.executemany(
            "INSERT INTO response_attachments (response_id, attachment_id, position) "
            "VALUES (?, ?, ?)",
            [(response_id, a, i) for i, a in enumerate(self.attachment_ids)],
        )


def add_inputs(conn: sqlite3.Connection, rows: list[LogRow]) -> None:
    """Each row's fragments and attachments (hash, source, size), in the order sent."""
    ids = {r.id: r for r in rows}
    span = (min(ids), max(ids))
    for r in conn.execute(
        "SELECT l.response_id, f.sha256, f.source, length(CAST(f.content AS BLOB)) AS bytes "
        "FROM response_fragments l JOIN fragments f ON f.id = l.fragment_id "
        "WHERE l.response_id BETWEEN ? AND ? ORDER BY l.response_id, l.position",
        span,
    ):
        if r["response_id"] in ids:
            ids[r["response_id"]].fragments.append(
                {"sha256": r["sha256"], "source": r["source"], "bytes": r["bytes"]}
            )
    for r in conn.execute(
        "SELECT l.response_id, a.sha256, a.mime_type, a.size, a.source "
        "FROM response_attachments l JOIN attachments a ON a.id = l.attachment_id "
        "WHERE l.response_id BETWEEN ? AND ? ORDER BY l.response_id, l.position",
        span,
    ):
        if r["response_id"] in ids:
            ids[r["response_id"]].attachments.append({
                "sha256": r["sha256"], "mime_type": r["mime_type"], "bytes": r["size"],
                "source": r["source"]})  # fmt: skip


def expanded(conn: sqlite3.Connection, messages: list[Any], path: Path) -> list[Any]:
    """``messages`` with every fragment and attachment reference replaced by its content."""
    from ...errors import ConfigurationError

    blocks = [
        (content, i)
        for m in messages
        if isinstance(m, dict) and isinstance(content := m.get("content"), list)
        for i, b in enumerate(content)
        if isinstance(b, dict) and ("fragment" in b or "attachment" in b)
    ]
    for content, i in blocks:
        ref = content[i]
        table, column, key = (
            ("fragments", "content", "fragment") if "fragment" in ref
            else ("attachments", "content", "attachment")
        )  # fmt: skip
        row = conn.execute(f"SELECT {column} FROM {table} WHERE sha256 = ?", (ref[key],)).fetchone()
        if row is None:
            raise ConfigurationError(
                f"the log {path} refers to {key} {ref[key]} but does not hold it: "
                "the file was changed outside modelwire"
            )
        block = {k: v for k, v in ref.items() if k not in (key, "suffix")}
        if key == "fragment":
            block["text"] = row[0] + ref.get("suffix", "")
        else:
            block["data"] = base64.b64encode(row[0]).decode("ascii")
        content[i] = block
    return messages
