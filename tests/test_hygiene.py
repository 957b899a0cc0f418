"""Code hygiene, each rule checked on the source so it stays true:
one definition of a shared fact, no reach into another object's private parts,
httpx only in ``http.py``, dead helpers gone, the stream options declared once."""

from __future__ import annotations

import ast
import asyncio
import functools
import inspect
import re
from pathlib import Path
from typing import Any

import pytest

import modelwire as mw
from modelwire import _catalog as catalog
from modelwire import types as mwtypes
from modelwire._cli import common
from modelwire._client import _options as options
from modelwire._wire import pipeline as pipeline
from modelwire._wire import sse as sse
from modelwire.agent import _calls

SRC = Path(mw.__file__).parent


@functools.cache  # parsed once: the rules only read the trees
def _trees() -> dict[str, ast.Module]:
    out = {}
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC.parent).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        out[name] = ast.parse(path.read_text(encoding="utf-8"))
    return out


def _defined(name: str) -> list[str]:
    """Modules that define ``name`` (a function or a module-level assignment)."""
    hits = []
    for module, tree in _trees().items():
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                hits.append(module)
            targets = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, ast.AnnAssign):
                targets = [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets):
                hits.append(module)
    return hits


def test_one_is_loopback() -> None:
    assert _defined("is_loopback") == ["modelwire._catalog._validate"]
    assert _defined("_is_loopback") == []
    assert common.is_loopback is catalog.is_loopback
    assert catalog.is_loopback("http://127.0.0.1:8000/v1")
    assert catalog.is_loopback("http://[::1]:11434")
    assert catalog.is_loopback("http://localhost:11434")
    assert not catalog.is_loopback("https://api.openai.com/v1")
    assert not catalog.is_loopback("http://10.0.0.1/v1")


def test_one_default_max_event_bytes() -> None:
    assert _defined("DEFAULT_MAX_EVENT_BYTES") == ["modelwire._wire.sse"]
    assert pipeline.DEFAULT_MAX_EVENT_BYTES is sse.DEFAULT_MAX_EVENT_BYTES


def test_dead_helpers_are_gone() -> None:
    for name in ("STOP_REASONS", "as_tuple", "is_mapping"):
        assert not hasattr(mwtypes, name), name
    for name in ("as_tuple", "is_mapping"):
        assert _defined(name) == [], name
    # A wire API's stop-reason table lives in its spec, nowhere else.
    assert all(m.endswith(".spec") for m in _defined("STOP_REASONS"))
    # The chat decoder's _done was written at [DONE] and never read.
    from modelwire._apis.openai_chat import ChatDecoder

    assert "_done" not in ChatDecoder.__slots__


def test_only_http_imports_httpx_and_its_docstring_says_who_else_does_io() -> None:
    importers = set()
    for module, tree in _trees().items():
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            if any(n == "httpx" or n.startswith("httpx.") for n in names):
                importers.add(module)
    assert importers == {
        "modelwire._http",
        "modelwire._http._base",
        "modelwire._http._httpx_sync",
        "modelwire._http._httpx_async",
    }
    from modelwire import _http as http

    doc = http.__doc__ or ""
    assert "the one module that imports httpx" in doc
    for other in ("modelwire.cloud.aws", "modelwire.cloud.google", "modelwire.testing"):
        assert other in doc, other


def test_client_reaches_into_no_private_attribute_and_sets_only_channel_hooks() -> None:
    # The client wires the layers through their public surface: no ``obj._name``
    # (it used to call the stream channel's ``_emit``), and the only attributes it
    # sets are the channel's documented hooks (it used to set ``asm.done`` and
    # ``pipeline.assembler.policy``).
    tree = ast.parse((SRC / "_client" / "__init__.py").read_text(encoding="utf-8"))
    private = [
        f"{ast.unparse(n)} (line {n.lineno})"
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and n.attr.startswith("_") and not n.attr.startswith("__")
    ]
    assert private == []
    hooks = {"abort_events", "fail_events", "on_abort"}
    sets = [
        ast.unparse(t)
        for n in ast.walk(tree)
        if isinstance(n, ast.Assign | ast.AugAssign | ast.AnnAssign)
        for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
        if isinstance(t, ast.Attribute)
    ]
    # register_api naming a wire API object is the registry's seam.
    sets = [s for s in sets if s != "stream_fn.name"]
    assert sets and all(s.startswith("s.") and s.split(".")[1] in hooks for s in sets), sets


def test_stream_and_stream_sync_differ_only_in_their_driver() -> None:
    # One Call takes every decision of a call (modelwire._call); the client's two
    # producers build it the same way and hand it to their driver, nothing else: no
    # pipeline, no authorize, no feed loop of their own.
    tree = ast.parse((SRC / "_client" / "__init__.py").read_text(encoding="utf-8"))
    fns = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    driver = {"http.AsyncDriver": "DRIVER", "http.SyncDriver": "DRIVER", "driver.events": "DRIVER"}

    def produce(name: str) -> tuple[set[str], list[str]]:
        inner = next(
            n for n in fns[name].body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)
        )
        calls = {driver.get(f, f) for n in ast.walk(inner) if isinstance(n, ast.Call)
                 for f in [ast.unparse(n.func)]}  # fmt: skip
        call = next(n for n in ast.walk(inner) if isinstance(n, ast.Call)
                    and ast.unparse(n.func) == "_call")  # fmt: skip
        return calls, [ast.unparse(a) for a in call.args]

    assert produce("stream") == produce("stream_sync") == (
        {"_call", "DRIVER"},
        ["plan", "context", "trace", "completion_policy", "lambda: s.aborted"],
    )  # fmt: skip


# The core and agent modules: a module passing ~600 lines becomes a package.
SIZED = ("agent", "_wire", "_client", "errors.py", "events.py", "tools")


def test_no_module_of_the_core_and_agent_passes_600_lines() -> None:
    sizes = {}
    for name in SIZED:
        paths = [SRC / name] if name.endswith(".py") else sorted((SRC / name).rglob("*.py"))
        for path in paths:
            sizes[str(path.relative_to(SRC))] = len(path.read_text(encoding="utf-8").splitlines())
    assert "agent/_loop.py" in sizes and "_wire/assemble/_assembler.py" in sizes
    assert {k: v for k, v in sizes.items() if v > 600} == {}


def test_no_module_under_src_modelwire_passes_600_lines() -> None:
    # Every module, not only the layers above: http.py (705), catalog.py (621) and
    # openai_responses/decode.py (655) were split by pure moves to pass this.
    sizes = {
        str(path.relative_to(SRC)): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted(SRC.rglob("*.py"))
    }
    assert {
        "_http/__init__.py",
        "_catalog/__init__.py",
        "_apis/openai_responses/decode.py",
    } <= sizes.keys()
    assert len(sizes) > 100  # the walk found the whole package
    assert {k: v for k, v in sizes.items() if v > 600} == {}


def test_the_agent_run_loop_and_its_turn_are_separate() -> None:
    # Agent._events drives the run; Agent._turn is one turn's body (it was inline:
    # mccabe complexity 29+ in one function).
    from modelwire.agent._loop import Agent

    events_src = inspect.getsource(Agent._events)
    turn_src = inspect.getsource(Agent._turn)
    assert "self._turn(" in events_src
    assert "_respond(" not in events_src and "_respond(" in turn_src
    assert "should_stop_after_turn" in turn_src


# --------------------------------------------------------------------------- stream options


def test_stream_options_are_declared_once_and_shared() -> None:
    assert options.StreamOptions.__optional_keys__ == (
        options.AgentOptions.__optional_keys__ | {"api_key"}
    )
    assert options.StreamOptions.__required_keys__ == frozenset()
    # DESIGN §2's options, the call-level ones, §2c's output and base_url, resilience.
    assert options.StreamOptions.__optional_keys__ == {
        "api_key", "headers", "temperature", "max_tokens", "reasoning", "tool_choice",
        "parallel_tool_calls", "extra_body", "timeout", "max_retries", "http_client",
        "transport", "session_id", "cache", "trace", "completion_policy", "log", "output",
        "output_mode", "base_url", "circuit_breaker", "requests_per_minute",
        "tokens_per_minute", "server_tools", "background",
    }  # fmt: skip
    assert options.AgentOptions.__optional_keys__ == _calls.STREAM_OPTIONS
    for fn in (mw.stream, mw.stream_sync, mw.complete, mw.complete_sync, options.resolve_options):
        kw = inspect.signature(fn).parameters["options"]
        assert kw.kind is inspect.Parameter.VAR_KEYWORD
        assert kw.annotation == "Unpack[StreamOptions]", fn
    agent_kw = inspect.signature(mw.Agent).parameters["stream_options"]
    assert agent_kw.annotation == "Unpack[AgentOptions]"
    # Every option is named in stream()'s docstring, which points at the declaration.
    doc = mw.stream.__doc__ or ""
    assert "StreamOptions" in doc
    for key in options.StreamOptions.__optional_keys__:
        assert f"``{key}``" in doc, key


MODEL = mw.Model(id="m", api="openai-chat", provider="local", base_url="http://127.0.0.1:9/v1")
CTX = mw.Context(messages=(mw.UserMessage(content="hi"),))


@pytest.mark.parametrize(
    "name",
    ["stream", "stream_sync", "complete", "complete_sync", "count_tokens", "count_tokens_sync"],
)
def test_an_unknown_option_is_a_configuration_error_suggesting_the_closest(name: str) -> None:
    fn: Any = getattr(mw, name)
    with pytest.raises(mw.ConfigurationError) as caught:
        result = fn(MODEL, CTX, max_token=5)
        if inspect.iscoroutine(result):
            asyncio.run(result)
    assert isinstance(caught.value, TypeError)  # as Python's own unknown keyword is
    assert str(caught.value).startswith(
        f"{name}() got unexpected keyword argument(s) 'max_token' "
        "(did you mean 'max_tokens'?); the options are: "
    )


@pytest.mark.parametrize(
    ("kwargs", "says"),
    [
        ({"max_token": 5}, "max_token (did you mean 'max_tokens'?);"),
        ({"system_promt": "x"}, "system_promt (did you mean 'system_prompt'?);"),
        ({"max_token": 5, "temprature": 1, "zzz": 0},
         "max_token, temprature, zzz (did you mean 'max_tokens' for 'max_token', "
         "'temperature' for 'temprature'?);"),
    ],
)  # fmt: skip
def test_an_unknown_agent_option_suggests_the_closest(kwargs: dict[str, Any], says: str) -> None:
    with pytest.raises(mw.ConfigurationError, match=re.escape(f"unknown stream option(s) {says}")):
        mw.Agent(MODEL, **kwargs)


def test_resolve_options_refuses_an_unknown_option() -> None:
    bad: Any = {"temprature": 0.5}
    with pytest.raises(TypeError, match="'temprature'"):
        options.resolve_options("local", **bad)


def test_resolve_options_still_checks_each_option() -> None:
    with pytest.raises(mw.ConfigurationError, match="max_tokens must be a positive integer"):
        options.resolve_options("local", max_tokens=0)
    r = options.resolve_options("local", max_tokens=5, timeout=2.0, trace=print)
    assert r.max_tokens == 5
    assert r.timeout == mw.Timeout(connect=2.0, idle=2.0, total=None)


def test_the_options_are_typed_for_callers(tmp_path: Path) -> None:
    # mypy checks each keyword against StreamOptions: a wrong type or an unknown
    # keyword is a type error in the caller's code, on every entry point.
    mypy_api = pytest.importorskip("mypy.api")
    code = tmp_path / "caller.py"
    code.write_text(
        "import modelwire as mw\n"
        "from modelwire._client._options import resolve_options\n"
        "m = mw.get_model('openai', 'gpt-4.1-mini')\n"
        "c = mw.Context()\n"
        "mw.stream(m, c, max_tokens='many')\n"
        "mw.stream_sync(m, c, temprature=0.5)\n"
        "mw.complete_sync(m, c, reasoning=1)\n"
        "resolve_options('openai', cache='yes')\n"
        "mw.Agent(m, timeout='soon')\n"
        "mw.stream(m, c, max_tokens=5, timeout=mw.Timeout(idle=9), api_key=lambda: 'k')\n"
    )
    out, _, status = mypy_api.run(
        [str(code), "--strict", "--no-incremental", "--cache-dir=/dev/null", "--no-error-summary"]
    )
    errors = [line for line in out.splitlines() if ": error:" in line]
    lines = sorted(int(line.split(":")[1]) for line in errors)
    assert status == 1
    assert lines == [5, 6, 7, 8, 9], out
