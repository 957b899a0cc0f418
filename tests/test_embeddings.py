"""``mw.embed`` / ``mw.embed_sync`` on every API that embeds, over real loopback
sockets (the MockServer's embedding endpoints): the request each API documents, the
vectors back in input order (across split requests too), float and base64 decoding,
the fault matrix of a model call, redaction, and caller mistakes refused before
anything is sent."""

from __future__ import annotations

import asyncio
import base64
import struct
import threading
from array import array
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import modelwire as mw
from modelwire.errors import (
    AuthenticationError,
    MalformedChunkError,
    OverloadedError,
    RateLimitError,
    RequestTimeoutError,
    ServerError,
    StreamInterruptedError,
)
from modelwire.testing import MockServer, Reply, error_reply, mock_vector

KEY = "sk-embed-SECRET-7f3a9c"
TEXTS = ["a cat on a mat", "一只狗", "the third text"]


def vec(text: str, size: int = 64) -> array[float]:
    return array("f", mock_vector(text, size))


# (api, model id, the path the request must reach, its body's texts field)
APIS = [
    ("openai-chat", "text-embedding-3-small", "/v1/embeddings", "input"),
    ("google-generative-ai", "gemini-embedding-001",
     "/v1beta/models/gemini-embedding-001:batchEmbedContents", "requests"),
    ("ollama-chat", "nomic-embed-text", "/api/embed", "input"),
    ("cohere-chat", "embed-v4.0", "/v2/embed", "texts"),
    ("bedrock-converse", "cohere.embed-english-v3", "/model/cohere.embed-english-v3/invoke",
     "texts"),
]  # fmt: skip


@pytest.mark.parametrize(("api", "model_id", "path", "field"), APIS)
@pytest.mark.parametrize("mode", ["async", "sync"])
def test_each_api_embeds_over_loopback(
    api: str, model_id: str, path: str, field: str, mode: str
) -> None:
    with MockServer() as server:
        model = server.model(api, model_id)
        if mode == "async":
            got = asyncio.run(mw.embed(model, TEXTS, dimensions=16, api_key=KEY))
        else:
            got = mw.embed_sync(model, TEXTS, dimensions=16, api_key=KEY)
        [sent] = server.requests
    assert sent.path == path
    assert got.vectors == tuple(vec(t, 16) for t in TEXTS)
    assert all(isinstance(v, array) and v.typecode == "f" for v in got.vectors)
    assert got.model == model_id
    body = sent.json()
    assert field in body
    dims = {"openai-chat": ("dimensions", 16), "ollama-chat": ("dimensions", 16),
            "cohere-chat": ("output_dimension", 16),
            "bedrock-converse": ("output_dimension", 16)}  # fmt: skip
    if api in dims:
        key, value = dims[api]
        assert body[key] == value
    else:
        assert [r["outputDimensionality"] for r in body["requests"]] == [16] * 3
        assert body["requests"][0]["model"] == f"models/{model_id}"


def test_a_single_string_is_one_input_and_the_default_size_is_the_servers() -> None:
    with MockServer() as server:
        got = mw.embed_sync(server.model(), "hello")
        body = server.last_request.json()
    assert got.vectors == (vec("hello"),)
    assert body == {"model": "mock-model", "input": ["hello"]}  # no dimensions, float


def test_usage_and_cost_come_from_the_answer_at_the_models_price() -> None:
    with MockServer() as server:
        model = server.model(cost=mw.ModelCost(input=0.5))
        got = mw.embed_sync(model, ["one two three", "four"])
    # The mock counts words: 3 + 1 prompt tokens, as it reports them.
    assert (got.usage.input, got.usage.output, got.usage.total_tokens) == (4, 0, 4)
    assert got.cost == pytest.approx(4 * 0.5 / 1_000_000)
    assert got.usage.cost.total == got.cost and not got.estimated


def test_an_api_that_reports_no_tokens_is_estimated_and_says_so() -> None:
    with MockServer() as server:
        got = mw.embed_sync(server.model("google-generative-ai"), ["a" * 40, "b" * 8])
    assert got.estimated and got.usage.input == 10 + 2


def test_cohere_sends_the_required_input_type_and_gemini_maps_it_to_a_task() -> None:
    with MockServer() as server:
        mw.embed_sync(server.model("cohere-chat"), "x")
        mw.embed_sync(server.model("cohere-chat"), "x", input_type="search_query")
        mw.embed_sync(server.model("google-generative-ai"), "x", input_type="search_query")
        cohere_default, cohere_query, gemini = (r.json() for r in server.requests)
    assert cohere_default["input_type"] == "search_document"
    assert cohere_default["embedding_types"] == ["float"]
    assert cohere_query["input_type"] == "search_query"
    assert gemini["requests"][0]["taskType"] == "RETRIEVAL_QUERY"


# --------------------------------------------------------------------------- split requests


def test_inputs_over_the_limit_are_split_and_rejoined_in_order() -> None:
    texts = [f"text number {i}" for i in range(200)]
    with MockServer() as server:
        got = mw.embed_sync(server.model("cohere-chat"), texts, dimensions=8)
        sizes = [len(r.json()["texts"]) for r in server.requests]
        firsts = [r.json()["texts"][0] for r in server.requests]
    assert sizes == [96, 96, 8]  # Cohere's 96 texts a request
    assert firsts == ["text number 0", "text number 96", "text number 192"]
    assert got.vectors == tuple(vec(t, 8) for t in texts)
    assert got.usage.input == 3 * 200


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(count=st.integers(1, 40), limit=st.integers(1, 9))
def test_any_split_keeps_the_input_order(
    count: int, limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    import modelwire._apis.cohere_chat._embed as cohere

    monkeypatch.setattr(cohere, "MAX_TEXTS", limit)
    texts = [f"t{i}" for i in range(count)]
    with MockServer() as server:
        got = mw.embed_sync(server.model("cohere-chat"), texts, dimensions=4)
        sent = [r.json()["texts"] for r in server.requests]
    assert [t for batch in sent for t in batch] == texts
    assert len(sent) == -(-count // limit) and all(len(b) <= limit for b in sent)
    assert got.vectors == tuple(vec(t, 4) for t in texts)


@pytest.mark.anyio
async def test_titan_takes_one_text_a_request_in_order() -> None:
    with MockServer() as server:
        model = server.model("bedrock-converse", "amazon.titan-embed-text-v2:0")
        got = await mw.embed(model, TEXTS, dimensions=256, api_key=KEY)
        bodies = [r.json() for r in server.requests]
    # One text a request, sent up to 4 at once (arriving in any order); the vectors
    # come back in input order.
    assert sorted(b["inputText"] for b in bodies) == sorted(TEXTS) and len(bodies) == len(TEXTS)
    assert all(b["dimensions"] == 256 and b["normalize"] is True for b in bodies)
    assert got.vectors == tuple(vec(t, 256) for t in TEXTS)


def test_a_failed_batch_fails_the_whole_call_after_the_batches_before_it() -> None:
    texts = [f"t{i}" for i in range(100)]
    with MockServer([Reply(), error_reply(401, "no")]) as server:
        with pytest.raises(AuthenticationError):
            mw.embed_sync(server.model("cohere-chat"), texts)
        assert len(server.requests) == 2  # 401 is not retried, the rest never sent


def test_the_answer_order_is_read_from_index_not_position() -> None:
    data = [{"object": "embedding", "index": i, "embedding": [float(i), 0.5]} for i in (2, 0, 1)]
    body = {"object": "list", "data": data, "model": "m", "usage": {"prompt_tokens": 3}}
    with MockServer([Reply(body=mw.to_json(body))]) as server:
        got = mw.embed_sync(server.model(), ["a", "b", "c"])
    assert [list(v) for v in got.vectors] == [[0.0, 0.5], [1.0, 0.5], [2.0, 0.5]]


# --------------------------------------------------------------------------- encodings


def test_openai_is_asked_for_base64_and_it_is_decoded_exactly() -> None:
    with MockServer() as server:
        model = server.model(id="text-embedding-3-large", provider="openai")
        got = mw.embed_sync(model, TEXTS, api_key=KEY)
        body = server.last_request.json()
    assert body["encoding_format"] == "base64"
    assert got.vectors == tuple(vec(t) for t in TEXTS)


def test_a_base64_answer_is_read_from_any_server() -> None:
    floats = [0.25, -1.5, 3.0e-7, 1.0]
    encoded = base64.b64encode(struct.pack("<4f", *floats)).decode()
    body = {"data": [{"index": 0, "embedding": encoded}], "usage": {"prompt_tokens": 1}}
    with MockServer([Reply(body=mw.to_json(body))]) as server:
        got = mw.embed_sync(server.model(), "x")
    assert got.vectors[0] == array("f", floats)


@pytest.mark.parametrize(
    ("answer", "says"),
    [
        ({"data": [{"index": 0, "embedding": "a"}]}, r"data\[0\]\.embedding must be base64"),
        ({"data": [{"index": 0, "embedding": ["x"]}]},
         r"data\[0\]\.embedding must be a list of numbers"),
        ({"data": [{"index": 0, "embedding": []}]},
         r"data\[0\]\.embedding must be a non-empty list of numbers"),
        ({"data": [{"index": 0, "embedding": [1.0]}, {"index": 1, "embedding": [1.0]}]},
         r"data has 2 embedding\(s\) for 1 input\(s\)"),
        ({"data": [{"index": 5, "embedding": [1.0]}]}, r"data\[0\]\.index must be an integer"),
        ({"object": "list"}, "data must be a list"),
    ],
)  # fmt: skip
def test_a_malformed_answer_names_the_field(answer: dict[str, Any], says: str) -> None:
    with (
        MockServer([Reply(body=mw.to_json(answer))]) as server,
        pytest.raises(MalformedChunkError, match=says),
    ):
        mw.embed_sync(server.model(), "x")


# --------------------------------------------------------------------------- faults


@pytest.mark.parametrize(("api", "model_id"), [(a[0], a[1]) for a in APIS])
@pytest.mark.parametrize("mode", ["async", "sync"])
def test_429_with_retry_after_is_retried_then_answered(api: str, model_id: str, mode: str) -> None:
    # Each API's own error shape and headers (error_reply), read by its own rules.
    limited = error_reply(429, "slow down", headers={"retry-after": "0"})
    with MockServer([limited]) as server:
        model = server.model(api, model_id)
        if mode == "async":
            got = asyncio.run(mw.embed(model, TEXTS, api_key=KEY))
        else:
            got = mw.embed_sync(model, TEXTS, api_key=KEY)
        assert len(server.requests) == 2
    assert got.vectors == tuple(vec(t) for t in TEXTS)


def test_429_past_max_retries_raises_rate_limit_with_retry_after() -> None:
    limited = error_reply(429, "slow down", headers={"retry-after": "0"})
    with MockServer([limited, limited]) as server:
        with pytest.raises(RateLimitError, match="slow down") as caught:
            mw.embed_sync(server.model(), "x", max_retries=1)
        assert len(server.requests) == 2
    assert caught.value.retry_after == 0 and caught.value.status == 429


@pytest.mark.parametrize(("status", "error"), [(500, ServerError), (502, ServerError),
                                               (503, OverloadedError)])  # fmt: skip
def test_5xx_is_retried_and_then_a_typed_error(status: int, error: type[Exception]) -> None:
    with MockServer([error_reply(status, "boom")]) as server:
        assert mw.embed_sync(server.model(), "x").vectors == (vec("x"),)
    with MockServer([error_reply(status, "boom")] * 3) as server:
        with pytest.raises(error, match="boom"):
            mw.embed_sync(server.model(), "x", max_retries=2)
        assert len(server.requests) == 3


@pytest.mark.parametrize("api", [a[0] for a in APIS])
def test_a_body_cut_off_is_a_typed_error_on_every_api(api: str) -> None:
    model_id = dict((a[0], a[1]) for a in APIS)[api]
    with MockServer([Reply(cut_after=20)]) as server, pytest.raises(StreamInterruptedError):
        mw.embed_sync(server.model(api, model_id), TEXTS, max_retries=0, api_key=KEY)


@pytest.mark.anyio
async def test_a_stalled_answer_times_out() -> None:
    stalled = Reply(stall_after=5, stall_seconds=5)
    with MockServer([stalled]) as server, pytest.raises(RequestTimeoutError):
        await mw.embed(server.model(), "x", timeout=0.3, max_retries=0)


def test_a_key_echoed_in_an_error_never_appears() -> None:
    with MockServer([error_reply(400, f"invalid key {KEY} for this model")]) as server:
        with pytest.raises(mw.errors.InvalidRequestError) as caught:
            mw.embed_sync(server.model(), "x", api_key=KEY)
        assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in str(caught.value) and KEY not in repr(caught.value)
    assert "[redacted]" in str(caught.value)


def test_a_bad_request_is_answered_400_by_the_mock() -> None:
    import httpx

    with MockServer() as server:
        r = httpx.post(server.base_url + "/embeddings", json={"model": "m", "input": []})
    assert r.status_code == 400 and "input" in r.json()["error"]["message"]


# --------------------------------------------------------------------------- caller mistakes


@pytest.mark.parametrize(
    ("inputs", "kwargs", "says"),
    [
        ([], {}, "inputs is empty"),
        (["a", 3], {}, r"inputs\[1\] must be a str, got int"),
        (["a", ""], {}, r"inputs\[1\] is empty"),
        ("", {}, r"inputs\[0\] is empty"),
        ({"a": 1}, {}, "inputs must be a str or a list of str, got dict"),
        (b"a", {}, "inputs must be a str or a list of str, got bytes"),
        ("a", {"dimensions": "8"}, "dimensions must be a positive int"),
        ("a", {"dimensions": 0}, "dimensions must be a positive int"),
        ("a", {"dimensions": True}, "dimensions must be a positive int"),
        ("a", {"input_type": "query"}, "input_type must be one of search_document"),
        ("a", {"input_type": "search_query"}, "cannot be sent to the OpenAI embeddings API"),
        ("a", {"temperature": 0.5}, "temperature: a model-call option that embedding does not"),
        ("a", {"max_retry": 1}, "did you mean 'max_retries'"),
        ("a", {"http_client": None, "trace": 3}, "trace"),
    ],
)  # fmt: skip
def test_bad_input_is_refused_before_anything_is_sent(
    inputs: Any, kwargs: dict[str, Any], says: str
) -> None:
    with MockServer() as server:
        with pytest.raises(mw.ConfigurationError, match=says):
            mw.embed_sync(server.model(), inputs, **kwargs)
        with pytest.raises(mw.ConfigurationError, match=says):
            asyncio.run(mw.embed(server.model(), inputs, **kwargs))
        assert server.requests == []


def test_an_api_without_embeddings_says_which_apis_embed() -> None:
    with MockServer() as server:
        with pytest.raises(mw.ConfigurationError) as caught:
            mw.embed_sync(server.model("anthropic-messages"), "x", api_key=KEY)
        assert server.requests == []
    text = str(caught.value)
    assert "'anthropic-messages', which has no embedding endpoint" in text
    for api in ("bedrock-converse", "cohere-chat", "google-generative-ai", "ollama-chat",
                "openai-chat"):  # fmt: skip
        assert api in text


def test_a_fallback_is_refused_saying_why() -> None:
    fallback = mw.Fallback(["openai/gpt-4.1-mini", "anthropic/claude-sonnet-4-5"])
    with pytest.raises(mw.ConfigurationError, match="not interchangeable"):
        mw.embed_sync(fallback, "x")  # type: ignore[arg-type]


def test_titan_refuses_an_input_type_and_bedrock_an_unknown_family() -> None:
    with MockServer() as server:
        titan = server.model("bedrock-converse", "amazon.titan-embed-text-v2:0")
        with pytest.raises(mw.ConfigurationError, match="Titan Text Embeddings"):
            mw.embed_sync(titan, "x", input_type="search_query", api_key=KEY)
        other = server.model("bedrock-converse", "anthropic.claude-x")
        with pytest.raises(mw.ConfigurationError, match=r"Titan Text Embeddings .* Cohere Embed"):
            mw.embed_sync(other, "x", api_key=KEY)
        assert server.requests == []


def test_a_missing_key_raises_before_any_request(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(mw.MissingAPIKeyError, match="OPENAI_API_KEY"):
        mw.embed_sync("openai/text-embedding-3-small", "x", base_url="http://127.0.0.1:9/v1")


# --------------------------------------------------------------------------- catalog


def test_catalog_models_resolve_with_their_price() -> None:
    with MockServer() as server:
        got = mw.embed_sync("openai/text-embedding-3-small", ["one two", "three"],
                            base_url=server.base_url, api_key=KEY)  # fmt: skip
        body = server.last_request.json()
    assert body["model"] == "text-embedding-3-small" and body["encoding_format"] == "base64"
    assert got.usage.input == 3
    assert got.cost == pytest.approx(3 * 0.02 / 1_000_000)
    assert not any(m.id == "text-embedding-3-small" for m in mw.models())  # not a chat model


def test_the_catalog_lists_embedding_models_with_sizes() -> None:
    from modelwire._catalog._embedding import embedding_entry, embedding_models

    titan = embedding_entry("amazon-bedrock", "amazon.titan-embed-text-v2:0")
    assert titan is not None and titan.dimensions == 1024 and titan.cost == 0.02
    assert embedding_entry("ollama", "nomic-embed-text") is not None
    providers = {m.provider for m in embedding_models()}
    assert {"openai", "google", "cohere", "amazon-bedrock", "ollama"} <= providers


# --------------------------------------------------------------------------- providers


def test_vertex_uses_predict_one_input_a_request() -> None:
    scoped = "/v1/projects/proj-test/locations/us-east5"
    with MockServer() as server:
        model = mw.Model(id="gemini-embedding-001", api="google-generative-ai",
                         provider="google-vertex", base_url=server.origin + scoped)  # fmt: skip
        got = mw.embed_sync(model, TEXTS, input_type="search_document", dimensions=32,
                            api_key="ya29.vertex-token")  # fmt: skip
        paths = {r.path for r in server.requests}
        bodies = [r.json() for r in server.requests]
    assert paths == {f"{scoped}/publishers/google/models/gemini-embedding-001:predict"}
    assert [b["instances"] for b in bodies] == [
        [{"content": t, "task_type": "RETRIEVAL_DOCUMENT"}] for t in TEXTS
    ]
    assert bodies[0]["parameters"] == {"outputDimensionality": 32}
    assert got.vectors == tuple(vec(t, 32) for t in TEXTS)
    assert not got.estimated  # Vertex reports token_count


def test_azure_embeds_at_its_deployment_with_its_key_header() -> None:
    with MockServer() as server:
        model = mw.Model(id="my-embeddings", api="openai-chat", provider="azure-openai",
                         base_url=server.origin)  # fmt: skip
        got = mw.embed_sync(model, TEXTS, api_key=KEY)
        sent = server.last_request
    assert sent.path.split("?")[0].endswith("/embeddings")
    assert sent.headers["api-key"] == KEY
    assert sent.json()["encoding_format"] == "base64"
    assert got.vectors == tuple(vec(t) for t in TEXTS)


def test_a_refused_request_uses_no_reply_and_an_embed_request_uses_a_queued_one() -> None:
    import httpx

    with MockServer([error_reply(500, "queued for the next embed")]) as server:
        r = httpx.post(server.base_url + "/embeddings", json={"input": "x", "dimensions": 0})
        assert r.status_code == 400 and server.pending == 1
        with pytest.raises(ServerError, match="queued for the next embed"):
            mw.embed_sync(server.model(), "x", max_retries=0)
        assert server.pending == 0 and len(server.requests) == 2


def test_an_ollama_catalog_model_reaches_the_native_endpoint_free() -> None:
    with MockServer() as server:
        got = mw.embed_sync("ollama/nomic-embed-text", ["local text"], base_url=server.origin)
        sent = server.last_request
    assert sent.path == "/api/embed" and sent.json()["model"] == "nomic-embed-text"
    assert "authorization" not in sent.headers  # a local server: no key
    assert got.vectors == (vec("local text"),) and got.cost == 0.0


def test_the_call_options_apply_and_the_trace_never_holds_the_key() -> None:
    records: list[Any] = []
    with MockServer() as server:
        got = mw.embed_sync(server.model(), ["a", "b"], api_key=KEY, trace=records.append,
                            requests_per_minute=600, tokens_per_minute=100_000,
                            circuit_breaker=True, headers={"x-team": "search"},
                            timeout=mw.Timeout(connect=5, idle=5, total=30))  # fmt: skip
        sent = server.last_request
    assert len(got.vectors) == 2 and sent.headers["x-team"] == "search"
    kinds = {type(r).__name__ for r in records}
    assert {"RequestTrace", "ResponseTrace", "MessageTrace"} <= kinds
    assert not any(KEY in repr(r) for r in records)


def test_an_open_circuit_fails_the_next_embed_without_a_request() -> None:
    breaker = mw.CircuitBreaker(failures=1, window=60, cooldown=60)
    with MockServer([error_reply(500, "down")]) as server:
        model = server.model()
        with pytest.raises(ServerError):
            mw.embed_sync(model, "x", max_retries=0, circuit_breaker=breaker)
        with pytest.raises(mw.errors.StreamError) as caught:
            mw.embed_sync(model, "x", max_retries=0, circuit_breaker=breaker)
        assert len(server.requests) == 1  # the open circuit sent nothing
    assert "circuit" in str(caught.value).lower()


def test_a_client_of_the_other_driver_is_refused_before_sending() -> None:
    import httpx

    with MockServer() as server, httpx.Client() as sync_client:
        with pytest.raises(mw.ConfigurationError, match="AsyncClient"):
            asyncio.run(mw.embed(server.model(), "x", http_client=sync_client))
        got = mw.embed_sync(server.model(), "x", http_client=sync_client)
        assert got.vectors == (vec("x"),) and len(server.requests) == 1


@pytest.mark.anyio
async def test_split_requests_run_side_by_side_and_a_failure_ends_the_rest() -> None:
    from modelwire._client._embed import CONCURRENT_REQUESTS

    texts = [f"t{i}" for i in range(3)]
    # Each answer waits until all three requests have arrived: sent one after another,
    # the first would wait alone and the barrier break (BrokenBarrierError, an error
    # reply). No wall-clock bound: the barrier's timeout is only a backstop.
    together = threading.Barrier(3, timeout=60)

    def side_by_side(request: Any) -> Reply:
        together.wait()
        return Reply()

    with MockServer([side_by_side], repeat_last=True) as server:
        model = server.model("bedrock-converse", "amazon.titan-embed-text-v2:0")
        got = await mw.embed(model, texts, api_key=KEY)
    assert got.vectors == tuple(vec(t) for t in texts)  # rejoined in input order
    assert CONCURRENT_REQUESTS >= 3 and len(server.requests) == 3

    many = [f"u{i}" for i in range(12)]
    # The first request to arrive is refused; the others in flight would take a minute
    # to answer: the call ends with the refusal, without waiting for them.
    stalled = Reply(stall_after=1, stall_seconds=60)
    with MockServer([error_reply(401, "no"), *[stalled] * 11]) as server:
        model = server.model("bedrock-converse", "amazon.titan-embed-text-v2:0")
        start = asyncio.get_running_loop().time()
        with pytest.raises(AuthenticationError):
            await mw.embed(model, many, api_key=KEY)
        took = asyncio.get_running_loop().time() - start
        # The ones in flight (however many had arrived by the refusal) were ended, not
        # waited for; the rest were never sent.
        assert len(server.requests) <= CONCURRENT_REQUESTS < len(many) and took < 45


@pytest.mark.parametrize("transport", ["httpx", "httptools", "aiohttp", "auto"])
@pytest.mark.anyio
async def test_every_transport_embeds_and_retries(transport: Any) -> None:
    limited = error_reply(503, "busy", headers={"retry-after": "0"})
    with MockServer([limited]) as server:
        got = await mw.embed(server.model(), TEXTS, transport=transport)
        assert len(server.requests) == 2
    assert got.vectors == tuple(vec(t) for t in TEXTS)
