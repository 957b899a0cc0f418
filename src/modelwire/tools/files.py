"""Read-only file tools for a model: ``read``, ``ls`` and ``grep`` under one root.

``read_only(root)`` returns the three tools. They never write, and they never
show anything outside ``root``:

* **Resolve, then check.** A path (relative to the root, or absolute) is resolved
  with ``Path.resolve(strict=True)`` — ``..`` and every symlink followed — and the
  result must be the root or under it (``is_relative_to``); otherwise the call
  fails with ``permission_denied`` and no content. A string check on the path is
  never trusted.
* **No race after the check.** The file is then opened one component at a time
  from a descriptor of the root, each with ``O_NOFOLLOW`` (``openat``): a
  directory swapped for a symlink after the check fails to open instead of being
  followed. (Platforms without ``dir_fd`` support open the checked path.)
* **Bounded.** ``read`` returns at most ``max_read_bytes`` (256 KiB) per call —
  a bigger file is refused with ``too_large``, its size, and how to read a range;
  ``ls`` lists at most ``max_entries``; ``grep`` returns at most ``max_matches``,
  skips binary and non-UTF-8 files and files over ``max_grep_file_bytes``, does
  not follow symlinks while walking. Each cut is flagged as truncated, with how
  to see the rest.
* **grep never hangs.** Patterns run on RE2 (linear time, no backtracking; see
  :mod:`modelwire.tools._grep`); ``grep_time_budget`` seconds is a hard limit per
  call, checked between files and every 256 KiB of a file, and so is
  ``ctx.cancelled`` (an aborted run stops the worker thread promptly). Over the
  budget the call fails with ``timeout_unknown`` and a hint to search less.
* **Typed.** ``file_types`` optionally allow-lists globs or extensions; ``read``
  and ``grep`` refuse any other file with ``permission_denied`` naming the list.
* **Versioned.** ``read`` and each ``grep`` match carry a version token (a hash
  of the file's device, inode, ``st_ctime_ns``, ``st_mtime_ns`` and size) in the
  text and in ``details``; editing tools call :meth:`FileTools.check_version` to
  refuse a stale edit (``stale_version``).
"""

from __future__ import annotations

import codecs
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path, PurePosixPath
from typing import Any

from ..errors import ConfigurationError
from ._core import Tool, ToolContext, ToolFailure, ToolOutput
from ._grep import Search, compile_pattern
from ._paths import (
    _DIR_FD,
    _O_CLOEXEC,
    _O_NOFOLLOW,
    _O_NONBLOCK,
    Sandbox,
    _file_types,
    version_token,
)

__all__ = [
    "DEFAULT_MAX_ENTRIES",
    "DEFAULT_MAX_MATCHES",
    "DEFAULT_MAX_READ_BYTES",
    "SKIP_DIRS",
    "FileTools",
    "read_only",
    "version_token",
]

DEFAULT_MAX_READ_BYTES = 256 * 1024
DEFAULT_MAX_ENTRIES = 500
DEFAULT_MAX_MATCHES = 100
DEFAULT_MAX_GREP_FILE_BYTES = 4 * 1024 * 1024
DEFAULT_GREP_TIME_BUDGET = 10.0
#: Directories ``grep`` does not descend into (unless the search starts inside one).
SKIP_DIRS = frozenset(
    {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv", ".tox",
     ".mypy_cache", ".ruff_cache", ".pytest_cache"}
)  # fmt: skip
# A NUL byte in the first 8 KiB marks a binary file (what git and grep do).
_SNIFF = 8192
_CHUNK = 64 * 1024


def _human(n: int) -> str:
    size = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if size < 1024 or unit == "GiB":
            return f"{n} bytes" if unit == "bytes" else f"{size:.1f} {unit} ({n} bytes)"
        size /= 1024
    raise AssertionError("unreachable")


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _invalid(message: str, hint: str | None = None) -> ToolFailure:
    return ToolFailure("invalid_arguments", message, hint=hint)


class FileTools(Sandbox):
    """The read-only tools bound to one root: :func:`read_only` builds one and returns
    its ``read``, ``ls`` and ``grep``; the same arguments (see there)."""

    def __init__(
        self,
        root: str | os.PathLike[str] = ".",
        *,
        max_read_bytes: int = DEFAULT_MAX_READ_BYTES,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_matches: int = DEFAULT_MAX_MATCHES,
        max_grep_file_bytes: int = DEFAULT_MAX_GREP_FILE_BYTES,
        grep_time_budget: float = DEFAULT_GREP_TIME_BUDGET,
        skip_dirs: frozenset[str] = SKIP_DIRS,
        file_types: Iterable[str] | None = None,
    ) -> None:
        try:
            self.root = Path(root).resolve(strict=True)
        except (OSError, RuntimeError) as exc:
            raise ConfigurationError(
                f"read_only root {str(root)!r} does not exist: {exc}"
            ) from None
        if not self.root.is_dir():
            raise ConfigurationError(f"read_only root {str(root)!r} is not a directory")
        for name, value in (
            ("max_read_bytes", max_read_bytes),
            ("max_entries", max_entries),
            ("max_matches", max_matches),
            ("max_grep_file_bytes", max_grep_file_bytes),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise ConfigurationError(f"{name} must be a positive integer")
        self.max_read_bytes = max_read_bytes
        self.max_entries = max_entries
        self.max_matches = max_matches
        self.max_grep_file_bytes = max_grep_file_bytes
        self.grep_time_budget = grep_time_budget
        self.skip_dirs = frozenset(skip_dirs)
        self.file_types = _file_types(file_types)

    # ------------------------------------------------------------------ read

    def read(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        raw = args["path"]
        offset: int | None = args.get("offset")
        limit: int | None = args.get("limit")
        _, parts = self.locate(raw)
        shown = self.display(parts)
        try:
            fd = self._open_file(parts)
        except OSError as exc:
            raise self._raced(raw, exc) from None
        try:
            st = os.fstat(fd)
            if stat.S_ISREG(st.st_mode):
                self._check_type(parts, raw)
            if stat.S_ISDIR(st.st_mode):
                raise _invalid(
                    f"{shown!r} is a directory, not a file", hint="List it with ls instead."
                )
            if not stat.S_ISREG(st.st_mode):
                raise ToolFailure(
                    "not_text", f"{shown!r} is not a regular file (a device, pipe or socket)"
                )
            f = os.fdopen(fd, "rb")
        except BaseException:
            os.close(fd)
            raise
        with f:
            size = st.st_size
            version = version_token(st)
            cap = self.max_read_bytes
            if offset is None and limit is None and size > cap:
                raise ToolFailure(
                    "too_large",
                    f"{shown!r} is {_human(size)}; read returns at most {_human(cap)} per call",
                    hint=(
                        "Read a range: pass offset (first line, 1-based) and limit (number of "
                        "lines), e.g. offset=1, limit=1000, then continue from the next line; "
                        "or find the lines you need with grep first."
                    ),
                    details={"path": shown, "size": size, "max_read_bytes": cap},
                )
            head = f.read(_SNIFF)
            if b"\x00" in head:
                raise ToolFailure("not_text", f"{shown!r} is a binary file of {size} bytes")
            return self._read_range(f, head, shown, size, version, offset or 1, limit)

    def _read_range(
        self, f: Any, head: bytes, shown: str, size: int, version: str, start: int,
        limit: int | None,
    ) -> ToolOutput:  # fmt: skip
        end = None if limit is None else start + limit - 1
        cap = self.max_read_bytes
        buf = bytearray()
        lineno = 1
        truncated = False  # the byte cap cut the range short
        at_eof = True
        ended_nl = True
        for piece in _pieces(f, head):
            if end is not None and lineno > end:
                at_eof = False
                break
            if lineno >= start:
                room = cap - len(buf)
                if len(piece) > room:
                    buf += piece[:room]
                    truncated, at_eof = True, False
                    break
                buf += piece
            ended_nl = piece.endswith(b"\n")
            if ended_nl:
                lineno += 1
        total: int | None = None
        if at_eof:
            total = lineno - 1 if ended_nl else lineno
            if start > max(total, 1):
                raise _invalid(
                    f"offset {start} is past the end of {shown!r}, which has {total} lines",
                    hint=f"Use an offset between 1 and {max(total, 1)}.",
                )
        try:
            text = codecs.getincrementaldecoder("utf-8")("strict").decode(
                bytes(buf), final=not truncated
            )
        except UnicodeDecodeError as exc:
            raise ToolFailure(
                "not_text", f"{shown!r} is not UTF-8 text (invalid byte at offset {exc.start})"
            ) from None
        if start == 1 and text.startswith("\ufeff"):
            text = text[1:]
        lines = text.splitlines()
        note = ""
        next_offset: int | None = None
        if truncated:
            if len(lines) > 1 and not text.endswith(("\n", "\r")):
                lines.pop()  # show only whole lines; the cut one is read next time
                next_offset = start + len(lines)
                note = f"[truncated at {_human(cap)}: continue with offset={next_offset}]"
            else:
                next_offset = start + max(len(lines), 1)
                note = (
                    f"[truncated: line {start + len(lines) - 1} is longer than {_human(cap)}; "
                    f"only its start is shown; the next line is {next_offset}]"
                )
        elif not at_eof:
            next_offset = start + len(lines)
            note = f"[more lines follow: continue with offset={next_offset}]"
        last = start + len(lines) - 1
        if not lines:
            span = "empty file" if size == 0 else "no lines in range"
        else:
            span = f"lines {start}-{last}" + (f" of {total}" if total is not None else "")
        header = f"{shown} · {span} · {_human(size)} · version {version}"
        body = "\n".join(f"{n:>6}\t{line}" for n, line in enumerate(lines, start))
        out = header + ("\n" + body if body else "") + ("\n" + note if note else "")
        details = {
            "path": shown,
            "size": size,
            "version": version,
            "start_line": start,
            "end_line": last if lines else None,
            "total_lines": total,
            "truncated": truncated,
            "next_offset": next_offset,
        }
        return ToolOutput(out, details)

    # ------------------------------------------------------------------ ls

    def ls(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        raw = args.get("path", ".")
        resolved, parts = self.locate(raw)
        shown = self.display(parts)
        try:
            fd = self._open_dir(parts)
        except NotADirectoryError:
            raise _invalid(
                f"{shown!r} is a file, not a directory", hint="Read it with read."
            ) from None
        except OSError as exc:
            raise self._raced(raw, exc) from None
        entries: list[dict[str, Any]] = []
        try:
            with os.scandir(fd if _DIR_FD else resolved) as it:
                for e in it:
                    entries.append(self._entry(e, resolved))
        finally:
            os.close(fd)
        entries.sort(key=lambda d: (d["type"] != "directory", d["name"]))
        total = len(entries)
        shown_entries = entries[: self.max_entries]
        truncated = total > self.max_entries
        n_dirs = sum(1 for d in entries if d["type"] == "directory")
        lines = [
            f"{shown}/ · {_count(total, 'entry', 'entries')} "
            f"({_count(n_dirs, 'directory', 'directories')}, {total - n_dirs} other)"
        ]
        for d in shown_entries:
            if d["type"] == "directory":
                lines.append(f"{d['name']}/")
            elif d["type"] == "file":
                lines.append(f"{d['name']}  ({d['size']} bytes)")
            elif d["type"] == "symlink":
                lines.append(f"{d['name']} -> {d['target']}")
            else:
                lines.append(f"{d['name']}  (not a regular file)")
        if truncated:
            lines.append(
                f"[truncated: showing {self.max_entries} of {total} entries; list a "
                "subdirectory, or use grep with a glob to find what you need]"
            )
        details = {"path": shown, "entries": shown_entries, "total": total, "truncated": truncated}
        return ToolOutput("\n".join(lines), details)

    def _entry(self, e: os.DirEntry[str], here: Path) -> dict[str, Any]:
        try:
            if e.is_symlink():
                # Say where a link goes only when it stays inside the root.
                try:
                    target = (here / e.name).resolve(strict=True)
                except (OSError, RuntimeError):
                    return {"name": e.name, "type": "symlink", "target": "(broken link)"}
                if not target.is_relative_to(self.root):
                    return {"name": e.name, "type": "symlink", "target": "(outside the root)"}
                rel = self.display(target.relative_to(self.root).parts)
                return {"name": e.name, "type": "symlink", "target": rel}
            if e.is_dir(follow_symlinks=False):
                return {"name": e.name, "type": "directory"}
            if e.is_file(follow_symlinks=False):
                size = e.stat(follow_symlinks=False).st_size
                return {"name": e.name, "type": "file", "size": size}
        except OSError:
            pass
        return {"name": e.name, "type": "other"}

    # ------------------------------------------------------------------ grep

    def grep(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        pattern_text: str = args["pattern"]
        raw = args.get("path", ".")
        glob: str | None = args.get("glob")
        pattern = compile_pattern(pattern_text, bool(args.get("ignore_case")))
        _, parts = self.locate(raw)
        shown = self.display(parts)
        search = Search(self, pattern, ctx, self.allows)
        try:
            fd = self._open_file(parts)
        except OSError as exc:
            raise self._raced(raw, exc) from None
        try:
            st = os.fstat(fd)
            if stat.S_ISDIR(st.st_mode):
                self._walk(search, parts, glob)
            elif stat.S_ISREG(st.st_mode):
                self._check_type(parts, raw)
                if st.st_size > self.max_grep_file_bytes:
                    raise ToolFailure(
                        "too_large",
                        f"{shown!r} is {_human(st.st_size)}; grep searches files up to "
                        f"{_human(self.max_grep_file_bytes)}",
                        hint="Read parts of it with read (offset and limit) instead.",
                    )
                search.search_fd(os.dup(fd), shown)
            else:
                raise ToolFailure("not_text", f"{shown!r} is not a regular file")
        finally:
            os.close(fd)
        return search.output(pattern_text, shown)

    def _walk(self, search: Search, parts: tuple[str, ...], glob: str | None) -> None:
        # Depth-first over an explicit stack (deep trees must not hit the recursion
        # limit). Each directory is reopened from the root without following
        # symlinks, and symlinks found inside are skipped, never followed.
        stack = [parts]
        while stack and not search.truncated:
            search.check()
            here = stack.pop()
            try:
                dfd = self._open_dir(here)
            except OSError:
                search.skipped += 1
                continue
            try:
                files: list[str] = []
                dirs: list[str] = []
                with os.scandir(dfd if _DIR_FD else self.root.joinpath(*here)) as it:
                    for e in it:
                        try:
                            if e.is_symlink():
                                search.skipped += 1
                            elif e.is_dir(follow_symlinks=False):
                                if e.name not in self.skip_dirs:
                                    dirs.append(e.name)
                            elif e.is_file(follow_symlinks=False):
                                files.append(e.name)
                        except OSError:
                            search.skipped += 1
                for name in sorted(files):
                    if search.truncated:
                        return
                    shown = self.display((*here, name))
                    if glob and not PurePosixPath(shown).match(glob):
                        continue
                    if not self.allows(shown):
                        search.skipped += 1
                        continue
                    self._search_at(search, dfd, here, name, shown)
                stack.extend((*here, d) for d in sorted(dirs, reverse=True))
            finally:
                os.close(dfd)

    def _search_at(
        self, search: Search, dfd: int, here: tuple[str, ...], name: str, shown: str
    ) -> None:
        search.check()
        flags = os.O_RDONLY | _O_CLOEXEC | _O_NONBLOCK | _O_NOFOLLOW
        try:
            if _DIR_FD:
                fd = os.open(name, flags, dir_fd=dfd)
            else:
                fd = os.open(self.root.joinpath(*here, name), flags)
        except OSError:
            search.skipped += 1
            return
        search.search_fd(fd, shown)


def _pieces(f: Any, first: bytes) -> Iterator[bytes]:
    """The file as pieces that end at a newline or a read boundary (bounded memory)."""
    data = first
    pos = 0
    while True:
        if pos >= len(data):
            data = f.read(_CHUNK)
            pos = 0
            if not data:
                return
        nl = data.find(b"\n", pos)
        end = len(data) if nl < 0 else nl + 1
        yield data[pos:end]
        pos = end


# ---------------------------------------------------------------------- the tools

_READ_DESCRIPTION = """\
Read a text file from the workspace. Use it to see a file's contents before answering \
questions about it or quoting it.

The result starts with a header line: the path, which lines are shown (and of how many), \
the file size and a version token; then one line per file line as \
"<line number><TAB><text>". Without offset/limit the whole file is returned if it is at \
most {cap}; a larger file is refused with too_large — then read it in ranges with offset \
(first line, 1-based) and limit (number of lines). A last line "[truncated …]" or \
"[more lines follow …]" tells you the offset to continue from.

Paths are relative to the workspace root (absolute paths must be inside it). Binary and \
non-UTF-8 files cannot be shown. This tool never changes anything."""

_LS_DESCRIPTION = """\
List a directory of the workspace: use it to discover which files exist before reading \
them. path defaults to the workspace root ".".

Each line is one entry: "name/" for a directory, "name  (N bytes)" for a file, \
"name -> target" for a symlink (targets outside the workspace are not readable). At most \
{cap} entries are shown; a last line "[truncated …]" says how many there are in total."""

_GREP_DESCRIPTION = """\
Search the text files of the workspace for a regular expression (RE2 syntax: like Python \
re, without backreferences or lookaround) and get each matching line as \
"path:line: text", then a line "versions: <path> <version token>, …". Use it to find where something is defined \
or mentioned before reading the file.

path (default ".") is a directory to search recursively or one file; glob limits the \
files by name, matched against the end of the path (e.g. "*.py" or "tests/*.py"); \
ignore_case makes the search case-insensitive. Binary and non-UTF-8 files, files over \
{file_cap} and the directories {skips} are skipped, and symlinks are not followed. At \
most {cap} matches are returned; a last line "[truncated …]" means there are more — \
narrow the pattern, path or glob. "No matches" is a normal result, not an error."""


def _tools(ft: FileTools) -> list[Tool]:
    read = Tool(
        "read",
        _READ_DESCRIPTION.format(cap=_human(ft.max_read_bytes)),
        {
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "minLength": 1,
                    "description": "File path relative to the workspace root.",
                },
                "offset": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "First line to show (1-based).",
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "description": "Number of lines to show.",
                },
            },
            "required": ["path"],
            "additionalProperties": False,
        },
        ft.read,
        read_only=True,
    )
    ls = Tool(
        "ls",
        _LS_DESCRIPTION.format(cap=ft.max_entries),
        {
            "type": "object",
            "properties": {
                "path": {
                    "type": "string",
                    "minLength": 1,
                    "description": 'Directory relative to the workspace root (default ".").',
                },
            },
            "additionalProperties": False,
        },
        ft.ls,
        read_only=True,
    )
    grep = Tool(
        "grep",
        _GREP_DESCRIPTION.format(
            cap=ft.max_matches,
            file_cap=_human(ft.max_grep_file_bytes),
            skips=", ".join(sorted(ft.skip_dirs)),
        ),
        {
            "type": "object",
            "properties": {
                "pattern": {
                    "type": "string",
                    "minLength": 1,
                    "maxLength": 1000,
                    "description": "Regular expression (RE2 syntax).",
                },
                "path": {
                    "type": "string",
                    "minLength": 1,
                    "description": 'Directory or file to search (default ".").',
                },
                "glob": {
                    "type": "string",
                    "minLength": 1,
                    "description": 'Only files whose path ends like this, e.g. "*.py".',
                },
                "ignore_case": {"type": "boolean", "description": "Case-insensitive search."},
            },
            "required": ["pattern"],
            "additionalProperties": False,
        },
        ft.grep,
        read_only=True,
    )
    return [read, ls, grep]


def read_only(
    root: str | os.PathLike[str] = ".",
    *,
    max_read_bytes: int = DEFAULT_MAX_READ_BYTES,
    max_entries: int = DEFAULT_MAX_ENTRIES,
    max_matches: int = DEFAULT_MAX_MATCHES,
    max_grep_file_bytes: int = DEFAULT_MAX_GREP_FILE_BYTES,
    grep_time_budget: float = DEFAULT_GREP_TIME_BUDGET,
    skip_dirs: frozenset[str] = SKIP_DIRS,
    file_types: Iterable[str] | None = None,
) -> list[Tool]:
    """The read-only tools ``read``, ``ls`` and ``grep``, confined to ``root``.

    ``root`` must exist (``ConfigurationError`` otherwise). The caps are per
    call; see the module docstring for the safety rules. ``file_types`` (optional)
    is an allow-list of globs (``"*.py"``, ``"docs/*.md"``, ``"Makefile"``) or
    extensions (``".py"``, case-insensitive): ``read`` and ``grep`` on any other
    file fail with ``permission_denied`` naming the list, and ``grep`` skips them
    while walking (``ls`` still lists every name).

    Args:
        root: The directory the tools see; nothing outside it is shown.
        max_read_bytes: The most ``read`` returns per call.
        max_entries: The most ``ls`` lists per call.
        max_matches: The most ``grep`` returns per call.
        max_grep_file_bytes: ``grep`` skips larger files.
        grep_time_budget: Seconds one ``grep`` call may take.
        skip_dirs: Directory names ``grep`` does not walk into.
        file_types: The allow-list above (``None``: every file).
    """
    ft = FileTools(root, max_read_bytes=max_read_bytes, max_entries=max_entries,
                   max_matches=max_matches, max_grep_file_bytes=max_grep_file_bytes,
                   grep_time_budget=grep_time_budget, skip_dirs=skip_dirs,
                   file_types=file_types)  # fmt: skip
    return _tools(ft)
