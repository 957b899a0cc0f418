"""Facts of the Gemini wire format that other layers ask about, so none of them
names Gemini (thought signatures guide:
https://ai.google.dev/gemini-api/docs/thought-signatures; streamed function-call
arguments: https://cloud.google.com/vertex-ai/generative-ai/docs/multimodal/function-calling#streaming-fc;
structured output: https://ai.google.dev/gemini-api/docs/structured-output).

Constant data only: importing this module costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ...types import Capabilities

if TYPE_CHECKING:
    from ...types import Model

__all__ = ["capabilities"]

# ``responseJsonSchema`` (a full JSON schema) arrived with Gemini 2.5; the older
# models have only ``responseSchema``, an OpenAPI subset: the field exists, but a
# forced tool is the default there.
_BEFORE_JSON_SCHEMA = ("gemini-1", "gemini-2.0")

# A function call's ``thoughtSignature`` may be known only when the call ends: it
# sits on the ``functionCall`` part, and a call streamed in fragments
# (``partialArgs``, ``willContinue``) may carry it on a later fragment than the one
# that named the call.
_LATE_CALL_SIGNATURES = True


def capabilities(model: Model) -> Capabilities:
    """What ``generateContent`` gives ``model``: a JSON-schema answer (2.5 and later),
    ``functionCallingConfig`` mode ``ANY`` with one allowed name, late call signatures."""
    old = model.id.startswith(_BEFORE_JSON_SCHEMA)
    return Capabilities(
        structured_output="json" if old else "schema",
        forced_tool_choice=True,
        late_call_signatures=_LATE_CALL_SIGNATURES,
    )
