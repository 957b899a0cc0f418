"""A model's profile: what it supports, from its API, the catalog and itself.

Three layers, the later winning field by field (:class:`~modelwire.types.Capabilities`):
the wire API's default for the model (``codec.capabilities(model)``), the catalog
(its provider's entry for the API, then the listed model's), then
``Model.capabilities``. What no layer says gets the conservative answer below —
no native structured output, no forced tool choice, no late signatures, no tool search
— except what a codec states by having it: a counting facet means a token-count
endpoint. Only ``forced_tool_choice`` may stay ``None`` (unknown): an API that produces
events itself may honour ``tool_choice``, so a forced tool is allowed when asked for,
never the default.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._catalog import reasoning_levels
from .._catalog._records import capabilities_said
from ..types import Capabilities

if TYPE_CHECKING:
    from ..types import AssistantMessage, Model
    from ._codec import WireCodec

__all__ = ["model_profile", "origin_profile", "profile"]

_UNSAID = Capabilities(
    structured_output="none",
    token_count=False,
    late_call_signatures=False,
    server_tools=(),
    mid_conversation_system=False,
    tool_search=False,
)


def profile(codec: WireCodec | None, model: Model) -> Capabilities:
    """Every capability of ``model`` (each field set but an unknown
    ``forced_tool_choice``), ``codec`` being its wire API
    (``None``: an API that produces events itself, which states nothing)."""
    base = _UNSAID
    if codec is not None:
        base = codec.capabilities(model).over(
            Capabilities(token_count=codec.counting is not None).over(base)
        )
    said = capabilities_said(model).over(base)
    if model.capabilities is not None:
        said = model.capabilities.over(said)
    if said.reasoning_levels is None:
        said = Capabilities(reasoning_levels=reasoning_levels(model)).over(said)
    return said


def model_profile(model: Model) -> Capabilities:
    """:func:`profile` of ``model`` with its registered wire API (``model.api``)."""
    from . import find_api

    return profile(find_api(model.api), model)


# A message names the model that wrote it, not where it was served: its profile is
# read with a stand-in URL (no capability rule reads the URL of a named provider).
_NOWHERE = "http://origin.invalid"


def origin_profile(message: AssistantMessage) -> Capabilities:
    """:func:`model_profile` of the model that wrote ``message`` (its api, provider and
    model), for a reader that has the message and not the model."""
    from ..types import Model

    stand_in = Model(
        id=message.model or "unknown",
        api=message.api or "unknown",
        provider=message.provider or "unknown",
        base_url=_NOWHERE,
    )
    return model_profile(stand_in)
