"""The options of ``mw.batch`` and ``batch_async``, written once.

:class:`BatchOptions` is their type (``**options: Unpack[BatchOptions]`` in both,
so mypy checks every caller's keywords); :class:`BatchConfig` holds their defaults
and is the checked, frozen value a run is planned from. A test keeps the two in
step; :func:`signature` gives both functions the explicit keyword-only signature
``help()`` and IDEs show, built from them.
"""

from __future__ import annotations

import dataclasses
import difflib
import inspect
import math
import os
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypedDict, TypeGuard

from .._call._fallback import Fallback
from ..errors import ConfigurationError
from ..types import Model
from ._limits import Limits
from ._progress import Progress

__all__ = ["BatchConfig", "BatchOptions", "signature"]


class BatchOptions(TypedDict, total=False):
    """The keyword options of :func:`~modelwire.batching.batch` and
    :func:`~modelwire.batching.batch_async` (defaults and meaning: :class:`BatchConfig`)."""

    concurrency: int
    max_attempts: int
    max_cost: float | None
    limits: Limits | Mapping[str, Limits] | None
    models: Mapping[str, Model | Fallback] | None
    base_url: str | None
    api: str | None
    api_key: Any
    timeout: Any
    line_timeout: float | None
    run_timeout: float | None
    output_format: Literal["modelwire", "openai"]
    skip_invalid: bool
    agent_root: str | os.PathLike[str] | None
    progress: Progress | None
    backend: Literal["local", "ray"]
    ray_address: str | None
    ray_workers: int
    via: Literal["live", "provider", "auto"]
    poll_interval: float


@dataclasses.dataclass(frozen=True, kw_only=True)
class BatchConfig:
    """One run's options, defaults filled in and every one checked (docs/batch.md)."""

    #: Requests in flight at once.
    concurrency: int = 16
    #: Attempts per line (the first included) for a retryable failure.
    max_attempts: int = 4
    #: Dollars the run may spend (reserved per HTTP request); ``None``: no cap.
    max_cost: float | None = None
    #: ``Limits(rpm, tpm)`` for every provider, or a dict by provider (``"*"``: the rest).
    limits: Limits | Mapping[str, Limits] | None = None
    #: ``{"provider/id": Model or Fallback}`` ahead of the catalog.
    models: Mapping[str, Model | Fallback] | None = None
    #: Send every model here (a catalog entry keeps its prices and limits) …
    base_url: str | None = None
    #: … speaking this wire API when the catalog does not know the model.
    api: str | None = None
    #: The key of every request (else each provider's environment variable).
    api_key: Any = None
    #: A per-request ``timeout`` (as ``mw.stream``'s) where a line sets none.
    timeout: Any = None
    #: Seconds one line may take, retries included.
    line_timeout: float | None = None
    #: Seconds for the whole run: no line starts after it; lines it cuts are left
    #: for the next run.
    run_timeout: float | None = None
    #: ``"modelwire"``, or ``"openai"`` for the OpenAI Batch API output lines.
    output_format: Literal["modelwire", "openai"] = "modelwire"
    #: Run the valid lines and report the invalid ones, instead of refusing the file.
    skip_invalid: bool = False
    #: Run ``mw.Agent`` with the read-only tools rooted here.
    agent_root: str | os.PathLike[str] | None = None
    #: Where progress goes (``JsonProgress()``, ``RichProgress()``); ``None``: nowhere.
    progress: Progress | None = None
    #: ``"local"`` (this process) or ``"ray"`` (a Ray cluster).
    backend: Literal["local", "ray"] = "local"
    #: The Ray cluster to join (``None``: a local one).
    ray_address: str | None = None
    #: Ray workers.
    ray_workers: int = 2
    #: ``"live"`` (a call per line), ``"provider"`` (the providers' batch APIs, at their
    #: batch price) or ``"auto"`` (the providers' when ``run_timeout`` allows 24 h).
    via: Literal["live", "provider", "auto"] = "live"
    #: ``via="provider"``: seconds before a job's first poll; each wait doubles, up to
    #: a minute (or this, if longer).
    poll_interval: float = 5.0

    @classmethod
    def of(cls, fn: str, options: Mapping[str, Any]) -> BatchConfig:
        """The config of a call of ``fn`` with ``options``: an unknown keyword is a
        ``TypeError`` naming it, as Python's own binding would say."""
        unknown = sorted(options.keys() - _NAMES)
        if unknown:
            close = difflib.get_close_matches(unknown[0], _NAMES, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise TypeError(f"{fn}() got an unexpected keyword argument {unknown[0]!r}{hint}")
        return cls(**options)

    def __post_init__(self) -> None:
        # Every check before anything is read or sent; each message names its option.
        for name, check in _CHECKS:
            problem = check(getattr(self, name))
            if problem is not None:
                raise ConfigurationError(f"{name} must be {problem}, got {getattr(self, name)!r}")
        if isinstance(self.limits, Mapping):
            for provider, lim in self.limits.items():
                if not isinstance(lim, Limits):
                    raise ConfigurationError(
                        f"limits[{provider!r}] must be a modelwire.batching.Limits, got {lim!r}"
                    )
        if self.models is not None:
            for name, model in self.models.items():
                if not isinstance(name, str) or not isinstance(model, Model | Fallback):
                    raise ConfigurationError(
                        f"models[{name!r}] must be a mw.Model or mw.Fallback, got {model!r}"
                    )


def _finite(value: object) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _positive_int(value: object) -> str | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
    return None if ok else "a positive integer"


def _seconds(value: object) -> str | None:
    # NaN compares false with everything: ``nan <= 0`` would let it pass as a limit.
    if value is None or (_finite(value) and value > 0):
        return None
    return "a positive finite number of seconds (or None for no limit)"


def _interval(value: object) -> str | None:
    return None if _finite(value) and value > 0 else "a positive finite number of seconds"


def _dollars(value: object) -> str | None:
    if value is None or (_finite(value) and value >= 0):
        return None
    return "a finite number of dollars >= 0 (or None for no cap)"


def _one_of(*allowed: str) -> Callable[[object], str | None]:
    def check(value: object) -> str | None:
        return None if value in allowed else " or ".join(f'"{a}"' for a in allowed)

    return check


def _optional(kind: type | tuple[type, ...], what: str) -> Callable[[object], str | None]:
    def check(value: object) -> str | None:
        return None if value is None or isinstance(value, kind) else f"{what} (or None)"

    return check


def _bool(value: object) -> str | None:
    return None if isinstance(value, bool) else "True or False"


#: The check of each option with a fixed type or range (``api_key``, ``timeout`` and
#: ``progress`` are checked where they are used: per request, by duck typing).
_CHECKS: tuple[tuple[str, Callable[[object], str | None]], ...] = (
    ("backend", _one_of("local", "ray")),
    ("via", _one_of("live", "provider", "auto")),
    ("concurrency", _positive_int),
    ("max_attempts", _positive_int),
    ("ray_workers", _positive_int),
    ("max_cost", _dollars),
    ("line_timeout", _seconds),
    ("run_timeout", _seconds),
    ("poll_interval", _interval),
    ("output_format", _one_of("modelwire", "openai")),
    ("limits", _optional((Limits, Mapping), "a modelwire.batching.Limits or a dict of them")),
    ("models", _optional(Mapping, 'a dict of "provider/id" to mw.Model')),
    ("base_url", _optional(str, "a URL string")),
    ("api", _optional(str, "a wire API name")),
    ("ray_address", _optional(str, "a Ray address string")),
    ("agent_root", _optional((str, os.PathLike), "a directory path")),
    ("skip_invalid", _bool),
)

_NAMES = frozenset(f.name for f in dataclasses.fields(BatchConfig))


def signature(fn: Callable[..., Any]) -> inspect.Signature:
    """``fn``'s signature with its ``**options`` spelled out, keyword-only, from
    :class:`BatchConfig` (annotations and defaults): what ``help(mw.batch)`` shows."""
    sig = inspect.signature(fn)
    params = [p for p in sig.parameters.values() if p.kind is not p.VAR_KEYWORD]
    params += [
        inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=f.default,
                          annotation=f.type)
        for f in dataclasses.fields(BatchConfig)
    ]  # fmt: skip
    return sig.replace(parameters=params)
