"""``grep`` for the read-only tools: RE2 matching that cannot hang, a hard budget, abort.

Why RE2 (the ``google-re2`` wheel): a model chooses the pattern, and Python's
``re`` backtracks — ``(a+)+$`` on 34 ``a`` and a ``!`` runs for minutes inside
one ``search`` call, which no thread can interrupt. RE2 matches in time linear
in the input (https://github.com/google/re2/wiki/WhyRE2), so each call below is
bounded, and the budget and ``ctx.cancelled`` are checked between calls.

Semantics kept from the per-line ``re`` search this replaces: a file is split
into lines at ``\\n``, ``\\r\\n`` and ``\\r``; a line matches when the pattern
matches somewhere in it; ``^``/``$`` are the line's ends. The whole file is
searched in one pass per match with ``never_nl`` (no match spans a newline) and
``(?m)``, which gives exactly the per-line answer at C speed. RE2 refuses
backreferences, lookaround and possessive quantifiers, and spells Python's
``\\Z`` as ``\\z``: such a pattern gets ``invalid_arguments`` saying so.
``\\w``, ``\\d``, ``\\s`` and their negations are rewritten to the Unicode
classes Python's ``str`` patterns use (RE2's own are ASCII); ``\\b`` stays ASCII.
``\\v``, ``\\f`` and U+2028 do not end a line (``str.splitlines`` used to split
there), so line numbers agree with ``read``'s offsets for ordinary files.
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from typing import Any, Protocol

from ._core import ToolContext, ToolFailure, ToolOutput
from ._paths import version_token

__all__ = ["Search", "compile_pattern"]

_SNIFF = 8192
_SNIPPET = 200
# The budget and the cancel flag are checked at least every this many bytes of
# a file (one RE2 scan of 256 KiB takes well under a millisecond).
_SLICE = 256 * 1024

_SYNTAX_HINT = (
    "grep uses RE2 syntax (like Python re, without backreferences such as \\1, "
    "lookahead/lookbehind (?=…) (?!…) (?<=…) (?<!…), possessive quantifiers and "
    "repeat counts over 1000; write \\z or $ for the end of a line instead of \\Z). "
    "Rewrite the pattern without them — e.g. search for the literal text — or escape "
    "special characters such as ( [ . * + ? with a backslash, then call grep again."
)


# Python's str patterns are Unicode-aware; RE2's \w \d \s are ASCII. These
# spellings give Python's classes (str.isalnum + "_", Unicode decimal digits,
# str.isspace) so "\w+" still matches 读取 and é. Inside [...] only the
# positive ones can be spelled; \W and \S there (and \b) stay ASCII.
_WORD = r"\p{L}\p{N}_"
_SPACE = r"\t\n\v\f\r \x{1c}-\x{1f}\x{85}\p{Z}"
_OUTSIDE = {
    "w": f"[{_WORD}]", "W": f"[^{_WORD}]", "d": r"\p{Nd}", "D": r"\P{Nd}",
    "s": f"[{_SPACE}]", "S": f"[^{_SPACE}]",
}  # fmt: skip
_INSIDE = {"w": _WORD, "d": r"\p{Nd}", "D": r"\P{Nd}", "s": _SPACE}


def unicode_classes(pattern: str) -> str:
    """``pattern`` with ``\\w``, ``\\d``, ``\\s`` (and negations) spelled as Python means them."""
    out: list[str] = []
    i, n = 0, len(pattern)
    in_class = False
    class_start = -1  # where the current class's members start (a "]" there is literal)
    while i < n:
        c = pattern[i]
        if c == "\\" and i + 1 < n:
            e = pattern[i + 1]
            table = _INSIDE if in_class else _OUTSIDE
            out.append(table.get(e, pattern[i : i + 2]))
            i += 2
            continue
        if in_class:
            if pattern.startswith("[:", i):  # a POSIX class such as [:alpha:]
                end = pattern.find(":]", i + 2)
                if end >= 0:
                    out.append(pattern[i : end + 2])
                    i = end + 2
                    continue
            if c == "]" and i != class_start:
                in_class = False
        elif c == "[":
            in_class = True
            class_start = i + 2 if pattern.startswith("^", i + 1) else i + 1
        out.append(c)
        i += 1
    return "".join(out)


def compile_pattern(text: str, ignore_case: bool) -> Any:
    """The RE2 program for ``text``; ``invalid_arguments`` with a hint if RE2 refuses it."""
    import re2  # here, not at import: ``import modelwire`` stays fast

    options = re2.Options()
    options.log_errors = False  # RE2 would print parse errors to stderr
    options.never_nl = True  # no match spans two lines: per-line semantics
    options.case_sensitive = not ignore_case
    try:
        # (?m): ^ and $ match at every line's ends, as they did on a single line.
        return re2.compile("(?m)" + unicode_classes(text), options)
    except re2.error as exc:
        reason = exc.args[0] if exc.args else str(exc)
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise ToolFailure(
            "invalid_arguments",
            f"pattern {text!r} is not a valid regular expression for grep (RE2 syntax): {reason}",
            hint=_SYNTAX_HINT,
        ) from None


def _lines_of(data: bytes) -> bytes:
    # \r\n and a lone \r end a line too (str.splitlines did this before).
    if b"\r" in data:
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return data


class GrepLimits(Protocol):
    """The limits a search reads from its :class:`~modelwire.tools.files.FileTools`
    (a protocol, so this module does not import ``files``: no import cycle)."""

    @property
    def grep_time_budget(self) -> float: ...
    @property
    def max_grep_file_bytes(self) -> int: ...
    @property
    def max_matches(self) -> int: ...


class Search:
    """State of one grep call."""

    def __init__(
        self,
        tools: GrepLimits,
        pattern: Any,
        ctx: ToolContext,
        allowed: Callable[[str], bool],
    ) -> None:
        self.tools = tools
        self.pattern = pattern
        self.ctx = ctx
        self.allowed = allowed
        self.matches: list[dict[str, Any]] = []
        self.versions: dict[str, str] = {}
        self.truncated = False
        self.searched = 0
        self.skipped = 0
        self.started = time.monotonic()
        self.deadline = self.started + tools.grep_time_budget

    def check(self) -> None:
        """Stop at once when the call was cancelled or its time budget is spent."""
        if self.ctx.cancelled:
            raise ToolFailure(
                "aborted",
                "grep was cancelled before it finished; nothing is shown",
            )
        if time.monotonic() > self.deadline:
            budget = self.tools.grep_time_budget
            raise ToolFailure(
                "timeout_unknown",
                f"grep stopped at its time budget of {budget:g} s after searching "
                f"{self.searched} file(s) ({len(self.matches)} match(es) so far, not shown)",
                hint=(
                    "grep changed nothing (it is read-only). Search less at once: pass a "
                    'narrower path or a glob such as "*.py", or a more specific pattern, '
                    "then call grep again."
                ),
                details={"matches": self.matches, "files_searched": self.searched},
            )

    def search_fd(self, fd: int, shown: str) -> None:
        """Search one open file (the descriptor is closed here)."""
        self.check()
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_size > self.tools.max_grep_file_bytes:
                self.skipped += 1
                return
            data = f.read(self.tools.max_grep_file_bytes + 1)
        if b"\x00" in data[:_SNIFF]:
            self.skipped += 1
            return
        try:
            data.decode("utf-8")  # only UTF-8 text is searched and shown
        except UnicodeDecodeError:
            self.skipped += 1
            return
        self.searched += 1
        version = version_token(st)
        data = _lines_of(data)
        if data.startswith(b"\xef\xbb\xbf"):
            data = data[3:]  # a BOM is not part of the first line
        search = self.pattern.search
        # The last newline ends the last line; nothing after it is another line.
        end = len(data) - 1 if data.endswith(b"\n") else len(data)
        pos = 0
        lineno = 1
        counted = 0  # data[:counted] holds lineno - 1 newlines
        # An empty last line (data ends "\n\n", or is "\n") starts at ``end``.
        while pos < end or (pos == end and data and data[pos - 1 : pos] in (b"\n", b"")):
            self.check()
            # Search a slice of whole lines; never_nl keeps each match inside a line.
            stop = data.find(b"\n", min(pos + _SLICE, end))
            stop = end if stop < 0 else stop
            m = search(data, pos, stop)
            if m is None:
                pos = stop + 1
                continue
            at = m.start()
            lineno += data.count(b"\n", counted, at)
            line_start = data.rfind(b"\n", 0, at) + 1
            line_end = data.find(b"\n", at)
            line_end = end if line_end < 0 else line_end
            counted = line_start
            if len(self.matches) >= self.tools.max_matches:
                self.truncated = True
                return
            line = data[line_start:line_end].decode("utf-8")
            before = len(data[line_start:at].decode("utf-8"))
            self.matches.append(
                {
                    "path": shown,
                    "line": lineno,
                    "text": _snippet(line, before, len(m.group(0))),
                    "version": version,
                }
            )
            self.versions[shown] = version
            pos = line_end + 1

    def output(self, pattern: str, shown: str) -> ToolOutput:
        n = len(self.matches)
        skipped = (
            f"; {self.skipped} skipped (binary, non-UTF-8, too large, symlinks or "
            "not an allowed file type)"
            if self.skipped
            else ""
        )
        scope = f"{_count(self.searched, 'file', 'files')} searched{skipped}"
        if n == 0:
            head = f"No matches for /{pattern}/ in {shown} ({scope})."
        else:
            head = f"{_count(n, 'match', 'matches')} for /{pattern}/ in {shown} ({scope})"
        lines = [head]
        lines.extend(f"{m['path']}:{m['line']}: {m['text']}" for m in self.matches)
        if self.truncated:
            lines.append(
                f"[truncated: showing the first {self.tools.max_matches} matches; narrow the "
                "pattern, the path or the glob to see the rest]"
            )
        if self.versions:
            # The version token of each file shown, as read reports it (for check_version).
            lines.append("versions: " + ", ".join(f"{p} {v}" for p, v in self.versions.items()))
        details = {
            "pattern": pattern,
            "path": shown,
            "matches": self.matches,
            "versions": dict(self.versions),
            "truncated": self.truncated,
            "files_searched": self.searched,
            "files_skipped": self.skipped,
        }
        return ToolOutput("\n".join(lines), details)


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def _snippet(line: str, at: int, length: int) -> str:
    stripped = line.lstrip()
    at -= len(line) - len(stripped)
    line = stripped.rstrip()
    if len(line) <= _SNIPPET:
        return line
    # Centre a window on the match so the model sees what matched.
    at = max(at, 0)
    lo = max(0, min(at - (_SNIPPET - length) // 2, len(line) - _SNIPPET))
    hi = lo + _SNIPPET
    return ("…" if lo else "") + line[lo:hi] + ("…" if hi < len(line) else "")
