"""Hermetic tests: provider API keys cleared, no network but loopback."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from modelwire.options import ENV_KEYS

FIXTURES = Path(__file__).resolve().parents[1].parent / "shared" / "fixtures"

_KEY_VARS = sorted({v for names in ENV_KEYS.values() for v in names})
for _var in _KEY_VARS:
    os.environ.pop(_var, None)

_real_connect = socket.socket.connect


def _loopback_only(self: socket.socket, address: Any) -> Any:
    host = address[0] if isinstance(address, tuple) else address
    if isinstance(host, str) and not (
        host.startswith("127.") or host in ("localhost", "::1") or self.family == socket.AF_UNIX
    ):
        raise OSError(f"tests are hermetic: connection to {host!r} refused (loopback only)")
    return _real_connect(self, address)


@pytest.fixture(autouse=True)
def _hermetic(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for var in _KEY_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(socket.socket, "connect", _loopback_only)
    yield


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES
