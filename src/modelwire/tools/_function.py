"""Tools from typed functions: ``@mw.tool`` and ``Tool.from_function(fn)``.

The parameters' JSON Schema is the one msgspec generates for a Struct with the
function's parameters as fields (their hints and defaults; pydantic's
``create_model`` when a hint is a pydantic model) — so it is what msgspec or
pydantic would generate for the same signature — with each parameter's
description from the docstring (Google ``Args:``, Sphinx ``:param x:`` or NumPy
``Parameters`` sections) and the docstring's text above them as the tool's
description. The agent validates the arguments against that schema; the function
is then called with typed values (a Struct, a dataclass, a ``datetime``…), sync or
async as it is written. A parameter annotated :class:`ToolContext` is injected
with the call's context and never shown to the model.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable
from typing import Any

import msgspec

from .._schema_refs import inline_root
from ..errors import ConfigurationError
from ._values import ToolContext, ToolFailure, ToolOutput

__all__ = ["docstring_parts", "function_parts"]

_SECTION = re.compile(r"^\s*(Args|Arguments|Parameters|Params)\s*:?\s*$")
_END = re.compile(
    r"^\s*(Returns?|Raises|Yields?|Examples?|Notes?|See Also|Warns?|Attributes)\s*:?\s*$"
)
_SPHINX = re.compile(r"^\s*:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")
_GOOGLE = re.compile(r"^\s*\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_NUMPY = re.compile(r"^\s*(\w+)\s*(?::\s*.*)?$")


def docstring_parts(doc: str | None) -> tuple[str, dict[str, str]]:
    """The description (the text before any section) and each parameter's
    description, from a Google, Sphinx or NumPy style docstring."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    params: dict[str, str] = {}
    state = "summary"  # summary | google | numpy | other
    current: str | None = None
    base: int | None = None  # indent of the entries of a Google section
    i = 0
    while i < len(lines):
        line = lines[i]
        text = line.strip()
        indent = len(line) - len(line.lstrip())
        underlined = (
            i + 1 < len(lines) and lines[i + 1].strip() and (set(lines[i + 1].strip()) == {"-"})
        )
        sphinx = _SPHINX.match(line)
        if sphinx:
            state, current = "sphinx", sphinx.group(1)
            params[current] = sphinx.group(2).strip()
        elif _SECTION.match(line):
            state, current, base = ("numpy" if underlined else "google"), None, None
            i += 1 if underlined else 0
        elif _END.match(line) or (underlined and indent == 0):
            state, current = "other", None
            i += 1 if underlined else 0
        elif state == "summary":
            summary.append(line)
        elif not text or state == "other":
            pass
        elif state == "google":
            m = _GOOGLE.match(line)
            if m and (base is None or indent <= base):
                base = indent
                current = m.group(1)
                params[current] = m.group(2).strip()
            elif current is not None:
                params[current] = f"{params[current]} {text}".strip()
        elif state == "numpy":
            m = _NUMPY.match(line)
            if m and indent == 0:
                current = m.group(1)
                params[current] = ""
            elif current is not None:
                params[current] = f"{params[current]} {text}".strip()
        elif current is not None:  # a Sphinx field's continuation line
            if text.startswith(":"):
                current = None
            else:
                params[current] = f"{params[current]} {text}".strip()
        i += 1
    return "\n".join(summary).strip(), {k: v for k, v in params.items() if v}


def _is_pydantic(tp: object) -> bool:
    return isinstance(tp, type) and callable(getattr(tp, "model_json_schema", None))


def _uses_pydantic(hint: object) -> bool:
    if _is_pydantic(hint):
        return True
    return any(_uses_pydantic(a) for a in typing.get_args(hint))


class _Signature:
    """A function's model-facing parameters: schema and the typed-value builder."""

    def __init__(self, fn: Callable[..., Any], name: str) -> None:
        sig = inspect.signature(fn)
        try:
            hints = typing.get_type_hints(fn, include_extras=True)
        except Exception as exc:  # a NameError in a string annotation
            raise ConfigurationError(f"tool {name!r}: cannot read the type hints ({exc})") from None
        self.ctx_name: str | None = None
        fields: list[tuple[str, Any, Any]] = []
        for p in sig.parameters.values():
            hint = hints.get(p.name, Any)
            if hint is ToolContext:
                self.ctx_name = p.name
                continue
            if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
                raise ConfigurationError(
                    f"tool {name!r}: *{p.name} / **{p.name} cannot be described to the "
                    "model; declare each parameter"
                )
            if p.kind is p.POSITIONAL_ONLY:
                raise ConfigurationError(
                    f"tool {name!r}: parameter {p.name!r} is positional-only; the model "
                    "passes arguments by name"
                )
            if p.default is p.empty:
                fields.append((p.name, hint, msgspec.NODEFAULT))
            else:
                fields.append((p.name, hint, p.default))
        self.names = [f[0] for f in fields]
        self.pydantic = any(_uses_pydantic(f[1]) for f in fields)
        title = "".join(part.capitalize() for part in name.split("_")) or "Arguments"
        if self.pydantic:
            import pydantic

            spec = {n: (h, ... if d is msgspec.NODEFAULT else d) for n, h, d in fields}
            self.model: Any = pydantic.create_model(title, **spec)  # type: ignore[call-overload]
            schema = self.model.model_json_schema()
        else:
            self.model = msgspec.defstruct(
                title, [(n, h) if d is msgspec.NODEFAULT else (n, h, d) for n, h, d in fields],
                kw_only=True,
            )  # fmt: skip
            try:
                schema = inline_root(msgspec.json.schema(self.model))
            except (TypeError, ValueError) as exc:
                raise ConfigurationError(
                    f"tool {name!r}: a parameter's type cannot be described as JSON ({exc})"
                ) from None
        schema.setdefault("type", "object")
        schema.setdefault("properties", {})
        self.schema: dict[str, Any] = schema

    def values(self, args: dict[str, Any]) -> dict[str, Any]:
        """Typed keyword arguments for the function (after schema validation)."""
        if self.pydantic:
            import pydantic

            try:
                inst = self.model.model_validate(args)
            except pydantic.ValidationError as exc:
                raise ToolFailure("invalid_arguments", _pydantic_errors(exc)) from None
        else:
            try:
                inst = msgspec.convert(args, self.model)
            except msgspec.ValidationError as exc:
                raise ToolFailure("invalid_arguments", str(exc)) from None
        return {n: getattr(inst, n) for n in self.names}


def _pydantic_errors(exc: Any) -> str:
    parts = []
    for e in exc.errors():
        path = "$" + "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in e["loc"])
        parts.append(f"{path}: {e['msg']}")
    return "; ".join(parts)


def _result(value: Any) -> str | ToolOutput:
    if isinstance(value, str | ToolOutput):
        return value
    if _is_pydantic(type(value)):
        text: str = value.model_dump_json()
        return text
    try:
        return msgspec.json.encode(value).decode()
    except TypeError:
        return str(value)


def function_parts(
    fn: Callable[..., Any], name: str | None = None
) -> tuple[str, str, dict[str, Any], Callable[[dict[str, Any], ToolContext], Any]]:
    """A typed function's tool name, description, parameters schema and
    ``execute(args, ctx)`` (sync or async as ``fn`` is); see the module docstring."""
    if not callable(fn):
        raise ConfigurationError(f"Tool.from_function needs a function, got {type(fn).__name__}")
    tool_name: str = name or str(getattr(fn, "__name__", ""))
    summary, params = docstring_parts(inspect.getdoc(fn))
    sig = _Signature(fn, tool_name)
    schema = sig.schema
    for pname, text in params.items():
        prop = schema["properties"].get(pname)
        if isinstance(prop, dict) and "description" not in prop:
            prop["description"] = text
    ctx_name = sig.ctx_name

    def kwargs(args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        values = sig.values(args)
        if ctx_name is not None:
            values[ctx_name] = ctx
        return values

    execute: Callable[[dict[str, Any], ToolContext], Any]
    if inspect.iscoroutinefunction(fn):

        async def execute_async(args: dict[str, Any], ctx: ToolContext) -> str | ToolOutput:
            return _result(await fn(**kwargs(args, ctx)))

        execute = execute_async
    else:

        def execute_sync(args: dict[str, Any], ctx: ToolContext) -> str | ToolOutput:
            return _result(fn(**kwargs(args, ctx)))

        execute = execute_sync
    return tool_name, summary, schema, execute
