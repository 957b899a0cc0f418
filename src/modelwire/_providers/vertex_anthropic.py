"""Provider ``vertex-anthropic``: Claude on Google Vertex AI, over the
Anthropic Messages wire API (see :mod:`modelwire._providers._vertex`)."""

from __future__ import annotations

from ._vertex import ANTHROPIC_RULES as RULES

__all__ = ["RULES"]
