"""Path sandboxing for the read-only tools: resolve, then check, then open without races.

See :mod:`modelwire.tools.files` for the rules; this module holds the part every
tool shares — where a path leads, whether it may be opened, how it is opened
(``openat`` one component at a time with ``O_NOFOLLOW``), the file-type
allow-list and the version token.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable
from pathlib import Path, PurePosixPath

from ..errors import ConfigurationError
from ._core import ToolFailure

__all__ = ["Sandbox", "version_token"]

_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
# O_NONBLOCK so opening a FIFO never blocks; it has no effect on regular files.
_O_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_DIR_FD = (
    os.open in os.supports_dir_fd
    and os.scandir in os.supports_fd
    and bool(_O_NOFOLLOW)
    and bool(_O_DIRECTORY)
)


def version_token(st: os.stat_result) -> str:
    """The version of a file as ``read`` and ``grep`` report it.

    A hash of device, inode, ctime, mtime (ns) and size. mtime and size alone miss a
    same-size replacement whose mtime was preserved (``cp -p``, ``rsync -t``): the
    replacement is a new inode (rename) or at least a new ctime, which no
    unprivileged program can set back (POSIX ``stat``: ``st_ctime`` changes on
    every write and every ``utime``).

    Args:
        st: The file's ``os.stat`` result.

    Returns:
        16 hex digits; equal tokens mean the file was not changed in between.
    """
    key = f"{st.st_dev}:{st.st_ino}:{st.st_ctime_ns}:{st.st_mtime_ns}:{st.st_size}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def _file_types(types: Iterable[str] | None) -> tuple[str, ...] | None:
    if types is None:
        return None
    if isinstance(types, str):
        raise ConfigurationError(
            f"file_types must be a list of globs or extensions, e.g. [{types!r}], not a string"
        )
    out = tuple(types)
    if not out or not all(isinstance(t, str) and t.strip() for t in out):
        raise ConfigurationError(
            'file_types must be a non-empty list of globs or extensions, e.g. ["*.py", ".md"]'
        )
    return out


def _invalid(message: str, hint: str | None = None) -> ToolFailure:
    return ToolFailure("invalid_arguments", message, hint=hint)


class Sandbox:
    """Paths under one ``root`` (set by the subclass with ``file_types``)."""

    root: Path
    file_types: tuple[str, ...] | None

    # ------------------------------------------------------------------ file types

    def allows(self, shown: str) -> bool:
        """Whether the file at ``shown`` (relative to the root) is an allowed type."""
        if self.file_types is None:
            return True
        path = PurePosixPath(shown)
        name = path.name.lower()
        for entry in self.file_types:
            if entry.startswith(".") and not any(c in entry for c in "*?["):
                if name.endswith(entry.lower()) and name != entry.lower():
                    return True
            elif path.match(entry):
                return True
        return False

    def _check_type(self, parts: tuple[str, ...], raw: str) -> None:
        # Checked on the resolved path: a link named notes.txt to .env is a .env file.
        shown = self.display(parts)
        if not self.allows(shown):
            listed = ", ".join(self.file_types or ())
            raise ToolFailure(
                "permission_denied",
                f"{raw!r} is not an allowed file type; nothing was read",
                hint=(
                    f"Do not retry this file: only these file types can be read: {listed}. "
                    "Find allowed files with ls or grep."
                ),
                details={"path": shown, "file_types": list(self.file_types or ())},
            )

    # ------------------------------------------------------------------ paths

    def locate(self, raw: object) -> tuple[Path, tuple[str, ...]]:
        """Resolve ``raw`` under the root: ``(resolved path, parts relative to root)``.

        Raises ``ToolFailure``: ``invalid_arguments`` for a non-string,
        ``permission_denied`` when it resolves outside the root (through ``..``,
        an absolute path or a symlink), ``not_found`` when nothing is there.
        """
        if not isinstance(raw, str) or not raw:
            raise _invalid("path must be a non-empty string")
        if "\x00" in raw:
            raise _invalid("path must not contain a NUL character")
        given = Path(raw)
        candidate = given if given.is_absolute() else self.root / given
        # First without strict, so that a path outside the root is refused
        # before we say whether anything exists there (no probing outside).
        try:
            loose = candidate.resolve(strict=False)
        except (OSError, RuntimeError):
            loose = Path(os.path.normpath(candidate))
        if not loose.is_relative_to(self.root):
            raise self._outside(raw, candidate)
        try:
            resolved = candidate.resolve(strict=True)
        except (FileNotFoundError, NotADirectoryError):
            raise ToolFailure(
                "not_found", f"there is no file or directory at {raw!r} under the workspace root"
            ) from None
        except PermissionError:
            raise ToolFailure("permission_denied", f"{raw!r} cannot be accessed") from None
        except (OSError, RuntimeError):  # a symlink loop (RuntimeError before 3.13)
            raise ToolFailure(
                "not_found", f"{raw!r} is a symlink loop, not a file or directory"
            ) from None
        if not resolved.is_relative_to(self.root):
            raise self._outside(raw, candidate)
        return resolved, resolved.relative_to(self.root).parts

    def _outside(self, raw: str, candidate: Path) -> ToolFailure:
        lexical = Path(os.path.normpath(candidate))
        why = (
            "leads outside the workspace root through a symlink"
            if lexical.is_relative_to(self.root)
            else "is outside the workspace root"
        )
        return ToolFailure("permission_denied", f"{raw!r} {why}; nothing was read")

    @staticmethod
    def display(parts: tuple[str, ...]) -> str:
        """A path as the model sees it: relative to the root, ``/``-separated."""
        return PurePosixPath(*parts).as_posix() if parts else "."

    def _open_dir(self, parts: tuple[str, ...]) -> int:
        """A descriptor of the directory ``parts`` under the root, no symlink followed."""
        flags = os.O_RDONLY | _O_CLOEXEC | _O_DIRECTORY
        if not _DIR_FD:
            return os.open(self.root.joinpath(*parts), flags)
        fd = os.open(self.root, flags)
        try:
            for part in parts:
                nfd = os.open(part, flags | _O_NOFOLLOW, dir_fd=fd)
                os.close(fd)
                fd = nfd
        except BaseException:
            os.close(fd)
            raise
        return fd

    def _open_file(self, parts: tuple[str, ...]) -> int:
        """A descriptor of the file ``parts`` (a directory is opened too: callers fstat)."""
        flags = os.O_RDONLY | _O_CLOEXEC | _O_NONBLOCK | _O_NOFOLLOW
        if not parts:
            return self._open_dir(parts)
        if not _DIR_FD:
            return os.open(self.root.joinpath(*parts), flags)
        dfd = self._open_dir(parts[:-1])
        try:
            return os.open(parts[-1], flags, dir_fd=dfd)
        finally:
            os.close(dfd)

    @staticmethod
    def _raced(raw: str, exc: OSError) -> ToolFailure:
        # Only reached when opening fails after the path was checked.
        if isinstance(exc, PermissionError):
            return ToolFailure("permission_denied", f"{raw!r} cannot be opened (permission denied)")
        if isinstance(exc, FileNotFoundError):
            return ToolFailure("not_found", f"{raw!r} was removed while it was being opened")
        return ToolFailure(
            "permission_denied", f"{raw!r} changed while it was being opened; nothing was read"
        )

    def version_of(self, path: str) -> str:
        """The current version token of ``path`` (raises ``ToolFailure`` like ``read``)."""
        _, parts = self.locate(path)
        try:
            fd = self._open_file(parts)
        except OSError as exc:
            raise self._raced(path, exc) from None
        try:
            return version_token(os.fstat(fd))
        finally:
            os.close(fd)

    def check_version(self, path: str, version: str) -> None:
        """Raise ``ToolFailure("stale_version")`` unless ``path`` is still at ``version``."""
        current = self.version_of(path)
        if current != version:
            raise ToolFailure(
                "stale_version",
                f"{path!r} changed since it was read (version {version}, now {current})",
                details={"path": path, "expected": version, "current": current},
            )
