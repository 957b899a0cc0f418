"""Each wire API's facts live in its ``spec`` module, and every reader reads them there.

* OpenAI Responses: the decoder and the server-side renderer (what the gateway's
  Responses front-end and the mock server both send) use the very table objects of
  :mod:`modelwire._apis.openai_responses.spec` (how a stream ends, its id prefixes),
  and the stop mapping goes round trip through both.
* Gemini: that a call's signature may come late is Gemini's fact, in its own spec;
  the gateway asks the backend API's spec and names no API.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

import modelwire as mw
import modelwire._apis.openai_responses.render as gw_render
from modelwire._apis.openai_responses import _output_items as gw_items
from modelwire._apis.openai_responses import decode as _decode
from modelwire._apis.openai_responses import spec
from modelwire._wire.deltas import Finish
from modelwire._wire.sse import Frame
from modelwire.errors import ContentFilterError
from modelwire.events import DoneEvent, ErrorEvent, StartEvent
from modelwire.gateway._responses import FRONTEND
from modelwire.testing import render, render_frames, tool_call
from modelwire.types import AssistantMessage, TextContent, ThinkingContent, Usage

SRC = Path(__file__).resolve().parents[1] / "src" / "modelwire"
API = "openai-responses"


# --------------------------------------------------------------------------- one place


def test_every_reader_uses_the_specs_own_tables() -> None:
    # Read from each module's namespace: the very object it imported from the spec.
    assert vars(_decode)["INCOMPLETE_STOPS"] is spec.INCOMPLETE_STOPS
    assert vars(_decode)["CUT_SHORT"] is spec.CUT_SHORT
    assert vars(gw_items)["INCOMPLETE_REASONS"] is spec.INCOMPLETE_REASONS
    assert vars(gw_items)["ITEM_ID_PREFIXES"] is spec.ITEM_ID_PREFIXES
    assert vars(gw_items)["RESPONSE_ID_PREFIX"] is spec.RESPONSE_ID_PREFIX
    assert vars(gw_render)["TERMINAL_EVENTS"] is spec.TERMINAL_EVENTS
    assert vars(gw_render)["RESPONSE_ID_PREFIX"] is spec.RESPONSE_ID_PREFIX
    # The mock server renders with the same server side, under the same id prefix.
    assert gw_render.SERVER.id_prefix is spec.RESPONSE_ID_PREFIX
    # The decoder ends a stream on each of the spec's terminal events.
    handlers = _decode.ResponsesDecoder()._handlers
    assert set(spec.TERMINAL_EVENTS.values()) <= set(handlers)


def test_the_reverse_table_inverts_the_forward_one() -> None:
    assert len(spec.INCOMPLETE_REASONS) == len(spec.INCOMPLETE_STOPS)
    for reason, stop in spec.INCOMPLETE_STOPS.items():
        assert spec.INCOMPLETE_REASONS[stop] == reason
    # A reason the table does not know reads as a stop that has a reason to go back as.
    assert spec.CUT_SHORT in spec.INCOMPLETE_REASONS


# --------------------------------------------------------------------------- round trip


def _finish(payload: dict[str, Any]) -> Finish:
    dec = _decode.ResponsesDecoder()
    out = dec.decode(Frame("message", json.dumps(payload).encode()))
    (finish,) = [d for d in out if isinstance(d, Finish)]
    return finish


def _incomplete(reason: str | None) -> dict[str, Any]:
    details = {"reason": reason} if reason is not None else None
    return {"type": spec.INCOMPLETE_EVENT,
            "response": {"id": "resp_1", "status": "incomplete",
                         "incomplete_details": details, "output": []}}  # fmt: skip


@pytest.mark.parametrize("reason", sorted(spec.INCOMPLETE_STOPS))
def test_decoder_reads_each_reason_as_the_spec_says(reason: str) -> None:
    finish = _finish(_incomplete(reason))
    stop = spec.INCOMPLETE_STOPS[reason]
    assert (finish.stop_reason, finish.error_kind) == (stop.reason, stop.error_kind)
    assert finish.provider_reason == reason


@pytest.mark.parametrize("reason", ["max_messages", None])
def test_an_unknown_or_missing_reason_is_cut_short(reason: str | None) -> None:
    finish = _finish(_incomplete(reason))
    assert (finish.stop_reason, finish.error_kind) == spec.CUT_SHORT
    assert finish.provider_reason == (reason or spec.NO_REASON)


def _other_api(stop: spec.Stop) -> AssistantMessage:
    error = ContentFilterError("filtered").to_info() if stop.error_kind else None
    assert error is None or error.kind == stop.error_kind
    return AssistantMessage(content=[TextContent(text="cut")], api="anthropic-messages",
                            provider="mock", model="m", stop_reason=stop.reason,  # type: ignore[arg-type]
                            error=error, usage=Usage())  # fmt: skip


def _gateway_stream(message: AssistantMessage) -> bytes:
    req = FRONTEND.parse(json.dumps({"model": "s", "input": "x", "stream": True}).encode(), {})
    r = FRONTEND.renderer(req, "resp_gw")
    if message.stop_reason == "error":
        end: Any = ErrorEvent(reason="error", message=message, _partial=message)
    else:
        end = DoneEvent(reason=message.stop_reason, message=message, _partial=message)  # type: ignore[arg-type]
    return r.feed(StartEvent(_partial=message)) + r.feed(end)


def _last_event(data: bytes) -> tuple[str, dict[str, Any]]:
    block = [b for b in data.decode().split("\n\n") if b.strip()][-1]
    lines = dict(line.split(": ", 1) for line in block.split("\n"))
    return lines["event"], json.loads(lines["data"])


@pytest.mark.parametrize("reason", sorted(spec.INCOMPLETE_STOPS))
def test_gateway_writes_each_stop_back_as_its_reason(reason: str) -> None:
    stop = spec.INCOMPLETE_STOPS[reason]
    message = _other_api(stop)
    data = _gateway_stream(message)
    name, payload = _last_event(data)
    assert name == spec.TERMINAL_EVENTS["incomplete"]
    body = FRONTEND.message(FRONTEND.parse(b'{"model":"s","input":"x"}', {}), message, "resp_gw")
    for obj in (payload["response"], json.loads(body)):  # streamed and whole alike
        assert obj["status"] == "incomplete"
        assert obj["incomplete_details"] == {"reason": reason}
    back = mw.replay(API, [data]).message
    assert back.stop_reason == stop.reason
    assert (back.error.kind if back.error else None) == stop.error_kind


def test_gateway_keeps_a_responses_backends_own_reason() -> None:
    message = AssistantMessage(content=[], api=API, provider="mock", model="m",
                               stop_reason="length", provider_stop_reason="max_messages")  # fmt: skip
    _, payload = _last_event(_gateway_stream(message))
    assert payload["response"]["incomplete_details"] == {"reason": "max_messages"}


def test_mock_renders_the_stop_the_decoder_reads_back() -> None:
    for stop_reason in ("stop", "length"):
        script = AssistantMessage(content=[TextContent(text="hi")], api=API, provider="mock",
                                  model="m", stop_reason=stop_reason)  # fmt: skip
        data = render(script, API)
        name, payload = _last_event(data)
        why = spec.INCOMPLETE_REASONS.get(spec.Stop(stop_reason))
        status = "completed" if why is None else "incomplete"
        assert name == spec.TERMINAL_EVENTS[status]
        assert payload["response"]["status"] == status
        assert payload["response"]["id"].startswith(spec.RESPONSE_ID_PREFIX)
        message = mw.replay(API, [data]).message
        assert message.stop_reason == stop_reason
        if why is not None:
            assert message.provider_stop_reason == why
            assert spec.INCOMPLETE_STOPS[why] == spec.Stop(stop_reason)


def test_the_mock_server_sends_only_events_and_ids_of_the_api() -> None:
    script = AssistantMessage(content=[ThinkingContent(thinking="hmm"), TextContent(text="hi"),
                                       tool_call("read", {"path": "a"})],
                              api=API, provider="mock", model="m", stop_reason="tool_use")  # fmt: skip
    frames = render_frames(script, API)
    names = [name or "" for name, _ in frames]  # every event is named
    assert all(name.startswith("response.") for name in names), names
    assert all(isinstance(p, dict) and p["type"] == name for name, p in frames)
    # One terminal event, last; the decoder handles every event that carries content.
    assert [n for n in names if n in spec.TERMINAL_EVENTS.values()] == [names[-1]]
    assert names[-1] == spec.TERMINAL_EVENTS["completed"]
    handled = set(_decode.ResponsesDecoder()._handlers)
    assert {n for n in names if n.endswith(".delta") or "output_item" in n} <= handled
    responses = [p["response"] for _, p in frames if "response" in p]
    assert responses and all(r["id"].startswith(spec.RESPONSE_ID_PREFIX) for r in responses)
    items = [p["item"] for name, p in frames if name == "response.output_item.done"]
    assert [i["type"] for i in items] == ["reasoning", "message", "function_call"]
    for item in items:
        assert item["id"].startswith(spec.ITEM_ID_PREFIXES[item["type"]] + "_"), item


def test_gateway_ids_use_the_specs_prefixes() -> None:
    for item_type, head in spec.ITEM_ID_PREFIXES.items():
        made = gw_items.new_id(item_type, spec.RESPONSE_ID_PREFIX + "x", 3)
        assert made.startswith(head + "_") and gw_items.is_generated(made)
        assert "resp" not in made


# --------------------------------------------------------------------------- the source


# The server side of the API (parse and render, in its package) and the gateway's
# front end that serves them.
_SERVER = ("parse.py", "_parse_input.py", "_parse_checks.py", "_output_items.py", "render.py",
           "_error_shape.py")  # fmt: skip


def _gateway_sources() -> dict[str, str]:
    own = {name: (SRC / "_apis" / "openai_responses" / name).read_text(encoding="utf-8")
           for name in _SERVER}  # fmt: skip
    front = (SRC / "gateway" / "_responses" / "__init__.py").read_text(encoding="utf-8")
    return {**own, "__init__.py": front}


def test_the_gateway_front_end_names_no_gemini_fact() -> None:
    found = [name for name, text in _gateway_sources().items()
             if re.search(r"gemini|google", text, re.IGNORECASE)]  # fmt: skip
    assert found == []


# The spec's values as literal strings: the ending (a reason, a terminal event) and
# the ids (``resp_``, an item's head).
_ENDING = re.compile(
    r"""["'](?:max_output_tokens|content_filter|response\.(?:completed|incomplete|failed))["']"""
)
_IDS = re.compile(r"""["'](?:resp|msg|fc|rs)_?["']|f["'](?:resp|msg|fc|rs)_""")


def _source(*parts: str) -> str:
    return SRC.joinpath(*parts).read_text(encoding="utf-8")


def test_the_readers_do_not_spell_the_specs_tables() -> None:
    gateway = _gateway_sources()
    decoder = _source("_apis", "openai_responses", "decode.py")
    # (``_output_items.py`` and ``parse.py`` name the request's ``max_output_tokens``
    # field, and ``_error_shape.py`` maps error kinds to error bodies: other facts.)
    ending = {"decode.py": decoder, "render.py": gateway["render.py"],
              "__init__.py": gateway["__init__.py"]}  # fmt: skip
    ids = {"_output_items.py": gateway["_output_items.py"], "render.py": gateway["render.py"],
           "__init__.py": gateway["__init__.py"]}  # fmt: skip
    found = {f"{name}: ending": _ENDING.findall(text) for name, text in ending.items()}
    found |= {f"{name}: ids": _IDS.findall(text) for name, text in ids.items()}
    assert {name: hits for name, hits in found.items() if hits} == {}
    # The checks see a spelled-out table (a check that cannot fail proves nothing).
    assert _ENDING.search('if why == "content_filter":')
    assert _ENDING.search('ev("response.completed", x)')
    assert _IDS.search('f"msg_{rid}_{oi}"')
    assert _IDS.search('new_id("fc", rid, n)')
    assert _IDS.search("removeprefix('resp_')")
