"""The typed schema of the catalog data file (``modelwire/data/models.json``).

Split out of :mod:`modelwire._catalog` (issue 17: no module over ~600 lines),
which re-exports :class:`CatalogFile`, :class:`ProviderEntry` and
:class:`ModelEntry` and checks what a schema cannot (``validate_catalog``).
"""

from __future__ import annotations

from typing import Any

import msgspec

__all__ = ["CatalogFile", "ModelEntry", "PriceEntry", "ProviderEntry", "TemplateEntry"]

# The JSON file is decoded into these typed Structs (unknown keys refused, so a
# typo in the data file fails the catalog test instead of being ignored). Field
# order is the canonical key order that ``modelwire._catalog.dump_catalog`` writes.


class PriceEntry(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Dollars per million tokens, by token class."""

    input: float
    """Prompt tokens that were neither read from nor written to the cache."""
    output: float
    """Generated tokens, reasoning included."""
    cache_read: float = 0.0
    """Prompt tokens served from the provider's cache (0 when there is no discount
    or no caching)."""
    cache_write: float = 0.0
    """Prompt tokens written to the cache (Anthropic charges extra for them; most
    providers do not, and then this is 0)."""


class ModelEntry(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    """One model of one provider."""

    id: str
    """The model id sent to the provider."""
    name: str
    """Display name."""
    api: str
    """The wire API (one of :data:`~modelwire._catalog.CATALOG_APIS`)."""
    base_url: str
    """API root with its version segment (``https://api.openai.com/v1``)."""
    reasoning: bool
    """Whether a reasoning level may be requested."""
    input: tuple[str, ...]
    """Accepted input kinds (``text``, ``image``)."""
    context_window: int
    """Prompt + output tokens the model can hold."""
    max_tokens: int
    """Largest output (and the default where an API requires one)."""
    cost: PriceEntry
    """Prices per million tokens."""
    reasoning_levels: tuple[str, ...] | None = None
    """Levels the model accepts, in :data:`~modelwire._options.REASONING_LEVELS`
    order; others are clamped to the nearest (:func:`~modelwire._catalog.clamp_reasoning`). Absent:
    every level (the adapter maps them). Empty: the model reasons on its own and
    takes no level (nothing is sent)."""
    compat: dict[str, Any] | None = None
    """``Model.compat`` overrides (the wire API's compat flags)."""
    headers: dict[str, str] | None = None
    """Extra HTTP headers."""
    notes: str | None = None
    """Where the numbers come from and what is uncertain or not modelled."""


class TemplateEntry(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Defaults for ids a local provider serves that the catalog does not list."""

    api: str
    base_url: str
    context_window: int
    max_tokens: int


class ProviderEntry(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    """One provider: its key variables, docs and models."""

    id: str
    """The ``Model.provider`` name (picks the env var and compat defaults)."""
    name: str
    """Display name."""
    env: tuple[str, ...]
    """API-key environment variables, first wins (must equal ``ENV_KEYS``)."""
    docs: str
    """Where the models, prices and limits were read."""
    local: bool = False
    """A server on this machine: no key, loopback ``base_url``, any model id."""
    template: TemplateEntry | None = None
    """For a local provider: the defaults :func:`~modelwire._catalog.resolve_model` uses for an id the
    catalog does not list."""
    notes: str | None = None
    """Provider-wide remarks."""
    models: tuple[ModelEntry, ...]
    """The catalog entries, in display order."""


class CatalogFile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The whole data file."""

    version: int
    """Format version (1)."""
    checked: str
    """When and how the data was last checked against the providers' docs."""
    providers: tuple[ProviderEntry, ...]
    """Every provider, in display order."""


_decoder = msgspec.json.Decoder(CatalogFile)
