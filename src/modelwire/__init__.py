"""modelwire: the boundary between an agent and a language model.

``import modelwire as mw``; see the README for a tour. Heavy parts (httpx, the
wire APIs, jsonschema, the agent, the testing kit, rich) load on first use so
importing the package stays cheap.

What is exported here (the rule ``tests/test_public_api.py`` checks): the names an
ordinary program writes, i.e. the public contract of DESIGN §2 and what the docs
show as ``mw.<name>``. They come only from these modules:

- values: ``types`` (messages, content, model, usage; ``to_json``/``from_json``)
  and ``events`` (the stream events);
- entry points and their options, from private implementation modules: ``_client``,
  ``_client._replay`` (``replay``), ``_client._handoffs``, ``_catalog`` (``get_model``,
  ``models``), ``_wire.request`` (``Timeout``), ``_wire.sse`` (the public decoder),
  ``_client._streams``, ``_wire.assemble`` (the completion policy), and ``trace`` (the
  records, a public module);
- ``errors``: only the root and the caller mistakes that raise at once
  (``ModelwireError``, ``ConfigurationError``, ``MissingAPIKeyError``) and
  ``ErrorInfo``; a stream never raises the rest, which stay in ``mw.errors``;
- the agent and the tools (``agent``, ``tools``), the ``testing`` kit, the
  ``gateway`` module (``mw.gateway.app(config)``), and the batch runner's entry
  point ``mw.batch`` (a function, from ``batching``; the rest of the runner —
  ``batch_async``, ``Limits``, the progress displays, ``BatchSummary`` — stays in
  ``modelwire.batching``).

Public modules are the ones without a leading underscore: ``errors``, ``types``,
``events``, ``trace``, ``agent``, ``tools``, ``testing``, ``cloud``, ``batching``,
``gateway`` and ``otel``. Never exported here: a wire API adapter (``_apis``), the
framing, HTTP, cloud-auth and CLI layers, or any private module's helper. A new top-level name
must be stable (in DESIGN §2 or the docs), go in the sorted ``__all__``, and load
lazily through ``_LAZY`` when its module is heavy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from . import errors
from ._wire.request import Timeout
from ._wire.sse import ServerSentEvent, SSEDecoder
from .errors import (
    ConfigurationError,
    MissingAPIKeyError,
    ModelwireError,
)
from .events import (
    BlockEvent,
    CitationEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    RestartEvent,
    StartEvent,
    TextDeltaEvent,
    TextEndEvent,
    TextStartEvent,
    ThinkingDeltaEvent,
    ThinkingEndEvent,
    ThinkingStartEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallStartEvent,
)
from .types import (
    AssistantMessage,
    AudioContent,
    Capabilities,
    Citation,
    Context,
    Cost,
    DocumentContent,
    ErrorInfo,
    ImageContent,
    Message,
    Model,
    ModelCost,
    ProviderItem,
    ServerTool,
    ServerToolCall,
    ServerToolResult,
    StopReason,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolDefinition,
    ToolResultMessage,
    Usage,
    UserMessage,
    from_json,
    to_json,
)

if TYPE_CHECKING:
    from . import gateway as gateway
    from . import testing as testing
    from . import tools as tools
    from ._catalog import get_model as get_model
    from ._catalog import models as models
    from ._client import CircuitBreaker as CircuitBreaker
    from ._client import Fallback as Fallback
    from ._client import TokenCount as TokenCount
    from ._client import complete as complete
    from ._client import complete_sync as complete_sync
    from ._client import count_tokens as count_tokens
    from ._client import count_tokens_sync as count_tokens_sync
    from ._client import register_api as register_api
    from ._client import stream as stream
    from ._client import stream_sync as stream_sync
    from ._client._background import cancel_response as cancel_response
    from ._client._background import cancel_response_sync as cancel_response_sync
    from ._client._background import resume_stream as resume_stream
    from ._client._background import resume_stream_sync as resume_stream_sync
    from ._client._embed import Embeddings as Embeddings
    from ._client._embed import embed as embed
    from ._client._embed import embed_sync as embed_sync
    from ._client._handoffs import handoff as handoff
    from ._client._replay import replay as replay
    from ._client._streams import AssistantMessageStream as AssistantMessageStream
    from ._client._streams import SyncAssistantMessageStream as SyncAssistantMessageStream
    from ._wire.assemble import CompletionPolicy as CompletionPolicy
    from ._wire.assemble import default_completion_policy as default_completion_policy
    from .agent import Agent as Agent
    from .agent import AgentRun as AgentRun
    from .agent import AgentState as AgentState
    from .agent import Approve as Approve
    from .agent import Deny as Deny
    from .agent import PendingCall as PendingCall
    from .batching import batch as batch
    from .tools import Tool as Tool
    from .tools import ToolContext as ToolContext
    from .tools import ToolFailure as ToolFailure
    from .tools import ToolOutput as ToolOutput
    from .tools import tool as tool
    from .trace import TraceLog as TraceLog
    from .trace import TraceRecord as TraceRecord

from ._version import __version__ as __version__

# name -> (module, attribute or None for the module itself)
_LAZY: dict[str, tuple[str, str | None]] = {
    "Agent": ("modelwire.agent", "Agent"),
    "AgentRun": ("modelwire.agent", "AgentRun"),
    "AgentState": ("modelwire.agent", "AgentState"),
    "Approve": ("modelwire.agent", "Approve"),
    "Deny": ("modelwire.agent", "Deny"),
    "PendingCall": ("modelwire.agent", "PendingCall"),
    "AssistantMessageStream": ("modelwire._client._streams", "AssistantMessageStream"),
    "CircuitBreaker": ("modelwire._client", "CircuitBreaker"),
    "CompletionPolicy": ("modelwire._wire.assemble", "CompletionPolicy"),
    "Embeddings": ("modelwire._client._embed", "Embeddings"),
    "Fallback": ("modelwire._client", "Fallback"),
    "SyncAssistantMessageStream": ("modelwire._client._streams", "SyncAssistantMessageStream"),
    "Tool": ("modelwire.tools", "Tool"),
    "ToolContext": ("modelwire.tools", "ToolContext"),
    "ToolFailure": ("modelwire.tools", "ToolFailure"),
    "ToolOutput": ("modelwire.tools", "ToolOutput"),
    "TokenCount": ("modelwire._client", "TokenCount"),
    "TraceLog": ("modelwire.trace", "TraceLog"),
    "TraceRecord": ("modelwire.trace", "TraceRecord"),
    "batch": ("modelwire.batching", "batch"),
    "cancel_response": ("modelwire._client._background", "cancel_response"),
    "cancel_response_sync": ("modelwire._client._background", "cancel_response_sync"),
    "complete": ("modelwire._client", "complete"),
    "complete_sync": ("modelwire._client", "complete_sync"),
    "count_tokens": ("modelwire._client", "count_tokens"),
    "count_tokens_sync": ("modelwire._client", "count_tokens_sync"),
    "default_completion_policy": ("modelwire._wire.assemble", "default_completion_policy"),
    "embed": ("modelwire._client._embed", "embed"),
    "embed_sync": ("modelwire._client._embed", "embed_sync"),
    "gateway": ("modelwire.gateway", None),
    "get_model": ("modelwire._catalog", "get_model"),
    "handoff": ("modelwire._client._handoffs", "handoff"),
    "models": ("modelwire._catalog", "models"),
    "register_api": ("modelwire._client", "register_api"),
    "replay": ("modelwire._client._replay", "replay"),
    "resume_stream": ("modelwire._client._background", "resume_stream"),
    "resume_stream_sync": ("modelwire._client._background", "resume_stream_sync"),
    "stream": ("modelwire._client", "stream"),
    "stream_sync": ("modelwire._client", "stream_sync"),
    "testing": ("modelwire.testing", None),
    "tool": ("modelwire.tools", "tool"),
    "tools": ("modelwire.tools", None),
}


def __getattr__(name: str) -> Any:
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'modelwire' has no attribute {name!r}")
    module = importlib.import_module(target[0])
    value = module if target[1] is None else getattr(module, target[1])
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)


__all__ = [
    "Agent",
    "AgentRun",
    "AgentState",
    "Approve",
    "AssistantMessage",
    "AssistantMessageStream",
    "AudioContent",
    "BlockEvent",
    "Capabilities",
    "CircuitBreaker",
    "Citation",
    "CitationEvent",
    "CompletionPolicy",
    "ConfigurationError",
    "Context",
    "Cost",
    "Deny",
    "DocumentContent",
    "DoneEvent",
    "Embeddings",
    "ErrorEvent",
    "ErrorInfo",
    "Event",
    "Fallback",
    "ImageContent",
    "Message",
    "MissingAPIKeyError",
    "Model",
    "ModelCost",
    "ModelwireError",
    "PendingCall",
    "ProviderItem",
    "RestartEvent",
    "SSEDecoder",
    "ServerSentEvent",
    "ServerTool",
    "ServerToolCall",
    "ServerToolResult",
    "StartEvent",
    "StopReason",
    "SyncAssistantMessageStream",
    "SystemMessage",
    "TextContent",
    "TextDeltaEvent",
    "TextEndEvent",
    "TextStartEvent",
    "ThinkingContent",
    "ThinkingDeltaEvent",
    "ThinkingEndEvent",
    "ThinkingStartEvent",
    "Timeout",
    "TokenCount",
    "Tool",
    "ToolCall",
    "ToolCallDeltaEvent",
    "ToolCallEndEvent",
    "ToolCallStartEvent",
    "ToolContext",
    "ToolDefinition",
    "ToolFailure",
    "ToolOutput",
    "ToolResultMessage",
    "TraceLog",
    "TraceRecord",
    "Usage",
    "UserMessage",
    "batch",
    "cancel_response",
    "cancel_response_sync",
    "complete",
    "complete_sync",
    "count_tokens",
    "count_tokens_sync",
    "default_completion_policy",
    "embed",
    "embed_sync",
    "errors",
    "from_json",
    "gateway",
    "get_model",
    "handoff",
    "models",
    "register_api",
    "replay",
    "resume_stream",
    "resume_stream_sync",
    "stream",
    "stream_sync",
    "testing",
    "to_json",
    "tool",
    "tools",
]
