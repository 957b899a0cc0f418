"""``Tool``: a name, a description, an arguments schema and ``execute``; ``@tool``.

A tool is a name, a description written for the model, a JSON Schema for its
arguments and an ``execute(args, ctx)`` function (sync or async) returning a
``str`` or a :class:`ToolOutput`. A tool reports a failure the model should act
on by raising :class:`ToolFailure`; the agent turns it into a tool-result
message with ``is_error=True`` whose text names the kind and what to do next
(:func:`failure_text`; these values live in :mod:`modelwire.tools._values`).
``@tool`` / :meth:`Tool.from_function` build one from a typed function
(:mod:`modelwire.tools._function`).
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, TypeAlias

from ..errors import ConfigurationError
from ..types import ToolDefinition
from ._values import (
    FAILURE_HINTS,
    FailureKind,
    ToolContext,
    ToolFailure,
    ToolOutput,
    ToolResult,
    failure_text,
)

__all__ = [
    "FAILURE_HINTS",
    "FailureKind",
    "Tool",
    "ToolContext",
    "ToolFailure",
    "ToolOutput",
    "ToolResult",
    "failure_text",
    "tool",
]

Execute: TypeAlias = Callable[
    [dict[str, Any], ToolContext], "str | ToolOutput | Awaitable[str | ToolOutput]"
]

# OpenAI and Anthropic both accept ^[a-zA-Z0-9_-]{1,64}$ for function names.
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def _schema_of(parameters: Any) -> dict[str, Any]:
    # A pydantic model class: its JSON Schema (pydantic is not a dependency; we
    # only call the method the class already has).
    if isinstance(parameters, type) and callable(getattr(parameters, "model_json_schema", None)):
        schema = parameters.model_json_schema()  # type: ignore[attr-defined]
        if not isinstance(schema, dict):
            raise ConfigurationError("model_json_schema() did not return a dict")
        return schema
    if isinstance(parameters, Mapping):
        return dict(parameters)
    raise ConfigurationError(
        "Tool.parameters must be a JSON Schema dict or a pydantic model class, "
        f"got {type(parameters).__name__}"
    )


def _check_signature(name: str, execute: Callable[..., Any]) -> None:
    # The agent calls execute(args, ctx): a function that cannot take that would
    # only fail at the first call, as a TypeError result the model cannot fix.
    try:
        sig = inspect.signature(execute)
    except (TypeError, ValueError):  # some builtins have no signature: trust them
        return
    try:
        sig.bind({}, None)
    except TypeError as exc:
        raise ConfigurationError(
            f"Tool {name!r}: execute{sig} cannot be called as execute(args, ctx) ({exc}); "
            "define it as def execute(args, ctx): ... (ctx may be unused)"
        ) from None


class Tool:
    """A tool the model may call.

    ``Tool(name, description, parameters, execute)``: ``name`` matches
    ``^[A-Za-z0-9_-]{1,64}$`` (what OpenAI and Anthropic accept); ``description``
    tells the model when to use it and what the result means; ``parameters`` is a
    JSON Schema (Draft 2020-12) of the arguments object, or a pydantic model class
    (its ``model_json_schema()`` is used); ``execute(args, ctx)`` gets the
    validated arguments (a fresh dict) and a :class:`ToolContext`, may be sync
    (run in a worker thread) or async, and returns a ``str`` or a
    :class:`ToolOutput`, or raises :class:`ToolFailure`. ``timeout`` (seconds)
    bounds one execution: past it the call is cancelled and answered with
    ``timeout_unknown``.

    Checked at construction, each a ``ConfigurationError`` at once (not a crash
    mid-run after the model was paid): the schema against the Draft 2020-12
    meta-schema; every ``$ref`` must resolve inside the schema (a dangling
    ``#/…`` pointer or a remote URL is refused, naming the tool and the
    reference); ``execute`` must accept ``(args, ctx)``.
    """

    __slots__ = (
        "_validator",
        "description",
        "execute",
        "function",
        "name",
        "parameters",
        "timeout",
    )

    def __init__(
        self,
        name: str,
        description: str,
        parameters: Mapping[str, Any] | type,
        execute: Execute,
        *,
        timeout: float | None = None,
    ) -> None:
        if not isinstance(name, str) or not _NAME.fullmatch(name):
            raise ConfigurationError(
                f"Tool name {name!r} must match ^[A-Za-z0-9_-]{{1,64}}$ (provider limit)"
            )
        if not isinstance(description, str):
            raise ConfigurationError("Tool.description must be a string")
        if not callable(execute):
            raise ConfigurationError("Tool.execute must be callable: execute(args, ctx)")
        _check_signature(name, execute)
        if timeout is not None and (
            isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
        ):
            raise ConfigurationError("Tool.timeout must be a positive number of seconds or None")
        schema = _schema_of(parameters)
        if schema.get("type") != "object":
            raise ConfigurationError(
                f'Tool {name!r}: parameters must be an object schema ({{"type": "object", ...}}); '
                "providers accept nothing else for function arguments"
            )
        from .._json_schema import compile_validator
        from .._schema_refs import check_refs

        check_refs(schema, f"Tool {name!r}")
        self.name = name
        self.description = description
        self.parameters: dict[str, Any] = schema
        self.execute = execute
        self.timeout = timeout
        #: The typed function a :meth:`from_function` tool calls (``None`` otherwise).
        self.function: Callable[..., Any] | None = None
        self._validator = compile_validator(schema, name)

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
    ) -> Tool:
        """A tool from a typed function: the schema from its signature, hints and
        docstring; the arguments validated, then passed as typed values; sync or
        async; a ``ToolContext`` parameter injected, never shown to the model
        (:mod:`modelwire.tools._function`). ``name`` defaults to the function's,
        ``description`` to its docstring's text above the parameter section."""
        from ._function import function_parts

        tool_name, summary, schema, execute = function_parts(fn, name)
        made = cls(tool_name, summary if description is None else description, schema, execute,
                   timeout=timeout)  # fmt: skip
        made.function = fn
        return made

    @property
    def definition(self) -> ToolDefinition:
        """What the model is told about this tool."""
        return ToolDefinition(
            name=self.name, description=self.description, parameters=self.parameters
        )

    def validate(self, args: Any) -> list[str]:
        """Every way ``args`` breaks the schema, one line per failing path (empty: valid)."""
        from .._json_schema import errors_of

        return errors_of(self._validator, args)

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r})"


@typing.overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@typing.overload
def tool(
    *, name: str | None = None, description: str | None = None, timeout: float | None = None
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """``@mw.tool`` (or ``@mw.tool(name=..., description=..., timeout=...)``): the
    function as a :class:`Tool` (:meth:`Tool.from_function`); the function itself
    stays reachable as ``tool.function``."""
    if fn is not None:
        return Tool.from_function(fn, name=name, description=description, timeout=timeout)

    def wrap(f: Callable[..., Any]) -> Tool:
        return Tool.from_function(f, name=name, description=description, timeout=timeout)

    return wrap
