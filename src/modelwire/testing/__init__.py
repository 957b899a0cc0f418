"""Test doubles shipped with modelwire (as httpx ships MockTransport).

* :class:`MockServer` — a real loopback HTTP server that speaks every wire
  API: it renders scripted replies (text, tool calls, whole messages) in the
  format of the API the request path names — streamed, or as the one JSON object
  of a request that asks no stream — or plays raw bytes, with faults (split
  sizes, every byte, random splits, delays, cuts, stalls); it lists its models,
  answers a path no API serves with a 404 that uses no reply, and records every
  request. It answers embedding requests on every API that has them, with
  deterministic vectors (:func:`mock_vector`) and the same faults.
* :class:`ScriptedModel` — the same scripts with no HTTP at all (the
  ``scripted`` api).
* :func:`auto_reply` (``auto=True`` on either) — pydantic-ai's ``TestModel`` mode:
  every declared tool called once with arguments valid against its schema
  (:func:`example_for`), then a text answer.
* :func:`render` — a script as the exact SSE body a provider would send.
* :func:`text_api` / :func:`register_text_api` — the simplest custom provider
  (an async generator of text) as a stream function for ``register_wire_api``.
* :func:`load_script` — MockServer replies from a JSON script file (the format
  of ``modelwire mock-server --script``).
* pytest: ``pytest_plugins = ["modelwire.testing.pytest_plugin"]`` gives the
  ``mock_server`` and ``scripted_model`` fixtures.
"""

from __future__ import annotations

from .._apis._server.embed import mock_vector
from ._auto import example_for
from ._background import Retrieval
from ._normal import tool_call
from ._render import APIS, api_for_path, render, render_frames
from ._script import load_script, parse_script
from ._scripted import (
    ScriptedModel,
    deltas_for,
    events_from_deltas,
    register_text_api,
    text_api,
)
from ._server import MockServer, RecordedRequest, Reply, auto_reply, error_reply, sse_body

__all__ = [
    "APIS",
    "MockServer",
    "RecordedRequest",
    "Reply",
    "Retrieval",
    "ScriptedModel",
    "api_for_path",
    "auto_reply",
    "deltas_for",
    "error_reply",
    "events_from_deltas",
    "example_for",
    "load_script",
    "mock_vector",
    "parse_script",
    "register_text_api",
    "render",
    "render_frames",
    "sse_body",
    "text_api",
    "tool_call",
]
