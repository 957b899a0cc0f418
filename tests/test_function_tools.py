"""Tools from typed functions (``@mw.tool``, ``Tool.from_function``): the schema from
the signature, hints and docstring — compared with what msgspec and pydantic generate
for the same signature —, validated and typed arguments, sync and async functions, the
injected ``ToolContext``, and a whole agent run over a loopback server."""

from __future__ import annotations

import dataclasses
import datetime
import json
from typing import Any

import msgspec
import pydantic
import pytest

import modelwire as mw
from modelwire.testing import MockServer
from modelwire.tools import ToolContext, ToolFailure
from modelwire.tools._function import docstring_parts

pytestmark = pytest.mark.anyio


def _untitled(node: Any) -> Any:
    """A schema without ``title`` keys (pydantic adds one to every property)."""
    if isinstance(node, dict):
        return {k: _untitled(v) for k, v in node.items() if k != "title"}
    if isinstance(node, list):
        return [_untitled(v) for v in node]
    return node


def _undescribed(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _undescribed(v) for k, v in node.items() if k != "description"}
    if isinstance(node, list):
        return [_undescribed(v) for v in node]
    return node


def forecast(city: str, days: int = 3, tags: list[str] | None = None, metric: bool = True) -> str:
    """Get the weather forecast.

    Args:
        city: The city name, e.g. "Paris".
        days: How many days ahead,
            between 1 and 10.
        tags: Labels to filter by.

    Returns:
        The forecast text.
    """
    return f"{city}:{days}:{tags}:{metric}"


def test_the_schema_matches_what_msgspec_generates_for_the_signature() -> None:
    t = mw.tool(forecast)
    fields: list[tuple[str, Any] | tuple[str, Any, Any]] = [("city", str), ("days", int, 3), ("tags", list[str] | None, None),
              ("metric", bool, True)]  # fmt: skip
    expected = msgspec.json.schema(msgspec.defstruct("Forecast", fields, kw_only=True))
    root = expected["$defs"]["Forecast"]
    assert _undescribed(t.parameters) == root


def test_the_schema_matches_what_pydantic_generates_for_the_signature() -> None:
    t = mw.tool(forecast)
    model = pydantic.create_model(
        "Forecast",
        city=(str, ...),
        days=(int, 3),
        tags=(list[str] | None, None),
        metric=(bool, True),
    )
    assert _untitled(_undescribed(t.parameters)) == _untitled(model.model_json_schema())


def test_descriptions_come_from_the_docstring() -> None:
    t = mw.tool(forecast)
    assert t.name == "forecast" and t.description == "Get the weather forecast."
    props = t.parameters["properties"]
    assert props["city"]["description"] == 'The city name, e.g. "Paris".'
    assert props["days"]["description"] == "How many days ahead, between 1 and 10."
    assert props["tags"]["description"] == "Labels to filter by."
    assert "description" not in props["metric"]
    assert t.parameters["required"] == ["city"]


@pytest.mark.parametrize(
    "doc",
    [
        """Sum.\n\n:param a: first\n:param b: second\n    part\n:returns: the sum""",
        """Sum.\n\nParameters\n----------\na : int\n    first\nb : int\n    second\n    part\n\n"""
        """Returns\n-------\nint""",
        """Sum.\n\nArgs:\n    a (int): first\n    b: second\n        part\n""",
    ],
    ids=["sphinx", "numpy", "google"],
)
def test_docstring_styles(doc: str) -> None:
    assert docstring_parts(doc) == ("Sum.", {"a": "first", "b": "second part"})


class Box(pydantic.BaseModel):
    w: int
    h: int


class Pt(msgspec.Struct):
    x: int
    y: int = 0


@dataclasses.dataclass
class Span:
    start: datetime.date
    end: datetime.date


def test_pydantic_and_struct_parameters_are_typed_values() -> None:
    got: list[Any] = []

    @mw.tool
    def area(box: Box) -> int:
        """Area of a box."""
        got.append(box)
        return box.w * box.h

    @mw.tool(name="shift", description="Shift a point")
    def move(p: Pt, span: Span) -> dict[str, Any]:
        got.extend([p, span])
        return {"x": p.x + 1, "days": (span.end - span.start).days}

    assert area.parameters["properties"]["box"] == {"$ref": "#/$defs/Box"}
    assert area.execute({"box": {"w": 2, "h": 3}}, ToolContext.for_test()) == "6"
    assert isinstance(got[0], Box)
    assert move.name == "shift" and move.description == "Shift a point"
    out = move.execute({"p": {"x": 1}, "span": {"start": "2024-01-01", "end": "2024-01-08"}},
                       ToolContext.for_test())  # fmt: skip
    assert json.loads(out) == {"x": 2, "days": 7}  # type: ignore[arg-type]
    assert got[1] == Pt(x=1) and got[2] == Span(
        datetime.date(2024, 1, 1), datetime.date(2024, 1, 8)
    )
    # Arguments that pass the schema but not the type are invalid_arguments.
    with pytest.raises(ToolFailure) as info:
        move.execute({"p": {"x": 1}, "span": {"start": "soon", "end": "x"}}, ToolContext.for_test())
    assert info.value.kind == "invalid_arguments" and "span.start" in info.value.message


def test_the_context_is_injected_and_never_shown() -> None:
    @mw.tool
    def who(name: str, ctx: ToolContext) -> str:
        """Greets."""
        return f"{name} from {ctx.tool_call_id}"

    assert set(who.parameters["properties"]) == {"name"}
    assert who.execute({"name": "a"}, ToolContext.for_test(call_id="c9")) == "a from c9"


async def test_async_functions_stay_async() -> None:
    @mw.tool
    async def slow(n: int) -> str:
        """Slow."""
        return str(n * 2)

    from modelwire.agent._execute import is_async_tool

    assert is_async_tool(slow)
    assert await slow.execute({"n": 2}, ToolContext.for_test()) == "4"  # type: ignore[misc]
    assert slow.function is not None


@pytest.mark.parametrize(
    ("fn_src", "match"),
    [
        ("def f(*args: int) -> str: ...", r"\*args"),
        ("def f(a: int, /) -> str: ...", "positional-only"),
        ("def f(a: 'Missing') -> str: ...", "type hints"),
        ("def f(a: object) -> str: ...", "cannot be described"),
    ],
)
def test_signatures_that_cannot_be_tools_are_refused(fn_src: str, match: str) -> None:
    scope: dict[str, Any] = {}
    exec(fn_src, scope)  # a test building functions from source
    with pytest.raises(mw.ConfigurationError, match=match):
        mw.Tool.from_function(scope["f"])


def test_an_agent_runs_a_function_tool_with_typed_arguments() -> None:
    calls: list[tuple[str, int]] = []

    @mw.tool
    def forecast(city: str, days: int = 1) -> str:
        """Forecast.

        Args:
            city: City.
            days: Days.
        """
        calls.append((city, days))
        return f"sunny in {city} for {days} days"

    replies = [
        mw.ToolCall(id="c1", name="forecast", arguments={"city": "Oslo", "days": "two"}),
        mw.ToolCall(id="c2", name="forecast", arguments={"city": "Oslo", "days": 2}),
        "Sunny.",
    ]
    with MockServer(replies) as srv:
        agent = mw.Agent(srv.model(), tools=[forecast])
        run = agent.run_sync("Weather in Oslo?")
        sent = srv.requests[0].json()["tools"][0]["function"]
    assert sent["name"] == "forecast" and sent["parameters"] == forecast.parameters
    assert calls == [("Oslo", 2)]  # the wrong type never reached the function
    results = [m for m in run.messages if isinstance(m, mw.ToolResultMessage)]
    assert results[0].is_error and "invalid_arguments" in results[0].text
    assert results[1].text == "sunny in Oslo for 2 days"
    assert run.final.text == "Sunny."


def test_a_hand_written_schema_keeps_working() -> None:
    t = mw.Tool("echo", "Echo", {"type": "object", "properties": {"x": {"type": "string"}}},
                lambda args, ctx: args["x"])  # fmt: skip
    assert t.function is None and t.execute({"x": "a"}, ToolContext.for_test()) == "a"


def test_a_tool_says_whether_it_only_reads() -> None:
    @mw.tool(read_only=True)
    def count(text: str) -> int:
        return len(text.split())

    @mw.tool
    def delete(path: str) -> str:
        return path

    assert count.read_only is True and delete.read_only is False
    made = mw.Tool.from_function(delete.function, read_only=True)  # type: ignore[arg-type]
    assert made.read_only is True
    assert all(t.read_only for t in mw.tools.read_only("."))  # read, ls, grep
    with pytest.raises(mw.ConfigurationError, match="read_only must be True or False"):
        mw.Tool("t", "d", {"type": "object"}, lambda a, c: "", read_only="yes")  # type: ignore[arg-type]
