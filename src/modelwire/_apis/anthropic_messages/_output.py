"""Structured output for Anthropic Messages: ``output_config.format``.

``{"output_config": {"format": {"type": "json_schema", "schema": ...}}}`` (Claude
docs, "Structured outputs"; generally available, no beta header). Objects must be
closed (``additionalProperties: false``), so the schema is closed where it does
not say otherwise. Models without structured outputs use the forced-tool mode
instead (:func:`modelwire._apis._output_modes.output_mode`).
"""

from __future__ import annotations

from typing import Any

from ..._schema_refs import closed_schema
from ..._wire.request import OutputRequest

__all__ = ["add_output"]


def add_output(body: dict[str, Any], output: OutputRequest | None) -> None:
    """Add ``output_config.format`` to ``body`` for a native structured-output request."""
    if output is None or output.mode != "native":
        return
    config = body.get("output_config")
    fmt = {"type": "json_schema", "schema": closed_schema(output.schema)}
    body["output_config"] = {**(config if isinstance(config, dict) else {}), "format": fmt}
