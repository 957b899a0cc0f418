"""An ``output=`` type as a JSON Schema and a validator.

``output=`` is a pydantic model (when pydantic is installed: modelwire never imports
it unless the type is one), a msgspec Struct, a dataclass, a TypedDict — any type
msgspec can describe — or a JSON Schema dict. :func:`output_type` turns it into an
:class:`OutputType`: the schema sent to the model and a function from the model's
JSON text to the validated value, raising :class:`Invalid` with one line per failing
path. Providers want an object at the root (OpenAI strict mode, a tool's
arguments): any other schema is wrapped in ``{"result": ...}`` and unwrapped again.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from ..._schema_refs import inline_root
from ...errors import ConfigurationError

__all__ = ["Invalid", "OutputType", "output_type", "strict_schema"]

#: Providers accept ``^[a-zA-Z0-9_-]{1,64}$`` for a schema's or a tool's name.
_NAME = re.compile(r"[^A-Za-z0-9_-]")
_WRAP_KEY = "result"


class Invalid(Exception):
    """The model's output failed: ``lines`` say where and why (``$.age: ...``)."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("; ".join(lines))
        self.lines = lines


class OutputType:
    """A resolved ``output=``: ``name``, the root-object ``schema`` sent to the model,
    and :meth:`parse` (JSON text → validated value or :class:`Invalid`)."""

    __slots__ = ("_validate", "name", "schema", "source", "wrapped")

    def __init__(
        self,
        name: str,
        schema: dict[str, Any],
        validate: Callable[[Any], Any],
        *,
        wrapped: bool,
        source: object,
    ) -> None:
        self.name = name
        self.schema = schema
        self._validate = validate
        self.wrapped = wrapped
        self.source = source

    def parse(self, text: str) -> Any:
        """The validated value of the JSON ``text`` (unwrapped when the schema was)."""
        try:
            data = msgspec.json.decode(text)
        except msgspec.DecodeError as exc:
            raise Invalid([f"$: the output is not valid JSON ({exc})"]) from None
        if self.wrapped:
            if not isinstance(data, dict) or _WRAP_KEY not in data:
                raise Invalid([f"$: expected an object with the key {_WRAP_KEY!r}"])
            data = data[_WRAP_KEY]
        return self._validate(data)


def _safe_name(name: str) -> str:
    return (_NAME.sub("_", name) or "output")[:64]


def _is_pydantic(tp: object) -> bool:
    return (
        isinstance(tp, type)
        and callable(getattr(tp, "model_json_schema", None))
        and callable(getattr(tp, "model_validate", None))
    )


def _wrap(schema: dict[str, Any]) -> tuple[dict[str, Any], bool]:
    if schema.get("type") == "object":
        return schema, False
    defs = schema.get("$defs")
    inner = {k: v for k, v in schema.items() if k != "$defs"}
    out: dict[str, Any] = {
        "type": "object",
        "properties": {_WRAP_KEY: inner},
        "required": [_WRAP_KEY],
        "additionalProperties": False,
    }
    if defs:
        out["$defs"] = defs
    return out, True


def _pydantic(tp: Any) -> OutputType:
    schema, wrapped = _wrap(tp.model_json_schema())

    def validate(data: Any) -> Any:
        import pydantic  # present: ``tp`` is a pydantic model

        try:
            return tp.model_validate(data)
        except pydantic.ValidationError as exc:
            raise Invalid([f"{_loc_path(e['loc'])}: {e['msg']}" for e in exc.errors()]) from None

    return OutputType(_safe_name(tp.__name__), schema, validate, wrapped=wrapped, source=tp)


def _loc_path(loc: tuple[Any, ...]) -> str:
    path = "$"
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}"
    return path


def _msgspec(tp: Any) -> OutputType:
    try:
        schema = msgspec.json.schema(tp)
    except (TypeError, ValueError) as exc:
        raise ConfigurationError(
            f"output={tp!r} is not a type modelwire can describe ({exc}); pass a pydantic "
            "model, a msgspec Struct, a dataclass, a TypedDict or a JSON Schema dict"
        ) from None
    schema, wrapped = _wrap(inline_root(schema))

    def validate(data: Any) -> Any:
        try:
            return msgspec.convert(data, tp)
        except msgspec.ValidationError as exc:
            text = str(exc)
            # msgspec names the path at the end: "Expected `int`, got `str` - at `$.age`".
            where = text.rsplit(" - at `", 1)
            if len(where) == 2:
                raise Invalid([f"{where[1].rstrip('`')}: {where[0]}"]) from None
            raise Invalid([f"$: {text}"]) from None

    name = getattr(tp, "__name__", None) or "output"
    return OutputType(_safe_name(name), schema, validate, wrapped=wrapped, source=tp)


def _dict_schema(schema: Mapping[str, Any]) -> OutputType:
    from ..._json_schema import compile_validator, errors_of

    title = schema.get("title")
    name = _safe_name(title) if isinstance(title, str) and title else "output"
    as_dict = dict(schema)
    try:
        validator = compile_validator(as_dict, name)
    except ConfigurationError as exc:
        raise ConfigurationError(f"output= {exc.message.split(': ', 1)[-1]}") from None
    wire, wrapped = _wrap(as_dict)

    def validate(data: Any) -> Any:
        lines = errors_of(validator, data)
        if lines:
            raise Invalid(lines)
        return data

    return OutputType(name, wire, validate, wrapped=wrapped, source=schema)


def output_type(output: object) -> OutputType:
    """The :class:`OutputType` of an ``output=`` value (``ConfigurationError`` when it
    is none of the accepted kinds)."""
    if isinstance(output, OutputType):
        return output
    if isinstance(output, Mapping):
        return _dict_schema(output)
    if _is_pydantic(output):
        return _pydantic(output)
    if isinstance(output, type) or getattr(output, "__origin__", None) is not None:
        return _msgspec(output)
    raise ConfigurationError(
        f"output must be a pydantic model, a msgspec Struct, a dataclass, a TypedDict or a "
        f"JSON Schema dict, got {type(output).__name__}"
    )


def strict_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    """``schema`` in OpenAI's strict form (every object closed, every property
    required), or ``None`` when it cannot be: an optional property or an open
    object would change meaning ("Supported schemas", OpenAI Structured Outputs guide)."""
    ok = True

    def walk(node: Any) -> Any:
        nonlocal ok
        if isinstance(node, list):
            return [walk(v) for v in node]
        if not isinstance(node, dict):
            return node
        out = {k: walk(v) for k, v in node.items()}
        if node.get("type") == "object" or "properties" in node:
            props = node.get("properties") or {}
            if set(node.get("required") or ()) != set(props):
                ok = False
            extra = node.get("additionalProperties", False)
            if extra is not False:
                ok = False
            out["additionalProperties"] = False
        return out

    result = walk(schema)
    return result if ok else None
