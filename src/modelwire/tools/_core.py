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
    ``timeout_unknown``. ``read_only`` says the tool only reads: what runs it may
    skip asking for approval (``modelwire chat --functions`` asks before every
    other call). ``approval`` says each call needs the application's approval: an
    agent's ``before_tool_call`` hook decides, and with no hook the run pauses
    until ``agent.resume(state, decisions)``. ``idempotent`` says running a call
    twice does what running it once does: a call interrupted by a crash is run
    again on resume instead of being answered ``in_doubt`` (as a read-only one
    is). ``defer`` keeps the tool's definition out of the
    requests until the model finds it with the agent's ``search_tools`` tool (or the
    provider's own tool search).

    Checked at construction, each a ``ConfigurationError`` at once (not a crash
    mid-run after the model was paid): the schema against the Draft 2020-12
    meta-schema; every ``$ref`` must resolve inside the schema (a dangling
    ``#/…`` pointer or a remote URL is refused, naming the tool and the
    reference); ``execute`` must accept ``(args, ctx)``.

    Args:
        name: The name the model calls it by.
        description: What the model is told: when to use it, what the result means.
        parameters: The JSON Schema of the arguments object, or a pydantic model
            class.
        execute: ``execute(args, ctx)``, sync or async, returning a ``str`` or a
            :class:`ToolOutput`, or raising :class:`ToolFailure`.
        timeout: Seconds one execution may take (``None``: no limit).
        read_only: The tool only reads, changes nothing (default ``False``).
        approval: Each call needs the application's approval (default ``False``).
        defer: Sent to the model only once it searched for it (default ``False``).
        idempotent: Running a call twice does what running it once does (default
            ``False``).

    Raises:
        ConfigurationError: One of the checks above failed.

    Example:
        ```python
        import modelwire as mw


        def execute(args: dict, ctx: mw.ToolContext) -> str:
            return args["text"].upper()


        shout = mw.Tool(
            "shout",
            "Upper-case a text.",
            {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            execute,
        )
        print(shout.validate({}))  # ["$: 'text' is a required property"]
        ```
    """

    __slots__ = (
        "_validator",
        "approval",
        "defer",
        "description",
        "execute",
        "function",
        "idempotent",
        "name",
        "parameters",
        "read_only",
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
        read_only: bool = False,
        approval: bool = False,
        defer: bool = False,
        idempotent: bool = False,
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
        for flag, value in (
            ("read_only", read_only),
            ("approval", approval),
            ("defer", defer),
            ("idempotent", idempotent),
        ):
            if not isinstance(value, bool):
                raise ConfigurationError(f"Tool.{flag} must be True or False")
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
        self.read_only = read_only
        self.approval = approval
        self.defer = defer
        #: Running a call twice has the effect of running it once: a call whose
        #: run was interrupted (``Agent(store=...)``) is run again, not ``in_doubt``.
        self.idempotent = idempotent
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
        read_only: bool = False,
        approval: bool = False,
        defer: bool = False,
        idempotent: bool = False,
    ) -> Tool:
        """A tool from a typed function: the schema from its signature, hints and
        docstring; the arguments validated, then passed as typed values; sync or
        async; a ``ToolContext`` parameter injected, never shown to the model
        (:mod:`modelwire.tools._function`). ``name`` defaults to the function's,
        ``description`` to its docstring's text above the parameter section.

        What :func:`~modelwire.tool` calls; use it directly for a function you
        cannot decorate (a method, a library's function).

        Args:
            fn: The typed function.
            name: The tool's name (default: the function's).
            description: What the model is told (default: the docstring's summary).
            timeout: Seconds one execution may take.
            read_only: The function only reads, changes nothing.
            approval: Each call needs the application's approval.
            defer: Sent to the model only once it searched for it.
            idempotent: Running a call twice does what running it once does.

        Returns:
            The tool; ``tool.function`` is ``fn``.

        Raises:
            ConfigurationError: A parameter type with no JSON Schema, a bad name or
                timeout.
        """
        from ._function import function_parts

        tool_name, summary, schema, execute = function_parts(fn, name)
        made = cls(tool_name, summary if description is None else description, schema, execute,
                   timeout=timeout, read_only=read_only, approval=approval,
                   defer=defer, idempotent=idempotent)  # fmt: skip
        made.function = fn
        return made

    @property
    def definition(self) -> ToolDefinition:
        """What the model is told about this tool."""
        return ToolDefinition(
            name=self.name, description=self.description, parameters=self.parameters
        )

    def validate(self, args: Any) -> list[str]:
        """Every way ``args`` breaks the schema, one line per failing path (empty: valid).

        The check the agent runs before ``execute``; the model gets these lines in an
        ``invalid_arguments`` result.

        Args:
            args: The arguments, as the model sent them (parsed JSON).

        Returns:
            One ``$.path: problem`` line per failure.
        """
        from .._json_schema import errors_of

        return errors_of(self._validator, args)

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r})"


@typing.overload
def tool(fn: Callable[..., Any], /) -> Tool: ...


@typing.overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    read_only: bool = False,
    approval: bool = False,
    defer: bool = False,
    idempotent: bool = False,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    timeout: float | None = None,
    read_only: bool = False,
    approval: bool = False,
    defer: bool = False,
    idempotent: bool = False,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a typed function a :class:`Tool`: ``@mw.tool`` or ``@mw.tool(...)``.

    The arguments schema comes from the signature, type hints and docstring (each
    parameter's description from its ``Args:`` entry), the description from the
    docstring's text above it (:meth:`Tool.from_function`). The model's arguments
    are validated against the schema, then passed as typed values; the function
    may be sync (run in a worker thread) or async, and a ``ToolContext``
    parameter is injected, never shown to the model. The function itself stays
    reachable as ``tool.function``.

    Args:
        fn: The function, when used as ``@mw.tool`` without parentheses.
        name: The tool's name (default: the function's), matching
            ``^[A-Za-z0-9_-]{1,64}$``.
        description: What the model is told (default: the docstring's summary).
        timeout: Seconds one execution may take; past it the call is cancelled and
            answered with ``timeout_unknown``.
        read_only: The function only reads, changes nothing (what runs it may skip
            asking for approval).
        approval: Each call needs the application's approval: the agent's
            ``before_tool_call`` hook decides inline; with no hook the run pauses
            (``stop_reason="paused"``) until ``agent.resume(state, decisions)``.
        defer: Keep the definition out of requests until the model finds it with
            ``search_tools`` (many tools, few used).
        idempotent: Running a call twice does what running it once does: a call
            interrupted mid-run (``Agent(store=...)``) is run again on resume
            instead of being answered ``in_doubt``.

    Returns:
        The :class:`Tool` (with ``fn``), or a decorator that makes one (without).

    Raises:
        ConfigurationError: The function cannot be a tool: a bad name or timeout,
            or a parameter type with no JSON Schema.

    Example:
        ```python
        import modelwire as mw


        @mw.tool(timeout=5)
        def weather(city: str, unit: str = "C") -> str:
            '''The current weather in a city.

            Args:
                city: The city name.
                unit: C or F.
            '''
            return f"18 {unit} in {city}"


        print(weather.name, weather.parameters["required"])  # weather ['city']
        print(weather.validate({"city": 3}))  # ["$.city: 3 is not of type 'string'"]
        ```
    """
    if fn is not None:
        return Tool.from_function(fn, name=name, description=description, timeout=timeout)

    def wrap(f: Callable[..., Any]) -> Tool:
        return Tool.from_function(
            f, name=name, description=description, timeout=timeout, read_only=read_only,
            approval=approval, defer=defer, idempotent=idempotent,
        )  # fmt: skip

    return wrap
