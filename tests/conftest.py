"""Hermetic tests: provider API keys cleared, no network but loopback.

Tests over the recorded provider streams (see ``tests/recorded.py``) are found by reading
each test module: a module-level name is *recorded* when its definition mentions
``FIXTURES`` (or another recorded name), and a test is when its body, its decorators or
its fixtures do. Without the fixture folder those tests skip with one reason and one
summary line; with ``MODELWIRE_REQUIRE_FIXTURES=1`` (CI) the missing folder fails the run.
"""

from __future__ import annotations

import ast
import gc
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
# `make quick` sets MODELWIRE_TESTS=quick: every property test still runs, on a fifth of
# its examples (see _quick_examples; most tests name their own max_examples, which a
# profile cannot lower). `make test` runs them at full strength.
QUICK = os.environ.get("MODELWIRE_TESTS") == "quick"
settings.register_profile(
    "quick", parent=settings.get_profile("ci" if os.environ.get("CI") else "default"),
    max_examples=20,
)  # fmt: skip
if QUICK:
    settings.load_profile("quick")
elif os.environ.get("CI"):
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


# Per test function (not per parametrized item: reading and parsing its source is most
# of the collection's time): does its body mention a recorded name, do its decorators?
_function_reads: dict[Any, tuple[bool, bool]] = {}


def _function_mentions(function: Any, recorded: frozenset[str]) -> tuple[bool, bool]:
    key = (function, recorded)
    if key not in _function_reads:
        try:
            source = textwrap.dedent(inspect.getsource(function))
        except (OSError, TypeError):
            _function_reads[key] = (False, False)
            return _function_reads[key]
        (node,) = ast.parse(source).body
        assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        decorators = set().union(*(_names(d) for d in node.decorator_list))
        node.decorator_list = []
        _function_reads[key] = (bool(_names(node) & recorded), bool(decorators & recorded))
    return _function_reads[key]


def _uses_recorded_streams(item: pytest.Function) -> bool:
    recorded = _module_recorded_names(item.module)
    if set(item.fixturenames) & recorded:
        return True
    body, decorators = _function_mentions(item.function, recorded)
    if body:
        return True
    if not decorators:
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
        "test_site.py",
        "test_terminal.py",
    }
)


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    # Under -m "not slow" (make quick) a slow file gives no test: not even imported (the
    # SDK clients and Ray take seconds to import, in each xdist worker).
    if collection_path.name in SLOW_FILES and config.getoption("markexpr") == "not slow":
        return True
    return None


#: Single tests as slow as a slow file's (each runs mypy on a snippet, 3-8 s; ``make
#: types`` type-checks the rest of the suite): ``slow`` wherever they live.
SLOW_TESTS = frozenset(
    {
        "test_hygiene.py::test_the_options_are_typed_for_callers",
        "test_results.py::test_the_final_message_is_typed_for_callers",
        "test_results.py::test_tags_narrow_unions_and_constructors_take_lists_for_callers",
    }
)

#: Exhaustive tests (every split point of every case, quadratic in the body) over many
#: cases: ``make quick`` runs one case in N (the first, then every Nth), ``make test``
#: all of them. The same files' random-split property tests cover the other cases.
SAMPLED_TESTS = {
    "test_sse_runs.py::test_runs_give_the_frame_by_frame_events_at_every_split": 6,
    "test_eventstream_runs.py::test_runs_give_the_message_by_message_events_at_every_split": 6,
}


def _quick_examples(item: pytest.Function, seen: set[int]) -> None:
    """Under ``make quick``, a property test's ``max_examples`` divided by 5 (at least 10)."""
    test = item.obj
    if not getattr(test, "is_hypothesis_test", False) or id(test) in seen:
        return
    seen.add(id(test))
    # Where @given reads the test's settings (the @settings decorator writes it).
    own = getattr(test, "_hypothesis_internal_use_settings", None)
    if isinstance(own, settings):
        fewer = max(min(own.max_examples, 10), own.max_examples // 5)
        test._hypothesis_internal_use_settings = settings(own, max_examples=fewer)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    sampled: dict[str, int] = {}
    seen: set[int] = set()
    for item in items:
        if isinstance(item, pytest.Function) and _uses_recorded_streams(item):
            item.add_marker(pytest.mark.recorded)
        if item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
        function = item.originalname if isinstance(item, pytest.Function) else item.name
        name = f"{item.path.name}::{function}"
        if name in SLOW_TESTS:
            item.add_marker(pytest.mark.slow)
        if name in SAMPLED_TESTS:
            n = sampled[name] = sampled.get(name, -1) + 1
            if n % SAMPLED_TESTS[name]:
                item.add_marker(pytest.mark.slow)
        if QUICK and isinstance(item, pytest.Function):
            _quick_examples(item, seen)


def pytest_collection_finish(session: pytest.Session) -> None:
    # Everything alive now (the test modules, their parameters, the libraries they
    # import: about 470,000 objects) lives to the end of the run: freezing it takes it
    # out of every later collection, so a test's gc.collect() (the HTTP tests call it so
    # an unclosed resource warns in the test that left it) costs microseconds, not
    # 0.2 s. Objects the tests create are collected as before.
    gc.collect()
    gc.freeze()


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
