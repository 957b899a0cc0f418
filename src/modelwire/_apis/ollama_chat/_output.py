"""Structured output for Ollama's ``/api/chat``: ``format`` holding the JSON Schema
(Ollama API docs, "Structured outputs")."""

from __future__ import annotations

from typing import Any

from ..._wire.request import OutputRequest

__all__ = ["add_output"]


def add_output(body: dict[str, Any], output: OutputRequest | None) -> None:
    """Set ``format`` in ``body`` for a native structured-output request."""
    if output is None or output.mode != "native":
        return
    body["format"] = output.schema
