"""The typed schema of the catalog data file (``modelwire/data/models.json``):
providers (the one record of everything modelwire knows about a provider) and
their models. :mod:`modelwire._catalog` checks what a schema cannot
(``validate_catalog``); :mod:`modelwire._catalog._records` derives the
provider tables (key variables, compat defaults, id rules, error texts) from it.
"""

from __future__ import annotations

import functools
from typing import Any

import msgspec

from ..types import Capabilities

__all__ = [
    "CatalogFile",
    "EmbeddingEntry",
    "IdRuleEntry",
    "ModelEntry",
    "PriceEntry",
    "ProviderEntry",
    "StatusQuirk",
    "TemplateEntry",
    "packaged_catalog",
    "read_packaged",
]

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
    """The wire API (one of the catalog's ``apis``)."""
    base_url: str
    """API root with its version segment (``https://api.openai.com/v1``)."""
    reasoning: bool
    """Whether a reasoning level may be requested."""
    input: tuple[str, ...]
    """Accepted input kinds (``text``, ``image``, ``document``, ``audio``)."""
    context_window: int
    """Prompt + output tokens the model can hold."""
    max_tokens: int
    """Largest output (and the default where an API requires one)."""
    cost: PriceEntry
    """Prices per million tokens."""
    reasoning_levels: tuple[str, ...] | None = None
    """Levels the model accepts, in :data:`~modelwire._client._options.REASONING_LEVELS`
    order; others are clamped to the nearest (:func:`~modelwire._catalog.clamp_reasoning`). Absent:
    every level (the adapter maps them). Empty: the model reasons on its own and
    takes no level (nothing is sent)."""
    compat: dict[str, Any] | None = None
    """``Model.compat`` overrides (the wire API's compat flags)."""
    capabilities: Capabilities | None = None
    """What this model supports where it differs from its provider and API."""
    headers: dict[str, str] | None = None
    """Extra HTTP headers."""
    notes: str | None = None
    """Where the numbers come from and what is uncertain or not modelled."""


class EmbeddingEntry(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    """One embedding model of one provider (``mw.embed``): kept apart from the chat
    models, which ``mw.models()`` lists and ``mw.complete`` calls."""

    id: str
    """The model id sent to the provider."""
    name: str
    """Display name."""
    api: str
    """The wire API whose embedding endpoint serves it (one of the catalog's ``apis``)."""
    base_url: str
    """API root with its version segment, as for a chat model of the same API."""
    dimensions: int
    """The size of the vectors it returns when no ``dimensions`` is asked for."""
    max_input_tokens: int
    """The longest input it embeds, in tokens."""
    cost: float
    """Dollars per million input tokens."""
    notes: str | None = None
    """Where the numbers come from and what is uncertain."""


class TemplateEntry(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Defaults for ids a local provider serves that the catalog does not list."""

    api: str
    base_url: str
    context_window: int
    max_tokens: int


class IdRuleEntry(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """Which tool-call ids a provider's server accepts, where it is stricter than its
    wire API (Mistral: exactly 9 letters and digits)."""

    valid: str
    """A regular expression an accepted id matches whole."""
    bad: str | None = None
    """A regular expression of the characters replaced by ``_`` when an id is rewritten."""
    max_len: int
    """Longest id."""
    exact: int | None = None
    """Required length of a rewritten id, made of letters and digits."""


class StatusQuirk(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """An HTTP error status a provider uses for another error than its usual meaning
    (Gemini answers a bad key with 400; Groq a tokens-per-minute limit with 413)."""

    status: int
    """The HTTP status."""
    match: str
    """A regular expression (case-insensitive) searched in the error body."""
    kind: str
    """The error kind it means (``authentication``, ``rate_limit``…)."""


class ProviderEntry(
    msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True, omit_defaults=True
):
    """One provider: everything modelwire knows about it, in one record.

    Key variables, compat defaults per wire API, tool-call id rules, the texts of
    its context-overflow errors, its status quirks, docs and models. Every
    provider table in the code is derived from these records
    (:mod:`modelwire._catalog._records`).
    """

    id: str
    """The ``Model.provider`` name (picks the env var and compat defaults)."""
    name: str
    """Display name."""
    aliases: tuple[str, ...] = ()
    """Other spellings of ``id`` (``dashscope`` for ``qwen``): the same key
    variables, compat and rules apply to them."""
    env: tuple[str, ...] = ()
    """API-key environment variables, first wins."""
    key_optional: bool = False
    """Without a key the provider's rules supply credentials when the request is sent
    (SigV4, Application Default Credentials, Entra ID): no ``MissingAPIKeyError``."""
    hosts: tuple[str, ...] = ()
    """Substrings of a ``base_url`` that identify this provider's servers when the
    model names another provider (``"api.openai.com"``): its compat and id rules apply."""
    compat: dict[str, dict[str, Any]] | None = None
    """Compat flag defaults per wire API name (``{api: {"stream_options": false}}``);
    ``Model.compat`` overrides them."""
    reasoning_compat: dict[str, dict[str, Any]] | None = None
    """Compat flags per wire API added for a model with ``reasoning`` set."""
    tool_ids: dict[str, IdRuleEntry] | None = None
    """Tool-call id rules per wire API, where the provider is stricter than the API."""
    capabilities: dict[str, Capabilities] | None = None
    """What the provider's servers support per wire API, where it differs from the
    API's own default (``{api: {"structured_output": "json"}}``)."""
    overflow: tuple[str, ...] = ()
    """Regular expressions (case-insensitive) of the provider's own wording for a
    prompt that does not fit; generic wordings live in :mod:`modelwire._providers._classify`."""
    status_quirks: tuple[StatusQuirk, ...] = ()
    """Error statuses this provider uses for another kind of error."""
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
    """The catalog entries, in display order (empty for a provider known only by its
    server's quirks)."""
    embedding_models: tuple[EmbeddingEntry, ...] = ()
    """Its embedding models (``mw.embed``), in display order."""


class CatalogFile(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """The whole data file."""

    version: int
    """Format version (1)."""
    checked: str
    """When and how the data was last checked against the providers' docs."""
    apis: tuple[str, ...]
    """The wire APIs an entry may name: the API packages of ``modelwire._apis`` (the
    catalog is below them and lists them as data; a test keeps the two in step)."""
    compatible_api: str
    """The API every OpenAI-compatible server answers (vLLM, llama.cpp, Ollama's ``/v1``,
    LiteLLM): the API of ``local/<id>``, and of an id the catalog does not list at an
    address that is not its provider's own (DESIGN §2d)."""
    providers: tuple[ProviderEntry, ...]
    """Every provider, in display order."""


_decoder = msgspec.json.Decoder(CatalogFile)


def read_packaged() -> bytes:
    """The bytes of the packaged data file (``modelwire/data/models.json``)."""
    from importlib import resources

    return resources.files("modelwire").joinpath("data", "models.json").read_bytes()


@functools.cache
def packaged_catalog() -> CatalogFile:
    """The packaged data file decoded (typed, not cross-checked: the catalog test and
    :func:`modelwire._catalog.validate_catalog` check it), read once. What the provider
    tables are derived from, without importing the catalog module."""
    return _decoder.decode(read_packaged())
