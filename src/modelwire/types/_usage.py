"""Token counts and dollar cost of one response."""

from __future__ import annotations

import msgspec

from ._base import _Value


class Cost(_Value, frozen=True, gc=False):
    """Cost of one response in dollars, by token class.

    ``usage.cost``: the token counts times the model's :class:`ModelCost` prices
    (all 0 when the model has none).

    Attributes:
        input: Dollars for uncached prompt tokens.
        output: Dollars for output tokens.
        cache_read: Dollars for prompt tokens read from the cache.
        cache_write: Dollars for prompt tokens written to the cache.
        total: The sum of the four.
    """

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0
    total: float = 0.0


class Usage(_Value, frozen=True, gc=False):
    """Token counts of one response.

    ``input`` excludes cached tokens, ``output`` includes reasoning tokens once,
    and ``total_tokens == input + output + cache_read + cache_write``.
    """

    input: int = 0
    """Prompt tokens that were neither read from nor written to the cache."""
    output: int = 0
    """Generated tokens, reasoning included."""
    cache_read: int = 0
    """Prompt tokens served from the provider's cache."""
    cache_write: int = 0
    """Prompt tokens written to the provider's cache."""
    total_tokens: int = 0
    """The sum of the four counts above."""
    cost: Cost = msgspec.field(default_factory=Cost)
    """Dollar cost, from the model's prices (zero when unknown)."""
