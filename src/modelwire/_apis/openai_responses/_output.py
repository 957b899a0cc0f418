"""Structured output for the Responses API: ``text.format`` of type ``json_schema``.

``{"text": {"format": {"type": "json_schema", "name", "schema", "strict"}}}`` —
flat, unlike Chat's ``response_format`` (OpenAI API reference, "Structured
Outputs", Responses tab); ``strict`` only where the schema has a strict form.
"""

from __future__ import annotations

from typing import Any

from ..._wire.request import OutputRequest

__all__ = ["add_output"]


def add_output(body: dict[str, Any], output: OutputRequest | None) -> None:
    """Add ``text.format`` to ``body`` for a native structured-output request."""
    if output is None or output.mode != "native":
        return
    fmt: dict[str, Any] = {"type": "json_schema", "name": output.name}
    if output.strict is not None:
        fmt["schema"] = output.strict
        fmt["strict"] = True
    else:
        fmt["schema"] = output.schema
    text = body.get("text")
    body["text"] = {**(text if isinstance(text, dict) else {}), "format": fmt}
