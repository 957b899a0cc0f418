"""Which structured-output mode a model gets by default, and which it cannot use.

Read off the model's profile (:func:`modelwire._apis._profile.model_profile`), never off
its API's name: a native schema field makes ``native`` the default; else a forced tool
call (the documented fallback) where the API can force one; else the prompt asks for
JSON. Read by :mod:`modelwire._client._output._plan`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._profile import model_profile

if TYPE_CHECKING:
    from ..types import Capabilities, Model

__all__ = ["mode_problem", "output_mode"]


def output_mode(model: Model, caps: Capabilities | None = None) -> str:
    """The default ``output_mode`` for ``model``: ``"native"`` where its structured
    output takes a JSON schema, else ``"tool"`` where a tool call can be forced, else
    ``"prompted"`` (an API that states neither, e.g. one producing events itself).
    ``caps``: its profile, when the caller has it already."""
    caps = caps or model_profile(model)
    if caps.structured_output == "schema":
        return "native"
    return "tool" if caps.forced_tool_choice else "prompted"


def mode_problem(model: Model, mode: str, caps: Capabilities | None = None) -> str | None:
    """Why ``model`` cannot give its output in ``mode`` (``None``: it can)."""
    caps = caps or model_profile(model)
    if mode == "native" and caps.structured_output == "none":
        return f"{model.api} has no native structured output: use output_mode='tool' or 'prompted'"
    if mode == "tool" and caps.forced_tool_choice is False:
        other = "'native' or 'prompted'" if caps.structured_output != "none" else "'prompted'"
        return (
            f"{model.api} cannot force a tool call (it has no tool_choice that names one): "
            f"use output_mode={other}"
        )
    return None
