"""``$ref`` checks for tool schemas, when a ``Tool`` / ``ToolDefinition`` is made,
and :func:`inline_root` for the schemas msgspec generates (root as a ``$ref``).

``jsonschema`` resolves a ``$ref`` lazily, the first time validation reaches it:
a dangling pointer used to surface as ``_WrappedReferencingError`` in the middle
of an agent turn, after the model had been paid. modelwire never fetches a
schema over the network, so every reference must resolve inside the schema
itself (JSON Schema 2020-12 §8.2.3 ``$ref``; JSON Pointer, RFC 6901). This
walk is pure and small, so ``import modelwire`` does not load jsonschema.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote, urljoin

from .errors import ConfigurationError

__all__ = ["check_refs", "closed_schema", "inline_root", "unresolved_refs"]

# Keywords whose values are data, not schemas: a "$ref" inside them is not a reference.
_DATA = frozenset({"enum", "const", "default", "examples"})
# jsonschema ships the official meta-schemas and resolves them without fetching.
_BUNDLED = ("https://json-schema.org/", "http://json-schema.org/")


def _base(node: dict[str, Any], base: str) -> str:
    ident = node.get("$id")
    return urljoin(base, ident).split("#", 1)[0] if isinstance(ident, str) else base


def _resources(node: Any, base: str, out: dict[str, Any], anchors: set[str]) -> None:
    """Collect embedded resources by absolute ``$id`` (resolved against the enclosing
    one, RFC 3986) and every ``$anchor``/``$dynamicAnchor``."""
    if isinstance(node, dict):
        if isinstance(node.get("$id"), str):
            base = _base(node, base)
            out[base] = node
        for key in ("$anchor", "$dynamicAnchor"):
            if isinstance(node.get(key), str):
                anchors.add(node[key])
        for key, value in node.items():
            if key not in _DATA:
                _resources(value, base, out, anchors)
    elif isinstance(node, list):
        for value in node:
            _resources(value, base, out, anchors)


def _pointer(doc: Any, pointer: str) -> bool:
    node = doc
    for raw in pointer.split("/")[1:]:
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return False
    return True


def _why(
    ref: str, base_uri: str, base_doc: Any, ids: dict[str, Any], anchors: set[str]
) -> str | None:
    """None when ``ref`` resolves; else why not."""
    target, _, fragment = ref.partition("#")
    if target:
        absolute = urljoin(base_uri, target)
        if absolute.startswith(_BUNDLED):
            return None
        if absolute not in ids:
            kind = "a remote URL" if "://" in target else "another document"
            return f"it points to {kind}, and modelwire never fetches schemas"
        base_doc = ids[absolute]
    fragment = unquote(fragment)
    if not fragment:
        return None
    if fragment.startswith("/"):
        return None if _pointer(base_doc, fragment) else "nothing is at that JSON Pointer"
    return None if fragment in anchors else f"no $anchor is named {fragment!r}"


def unresolved_refs(schema: dict[str, Any]) -> list[tuple[str, str, str]]:
    """Every reference in ``schema`` that does not resolve: ``(where, ref, why)``."""
    ids: dict[str, Any] = {}
    anchors: set[str] = set()
    _resources(schema, "", ids, anchors)
    bad: list[tuple[str, str, str]] = []

    def walk(node: Any, where: str, base: str, resource: Any) -> None:
        if isinstance(node, dict):
            if isinstance(node.get("$id"), str):
                # A "#/…" pointer below is relative to this resource (§8.2.1).
                base, resource = _base(node, base), node
            for key in ("$ref", "$dynamicRef"):
                ref = node.get(key)
                if isinstance(ref, str):
                    why = _why(ref, base, resource, ids, anchors)
                    if why is not None:
                        bad.append((f"{where}.{key}", ref, why))
            for key, value in node.items():
                if key not in _DATA:
                    walk(value, f"{where}.{key}", base, resource)
        elif isinstance(node, list):
            for i, value in enumerate(node):
                walk(value, f"{where}[{i}]", base, resource)

    walk(schema, "$", "", schema)
    return bad


def check_refs(schema: dict[str, Any], owner: str) -> None:
    """Raise ``ConfigurationError`` naming ``owner`` and the first reference that
    cannot be resolved inside ``schema``."""
    bad = unresolved_refs(schema)
    if not bad:
        return
    where, ref, why = bad[0]
    more = f" (and {len(bad) - 1} more)" if len(bad) > 1 else ""
    raise ConfigurationError(
        f"{owner}: parameters has a $ref that cannot be resolved: {ref!r} at {where}: "
        f"{why}{more}. Put the referenced schema in the tool's own schema, under "
        '"$defs", and point at it as "#/$defs/<name>".'
    )


def inline_root(schema: dict[str, Any]) -> dict[str, Any]:
    """msgspec puts every named type in ``$defs`` and the root is a ``$ref``: inline
    the root (the other definitions stay, so every reference still resolves)."""
    ref = schema.get("$ref")
    defs = schema.get("$defs")
    if not isinstance(ref, str) or not isinstance(defs, dict) or not ref.startswith("#/$defs/"):
        return schema
    name = ref[len("#/$defs/") :]
    root = dict(defs.get(name) or {})
    rest = {k: v for k, v in defs.items() if k != name or _refers(defs, ref)}
    if rest:
        root["$defs"] = rest
    return root


def _refers(node: Any, ref: str) -> bool:
    if isinstance(node, dict):
        return node.get("$ref") == ref or any(_refers(v, ref) for v in node.values())
    if isinstance(node, list):
        return any(_refers(v, ref) for v in node)
    return False


def closed_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with ``additionalProperties: false`` on every object that does not
    say otherwise (Anthropic structured outputs require closed objects)."""

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(v) for v in node]
        if not isinstance(node, dict):
            return node
        out = {k: walk(v) for k, v in node.items()}
        if (node.get("type") == "object" or "properties" in node) and (
            "additionalProperties" not in node
        ):
            out["additionalProperties"] = False
        return out

    result: dict[str, Any] = walk(schema)
    return result
