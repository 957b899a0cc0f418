"""Structured output for Chat Completions: ``response_format`` of type ``json_schema``.

``{"type": "json_schema", "json_schema": {"name", "schema", "strict"}}`` (OpenAI
API reference, "Structured Outputs"); ``strict: true`` only where the schema has a
strict form (every object closed, every property required), else it is left out.
"""

from __future__ import annotations

from typing import Any

from ..._wire.request import OutputRequest

__all__ = ["add_output"]


def add_output(body: dict[str, Any], output: OutputRequest | None) -> None:
    """Add ``response_format`` to ``body`` for a native structured-output request."""
    if output is None or output.mode != "native":
        return
    spec: dict[str, Any] = {"name": output.name}
    if output.strict is not None:
        spec["schema"] = output.strict
        spec["strict"] = True
    else:
        spec["schema"] = output.schema
    body["response_format"] = {"type": "json_schema", "json_schema": spec}
