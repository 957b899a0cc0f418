"""The one shared assembler: normalized deltas → events → one assistant message.

Sans-IO and API-neutral (DESIGN §1). It owns:

* routing: a provider key (chat ``tool_calls[].index``, an Anthropic block index,
  a Responses item id…) maps to a block; the content index is the position where
  the block first appeared (DESIGN §3 rule 2);
* lazy immutable snapshots: blocks are append-only lists of pieces stamped with
  the version at which they arrived, so an event records only ``(source,
  version)`` and ``event.partial`` is rebuilt on access — producing an event
  never copies content;
* the tool-call collector and the completion policy: by default derived from
  ``tool_choice`` and the declared tools (DESIGN §2a, "Tool-call protocol"); a
  caller may pass another :data:`CompletionPolicy`;
* finish semantics: the last ``Finish`` is remembered and one terminal event is
  formed at ``EndOfStream`` (rule 4); no finish at all → ``truncated_stream``;
* usage and cost.
"""

from __future__ import annotations

from ...events import SnapshotSource
from ._assembler import Assembler
from ._blocks import compute_cost, parse_arguments
from ._policy import CompletionPolicy, ToolChoice, default_completion_policy

__all__ = [
    "Assembler",
    "CompletionPolicy",
    "SnapshotSource",
    "ToolChoice",
    "compute_cost",
    "default_completion_policy",
    "parse_arguments",
]
