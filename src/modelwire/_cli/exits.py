"""How a command fails: its exit codes; :class:`CLIError`, the failure it reports in one
line (``modelwire: error [kind]: message``); :class:`Interrupted`, an answer Ctrl-C
stopped (a chat goes on after it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..types import AssistantMessage

__all__ = [
    "EXIT_CONFIG", "EXIT_FAILED", "EXIT_INTERNAL", "EXIT_INTERRUPTED", "CLIError", "Interrupted",
]  # fmt: skip

EXIT_FAILED = 1
EXIT_CONFIG = 2
EXIT_INTERNAL = 70
EXIT_INTERRUPTED = 130


class CLIError(Exception):
    """A failure the CLI reports in one line: ``kind``, ``message``, exit ``code``."""

    def __init__(self, kind: str, message: str, code: int = EXIT_CONFIG) -> None:
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.code = code


class Interrupted(Exception):
    """Ctrl-C stopped an answer: ``message`` is what had arrived (kept in the chat)."""

    def __init__(self, message: AssistantMessage) -> None:
        super().__init__("interrupted")
        self.message = message
