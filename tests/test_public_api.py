"""The curated public surface (httpx's test_exported_members, DESIGN §2, §5)."""

from __future__ import annotations

import ast
import subprocess
import sys
import types
from pathlib import Path

import modelwire as mw

# Every name DESIGN §2 shows as ``mw.<name>``.
DESIGN_NAMES = {
    "get_model", "Model", "Context", "UserMessage", "ToolDefinition", "stream", "complete",
    "complete_sync", "stream_sync", "replay", "models", "SSEDecoder", "ServerSentEvent",
    "TextContent", "ThinkingContent", "ImageContent", "ToolCall", "AssistantMessage",
    "ToolResultMessage", "Usage", "Cost", "ErrorInfo", "to_json", "from_json",
    "errors", "ModelwireError", "ConfigurationError", "MissingAPIKeyError", "Agent", "Tool",
    "tools", "testing", "Timeout", "ModelCost",
}  # fmt: skip


def test_all_is_sorted_and_unique() -> None:
    assert mw.__all__ == sorted(mw.__all__)
    assert len(set(mw.__all__)) == len(mw.__all__)


def test_all_contains_the_design_contract() -> None:
    assert set(mw.__all__) >= DESIGN_NAMES


def test_every_exported_name_resolves() -> None:
    for name in mw.__all__:
        assert getattr(mw, name) is not None, name


def test_no_public_name_is_missing_from_all() -> None:
    public = {
        name
        for name, value in vars(mw).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType | type(None))
        and name not in {"annotations", "importlib", "TYPE_CHECKING", "Any"}
    }
    assert public - set(mw.__all__) == set()


def test_event_types_match_design() -> None:
    tags = {
        cls.type
        for cls in (
            mw.StartEvent, mw.TextStartEvent, mw.TextDeltaEvent, mw.TextEndEvent,
            mw.ThinkingStartEvent, mw.ThinkingDeltaEvent, mw.ThinkingEndEvent,
            mw.ToolCallStartEvent, mw.ToolCallDeltaEvent, mw.ToolCallEndEvent,
            mw.DoneEvent, mw.ErrorEvent,
        )
    }  # fmt: skip
    assert tags == {
        "start", "text_start", "text_delta", "text_end", "thinking_start", "thinking_delta",
        "thinking_end", "tool_call_start", "tool_call_delta", "tool_call_end", "done", "error",
    }  # fmt: skip


def test_import_is_light_no_sdk_no_httpx_no_network() -> None:
    code = (
        "import sys, socket\n"
        "def boom(*a, **k): raise SystemExit('network touched at import')\n"
        "socket.socket.connect = boom\n"
        "import modelwire\n"
        "heavy = [m for m in ('openai', 'anthropic', 'httpx', 'jsonschema', 'rich', 'google')"
        " if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


# The rule written in ``modelwire/__init__``'s docstring: where a top-level name may come from.
EXPORT_MODULES = {
    "modelwire.types", "modelwire.events", "modelwire._client", "modelwire._client._replay",
    "modelwire._client._handoffs", "modelwire._catalog", "modelwire._wire.request", "modelwire._wire.sse",
    "modelwire._client._streams", "modelwire._wire.assemble", "modelwire.trace", "modelwire.errors",
    "modelwire.agent", "modelwire.tools", "modelwire.testing", "modelwire.batching",
    "modelwire.gateway",
}  # fmt: skip
TOP_LEVEL_ERRORS = {"ModelwireError", "ConfigurationError", "MissingAPIKeyError", "ErrorInfo"}


def _homes() -> dict[str, str]:
    """name -> the module ``modelwire/__init__`` imports it from (its ``from .x import``
    lines, the ``TYPE_CHECKING`` block included, and ``from . import x``)."""
    tree = ast.parse(Path(mw.__file__).read_text(encoding="utf-8"))
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            for alias in node.names:
                name = alias.asname or alias.name
                out[name] = "modelwire." + (node.module or alias.name)
    return out


def _package(module: str) -> str:
    # ``modelwire.agent._loop`` belongs to ``modelwire.agent``: a package counts as one
    # home (the deepest listed one that holds the module; else the module itself).
    homes = [m for m in EXPORT_MODULES if module == m or module.startswith(m + ".")]
    return max(homes, key=len) if homes else module


def test_top_level_exports_follow_the_rule_in_the_docstring() -> None:
    assert mw.__doc__ is not None and "Never exported here" in mw.__doc__
    for module in EXPORT_MODULES:
        assert f"``{module.removeprefix('modelwire.')}``" in mw.__doc__, module
    homes = _homes()
    for name in mw.__all__:
        home = _package(homes[name])
        assert home in EXPORT_MODULES, f"mw.{name} comes from {home}"
        if home == "modelwire.errors" and name != "errors":
            assert name in TOP_LEVEL_ERRORS, f"mw.{name}: stream errors stay in mw.errors"


def test_ext_all_is_curated_complete_and_private_free() -> None:
    import modelwire.ext as ext

    assert ext.__all__ == sorted(ext.__all__)
    assert len(set(ext.__all__)) == len(ext.__all__)
    for name in ext.__all__:
        assert getattr(ext, name) is not None, name
    public = {
        name
        for name, value in vars(ext).items()
        if not name.startswith("_")
        and not isinstance(value, types.ModuleType)
        and name != "annotations"
    }
    assert public == set(ext.__all__)
    # What an extender needs, by kind: the codec and its facets, frames, deltas,
    # field-path JSON decoding, the server side (events → bytes), registration.
    needed = {"WireCodec", "WireDecoder", "HandoffFacet", "IdRules", "Frame", "Framing",
              "TextDelta", "ToolCallDelta", "Finish", "EndOfStream", "decode_json",
              "decoder_for", "WireServer", "StreamRenderer", "GatewayRequest",
              "register_wire_api", "http_request"}  # fmt: skip
    assert needed <= set(ext.__all__)
    # The mock machinery is not a codec's: no mock facet, no script rendering here.
    assert not {"MockFacet", "MockRendering", "MockFrame", "ScriptedReply"} & set(ext.__all__)
