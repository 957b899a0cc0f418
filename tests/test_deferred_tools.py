"""Deferred tools (``Tool(defer=True)``): sent only once the model asked for them.

Over a loopback ``MockServer``, on both drivers: the first request leaves the deferred
tools out and offers ``search_tools``; its result gives the found definitions; from the
next request on they are sent; the transcript keeps them loaded for ``continue_()``, a
later ``run()`` and ``messages=`` of an earlier run. On a model whose provider searches
itself (Anthropic Messages, OpenAI Responses, ``Capabilities.tool_search``) every tool
is sent, the deferred ones marked ``defer_loading``, with the provider's tool search
tool and no ``search_tools``; the provider's search blocks are replayed.

Expectations come from what each test scripted and from the tools it made (their
descriptions and schemas), and, for the Anthropic stream, from its payloads read with
``json``; never from the agent's own output.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import modelwire as mw
from modelwire._apis._profile import model_profile
from modelwire._apis.anthropic_messages import build_body
from modelwire._catalog import as_model
from modelwire._client._options import resolve_options
from modelwire.agent._deferred import search
from modelwire.errors import ConfigurationError
from modelwire.events import DoneEvent
from modelwire.testing import MockServer, Reply, tool_call
from modelwire.tools._toolset import Toolset

DATA = Path(__file__).resolve().parent / "data"
TOOL_SEARCH_SSE = DATA / "anthropic" / "SYNTHETIC-tool-search-regex.sse"
RESPONSES_SEARCH_SSE = DATA / "openai-responses" / "SYNTHETIC-tool-search-server-null-call-id.sse"
DRIVERS = ["async", "sync"]
OFFLINE = "http://127.0.0.1:9/v1"  # never reached: these agents are only built


# --------------------------------------------------------------------------- helpers


class Catalog:
    """Three deferred tools and one that is always sent; ``seen`` records executions."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any]]] = []
        seen = self.seen

        @mw.tool
        def add(a: int, b: int) -> int:
            """Add two numbers."""
            seen.append(("add", {"a": a, "b": b}))
            return a + b

        @mw.tool(defer=True)
        def get_weather(city: str) -> str:
            """The current weather in a city.

            Args:
                city: The city name.
            """
            seen.append(("get_weather", {"city": city}))
            return f"18 C in {city}"

        @mw.tool(defer=True)
        def create_calendar_event(title: str, day: str) -> str:
            """Add an event to the user's calendar."""
            seen.append(("create_calendar_event", {"title": title, "day": day}))
            return "created"

        @mw.tool(defer=True)
        def list_issues(repo: str) -> str:
            """The open issues of a GitHub repository."""
            seen.append(("list_issues", {"repo": repo}))
            return "#1 crash on start"

        self.add, self.weather, self.calendar, self.issues = (
            add, get_weather, create_calendar_event, list_issues,
        )  # fmt: skip
        self.tools = [add, get_weather, create_calendar_event, list_issues]


def run(driver: str, agent: mw.Agent, prompt: str) -> Any:
    if driver == "async":
        return asyncio.run(agent.run(prompt))
    return agent.run_sync(prompt)


def resume(driver: str, agent: mw.Agent) -> Any:
    if driver == "async":
        return asyncio.run(agent.continue_())
    return agent.continue_sync()


def names(request: Any) -> list[str]:
    """The tool names an OpenAI Chat request declares."""
    return [t["function"]["name"] for t in request.json().get("tools", [])]


def results(messages: Any, name: str) -> list[mw.ToolResultMessage]:
    return [m for m in messages if isinstance(m, mw.ToolResultMessage) and m.tool_name == name]


def definition(tool: mw.Tool) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "parameters": tool.parameters}


def decoded(chunks: list[bytes]) -> mw.AssistantMessage:
    """The message an Anthropic stream read in ``chunks`` decodes to."""
    end = mw.replay("anthropic-messages", chunks)[-1]
    assert isinstance(end, DoneEvent), end
    return end.message


def payloads(raw: bytes) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in raw.decode().splitlines() if line.startswith("data: ")]


def stream_blocks(raw: bytes) -> list[dict[str, Any]]:
    """The content blocks of an Anthropic stream, accumulated by hand from its payloads."""
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, str] = {}
    for p in payloads(raw):
        if p["type"] == "content_block_start":
            blocks[p["index"]] = dict(p["content_block"])
        elif p["type"] == "content_block_delta":
            d = p["delta"]
            if d["type"] == "text_delta":
                blocks[p["index"]]["text"] += d["text"]
            elif d["type"] == "input_json_delta":
                partial[p["index"]] = partial.get(p["index"], "") + d["partial_json"]
    for i, text in partial.items():
        blocks[i]["input"] = json.loads(text)
    return [blocks[i] for i in sorted(blocks)]


class Listed(Toolset):
    """A toolset whose tools are known once it is open (as an MCP server's are)."""

    label = "the listed toolset"

    def __init__(self, *tools: mw.Tool) -> None:
        self._tools = tools
        self._open = False

    @property
    def is_open(self) -> bool:
        return self._open

    @property
    def tools(self) -> tuple[mw.Tool, ...]:
        return self._tools

    async def open(self) -> None:
        self._open = True

    async def close(self) -> None:
        self._open = False

    def open_sync(self) -> None:
        self._open = True

    def close_sync(self) -> None:
        self._open = False


# --------------------------------------------------------------------------- the agent searches


@pytest.mark.parametrize("driver", DRIVERS)
def test_deferred_tools_are_sent_from_the_request_after_the_search_found_them(
    driver: str,
) -> None:
    cat = Catalog()
    replies = [tool_call("search_tools", {"query": "weather"}),
               tool_call("get_weather", {"city": "Oslo"}), "18 C in Oslo."]  # fmt: skip
    with MockServer(replies) as server:
        done = run(driver, mw.Agent(server.model(), cat.tools), "Weather in Oslo?")
    first, second, third = server.requests
    # Not sent at first: the agent's search tool instead.
    assert names(first) == ["add", "search_tools"]
    # The search's result: the found definitions, as JSON text the model reads.
    (found,) = results(done.messages, "search_tools")
    assert not found.is_error
    assert json.loads(found.text)["tools"] == [definition(cat.weather)]
    assert found.details == {"loaded": ["get_weather"]}
    sent = [m for m in second.json()["messages"] if m["role"] == "tool"]
    assert [json.loads(m["content"])["tools"] for m in sent] == [[definition(cat.weather)]]
    # From the next request on, the found tool is declared, after the others.
    assert names(second) == names(third) == ["add", "search_tools", "get_weather"]
    declared = second.json()["tools"][2]["function"]
    assert (declared["description"], declared["parameters"]) == (
        cat.weather.description, cat.weather.parameters,
    )  # fmt: skip
    assert cat.seen == [("get_weather", {"city": "Oslo"})]
    assert done.text == "18 C in Oslo." and done.stop_reason == "stop"


def test_search_tools_is_offered_with_its_schema() -> None:
    cat = Catalog()
    with MockServer(["Nothing to do."]) as server:
        mw.Agent(server.model(), cat.tools).run_sync("Hello")
    (offered,) = [t["function"] for t in server.requests[0].json()["tools"]
                  if t["function"]["name"] == "search_tools"]  # fmt: skip
    params = offered["parameters"]
    assert params["required"] == ["query"] and params["properties"]["query"]["type"] == "string"
    assert params["properties"]["limit"] == {
        "type": "integer", "minimum": 1, "maximum": 20,
        "description": "The most tools to return (default 5).",
    }  # fmt: skip
    assert "3 further tools" in offered["description"]  # the deferred ones, counted


def test_without_deferred_tools_nothing_changes() -> None:
    cat = Catalog()
    with MockServer(["Hi."]) as server:
        mw.Agent(server.model(), [cat.add]).run_sync("Hello")
    assert names(server.requests[0]) == ["add"]


@pytest.mark.parametrize("driver", DRIVERS)
def test_limit_and_a_search_that_finds_nothing(driver: str) -> None:
    cat = Catalog()
    replies = [
        [tool_call("search_tools", {"query": "calendar issues weather", "limit": 2}),
         tool_call("search_tools", {"query": "quantum teleport"}),
         tool_call("search_tools", {"query": "weather", "limit": 99})],
        "Done.",
    ]  # fmt: skip
    with MockServer(replies) as server:
        done = run(driver, mw.Agent(server.model(), cat.tools), "Find things")
    two, nothing, too_many = results(done.messages, "search_tools")
    # Each of the three matches one word in its name and its description: a tie, kept
    # in the order the tools were given, cut at the limit.
    assert two.details == {"loaded": ["get_weather", "create_calendar_event"]}
    assert json.loads(two.text)["tools"] == [definition(cat.weather), definition(cat.calendar)]
    assert nothing.details == {"loaded": []} and not nothing.is_error
    assert "No tool matched 'quantum teleport'" in nothing.text
    # A limit past the schema's maximum is refused as any invalid call is.
    assert too_many.is_error and too_many.details["failure"] == "invalid_arguments"
    assert names(server.requests[1]) == [
        "add", "search_tools", "get_weather", "create_calendar_event",
    ]  # fmt: skip


def test_the_search_weighs_names_above_descriptions() -> None:
    cat = Catalog()

    @mw.tool(defer=True)
    def forecast(city: str) -> str:
        """Tomorrow's weather forecast for a city."""
        return ""

    @mw.tool(defer=True)
    def weather_alerts(region: str) -> str:
        """Storm warnings for a region."""
        return ""

    tools = [forecast, cat.weather, weather_alerts, cat.calendar, cat.issues]
    # In the name beats in the description; equal scores keep the given order.
    assert [t.name for t in search("Weather", tools)] == ["get_weather", "weather_alerts",
                                                          "forecast"]  # fmt: skip
    # Case, plurals and camelCase do not matter; words like "the" count for nothing.
    assert [t.name for t in search("the ISSUE", tools)] == ["list_issues"]
    assert [t.name for t in search("CalendarEvents", tools)] == ["create_calendar_event"]
    assert [t.name for t in search("events", tools)] == ["create_calendar_event"]
    assert search("the a to of", tools) == []
    assert search("teleport", tools) == []
    # A word that is a tool's whole name finds it first.
    assert search("weather get_weather", tools)[0].name == "get_weather"
    assert [t.name for t in search("weather", tools, limit=1)] == ["get_weather"]


# --------------------------------------------------------------------------- the transcript keeps them


@pytest.mark.parametrize("driver", DRIVERS)
def test_loaded_tools_stay_loaded_for_continue_run_and_messages(driver: str) -> None:
    cat = Catalog()
    replies = [tool_call("search_tools", {"query": "calendar"}), "Noted.", "Again.", "Saved."]
    with MockServer(replies) as server:
        model = server.model()
        agent = mw.Agent(model, cat.tools, max_turns=1)
        first = run(driver, agent, "Plan my day")
        assert first.stop_reason == "max_turns"  # the search ran; no answer yet
        resume(driver, agent)
        later = run(driver, agent, "And tomorrow?")
        saved = mw.from_json(mw.to_json(list(later.messages)), list[mw.Message])
        run(driver, mw.Agent(model, Catalog().tools, messages=saved), "From the file")
    loaded = ["add", "search_tools", "create_calendar_event"]
    assert names(server.requests[0]) == ["add", "search_tools"]
    assert [names(r) for r in server.requests[1:]] == [loaded, loaded, loaded]


def test_an_agent_without_the_transcript_has_nothing_loaded() -> None:
    cat = Catalog()
    with MockServer([tool_call("search_tools", {"query": "calendar"}), "ok", "fresh"]) as server:
        mw.Agent(server.model(), cat.tools).run_sync("Plan my day")
        mw.Agent(server.model(), Catalog().tools).run_sync("Plan my day")
    assert names(server.requests[1])[-1] == "create_calendar_event"
    assert names(server.requests[2]) == ["add", "search_tools"]


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_deferred_tool_called_before_it_was_found_is_judged_and_run(driver: str) -> None:
    cat = Catalog()
    replies = [
        [tool_call("get_weather", {"city": "Oslo"}), tool_call("list_issues", {"repo": 7}),
         tool_call("send_fax", {})],
        "Done.",
    ]  # fmt: skip
    with MockServer(replies) as server:
        done = run(driver, mw.Agent(server.model(), cat.tools), "Go")
    weather, issues, fax = [m for m in done.messages if isinstance(m, mw.ToolResultMessage)]
    # A real tool: executed, though the model never searched for it.
    assert not weather.is_error and weather.text == "18 C in Oslo"
    # Validated as any call: wrong arguments are refused, nothing runs.
    assert issues.is_error and issues.details["failure"] == "invalid_arguments"
    assert fax.is_error and fax.details["failure"] == "unknown_tool"
    assert cat.seen == [("get_weather", {"city": "Oslo"})]
    # The model knows them now: their definitions are sent from then on.
    assert names(server.requests[1]) == ["add", "search_tools", "get_weather", "list_issues"]


# --------------------------------------------------------------------------- the name


def test_a_tool_named_search_tools_beside_deferred_tools_is_refused() -> None:
    cat = Catalog()
    mine = mw.Tool("search_tools", "My own search.", {"type": "object"}, lambda a, c: "x")
    model = mw.Model(id="m", api="openai-chat", provider="mock", base_url=OFFLINE)
    with pytest.raises(ConfigurationError, match=r"named 'search_tools'.*deferred.*rename"):
        mw.Agent(model, [mine, cat.weather])
    mw.Agent(model, [mine, cat.add])  # nothing deferred: the name is free


@pytest.mark.parametrize("driver", DRIVERS)
def test_a_clash_with_a_toolsets_deferred_tool_is_refused_when_the_run_starts(
    driver: str,
) -> None:
    cat = Catalog()
    mine = mw.Tool("search_tools", "My own search.", {"type": "object"}, lambda a, c: "x")
    listed = Listed(cat.weather)
    with MockServer(["never"]) as server:
        agent = mw.Agent(server.model(), [mine, listed])
        with pytest.raises(ConfigurationError, match="named 'search_tools'"):
            run(driver, agent, "Go")
    assert server.requests == [] and not listed.is_open


# --------------------------------------------------------------------------- the provider searches


@pytest.mark.parametrize("driver", DRIVERS)
def test_anthropic_searches_itself_and_its_search_blocks_are_replayed(driver: str) -> None:
    cat = Catalog()
    raw = TOOL_SEARCH_SSE.read_bytes()
    with MockServer([Reply(body=raw), "It is 18 C in Oslo."]) as server:
        model = server.model("anthropic-messages", "claude-sonnet-4-5",
                             capabilities=mw.Capabilities(tool_search=True))  # fmt: skip
        done = run(driver, mw.Agent(model, cat.tools), "Weather in Oslo?")
    first, second = (r.json() for r in server.requests)
    want = [{"name": t.name, "description": t.description, "input_schema": t.parameters}
            | ({"defer_loading": True} if t.defer else {}) for t in cat.tools]  # fmt: skip
    # Every tool, the deferred ones marked; the provider's search tool; no search_tools.
    assert first["tools"] == [*want, {"type": "tool_search_tool_regex_20251119",
                                      "name": "tool_search_tool_regex"}]  # fmt: skip
    assert second["tools"] == first["tools"]
    assert "anthropic-beta" not in server.requests[0].headers  # generally available
    # The search call and its result go back as received, then the call and its result.
    assert second["messages"][1] == {"role": "assistant", "content": stream_blocks(raw)}
    (result,) = second["messages"][2]["content"]
    assert (result["tool_use_id"], result["content"][0]["text"]) == ("toolu_01GWoslo",
                                                                     "18 C in Oslo")  # fmt: skip
    assert cat.seen == [("get_weather", {"city": "Oslo"})]
    assert done.text == "It is 18 C in Oslo." and done.turns == 2


def test_without_the_capability_anthropic_gets_search_tools() -> None:
    cat = Catalog()
    with MockServer(["Hi."]) as server:
        mw.Agent(server.model("anthropic-messages", "claude-haiku"), cat.tools).run_sync("Hi")
    tools = server.requests[0].json()["tools"]
    assert [t["name"] for t in tools] == ["add", "search_tools"]
    assert not any("defer_loading" in t or "type" in t for t in tools)


def test_a_fallback_searches_itself_only_when_every_model_can() -> None:
    cat = Catalog()
    with MockServer(["Hi."]) as server:
        claude = server.model("anthropic-messages", "claude-sonnet-4-5",
                              capabilities=mw.Capabilities(tool_search=True))  # fmt: skip
        chat = server.model("openai-chat", "gpt-chat")
        mw.Agent(mw.Fallback([claude, chat]), cat.tools).run_sync("Hi")
    assert [t["name"] for t in server.requests[0].json()["tools"]] == ["add", "search_tools"]


@pytest.mark.parametrize("driver", DRIVERS)
def test_openai_responses_searches_itself(driver: str) -> None:
    cat = Catalog()
    replies = [Reply(body=RESPONSES_SEARCH_SSE.read_bytes()), "More."]
    with MockServer(replies) as server:
        model = server.model("openai-responses", "gpt-5.4",
                             capabilities=mw.Capabilities(tool_search=True))  # fmt: skip
        agent = mw.Agent(model, cat.tools)
        run(driver, agent, "Orders?")
        run(driver, agent, "And now?")
    first, second = (r.json() for r in server.requests)
    functions = [t for t in first["tools"] if t["type"] == "function"]
    assert [(t["name"], t.get("defer_loading", False)) for t in functions] == [
        (t.name, t.defer) for t in cat.tools
    ]
    assert first["tools"][len(cat.tools) :] == [{"type": "tool_search"}]
    # The hosted search's items go back with the answer they belong to.
    replayed = [i["type"] for i in second["input"] if i.get("type", "").startswith("tool_search")]
    assert replayed == ["tool_search_call", "tool_search_output"]


# --------------------------------------------------------------------------- encoders and data


def test_the_anthropic_encoder_renders_deferred_tools_and_the_search_tool() -> None:
    model = mw.Model(id="claude-sonnet-4-5", api="anthropic-messages", provider="local",
                     base_url=OFFLINE)  # fmt: skip
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    plain = mw.ToolDefinition(name="add", description="Add.", parameters={"type": "object"})
    later = mw.ToolDefinition(name="get_weather", description="Weather.", parameters=schema,
                              defer_loading=True)  # fmt: skip

    def tools(*defs: mw.ToolDefinition) -> Any:
        ctx = mw.Context(messages=[mw.UserMessage(content="hi")], tools=list(defs))
        return build_body(model, ctx, resolve_options("local"))["tools"]

    assert tools(plain, later) == [
        {"name": "add", "description": "Add.", "input_schema": {"type": "object"}},
        {"name": "get_weather", "description": "Weather.", "input_schema": schema,
         "defer_loading": True},
        {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"},
    ]  # fmt: skip
    assert tools(plain) == [
        {"name": "add", "description": "Add.", "input_schema": {"type": "object"}}
    ]


def test_the_anthropic_decoder_keeps_the_search_blocks_whole_at_every_read_size() -> None:
    raw = TOOL_SEARCH_SSE.read_bytes()
    ref = stream_blocks(raw)
    whole = decoded([raw])
    for chunks in ([raw], [raw[i : i + 1] for i in range(len(raw))]):
        msg = decoded(chunks)
        assert msg.stop_reason == "tool_use" and msg.content == whole.content
    assert [b.type for b in whole.content] == [
        "text", "server_tool_call", "server_tool_result", "text", "tool_call",
    ]  # fmt: skip
    call, result = whole.content[1], whole.content[2]
    assert isinstance(call, mw.ServerToolCall) and isinstance(result, mw.ServerToolResult)
    assert (call.id, call.name, call.input, call.provider_type) == (
        ref[1]["id"], ref[1]["name"], ref[1]["input"], "server_tool_use",
    )  # fmt: skip
    assert (result.tool_call_id, result.provider_type, result.result) == (
        ref[2]["tool_use_id"], "tool_search_tool_result", ref[2]["content"],
    )  # fmt: skip
    assert json.loads(result.raw or "") == ref[2]
    # Only the deferred tool's own call is for the caller to run.
    assert [(c.id, c.name, c.arguments) for c in whole.tool_calls] == [
        (ref[4]["id"], ref[4]["name"], ref[4]["input"]),
    ]


def test_tool_definition_and_capabilities_check_the_new_fields() -> None:
    plain = mw.ToolDefinition(name="a", description="", parameters={"type": "object"})
    assert b"defer_loading" not in mw.to_json(plain)  # unchanged when not deferred
    later = mw.ToolDefinition(name="a", description="", parameters={"type": "object"},
                              defer_loading=True)  # fmt: skip
    assert mw.from_json(mw.to_json(later), mw.ToolDefinition) == later
    with pytest.raises(ConfigurationError, match="defer_loading must be True or False"):
        mw.ToolDefinition(name="a", description="", parameters={}, defer_loading="yes")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="tool_search must be a bool"):
        mw.Capabilities(tool_search="yes")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("ref", "searches"),
    [
        ("anthropic/claude-sonnet-4-5", True),
        ("anthropic/claude-opus-4-6", True),
        ("anthropic/claude-haiku-4-5", False),
        ("openai/gpt-5.4", True),
        ("openai/gpt-5", False),
        ("openai/gpt-4.1-mini", False),
    ],
)
def test_the_catalog_says_which_models_search_themselves(ref: str, searches: bool) -> None:
    assert model_profile(as_model(ref, None)).tool_search is searches
