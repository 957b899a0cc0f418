"""Facts of the OpenAI Responses wire format that more than one reader needs: how a
stream ends and how ids look (API reference, "Streaming events":
https://platform.openai.com/docs/api-reference/responses-streaming, and "The response
object": https://platform.openai.com/docs/api-reference/responses/object).

The decoder reads these tables one way; the mock renderer and the gateway's Responses
front-end read them the other way, so the two directions cannot drift apart.
Constant data only: importing this module costs nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, Final, NamedTuple

from ...types import Capabilities

__all__ = [
    "API_NAME",
    "CAPABILITIES",
    "COMPLETED_EVENT",
    "CUT_SHORT",
    "FAILED_EVENT",
    "INCOMPLETE_EVENT",
    "INCOMPLETE_REASONS",
    "INCOMPLETE_STOPS",
    "ITEM_ID_PREFIXES",
    "NO_REASON",
    "RESPONSE_ID_PREFIX",
    "SERVER_TOOLS",
    "TERMINAL_EVENTS",
    "Stop",
]

#: The wire API's registered name.
API_NAME: Final = "openai-responses"

# --------------------------------------------------------------------------- the end

#: The event that ends a successful stream (status ``completed``).
COMPLETED_EVENT: Final = "response.completed"
#: The event that ends a stream cut short (status ``incomplete``, with
#: ``incomplete_details.reason``).
INCOMPLETE_EVENT: Final = "response.incomplete"
#: The event that ends a failed stream (status ``failed``, with ``error``).
FAILED_EVENT: Final = "response.failed"
#: Each terminal event by the status of the Response object it carries.
TERMINAL_EVENTS: Mapping[str, str] = MappingProxyType(
    {"completed": COMPLETED_EVENT, "incomplete": INCOMPLETE_EVENT, "failed": FAILED_EVENT}
)


class Stop(NamedTuple):
    """How modelwire states an ending: its stop reason and, for ``error``, the
    error's kind."""

    reason: str | None
    error_kind: str | None = None


#: ``incomplete_details.reason`` → the stop modelwire reads it as. A content filter's
#: stop is an error of kind ``content_filter``; running out of output tokens a
#: ``length`` stop.
INCOMPLETE_STOPS: Mapping[str, Stop] = MappingProxyType(
    {
        "max_output_tokens": Stop("length"),
        "content_filter": Stop("error", "content_filter"),
    }
)
#: A reason the table does not list (``max_messages``, or one added later): the output
#: was cut short, so tool-call arguments are never trusted.
CUT_SHORT: Final = Stop("length")
#: The provider stop reason given to an incomplete response that names no reason.
NO_REASON: Final = "incomplete"
#: The stop → the ``incomplete_details.reason`` a response ends with: the table above
#: read backwards (a stop not listed ends ``completed``, or ``failed`` for an error).
INCOMPLETE_REASONS: Mapping[Stop, str] = MappingProxyType(
    {stop: reason for reason, stop in INCOMPLETE_STOPS.items()}
)

# --------------------------------------------------------------------------- ids

#: The Response object's id prefix (``resp_…``).
RESPONSE_ID_PREFIX: Final = "resp_"
#: An output item's id head, by item type (``msg_…``, ``fc_…``, ``rs_…``, ``ig_…``).
ITEM_ID_PREFIXES: Mapping[str, str] = MappingProxyType(
    {"message": "msg", "function_call": "fc", "reasoning": "rs", "image_generation_call": "ig"}
)

# --------------------------------------------------------------------------- capabilities

#: What the Responses API gives a model: ``text.format`` with a ``json_schema``, a
#: ``tool_choice`` naming one function, and a function call's item id (its signature)
#: with the call's first event (``response.output_item.added``), never after it.
CAPABILITIES = Capabilities(
    structured_output="schema", forced_tool_choice=True, late_call_signatures=False
)


#: Provider-run tools by modelwire's neutral name, as Responses tool objects ("Tools":
#: https://platform.openai.com/docs/api-reference/responses/create#responses-create-tools).
#: Which models have them is the catalog's word (``server_tools`` capabilities).
SERVER_TOOLS: Final[Mapping[str, Mapping[str, Any]]] = {
    "web_search": {"type": "web_search"},
    "code_execution": {"type": "code_interpreter", "container": {"type": "auto"}},
}
