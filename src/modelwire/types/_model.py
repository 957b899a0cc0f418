"""Where and how to reach one model, and its prices."""

from __future__ import annotations

from typing import Any

import msgspec

from .._redact import redact_url
from ..errors import ConfigurationError
from ._base import _require_str, _set, _Value
from ._capabilities import Capabilities

#: What ``Model.input`` may name; sending any other kind of block is refused.
INPUT_KINDS = frozenset({"text", "image", "document", "audio"})


class ModelCost(_Value, frozen=True):
    """Prices in dollars per million tokens.

    ``Model.cost``: what each response's ``usage.cost`` is computed from. The
    catalog has them for the models it lists; give them for your own model to get
    costs (the default prices everything at 0).

    Attributes:
        input: Uncached prompt tokens.
        output: Output tokens (reasoning included).
        cache_read: Prompt tokens read from the provider's cache.
        cache_write: Prompt tokens written to the provider's cache.

    Raises:
        ConfigurationError: A price that is not a non-negative number.
    """

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0

    def __post_init__(self) -> None:
        for name in ("input", "output", "cache_read", "cache_write"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
                raise ConfigurationError(f"ModelCost.{name} must be a non-negative number")
            _set(self, name, float(value))


class Model(_Value, frozen=True):
    """Where and how to reach one model.

    ``base_url`` includes the API's version segment (``…/v1``, ``…/v1beta``); the
    adapter appends the endpoint. A trailing slash is ignored.

    Build one for a model the catalog does not list (a local server, a fine-tune, a
    gateway); for a listed one, :func:`~modelwire.get_model` or a
    ``"provider/model-id"`` string gives it with its limits and prices. Keyword
    arguments are the fields below; ``id``, ``api``, ``provider`` and ``base_url``
    are required. The API key is not part of it: it comes from the call's
    ``api_key`` or the provider's environment variable.

    Raises:
        ConfigurationError: A required field is empty, ``input`` names an unknown
            kind, ``context_window`` or ``max_tokens`` is not a positive integer, or
            ``base_url`` is not an ``http(s)://`` URL.

    Example:
        ```python
        import modelwire as mw

        model = mw.Model(
            id="llama3.2",
            api="openai-chat",
            provider="local",
            base_url="http://127.0.0.1:11434/v1",
            context_window=131_072,
        )
        print(model.max_tokens)  # 16384: sent when a call passes no max_tokens
        ```
    """

    id: str
    """The model id sent to the provider."""
    api: str
    """The wire API: a name in ``modelwire._apis`` (``modelwire._apis.api_names()``) or
    one given to ``register_wire_api``."""
    provider: str
    """Provider name (``openai``, ``deepseek``, ``local``…): picks the env var and compat."""
    base_url: str
    """API root including the version segment."""
    name: str | None = None
    """Display name."""
    reasoning: bool = False
    """Whether the model supports a reasoning level."""
    input: tuple[str, ...] = ("text",)
    """What the model accepts: ``text``, ``image``, ``document``, ``audio``
    (:data:`INPUT_KINDS`). A block of another kind in a request is a
    ``ConfigurationError`` before anything is sent."""
    cost: ModelCost = msgspec.field(default_factory=ModelCost)
    """Prices per million tokens."""
    context_window: int = 128_000
    """Maximum prompt + output tokens."""
    max_tokens: int = 16_384
    """Default and maximum output tokens: sent when a call passes no ``max_tokens``."""
    headers: dict[str, str] | None = None
    """Extra HTTP headers for every request."""
    compat: dict[str, Any] | None = None
    """Overrides of the wire API's compatibility flags (see README, "Compat")."""
    capabilities: Capabilities | None = None
    """What this model supports, over what its wire API and the catalog say
    (:class:`~modelwire.types.Capabilities`; ``None``: nothing to add)."""

    def __post_init__(self) -> None:
        for field in ("id", "api", "provider", "base_url"):
            _require_str("Model", field, getattr(self, field), non_empty=True)
        if type(self.input) is not tuple:
            if isinstance(self.input, str):
                raise ConfigurationError(
                    f"Model.input must be a list of kinds such as ['text', 'image'], "
                    f"got the string {self.input!r}"
                )
            _set(self, "input", tuple(self.input))
        for kind in self.input:
            if kind not in INPUT_KINDS:
                raise ConfigurationError(
                    f"Model.input names {kind!r}; the kinds are " + ", ".join(sorted(INPUT_KINDS))
                )
        for limit in ("context_window", "max_tokens"):
            value = getattr(self, limit)
            if type(value) is not int or value <= 0:  # sent as max_tokens when no option is
                raise ConfigurationError(f"Model.{limit} must be a positive integer, got {value!r}")
        if not self.base_url.startswith(("http://", "https://")):
            raise ConfigurationError(
                f"Model.base_url must start with http:// or https://, got "
                f"{redact_url(self.base_url)!r}"
            )

    def __repr__(self) -> str:
        # user:password@ in base_url is a credential (sent as Basic auth): not shown.
        shown = (
            f"{f}={(redact_url(v) if f == 'base_url' else v)!r}"
            for f, v in ((f, getattr(self, f)) for f in self.__struct_fields__)
        )
        return f"Model({', '.join(shown)})"

    @property
    def url_root(self) -> str:
        """``base_url`` without a trailing slash."""
        return self.base_url.rstrip("/")
