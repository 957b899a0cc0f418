"""The gateway: one OpenAI- and Anthropic-compatible HTTP endpoint in front of every
provider (``modelwire serve --config gateway.toml``, or :func:`app` for any ASGI server)."""

from __future__ import annotations

__all__: list[str] = []
