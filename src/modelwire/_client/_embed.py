"""Embeddings: ``mw.embed`` and ``mw.embed_sync``, a call like any other.

Each wire API that has an embedding endpoint states it as its codec's embedding
facet (:class:`~modelwire._apis.EmbedFacet`, ``_apis/<api>/_embed.py``): OpenAI's
``/embeddings`` (and every compatible server), Gemini's ``batchEmbedContents`` and
Vertex AI's ``predict``, Ollama's ``/api/embed``, Cohere's ``/v2/embed``, Bedrock's
``InvokeModel`` for Titan and Cohere embedding models. The request is made from the
stream request the API builds for the model, so a provider's URL layout and
credentials (Azure, Vertex AI, SigV4) carry over.

Everything is checked, and every request built, before anything is sent. Inputs over
the API's per-request limit are split into several requests — up to
:data:`CONCURRENT_REQUESTS` in flight with ``embed``, in turn with ``embed_sync`` — and
rejoined in input order; the first that fails ends the others. Each request runs as
a :class:`~modelwire._call.Call` whose whole JSON answer is read by the facet
(:class:`~modelwire._wire.whole.WholeAnswer`):
the same retries, ``Retry-After``, deadlines, circuit breaker, pacing and redaction
as a model call. A failure raises its typed error (``RateLimitError``…).
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, TypedDict, Unpack, cast

import msgspec

from ..errors import ConfigurationError
from ..types import Context, Cost, Model, Usage, UserMessage
from ._options import StreamOptions, UnknownOptionError, did_you_mean

if TYPE_CHECKING:
    from .._apis import EmbedFacet
    from .._apis._embed import EmbedAnswer
    from .._call import Call
    from .._call._fallback import Plan
    from .._wire.request import HTTPRequest, RequestOptions
    from .._wire.trace import TraceObserver
    from ..types import AssistantMessage

__all__ = ["CONCURRENT_REQUESTS", "EMBED_OPTIONS", "EmbedOptions", "Embeddings", "embed",
           "embed_sync"]  # fmt: skip

#: Requests of one split ``embed()`` in flight at once (``embed_sync`` sends them in
#: turn); pacing (``requests_per_minute``…) still applies to each.
CONCURRENT_REQUESTS = 4
#: The largest answer body read (a full OpenAI batch of 2048 × 3072 numbers as JSON).
MAX_ANSWER_BYTES = 256 * 1024 * 1024


class EmbedOptions(TypedDict, total=False):
    """The options of :func:`embed`: those of ``mw.complete`` that apply to it (each
    documented on :class:`~modelwire._client._options.StreamOptions`)."""

    api_key: Any
    headers: Any
    timeout: Any
    max_retries: int
    http_client: Any
    transport: Any
    base_url: str | None
    circuit_breaker: Any
    requests_per_minute: float | None
    tokens_per_minute: float | None
    trace: Any
    log: Any


#: The option names :func:`embed` takes.
EMBED_OPTIONS = frozenset(EmbedOptions.__optional_keys__)


class Embeddings(msgspec.Struct, frozen=True, kw_only=True):
    """What :func:`embed` returns: one vector per input, in input order.

    Example:
        ```python
        import modelwire as mw
        from modelwire.testing import MockServer

        with MockServer() as server:
            result = mw.embed_sync(server.model(), ["a cat", "a dog"], dimensions=8)
        print(len(result.vectors), len(result.vectors[0]))  # 2 8
        ```
    """

    vectors: tuple[array[float], ...]
    """One ``array('f')`` (float32) per input, in input order."""
    model: str
    """The model id that embedded them."""
    usage: Usage
    """Input tokens (``usage.input``; embedding has no output) and their cost."""
    cost: float
    """Dollars: ``usage.input`` at the model's input price (``0.0`` when unpriced)."""
    estimated: bool = False
    """``True`` when the provider reported no token count for some request (Gemini,
    Cohere on Bedrock) and modelwire estimated it locally (``mw.count_tokens``'s rule)."""


# --------------------------------------------------------------------------- checks


def _check_options(options: dict[str, Any], where: str) -> None:
    unknown = sorted(set(options) - EMBED_OPTIONS)
    if not unknown:
        return
    names = set(EMBED_OPTIONS)
    unsent = sorted(set(unknown) & StreamOptions.__optional_keys__)
    why = (
        f" ({', '.join(unsent)}: a model-call option that embedding does not send)"
        if unsent
        else ""
    )
    raise UnknownOptionError(
        f"{where}() got unexpected keyword argument(s) {', '.join(map(repr, unknown))}{why}"
        f"{did_you_mean(unknown, names)}; its options are: {', '.join(sorted(names))}"
    )


def _check_inputs(inputs: object) -> list[str]:
    if isinstance(inputs, str):
        inputs = [inputs]
    if not isinstance(inputs, list | tuple):
        raise ConfigurationError(
            f"inputs must be a str or a list of str, got {type(inputs).__name__}"
        )
    if not inputs:
        raise ConfigurationError("inputs is empty: give at least one text to embed")
    for i, text in enumerate(inputs):
        if not isinstance(text, str):
            raise ConfigurationError(f"inputs[{i}] must be a str, got {type(text).__name__}")
        if not text:
            # OpenAI, Gemini and Cohere refuse an empty input (400): said here, unsent.
            raise ConfigurationError(f"inputs[{i}] is empty: every input needs some text")
    return list(inputs)


def _check_dimensions(dimensions: object) -> int | None:
    if dimensions is None:
        return None
    if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1:
        raise ConfigurationError(f"dimensions must be a positive int or None, got {dimensions!r}")
    return dimensions


def _check_input_type(input_type: object) -> str | None:
    from .._apis._embed import INPUT_TYPES

    if input_type is None or input_type in INPUT_TYPES:
        return input_type
    raise ConfigurationError(
        f"input_type must be one of {', '.join(INPUT_TYPES)} or None, got {input_type!r}"
    )


def _model(model: object, base_url: object) -> Model:
    from .._catalog._embedding import resolve_embedding_model

    if base_url is not None and not isinstance(base_url, str):
        raise ConfigurationError(f"base_url must be a str, got {type(base_url).__name__}")
    if isinstance(model, Model):
        if base_url is None:
            return model
        from .._catalog import as_model

        return as_model(model, base_url)
    if isinstance(model, str):
        return resolve_embedding_model(model, base_url)
    from .._call._fallback import Fallback

    if isinstance(model, Fallback):
        raise ConfigurationError(
            "embed takes one model, not a Fallback: vectors of two models are not "
            "interchangeable (an index built with one cannot be searched with the other)"
        )
    raise ConfigurationError(
        'model must be a modelwire.Model or a "provider/model-id" string, '
        f"got {type(model).__name__}"
    )


def _facet(model: Model) -> EmbedFacet:
    from .._apis import embedding_apis, embedding_facet, get_api

    get_api(model.api)  # an unknown api: the registry's own error
    facet = embedding_facet(model.api)
    if facet is None:
        raise ConfigurationError(
            f"{model.provider}/{model.id} uses api {model.api!r}, which has no embedding "
            f"endpoint; the APIs that embed are {', '.join(embedding_apis())}"
        )
    return facet


# --------------------------------------------------------------------------- the plan


class _Planned(NamedTuple):
    model: Model
    facet: EmbedFacet
    options: RequestOptions
    plan: Plan
    requests: list[tuple[HTTPRequest, list[str]]]
    trace: TraceObserver | None
    log: Any


def _plan(
    model: object, inputs: object, dimensions: object, input_type: object,
    options: dict[str, Any], where: str,
) -> _Planned:  # fmt: skip
    """Everything checked and every request built, before any I/O."""
    from .._call._fallback import Target, make_plan
    from ._prepare import prepare

    _check_options(options, where)
    texts = _check_inputs(inputs)
    dims = _check_dimensions(dimensions)
    kind = _check_input_type(input_type)
    m = _model(model, options.get("base_url"))
    facet = _facet(m)
    trace = options.get("trace")
    if trace is not None:
        from .._wire.trace import check_observer

        trace = check_observer(trace)
    # The stream request of a one-word prompt: its URL, headers and credentials are
    # what the facet turns into the embedding request.
    opts: Any = {k: v for k, v in options.items() if k not in ("trace", "base_url", "log")}
    opts["max_tokens"] = None
    prompt = Context(messages=(UserMessage(content="."),))
    resolved, stream_request = prepare(m, prompt, opts)[:2]
    if stream_request is None:  # a custom stream function: no HTTP endpoint to embed at
        raise ConfigurationError(
            f"api {m.api!r} is a stream function: it has no embedding endpoint"
        )
    size = facet.max_inputs(m)
    requests = []
    for start in range(0, len(texts), size):
        batch = texts[start : start + size]
        requests.append((facet.embed_request(stream_request, m, batch, dims, kind), batch))
    plan = make_plan([Target(m, resolved, requests[0][0], None)], options, None)
    http_client = options.get("http_client")
    if http_client is not None or resolved.transport != "auto":
        from .._http._base import check_client

        # An httpx.Client given to embed(), an AsyncClient to embed_sync(): said now.
        check_client(http_client, sync=where == "embed_sync", transport=resolved.transport)
    log = options.get("log")
    if log is not None:
        from ._log import check_log_path

        check_log_path(log)
    return _Planned(m, facet, resolved, plan, requests, trace, log)


def _call(p: _Planned, request: HTTPRequest, texts: list[str], found: list[EmbedAnswer]) -> Call:
    """One request as a :class:`~modelwire._call.Call`; its answer lands in ``found``.
    Its observer is the caller's ``trace``, the ``log=`` recorder and every registered
    instrumentation (OpenTelemetry), as for a model call; the inputs are the context
    they see, one per line."""
    from .._call import Call
    from .._wire.pipeline import Pipeline
    from .._wire.whole import WholeAnswer
    from . import _observer

    m = p.model
    count = len(texts)
    observer = _observer(m, cast(Any, {"log": p.log}), p.trace)
    asked = Context(messages=(UserMessage(content="\n".join(texts)),))
    parse = p.facet.parse_embeddings

    def read(body: bytes) -> int:
        answer = parse(body, count)
        found.append(answer)
        return answer.input_tokens or 0

    answer = WholeAnswer(m.api, read)

    def new_pipeline() -> Pipeline:
        pipe = Pipeline(answer, model=m, secrets=request.secrets, trace=observer,
                        max_event_bytes=MAX_ANSWER_BYTES)  # fmt: skip
        if pipe.trace is not None:
            pipe.trace.context(m, asked, operation="embeddings")
            pipe.trace.request(request)
        return pipe

    pacer = None
    tokens = 0
    if p.plan.rpm is not None or p.plan.tpm is not None:
        from .._call._limits import pacer_for

        pacer = pacer_for(m.provider, p.plan.rpm, p.plan.tpm)
        if p.plan.tpm is not None:
            tokens = max(1, len(request.body) // 4)  # settled with the usage
    circuit = p.plan.breaker.circuit(m.provider, m.id) if p.plan.breaker else None
    return Call(
        new_pipeline(), request, timeout=p.options.timeout, max_retries=p.options.max_retries,
        new_pipeline=new_pipeline, model=m, circuit=circuit, pacer=pacer, tokens=tokens,
    )  # fmt: skip


def _answer(final: AssistantMessage, found: list[EmbedAnswer]) -> EmbedAnswer:
    final.raise_for_error()  # the typed error of a failed request
    assert found  # a successful call read its body
    return found[-1]


def _result(p: _Planned, answers: Sequence[EmbedAnswer]) -> Embeddings:
    from ._count import _text as text_tokens

    vectors: list[array[float]] = []
    tokens = 0
    estimated = False
    for (_, batch), answer in zip(p.requests, answers, strict=True):
        vectors.extend(answer.vectors)
        if answer.input_tokens is None:
            estimated = True
            tokens += sum(max(1, text_tokens(t)) for t in batch)
        else:
            tokens += answer.input_tokens
    m = p.model
    cost = tokens * m.cost.input / 1_000_000
    usage = Usage(input=tokens, total_tokens=tokens,
                  cost=Cost(input=cost, total=cost))  # fmt: skip
    return Embeddings(vectors=tuple(vectors), model=m.id, usage=usage, cost=cost,
                      estimated=estimated)  # fmt: skip


# --------------------------------------------------------------------------- entry points


async def embed(
    model: Model | str,
    inputs: str | Sequence[str],
    *,
    dimensions: int | None = None,
    input_type: str | None = None,
    **options: Unpack[EmbedOptions],
) -> Embeddings:
    """Embed ``inputs`` with ``model``: one vector per input, in input order.

    Works with every wire API that has an embedding endpoint (OpenAI and compatible
    servers, Gemini and Vertex AI, Ollama, Cohere, Bedrock's Titan and Cohere models;
    Azure OpenAI through its provider). Inputs over the API's per-request limit are
    sent as several requests, rejoined in order. Each request is retried as a model
    call is (408, 409, 429, 5xx, a refused connection; ``Retry-After`` honoured).

    Args:
        model: A ``Model``, or a ``"provider/model-id"`` string
            (``"openai/text-embedding-3-small"``: the catalog's embedding models).
        inputs: One text, or a non-empty list of texts.
        dimensions: The vector size to ask for (OpenAI ``dimensions``, Gemini
            ``outputDimensionality``, Cohere ``output_dimension``…; ``None``: the model's).
        input_type: What the texts are for: ``"search_document"``, ``"search_query"``,
            ``"classification"`` or ``"clustering"`` (Cohere's ``input_type``, Gemini's
            ``taskType``); an API without such a field refuses it.
        **options: ``api_key``, ``headers``, ``timeout``, ``max_retries``,
            ``http_client``, ``transport``, ``base_url``, ``circuit_breaker``, ``requests_per_minute``,
            ``tokens_per_minute``, ``trace``, ``log`` — as for :func:`modelwire.complete`
            (a ``log`` row per request: the inputs as its prompt, its usage and cost;
            ``modelwire.otel.instrument()`` traces it as it traces a model call).

    Returns:
        The :class:`~modelwire.Embeddings`: ``vectors`` (each an ``array('f')``),
        ``model``, ``usage`` and ``cost``.

    Raises:
        ConfigurationError: Bad inputs, an unknown option, an API that does not embed —
            before anything is sent.
        MissingAPIKeyError: No ``api_key`` and the provider's variable is unset.
        modelwire.errors.StreamError: A request failed (``RateLimitError``,
            ``ServerError``, ``StreamInterruptedError``, ``TimeoutError``…).

    Example:
        ```python
        import asyncio

        import modelwire as mw
        from modelwire.testing import MockServer

        with MockServer() as server:
            result = asyncio.run(mw.embed(server.model(), ["a cat", "a dog"]))
        print(len(result.vectors))  # 2
        ```
    """
    import asyncio

    from ._whole import final_message

    p = _plan(model, inputs, dimensions, input_type, dict(options), "embed")
    http_client = options.get("http_client")
    slots = asyncio.Semaphore(CONCURRENT_REQUESTS)
    failed = asyncio.Event()

    async def one(request: HTTPRequest, texts: list[str]) -> EmbedAnswer | None:
        async with slots:
            if failed.is_set():
                return None  # another request failed: this one is never sent
            try:
                found: list[EmbedAnswer] = []
                call = _call(p, request, texts, found)
                final = await final_message(call, http_client, p.options.transport)
                return _answer(final, found)
            except BaseException:
                failed.set()  # before the slot is given up
                raise

    tasks = [asyncio.ensure_future(one(r, b)) for r, b in p.requests]
    try:
        answers = [a for a in await asyncio.gather(*tasks) if a is not None]
    except BaseException:
        # The first failure (or the caller's cancellation) ends the others: their
        # connections are closed, nothing is left running.
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
    return _result(p, answers)


def embed_sync(
    model: Model | str,
    inputs: str | Sequence[str],
    *,
    dimensions: int | None = None,
    input_type: str | None = None,
    **options: Unpack[EmbedOptions],
) -> Embeddings:
    """Synchronous :func:`embed` over ``httpx.Client`` (works inside a running loop).

    Args:
        model: A ``Model`` or a ``"provider/model-id"`` string.
        inputs: One text, or a non-empty list of texts.
        dimensions: The vector size to ask for (``None``: the model's).
        input_type: What the texts are for (see :func:`embed`).
        **options: :func:`embed`'s options (``http_client``: an ``httpx.Client``).

    Returns:
        The :class:`~modelwire.Embeddings`.

    Raises:
        ConfigurationError: Bad inputs, an unknown option, an API that does not embed.
        MissingAPIKeyError: No ``api_key`` and the provider's variable is unset.
        modelwire.errors.StreamError: A request failed.

    Example:
        ```python
        import modelwire as mw
        from modelwire.testing import MockServer

        with MockServer() as server:
            print(len(mw.embed_sync(server.model(), "hello").vectors[0]))  # 64
        ```
    """
    from ._whole import final_message_sync

    p = _plan(model, inputs, dimensions, input_type, dict(options), "embed_sync")
    http_client = options.get("http_client")
    answers = []
    for request, batch in p.requests:
        found: list[EmbedAnswer] = []
        call = _call(p, request, batch, found)
        answers.append(_answer(final_message_sync(call, http_client), found))
    return _result(p, answers)
