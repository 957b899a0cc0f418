"""``via="provider"``: a batch run through the providers' own batch APIs (OpenAI Batch,
Anthropic Message Batches, Gemini batch mode) at their batch price, with the live
runner's exactly-once output and resume (:mod:`._run` states the rules).

The wire facts of each provider's batch endpoints are its API's batch facet
(``modelwire._apis.<api>.batch``); this package does the I/O, the jobs ledger, the
retries, the cost cap and the progress.
"""

from __future__ import annotations

import os

from ...errors import ConfigurationError
from ._ledger import Ledger, ledger_path
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
    "refuse_live_beside_jobs",
    "run_provider",
    "supported",
]


def refuse_live_beside_jobs(out: str) -> None:
    """A live run into ``out`` while provider jobs of it may still run would send their
    lines again (and pay for them twice): refused, saying what to do."""
    if not os.path.exists(ledger_path(out)):
        return
    ledger = Ledger(out, read_only=True)
    waiting = [j.id or j.name for j in [*ledger.open_jobs(), *ledger.unsure_jobs()]]
    if waiting:
        raise ConfigurationError(
            f"{out} has provider batch jobs not yet written ({', '.join(waiting[:3])}"
            f'{", …" if len(waiting) > 3 else ""}): run it with via="provider" '
            "(--via provider) to collect them, or cancel them (--cancel) and collect what "
            "they answered, before sending its lines live"
        )
