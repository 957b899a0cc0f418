"""Tools a model may call, and the read-only file tools.

``Tool(name, description, parameters, execute)`` describes one tool, and
``@tool`` (``Tool.from_function(fn)``) builds one from a typed function;
``execute(args, ctx)`` (sync or async) returns a ``str`` or a
:class:`ToolOutput`, or raises :class:`ToolFailure` with a kind the model can
act on. ``read_only(root=".", file_types=None)`` returns the ``read``, ``ls``
and ``grep`` tools confined to ``root`` (and, with ``file_types``, to the listed
globs or extensions). A ``Tool`` whose schema has a ``$ref`` that cannot be
resolved, or whose ``execute`` cannot take ``(args, ctx)``, is refused when it
is made. The agent (``modelwire.agent``) validates arguments against each
tool's JSON Schema (Draft 2020-12) before ``execute`` runs.
"""

from __future__ import annotations

from ._core import (
    FAILURE_HINTS,
    Tool,
    ToolContext,
    ToolFailure,
    ToolOutput,
    failure_text,
    tool,
)
from .files import FileTools, read_only, version_token

__all__ = [
    "FAILURE_HINTS",
    "FileTools",
    "Tool",
    "ToolContext",
    "ToolFailure",
    "ToolOutput",
    "failure_text",
    "read_only",
    "tool",
    "version_token",
]
