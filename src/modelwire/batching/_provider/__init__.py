"""``via="provider"``: a batch run through the providers' own batch APIs (OpenAI Batch,
Anthropic Message Batches, Gemini batch mode) at their batch price, with the live
runner's exactly-once output and resume (:mod:`._run` states the rules).

The wire facts of each provider's batch endpoints are its API's batch facet
(``modelwire._apis.<api>.batch``); this package does the I/O, the jobs ledger, the
retries, the cost cap and the progress.
"""

from __future__ import annotations

from ._lines import Line, prepare_lines, supported
from ._run import ProviderSettings, Sleep, run_provider

#: ``via="auto"`` sends through the providers' batch APIs when the run may wait this
#: long (seconds; ``run_timeout=None`` waits for ever): the providers' completion
#: window, 24 hours.
BATCH_WINDOW = 24 * 3600.0

__all__ = [
    "BATCH_WINDOW",
    "Line",
    "ProviderSettings",
    "Sleep",
    "prepare_lines",
    "run_provider",
    "supported",
]
