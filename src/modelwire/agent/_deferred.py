"""Deferred tools (``Tool(defer=True)``): definitions the model gets once it asks.

A run with deferred tools sends them in one of two ways, chosen per model call:

* **The provider searches.** Where the model's profile says the API runs a tool search
  itself (``Capabilities.tool_search``; for a ``Fallback``, every model's), every tool
  is sent and the deferred ones are marked ``ToolDefinition.defer_loading``: the
  provider keeps them out of the model's context until its own search finds them
  (Anthropic's tool search tool,
  https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool). The
  search and its results are blocks of the response, replayed with it.
* **The agent searches.** Everywhere else the deferred tools are left out and the
  agent adds its own ``search_tools`` tool: the model searches them by name and
  description and gets the matching definitions as JSON; each tool found is sent from
  the next request on, after the others, so the start of the tool list (and the
  provider's prompt cache of it) does not change.

Which deferred tools are loaded is read from the transcript alone — the tool names in
the ``details`` of the ``search_tools`` results, and any deferred tool the model
called — so ``continue_()``, a later ``run()`` and an agent given ``messages=`` of an
earlier run keep them. A call to a deferred tool the model has not loaded is judged and
executed as any other call. Pure functions: nothing here does I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .._call._fallback import Fallback
from ..errors import ConfigurationError
from ..tools import Tool, ToolContext, ToolOutput
from ..types import AssistantMessage, Message, Model, ToolDefinition, ToolResultMessage

__all__ = [
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "SEARCH_TOOLS",
    "check_reserved",
    "loaded",
    "provider_searches",
    "request_tools",
    "search",
    "search_tool",
]

#: The name of the agent's own search tool.
SEARCH_TOOLS = "search_tools"
#: Tools one search returns unless it asks for another number, and at most.
DEFAULT_LIMIT = 5
MAX_LIMIT = 20

# Points a query word earns: in the tool's name, as a whole word or inside it, then
# in its description. A query word equal to the whole name wins outright.
_NAME_WORD = 3
_IN_NAME = 2
_DESCRIPTION_WORD = 1
_WHOLE_NAME = 100
# Words that say nothing about which tool is meant.
_STOPWORDS = frozenset({"a", "an", "and", "any", "are", "as", "at", "be", "by", "can",
                        "for", "from", "i", "in", "is", "it", "me", "my", "of", "on",
                        "or", "that", "the", "this", "to", "tool", "tools", "use",
                        "with"})  # fmt: skip


def check_reserved(tools: Mapping[str, Tool]) -> None:
    """``ConfigurationError`` when the agent needs ``search_tools`` (a tool is deferred)
    and one of the caller's tools already has the name."""
    if SEARCH_TOOLS in tools and any(t.defer for t in tools.values()):
        raise ConfigurationError(
            f"a tool is named {SEARCH_TOOLS!r}, the name of the tool the agent adds to let "
            "the model find its deferred tools (defer=True); rename that tool"
        )


def provider_searches(model: Model | Fallback) -> bool:
    """Whether every model of this call searches deferred tools on the provider's side
    (``Capabilities.tool_search`` in its profile)."""
    from .._apis._profile import model_profile

    models = model.models if isinstance(model, Fallback) else (model,)
    return all(model_profile(m).tool_search for m in models)


def loaded(messages: Sequence[Message], deferred: Mapping[str, Tool]) -> list[str]:
    """The deferred tools the transcript loaded, in the order it loaded them: those a
    successful ``search_tools`` result names in its ``details``, and those the model
    called (it knows them; their definitions help it call them right)."""
    found: dict[str, None] = {}
    for m in messages:
        if isinstance(m, ToolResultMessage):
            details = m.details
            if m.tool_name != SEARCH_TOOLS or m.is_error or not isinstance(details, dict):
                continue
            names = details.get("loaded")
            for name in names if isinstance(names, list) else ():
                if isinstance(name, str) and name in deferred:
                    found.setdefault(name)
        elif isinstance(m, AssistantMessage) and m.stop_reason not in ("error", "aborted"):
            for call in m.tool_calls:
                if call.name in deferred:
                    found.setdefault(call.name)
    return list(found)


def request_tools(
    tools: Mapping[str, Tool], messages: Sequence[Message], search: Tool, provider: bool
) -> tuple[ToolDefinition, ...]:
    """The definitions one request sends: with ``provider``, every tool, the deferred
    ones marked ``defer_loading``; otherwise the tools that are not deferred,
    ``search``, then the deferred tools the transcript loaded."""
    if provider:
        return tuple(
            ToolDefinition(name=t.name, description=t.description, parameters=t.parameters,
                           defer_loading=True) if t.defer else t.definition
            for t in tools.values()
        )  # fmt: skip
    deferred = {name: t for name, t in tools.items() if t.defer}
    out = [t.definition for t in tools.values() if not t.defer]
    out.append(search.definition)
    out.extend(deferred[name].definition for name in loaded(messages, deferred))
    return tuple(out)


# --------------------------------------------------------------------------- search


def _split(text: str) -> list[str]:
    """Lower-case words of letters and digits; ``get_weather``, ``getWeather`` and
    ``get-weather`` all give ``get``, ``weather``."""
    words: list[str] = []
    word: list[str] = []
    prev = ""
    for ch in text:
        if ch.isalnum():
            if word and ch.isupper() and prev.islower():
                words.append("".join(word))
                word = []
            word.append(ch)
        elif word:
            words.append("".join(word))
            word = []
        prev = ch
    if word:
        words.append("".join(word))
    return [w.lower() for w in words]


def _stem(word: str) -> str:
    # A plural "s" is dropped on both sides, so "issues" finds "issue" and back.
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


def _words(text: str) -> set[str]:
    return {_stem(w) for w in _split(text)}


def _score(terms: Sequence[str], whole: set[str], tool: Tool) -> int:
    name = tool.name.lower()
    if name in whole:
        return _WHOLE_NAME
    name_words = _words(tool.name)
    flat = name.replace("_", "").replace("-", "")
    description = _words(tool.description)
    score = 0
    for term in terms:
        if term in name_words:
            score += _NAME_WORD
        elif len(term) > 2 and term in flat:
            score += _IN_NAME
        if term in description:
            score += _DESCRIPTION_WORD
    return score


def search(query: str, tools: Sequence[Tool], limit: int = DEFAULT_LIMIT) -> list[Tool]:
    """The ``limit`` tools that match ``query`` best, best first (ties: in the order
    given). Deterministic: each query word scores in the name above the description,
    case-insensitive; a word equal to a tool's whole name finds that tool first."""
    whole = {w.strip(".,;:!?'\"()[]{}`").lower() for w in query.split()}
    terms = list(dict.fromkeys(_stem(w) for w in _split(query) if w not in _STOPWORDS))
    scored = [(s, i, t) for i, t in enumerate(tools) if (s := _score(terms, whole, t)) > 0]
    scored.sort(key=lambda x: (-x[0], x[1]))
    return [t for _, _, t in scored[:limit]]


def search_tool(deferred: Mapping[str, Tool]) -> Tool:
    """The agent's ``search_tools`` over ``deferred``: its result text is the found
    tools' definitions as JSON, its ``details`` ``{"loaded": [names]}`` (what loads them)."""
    tools = tuple(deferred.values())

    def execute(args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        query = args["query"]
        limit = args.get("limit", DEFAULT_LIMIT)
        found = search(query, tools, limit)
        if not found:
            return ToolOutput(
                f"No tool matched {query!r}. Tools are found by the words of their names "
                "and descriptions: search again with other words (a synonym, the object "
                "or the service the tool acts on).",
                details={"loaded": []},
            )
        listed = [{"name": t.name, "description": t.description, "parameters": t.parameters}
                  for t in found]  # fmt: skip
        text = json.dumps(
            {"tools": listed, "note": "These tools are loaded now: call them directly."},
            ensure_ascii=False,
        )
        return ToolOutput(text, details={"loaded": [t.name for t in found]})

    return Tool(
        SEARCH_TOOLS,
        f"Find more tools: {len(tools)} further tools are available but not loaded yet. "
        "Searches their names and descriptions for the words of the query and returns "
        "the definitions (name, description, parameter schema) of the best matches, "
        "which you can then call directly. Search before deciding that no tool can do "
        "what is needed.",
        {
            "type": "object",
            "properties": {
                "query": {
                    "type": "string",
                    "minLength": 1,
                    "description": "Words to look for in the tools' names and descriptions, "
                    'e.g. "calendar create event".',
                },
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": MAX_LIMIT,
                    "description": f"The most tools to return (default {DEFAULT_LIMIT}).",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        execute,
        read_only=True,
    )
