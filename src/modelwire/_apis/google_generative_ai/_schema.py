"""JSON Schema → the OpenAPI 3.0 ``Schema`` subset Gemini's function declarations accept.

Gemini's ``FunctionDeclaration.parameters`` (API reference,
https://ai.google.dev/api/caching#Schema) knows no ``$schema``, ``$ref``/``$defs``,
``additionalProperties``, ``const``, ``oneOf``/``allOf`` or exclusive bounds; its
``enum`` is a list of strings; ``format`` is only ``enum``/``date-time`` for strings
and ``int32``/``int64``/``float``/``double`` for numbers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._common import dumps

__all__ = ["gemini_schema"]

_COPY = ("title", "description", "minLength", "maxLength", "pattern", "minItems",
         "maxItems", "minProperties", "maxProperties", "minimum", "maximum")  # fmt: skip
_FORMATS = {
    "string": frozenset({"enum", "date-time"}),
    "integer": frozenset({"int32", "int64"}),
    "number": frozenset({"float", "double"}),
}
_MAX_REF_DEPTH = 16


def gemini_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Reduce a JSON Schema to what Gemini's ``parameters`` accepts (pure).

    * local ``$ref`` (``#/$defs/…``, ``#/definitions/…``) are inlined; a recursive
      or unresolvable one becomes ``{"type": <the target's type>}`` plus a note in
      the description (Gemini has no references);
    * ``allOf`` is merged; ``oneOf`` becomes ``anyOf``; a ``null`` member or type
      becomes ``nullable: true``; a one-member ``anyOf`` is inlined;
    * ``const`` becomes a one-value ``enum``; enums of strings are kept. Other
      enums are dropped with the allowed values listed in the description and the
      type kept: turning them into strings would make the model send ``"1"`` where
      the tool's own schema (validated on our side) wants ``1``;
    * everything else Gemini does not know is dropped.
    """
    defs: dict[str, Any] = {}
    for section in ("$defs", "definitions"):
        table = schema.get(section)
        if isinstance(table, Mapping):
            for name, sub in table.items():
                defs[f"#/{section}/{name}"] = sub
    return _reduce(schema, defs, ())


def _is_null(node: Any) -> bool:
    return isinstance(node, Mapping) and node.get("type") == "null" and len(node) <= 2


def _deref(node: Any, defs: dict[str, Any], stack: tuple[str, ...]) -> tuple[Any, tuple[str, ...]]:
    """Follow ``$ref`` chains; siblings of ``$ref`` override the target's keys."""
    while isinstance(node, Mapping) and isinstance(node.get("$ref"), str):
        ref = node["$ref"]
        target = defs.get(ref)
        if not isinstance(target, Mapping) or ref in stack or len(stack) >= _MAX_REF_DEPTH:
            out: dict[str, Any] = {}
            kind = target.get("type") if isinstance(target, Mapping) else None
            if isinstance(kind, str):
                out["type"] = kind
            desc = node.get("description")
            note = f"(structure of {ref.rsplit('/', 1)[-1]} omitted)"
            out["description"] = f"{desc} {note}" if isinstance(desc, str) else note
            return out, stack
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        node = {**target, **siblings}
        stack = (*stack, ref)
    return node, stack


def _reduce(node: Any, defs: dict[str, Any], stack: tuple[str, ...]) -> dict[str, Any]:
    node, stack = _deref(node, defs, stack)
    if not isinstance(node, Mapping):
        return {}  # ``true``/``false`` schemas: nothing Gemini can express
    all_of = node.get("allOf")
    if isinstance(all_of, list) and all_of:
        merged: dict[str, Any] = {k: v for k, v in node.items() if k != "allOf"}
        for member in all_of:
            member, stack = _deref(member, defs, stack)
            if not isinstance(member, Mapping):
                continue
            for key, value in member.items():
                if key == "properties" and isinstance(value, Mapping):
                    prev = merged.get("properties")
                    merged["properties"] = {**(prev if isinstance(prev, Mapping) else {}), **value}
                elif key == "required" and isinstance(value, list):
                    prev_req = merged.get("required")
                    have = list(prev_req) if isinstance(prev_req, list) else []
                    merged["required"] = have + [r for r in value if r not in have]
                else:
                    merged.setdefault(key, value)
        return _reduce(merged, defs, stack)
    variants = node.get("anyOf", node.get("oneOf"))
    if isinstance(variants, list) and variants:
        base = {k: v for k, v in node.items() if k not in ("anyOf", "oneOf")}
        rest = [v for v in variants if not _is_null(v)]
        nullable = len(rest) != len(variants)
        if len(rest) == 1:
            out = {**_reduce(rest[0], defs, stack), **_reduce(base, defs, stack)}
        else:
            out = _reduce(base, defs, stack)
            if rest:
                out["anyOf"] = [_reduce(v, defs, stack) for v in rest]
        if nullable:
            out["nullable"] = True
        return out
    return _reduce_plain(node, defs, stack)


def _reduce_plain(node: Mapping[str, Any], defs: dict[str, Any], stack: tuple[str, ...]) -> dict[str, Any]:  # fmt: skip
    out: dict[str, Any] = {}
    nullable = node.get("nullable") is True
    kind = node.get("type")
    any_of: list[dict[str, Any]] | None = None
    if isinstance(kind, list):
        names = [t for t in kind if isinstance(t, str)]
        nullable = nullable or "null" in names
        names = [t for t in names if t != "null"]
        kind = names[0] if len(names) == 1 else None
        if len(names) > 1:
            any_of = [{"type": t} for t in names]
    if kind == "null":
        nullable, kind = True, None
    if isinstance(kind, str):
        out["type"] = kind
    fmt = node.get("format")
    if isinstance(kind, str) and isinstance(fmt, str) and fmt in _FORMATS.get(kind, ()):
        out["format"] = fmt
    for key in _COPY:
        if key in node:
            out[key] = node[key]
    values = node.get("enum") if isinstance(node.get("enum"), list) else None
    if values is None and "const" in node:
        values = [node["const"]]
    if values is not None:
        nullable = nullable or None in values
        values = [v for v in values if v is not None]
        if values and all(isinstance(v, str) for v in values) and kind in (None, "string"):
            out.setdefault("type", "string")
            out["enum"] = values
        elif values:
            listed = ", ".join(dumps(v).decode() for v in values)
            desc = out.get("description")
            note = f"Allowed values: {listed}."
            out["description"] = f"{desc} {note}" if isinstance(desc, str) and desc else note
    if nullable:
        out["nullable"] = True
    props = node.get("properties")
    if isinstance(props, Mapping):
        out.setdefault("type", "object")
        out["properties"] = {str(k): _reduce(v, defs, stack) for k, v in props.items()}
        required = node.get("required")
        if isinstance(required, list):
            names = [r for r in required if isinstance(r, str) and r in out["properties"]]
            if names:
                out["required"] = names
    items = node.get("items", node.get("prefixItems"))
    if isinstance(items, Mapping):
        out["items"] = _reduce(items, defs, stack)
    elif isinstance(items, list) and items:
        members = [_reduce(v, defs, stack) for v in items]
        out["items"] = members[0] if len(members) == 1 else {"anyOf": members}
    if any_of is not None:
        out["anyOf"] = any_of
    return out
