"""Both agent drivers perform the core's intents by one table
(``modelwire.agent._performers.PERFORMS``): the sync and async twins differ only in
waiting."""

from __future__ import annotations

import ast
import inspect
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from modelwire.agent import _drive, _intents, _performers, _turns

AGENT = Path(_drive.__file__).parent


def _intent_classes() -> set[type]:
    out: set[type] = set()
    todo = [_intents.Intent]
    while todo:
        for sub in todo.pop().__subclasses__():
            out.add(sub)
            todo.append(sub)
    return out


def _yielded_intents() -> set[str]:
    # Every ``yield X(...)`` in the agent's modules whose X is an intent class.
    names = {c.__name__ for c in _intent_classes()}
    found: set[str] = set()
    for path in AGENT.glob("*.py"):
        for n in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(n, ast.Yield | ast.YieldFrom) and isinstance(n.value, ast.Call):
                f = n.value.func
                if isinstance(f, ast.Name) and f.id in names:
                    found.add(f.id)
    return found


def test_every_intent_the_core_yields_has_exactly_one_entry() -> None:
    kinds = [kind for kind, _ in _performers.PERFORMS]
    assert len(kinds) == len(set(kinds))
    assert set(kinds) == _intent_classes()
    assert {k.__name__ for k in kinds} == _yielded_intents()


def _performers_of_one_run() -> tuple[_performers.AsyncPerformer, _performers.SyncPerformer]:
    st = _turns.RunState()
    return _performers.AsyncPerformer(st, print), _performers.SyncPerformer(st, print)


def test_both_bindings_perform_the_same_intents() -> None:
    ap, sp = _performers_of_one_run()
    a, s = _performers.async_steps(ap), _performers.sync_steps(sp)
    assert a.keys() == s.keys() == {kind for kind, _ in _performers.PERFORMS}
    for kind, name in _performers.PERFORMS:
        assert a[kind].__name__ == s[kind].__name__ == name
        assert inspect.iscoroutinefunction(a[kind])
        assert not inspect.iscoroutinefunction(s[kind])


@pytest.mark.parametrize(
    "fn",
    [_drive.drive_async, _drive.drive_sync, _drive._drive_async, _drive._drive_sync,
     _performers.run_steps_async, _performers.run_steps_sync],
)  # fmt: skip
def test_no_loop_names_the_intents_it_performs(fn: Callable[..., Any]) -> None:
    tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
    named = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    named |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    performed = {kind.__name__ for kind, _ in _performers.PERFORMS}
    assert named & performed == set()
    assert named & {"next_model_event", "spawn", "invoke", "resolve"} == set()


def test_the_two_drivers_differ_only_in_waiting_and_cleanup() -> None:
    # The loops, with ``await`` and the bindings' names taken out, are the same text.
    def loop(fn: Callable[..., Any]) -> str:
        tree = ast.parse(textwrap.dedent(inspect.getsource(fn)))
        body = tree.body[0]
        assert isinstance(body, ast.FunctionDef | ast.AsyncFunctionDef)
        try_ = next(n for n in body.body if isinstance(n, ast.Try))
        text = ast.unparse(ast.Module(body=try_.body, type_ignores=[]))
        return text.replace("await ", "")

    assert loop(_drive._drive_async) == loop(_drive._drive_sync)
