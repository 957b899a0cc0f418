"""pytest fixtures for testing an agent against modelwire's test doubles.

Opt-in (no ``pytest11`` entry point, so installing modelwire loads nothing into other
projects' pytest runs): enable it in a ``conftest.py``::

    pytest_plugins = ["modelwire.testing.pytest_plugin"]

then::

    def test_agent_reads_the_file(mock_server):
        mock_server.add(tool_call("read", {"path": "README.md"}), "It is a README.")
        model = mock_server.model()  # any wire API: mock_server.model(api)
        ...
        assert mock_server.requests[1].json()["messages"][-1]["role"] == "tool"
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from ._scripted import ScriptedModel
from ._server import MockServer

__all__ = ["mock_server", "scripted_model"]


@pytest.fixture
def mock_server() -> Iterator[MockServer]:
    """A started :class:`MockServer` with no replies queued (``add`` them); stopped,
    and any stalled reply released, after the test."""
    with MockServer() as server:
        yield server


@pytest.fixture
def scripted_model() -> ScriptedModel:
    """An empty :class:`ScriptedModel` (``add`` replies; ``.model`` to stream from it)."""
    return ScriptedModel()
