"""Each line of a provider batch run, prepared before anything is sent: the live
request a call would send (URL, credentials, body — built by the client's own
``prepare``), the batch facet of its API, and its model at the batch price."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import msgspec

from ..._call._fallback import Fallback
from ...errors import ConfigurationError
from ...types import Model, ModelCost
from .._runner import estimate_cost

if TYPE_CHECKING:
    from ..._apis._batch import BatchFacet
    from ..._wire.request import HTTPRequest
    from .._input import BatchRequest

__all__ = ["Line", "batch_model", "keys_for", "prepare_lines", "supported"]


class Line(msgspec.Struct, kw_only=True):
    req: BatchRequest
    sent: HTTPRequest
    facet: Any  # BatchFacet (a Protocol: not a msgspec field type)
    model: Model
    #: The most this line may cost, at the batch price.
    estimate: float

    @property
    def group(self) -> tuple[Any, ...]:
        """Lines that may share a job: one API, model, endpoint and credentials."""
        s = self.sent
        return (self.model.api, self.model.provider, self.model.id, s.url,
                tuple(sorted(s.headers.items())))  # fmt: skip


def batch_model(model: Model, factor: float) -> Model:
    """``model`` with every price at ``factor`` of the live one."""
    c = model.cost
    cost = ModelCost(input=c.input * factor, output=c.output * factor,
                     cache_read=c.cache_read * factor, cache_write=c.cache_write * factor)  # fmt: skip
    return msgspec.structs.replace(model, cost=cost)


def _facet(model: Model | Fallback) -> BatchFacet | None:
    from ..._apis import batch_facet

    if isinstance(model, Fallback):
        return None
    return batch_facet(model.api)


def supported(requests: list[BatchRequest]) -> bool:
    """Whether every line's API has a provider batch API here."""
    return all(_facet(r.model) is not None for r in requests)


def prepare_lines(requests: list[BatchRequest]) -> list[Line]:
    """Every request as a :class:`Line`; ``ConfigurationError`` for one that cannot go
    through a provider's batch API (before anything is sent)."""
    from ..._client._prepare import prepare

    lines = []
    for req in requests:
        model = req.model
        if isinstance(model, Fallback):
            raise ConfigurationError(
                f'line {req.line}: via="provider" sends each line to one provider; a '
                'mw.Fallback needs live calls (via="live")'
            )
        facet = _facet(model)
        if facet is None:
            raise ConfigurationError(
                f"line {req.line}: {model.provider}/{model.id} ({model.api}) has no provider "
                'batch API in modelwire (OpenAI, Anthropic and Gemini have one); run it with via="live"'
            )
        opts = {k: v for k, v in req.options.items() if k != "timeout"}
        sent = prepare(model, req.context, opts)[1]  # type: ignore[arg-type]
        if sent is None or sent.authorizer is not None:
            raise ConfigurationError(
                f"line {req.line}: {model.provider} signs each request with cloud credentials; "
                'its batch jobs are not supported here: run it with via="live"'
            )
        priced = batch_model(model, facet.price_factor)
        estimate = estimate_cost(msgspec.structs.replace(req, model=priced))
        lines.append(Line(req=req, sent=sent, facet=facet, model=priced, estimate=estimate))
    return lines


def keys_for(lines: list[Line], pattern: str) -> dict[str, Line]:
    """A key per line the provider accepts: its ``custom_id`` when it fits ``pattern``,
    else ``line-N`` (its line number), unique within the job."""
    fits = re.compile(pattern)
    out: dict[str, Line] = {}
    for line in lines:
        key = line.req.custom_id
        if not fits.fullmatch(key) or key in out:
            key = f"line-{line.req.line}"
            while key in out:
                key += "_"
        out[key] = line
    return out
