"""Test doubles shipped with modelwire (as httpx ships MockTransport).

``MockServer`` is a real loopback HTTP server playing scripted replies.
"""

from __future__ import annotations

from .server import MockServer, RecordedRequest, Reply, sse_body

__all__ = ["MockServer", "RecordedRequest", "Reply", "sse_body"]
