"""JSON Schema (Draft 2020-12) validation of tool arguments, with jsonschema.

``jsonschema`` is imported here, inside the functions, and this module is only
imported when a :class:`~modelwire.tools.Tool` or an ``output=`` schema is built, so ``import modelwire``
stays fast (DESIGN §4: jsonschema for tool argument validation).
"""

from __future__ import annotations

from typing import Any

from .errors import ConfigurationError

__all__ = ["compile_validator", "errors_of"]

# At most this many failing paths are listed; a model that got 20 wrong has
# enough to fix, and the rest would only cost tokens.
MAX_ERRORS = 20
# A failing value is echoed in jsonschema's message; keep each line short.
MAX_LINE = 300


def compile_validator(schema: dict[str, Any], tool_name: str) -> Any:
    """A Draft 2020-12 validator for ``schema``; a bad schema is a caller mistake."""
    import jsonschema

    try:
        jsonschema.Draft202012Validator.check_schema(schema)
    except jsonschema.SchemaError as exc:
        where = exc.json_path if exc.json_path != "$" else "the schema"
        raise ConfigurationError(
            f"Tool {tool_name!r}: parameters is not a valid JSON Schema (Draft 2020-12): "
            f"{where}: {exc.message}"
        ) from None
    return jsonschema.Draft202012Validator(schema)


def _line(path: str, message: str) -> str:
    text = f"{path}: {message}"
    return text if len(text) <= MAX_LINE else text[: MAX_LINE - 1] + "…"


def errors_of(validator: Any, instance: Any) -> list[str]:
    """One line per failing path (``$.items[1]: 3 is not of type 'string'``), sorted
    by path; for ``anyOf``/``oneOf`` the closest alternative's reason is added."""
    from jsonschema.exceptions import best_match

    errors = sorted(
        validator.iter_errors(instance),
        key=lambda e: ([str(p) for p in e.absolute_path], str(e.validator)),
    )
    lines: list[str] = []
    for err in errors[:MAX_ERRORS]:
        message = err.message
        if err.context:
            best = best_match(err.context)
            if best is not None:
                message = f"{message} (closest: {best.json_path}: {best.message})"
        lines.append(_line(err.json_path, message))
    if len(errors) > MAX_ERRORS:
        lines.append(f"… and {len(errors) - MAX_ERRORS} more")
    return lines
