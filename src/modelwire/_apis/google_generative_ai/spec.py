"""Facts of the Gemini wire format that other layers ask about, so none of them
names Gemini (thought signatures guide:
https://ai.google.dev/gemini-api/docs/thought-signatures; streamed function-call
arguments: https://cloud.google.com/vertex-ai/generative-ai/docs/multimodal/function-calling#streaming-fc).

Constant data only: importing this module costs nothing.
"""

from __future__ import annotations

from typing import Final

__all__ = ["LATE_CALL_SIGNATURES"]

#: A function call's ``thoughtSignature`` may be known only when the call ends: it
#: sits on the ``functionCall`` part, and a call streamed in fragments
#: (``partialArgs``, ``willContinue``) may carry it on a later fragment than the one
#: that named the call.
LATE_CALL_SIGNATURES: Final = True
