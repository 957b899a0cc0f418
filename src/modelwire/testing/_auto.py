"""The automatic reply: call every declared tool once, then answer with text.

Like pydantic-ai's ``TestModel``: a conversation that declares tools gets, on its
first turn, one call to each tool with arguments generated from the tool's JSON
Schema; once the tool results are back it gets a text answer naming them. So an
agent's whole loop — the model asks, the tools run, their results go back — runs
with no script written.

The arguments come from :func:`example_for`, a small generator of our own over the
JSON Schema subset tool parameters use (``type``, ``properties``/``required``,
``enum``/``const``, ``items`` and item counts, string lengths and common
``format``\\ s, numeric bounds and ``multipleOf``, ``anyOf``/``oneOf``/``allOf``,
local ``$ref``). hypothesis-jsonschema would cover more of the standard but is
not a dependency (and draws at random, while a test double should answer the same
way every run); each generated value is checked with ``jsonschema`` — already a
dependency — so a schema outside the subset is a clear ``ConfigurationError``,
never an invalid call.
"""

from __future__ import annotations

import itertools
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

import jsonschema

from ..errors import ConfigurationError
from ..types import Context, ToolCall, ToolResultMessage, UserMessage
from ._normal import Script, tool_call

__all__ = ["auto_for_context", "auto_for_request", "auto_script", "example_for"]

_ids = itertools.count(1)

_FORMATS = {
    "date-time": "2025-01-01T00:00:00Z", "date": "2025-01-01", "time": "00:00:00Z",
    "email": "user@example.com", "uri": "https://example.com/", "url": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000", "hostname": "example.com",
    "ipv4": "192.0.2.1", "ipv6": "2001:db8::1",
}  # fmt: skip


def _resolve(schema: Any, root: Mapping[str, Any], depth: int) -> Any:
    if depth > 32:
        raise ConfigurationError("the schema nests (or refers to itself) more than 32 levels")
    ref = schema.get("$ref") if isinstance(schema, dict) else None
    if not isinstance(ref, str):
        return schema
    if not ref.startswith("#/"):
        raise ConfigurationError(f"only local $ref is supported, got {ref!r}")
    target: Any = root
    for part in ref[2:].split("/"):
        part = part.replace("~1", "/").replace("~0", "~")
        if not isinstance(target, dict) or part not in target:
            raise ConfigurationError(f"$ref {ref!r} names nothing in the schema")
        target = target[part]
    rest = {k: v for k, v in schema.items() if k != "$ref"}
    return _resolve({**target, **rest} if isinstance(target, dict) else target, root, depth + 1)


def _string(schema: Mapping[str, Any], name: str) -> str:
    fmt = schema.get("format")
    value = _FORMATS.get(fmt, name or "a") if isinstance(fmt, str) else (name or "a")
    low = schema.get("minLength", 0)
    high = schema.get("maxLength")
    if isinstance(low, int) and len(value) < low:
        value = value + "a" * (low - len(value))
    if isinstance(high, int) and len(value) > high:
        value = value[:high]
    return value


def _bound(schema: Mapping[str, Any], key: str) -> float | None:
    value = schema.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _number(schema: Mapping[str, Any], integer: bool) -> int | float:
    lo, hi = _bound(schema, "minimum"), _bound(schema, "maximum")
    xlo, xhi = _bound(schema, "exclusiveMinimum"), _bound(schema, "exclusiveMaximum")
    step = _bound(schema, "multipleOf")

    def fits(v: float) -> bool:
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            return False
        if (xlo is not None and v <= xlo) or (xhi is not None and v >= xhi):
            return False
        return step is None or step <= 0 or abs(v / step - round(v / step)) < 1e-9

    lows = [b for b in (lo, xlo) if b is not None]
    highs = [b for b in (hi, xhi) if b is not None]
    seeds = [1.0, 0.0, *lows, *(b + 1 for b in lows), *highs, *(b - 1 for b in highs)]
    seeds += [(a + b) / 2 for a in lows for b in highs]
    candidates: list[float] = []
    for v in seeds:
        if step is not None and step > 0:
            candidates += [math.ceil(v / step) * step, math.floor(v / step) * step]
        candidates += [float(math.ceil(v)), float(math.floor(v))] if integer else [v]
    for v in candidates:
        if fits(v) and (not integer or v == int(v)):
            return int(v) if integer else v
    # Nothing fits (e.g. an empty range): the caller's validation names the bound.
    return int(seeds[0]) if integer else seeds[0]


def _example(schema: Any, root: Mapping[str, Any], name: str, depth: int) -> Any:
    schema = _resolve(schema, root, depth)
    if schema is True or schema == {}:
        return name or "a"
    if not isinstance(schema, dict):
        raise ConfigurationError(f"a schema must be an object or a boolean, got {schema!r}")
    if "const" in schema:
        return schema["const"]
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        return examples[0]
    if "default" in schema:
        return schema["default"]
    if isinstance(schema.get("allOf"), list):
        merged: dict[str, Any] = {k: v for k, v in schema.items() if k != "allOf"}
        for part in schema["allOf"]:
            part = _resolve(part, root, depth + 1)
            if isinstance(part, dict):
                props = {**merged.get("properties", {}), **part.get("properties", {})}
                required = [*merged.get("required", []), *part.get("required", [])]
                merged = {**merged, **part, "properties": props, "required": required}
        return _example(merged, root, name, depth + 1)
    for key in ("anyOf", "oneOf"):
        options = schema.get(key)
        if isinstance(options, list) and options:
            # The first branch that is not null: a tool wants a value, not a null.
            chosen = next((o for o in options if o != {"type": "null"}), options[0])
            return _example(chosen, root, name, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    if kind is None:
        kind = "object" if "properties" in schema else "array" if "items" in schema else "string"
    if kind == "object":
        props = schema.get("properties") or {}
        return {key: _example(sub, root, key, depth + 1) for key, sub in props.items()}
    if kind == "array":
        count = schema.get("minItems", 1)
        count = count if isinstance(count, int) and count >= 1 else 1
        high = schema.get("maxItems")
        if isinstance(high, int):
            count = min(count, high)
        items = schema.get("items", {})
        if isinstance(schema.get("prefixItems"), list):
            return [_example(s, root, name, depth + 1) for s in schema["prefixItems"]]
        out = [_example(items, root, name, depth + 1) for _ in range(count)]
        if schema.get("uniqueItems") and len(out) > 1:
            raise ConfigurationError(
                "uniqueItems with minItems > 1 is outside the supported subset"
            )
        return out
    if kind == "string":
        return _string(schema, name)
    if kind in ("integer", "number"):
        return _number(schema, kind == "integer")
    if kind == "boolean":
        return True
    if kind == "null":
        return None
    raise ConfigurationError(f"unknown JSON Schema type {kind!r}")


def example_for(schema: Mapping[str, Any], *, tool: str = "the tool") -> Any:
    """A value valid against ``schema`` (the same one every time); ``ConfigurationError``
    naming ``tool`` when the schema is outside the supported subset.

    The arguments the automatic reply calls each tool with; use it for a test's
    arguments that must merely be valid.

    Args:
        schema: A JSON Schema.
        tool: The tool's name, for the error message.

    Returns:
        A JSON value that validates against ``schema``.

    Raises:
        ConfigurationError: The schema needs more than the supported subset.

    Example:
        ```python
        from modelwire.testing import example_for

        schema = {"type": "object", "properties": {"city": {"type": "string"}},
                  "required": ["city"]}
        print(example_for(schema))  # {'city': 'city'}
        ```
    """
    try:
        value = _example(schema, schema, "", 0)
    except ConfigurationError as exc:
        raise ConfigurationError(f"cannot generate arguments for {tool}: {exc}") from None
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(the root)"
        raise ConfigurationError(
            f"cannot generate arguments for {tool}: the schema needs more than the supported "
            f"subset ({exc.message} at {where}); script the call instead"
        ) from None
    except jsonschema.SchemaError as exc:
        raise ConfigurationError(f"{tool} has an invalid JSON Schema: {exc.message}") from None
    return value


def auto_script(
    tools: Sequence[tuple[str, Mapping[str, Any]]],
    results: Sequence[str] | None,
    *,
    id_prefix: str = "call_",
) -> Script:
    """The automatic reply: one call per tool (``tools``: name and parameters schema)
    while no tool result is back, else a text naming the results. Call ids start with
    ``id_prefix`` (the provider's own) and are unique in the process."""
    if results is None and tools:
        calls: list[ToolCall] = []
        for name, schema in tools:
            args = example_for(schema or {"type": "object"}, tool=f"tool {name!r}")
            if not isinstance(args, dict):
                raise ConfigurationError(f"tool {name!r}: its parameters must be an object schema")
            calls.append(tool_call(name, args, id=f"{id_prefix}auto_{next(_ids)}"))
        return calls
    if not results:
        return "success (no tool calls)"
    return "tool results: " + json.dumps(list(results), ensure_ascii=False)


def _context_turn(context: Context) -> tuple[list[tuple[str, Mapping[str, Any]]], list[str] | None]:
    tools: list[tuple[str, Mapping[str, Any]]] = [(t.name, t.parameters)
                                                  for t in context.tools or ()]  # fmt: skip
    results: list[str] = []
    for message in reversed(context.messages):
        if isinstance(message, UserMessage):
            break
        if isinstance(message, ToolResultMessage):
            results.insert(0, "".join(getattr(c, "text", "") for c in message.content))
    return tools, results or None


def auto_for_context(context: Context) -> Script:
    """The automatic reply to a conversation (:class:`ScriptedModel`): its tools, and
    the tool results since the last user message."""
    tools, results = _context_turn(context)
    return auto_script(tools, results)


def auto_for_request(api: str | None, body: object) -> Script:
    """The automatic reply to a request body of wire API ``api`` (:class:`MockServer`):
    the tools it declares and the tool results it carries, read by the API's server
    side (``WireServer.request_tools``, ``tool_results``)."""
    from .._apis import find_server

    server = find_server(api) if api is not None else None
    if server is None:
        return "success (no tool calls)"
    found = server.tool_results(body)
    tools = server.request_tools(body)
    return auto_script(tools, found or None, id_prefix=server.tool_id_prefix)
