"""What a wire API is told about structured output: the native request field's inputs.

Built by :mod:`modelwire._output` from ``output=``; a wire API's encoder adds its
native field from it (``_apis/<api>/_output.py``) when ``mode`` is ``"native"``.
The tool and prompted modes need no encoder: they change the context instead.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

import msgspec

__all__ = ["OUTPUT_MODES", "OutputMode", "OutputRequest"]

OutputMode: TypeAlias = Literal["native", "tool", "prompted"]
OUTPUT_MODES: tuple[str, ...] = ("native", "tool", "prompted")


class OutputRequest(msgspec.Struct, frozen=True, kw_only=True):
    """The schema the response must follow, for the API's native field."""

    mode: OutputMode
    """How the output is asked for (the encoders act on ``"native"`` only)."""
    name: str
    """The schema's name (``^[A-Za-z0-9_-]{1,64}$``)."""
    schema: dict[str, Any]
    """The JSON Schema; its root is an object."""
    strict: dict[str, Any] | None = None
    """The schema in OpenAI's strict form, when it has one (every object closed,
    every property required); ``None``: sent without ``strict``."""
