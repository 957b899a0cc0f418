"""Provider ``google-vertex``: Gemini on Google Vertex AI, over the
Gemini wire API (see :mod:`modelwire._providers._vertex`)."""

from __future__ import annotations

from ._vertex import GEMINI_RULES as RULES

__all__ = ["RULES"]
