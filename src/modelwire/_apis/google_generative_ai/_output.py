"""Structured output for Gemini: ``generationConfig.responseJsonSchema``.

``responseMimeType: "application/json"`` with ``responseJsonSchema`` (a JSON
Schema as is, unlike the OpenAPI-subset ``responseSchema``; Gemini API docs,
"Structured output").
"""

from __future__ import annotations

from typing import Any

from ..._wire.request import OutputRequest

__all__ = ["add_output"]


def add_output(body: dict[str, Any], output: OutputRequest | None) -> None:
    """Add the JSON-schema generation config to ``body`` for a native request."""
    if output is None or output.mode != "native":
        return
    gen = body.get("generationConfig")
    body["generationConfig"] = {
        **(gen if isinstance(gen, dict) else {}),
        "responseMimeType": "application/json",
        "responseJsonSchema": output.schema,
    }
