"""Hermetic tests: provider API keys cleared, no network but loopback.

Tests over the recorded provider streams (see ``tests/recorded.py``) are found by reading
each test module: a module-level name is *recorded* when its definition mentions
``FIXTURES`` (or another recorded name), and a test is when its body, its decorators or
its fixtures do. Without the fixture folder those tests skip with one reason and one
summary line; with ``MODELWIRE_REQUIRE_FIXTURES=1`` (CI) the missing folder fails the run.
"""

from __future__ import annotations

import ast
import inspect
import os
import socket
import textwrap
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from hypothesis import settings

from modelwire._catalog import BASE_URL_ENV
from modelwire._catalog._records import ENV_KEYS
from recorded import (
    PLACEHOLDER,
    PRESENT,
    REASON,
    REQUIRE_ENV,
    REQUIRED,
    ROOT,
    MissingFixtures,
    recorded_streams,
)

# Hypothesis explores new random cases on every local run; CI replays a fixed sequence
# (derandomize) so a landing is judged on the code, not on the draw. A case found
# locally is pinned with @example.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

# The mock_server and scripted_model fixtures, enabled as the docs tell users to.
pytest_plugins = ["pytester", "modelwire.testing.pytest_plugin"]

FIXTURES = recorded_streams()

# The API keys, and the SDKs' base-URL variables (they would point the catalog elsewhere).
_KEY_VARS = sorted(
    {v for names in ENV_KEYS.values() for v in names} | {v for v, _ in BASE_URL_ENV.values()}
)
_KEY_VARS += ["AZURE_OPENAI_AD_TOKEN", "AZURE_OPENAI_ENDPOINT", "OPENAI_API_VERSION"]  # azure
_KEY_VARS += ["AWS_REGION", "AWS_DEFAULT_REGION", "AWS_PROFILE", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"]  # amazon-bedrock  # fmt: skip
_KEY_VARS += ["GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "CLOUD_ML_REGION", "GOOGLE_APPLICATION_CREDENTIALS"]  # fmt: skip
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


@pytest.fixture(scope="session")
def _user_dirs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("user-dirs")


@pytest.fixture(autouse=True)
def _hermetic(monkeypatch: pytest.MonkeyPatch, _user_dirs: Path) -> Iterator[None]:
    for var in _KEY_VARS:
        monkeypatch.delenv(var, raising=False)
    # The CLI's config file, saved conversations and default model: never the user's.
    monkeypatch.setenv("XDG_CONFIG_HOME", str(_user_dirs / "config"))
    monkeypatch.setenv("XDG_DATA_HOME", str(_user_dirs / "data"))
    monkeypatch.delenv("MODELWIRE_MODEL", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setattr(socket.socket, "connect", _loopback_only)
    yield
    # A gateway with otel = true instruments the process (its calls' spans): not the
    # next test's calls, whose traced pipelines would decode differently.
    from modelwire._client._observers import AGENT_OBSERVERS, CALL_OBSERVERS

    if CALL_OBSERVERS or AGENT_OBSERVERS:
        import modelwire.otel

        modelwire.otel.uninstrument()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def fixtures_dir() -> Path:
    return FIXTURES


# ------------------------------------------------------------------ recorded provider streams

_SEEDS = frozenset({"FIXTURES", "fixtures_dir"})
_recorded_names: dict[str, frozenset[str]] = {}


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _module_recorded_names(module: ModuleType) -> frozenset[str]:
    """Module-level names whose definition reaches ``FIXTURES`` (fixpoint over the module)."""
    key = module.__name__
    if key not in _recorded_names:
        tree = ast.parse(inspect.getsource(module))
        defs: list[tuple[set[str], set[str]]] = []
        for stmt in tree.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                defs.append(({stmt.name}, _names(stmt)))
            elif isinstance(stmt, ast.Assign | ast.AnnAssign | ast.AugAssign):
                nodes = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
                defs.append((set().union(*(_names(t) for t in nodes)), _names(stmt)))
        found = set(_SEEDS)
        changed = True
        while changed:
            changed = False
            for targets, used in defs:
                if not targets <= found and used & found:
                    found |= targets
                    changed = True
        _recorded_names[key] = frozenset(found)
    return _recorded_names[key]


def _is_placeholder(value: object) -> bool:
    if isinstance(value, MissingFixtures):
        return True
    if isinstance(value, str):
        return PLACEHOLDER in value
    if isinstance(value, dict):
        return any(_is_placeholder(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_is_placeholder(v) for v in value)
    return False


def _uses_recorded_streams(item: pytest.Function) -> bool:
    recorded = _module_recorded_names(item.module)
    if set(item.fixturenames) & recorded:
        return True
    try:
        source = textwrap.dedent(inspect.getsource(item.function))
    except (OSError, TypeError):
        return False
    (node,) = ast.parse(source).body
    assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    decorators = set().union(*(_names(d) for d in node.decorator_list))
    node.decorator_list = []
    if _names(node) & recorded:
        return True
    if not decorators & recorded:
        return False
    # Only the parameter list mentions the streams (``RECORDED + SYNTHETIC``): a
    # synthetic parameter runs; a recorded one is a real path or, without the folder,
    # the placeholder.
    params = item.callspec.params.values() if hasattr(item, "callspec") else ()
    return PRESENT or any(_is_placeholder(v) for v in params)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "recorded: reads the recorded provider streams (MODELWIRE_FIXTURES)"
    )
    if REQUIRED and not PRESENT:
        raise pytest.UsageError(f"{REQUIRE_ENV} is set but {REASON}")


#: Files whose tests drive real processes (the CLI in a terminal, Ray, the SDKs and
#: their servers, ``make``) or replay every recorded stream many ways: ``slow``, left
#: out by ``make quick`` (``-m "not slow"``) and run by ``make test``.
SLOW_FILES = frozenset(
    {
        "test_batch.py",
        "test_batch_ray.py",
        "test_docs.py",
        "test_faults.py",
        "test_gateway_fidelity.py",
        "test_gateway_hostile.py",
        "test_gateway_sdk_anthropic.py",
        "test_gateway_sdk_chat.py",
        "test_gateway_sdk_responses.py",
        "test_make_demo.py",
        "test_pipeline_batch.py",
        "test_readme_demo.py",
        "test_sdk_clients.py",
        "test_setup.py",
        "test_terminal.py",
    }
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if isinstance(item, pytest.Function) and _uses_recorded_streams(item):
            item.add_marker(pytest.mark.recorded)
        if item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)


def pytest_runtest_setup(item: pytest.Item) -> None:
    # Raised here, so every skip reports the same location and folds into one `-rs` line.
    if not PRESENT and item.get_closest_marker("recorded") is not None:
        pytest.skip(REASON)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if PRESENT:
        return
    skipped = sum(
        1
        for report in terminalreporter.stats.get("skipped", [])
        if isinstance(report.longrepr, tuple) and report.longrepr[2] == f"Skipped: {REASON}"
    )
    if skipped:
        terminalreporter.write_line(f"modelwire: {skipped} tests skipped: {REASON}")


__all__ = ["ROOT"]
