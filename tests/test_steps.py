"""Both drivers perform a Call's intents by one table (``modelwire._http._steps``): the
sync and async twins differ only in waiting."""

from __future__ import annotations

import ast
import inspect
import textwrap
import typing

import pytest

from modelwire import _call
from modelwire import _http as http
from modelwire._http import _steps
from modelwire._http._httpx_async import HttpxAsyncTransport
from modelwire._http._httpx_sync import HttpxSyncTransport


def test_every_intent_but_the_turns_ends_has_one_step() -> None:
    intents = set(typing.get_args(_call.Intent))
    kinds = [kind for kind, _ in _steps.STEPS]
    assert len(kinds) == len(set(kinds))
    assert set(kinds) == intents - {_call.Emit, _call.Close}


def test_both_bindings_perform_the_same_intents() -> None:
    a = _steps.async_steps(HttpxAsyncTransport(None, http.ssl_context))
    s = _steps.sync_steps(HttpxSyncTransport(None, http.ssl_context))
    assert a.keys() == s.keys() == {kind for kind, _ in _steps.STEPS}
    for kind, name in _steps.STEPS:
        assert a[kind].__name__ == s[kind].__name__ == name
        assert inspect.iscoroutinefunction(a[kind]) and not inspect.iscoroutinefunction(s[kind])


@pytest.mark.parametrize(("cls", "method"), [(http.AsyncDriver, "next"),
                                             (http.SyncDriver, "events")])  # fmt: skip
def test_a_drivers_loop_names_only_the_intents_that_end_its_turn(cls: type, method: str) -> None:
    tree = ast.parse(textwrap.dedent(inspect.getsource(getattr(cls, method))))
    named = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    performed = {kind.__name__ for kind, _ in _steps.STEPS} - {"Send"}  # Send: until_answered
    assert named & performed == set()
    assert {"Emit", "Close"} <= named
