"""The gateway's HTTP before and around authentication, over real loopback sockets
(``GatewayServer``: uvicorn with the gateway's own httptools protocol): the key
decided from the headers before any body byte is read, heads bounded (431/414),
credential headers sent twice refused, text that is not UTF-8 a 400 naming its
field, and a 413 in each API's own error type. Raw sockets send what no client
library would."""

from __future__ import annotations

import json
import re
import select
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from modelwire.gateway import Gateway, GatewayServer, app, hash_key, load_config
from modelwire.gateway._asgi import DRAIN_BYTES, MAX_FIELD_LINE, MAX_HEAD, Receive, Scope, Send
from modelwire.testing import MockServer
from test_gateway_hostile import call, run

KEY = "sk-gw-protocol-0123456789"
OTHER = "sk-gw-protocol-other-987"
PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses",
         "anthropic": "/v1/messages"}  # fmt: skip
CAP = 64 * 1024 * 1024  # bytes a test sends at most into a connection the gateway reads on
GUARD = 30.0  # seconds a socket read may block: a guard against a hang, not a measure


def config(base_url: str, **gateway: Any) -> dict[str, Any]:
    cfg: dict[str, Any] = {
        "models": {"smart": {"api": "openai-chat", "id": "m", "base_url": base_url}},
        "keys": {
            "a": {"key_sha256": hash_key(KEY), "models": ["*"]},
            "b": {"key_sha256": hash_key(OTHER), "models": ["*"]},
        },
    }
    if gateway:
        cfg["gateway"] = gateway
    return cfg


@pytest.fixture(scope="module")
def backend() -> Iterator[MockServer]:
    with MockServer(auto=True) as server:  # every call answered
        yield server


@pytest.fixture(scope="module")
def gateway(backend: MockServer) -> Iterator[GatewayServer]:
    with GatewayServer(config(backend.origin + "/v1", max_body_bytes=200_000)) as gw:
        yield gw


def good(fe: str) -> dict[str, Any]:
    if fe == "chat":
        return {"model": "smart", "messages": [{"role": "user", "content": "hi"}]}
    if fe == "responses":
        return {"model": "smart", "input": "hi"}
    return {"model": "smart", "max_tokens": 10, "messages": [{"role": "user", "content": "hi"}]}


class Answer:
    def __init__(self, status: int, headers: dict[str, str], body: bytes) -> None:
        self.status, self.headers, self.body = status, headers, body

    def json(self) -> Any:
        return json.loads(self.body)

    def __repr__(self) -> str:
        return f"Answer({self.status}, {self.body[:300]!r})"


def connect(gw: GatewayServer) -> socket.socket:
    s = socket.create_connection(("127.0.0.1", gw.port))
    s.settimeout(GUARD)
    return s


def read_answer(s: socket.socket, buf: bytearray) -> Answer:
    """One response with a ``content-length`` from ``s`` (``buf``: bytes read ahead)."""
    while b"\r\n\r\n" not in buf:
        chunk = s.recv(65536)
        assert chunk, f"the connection closed before a response: {bytes(buf)!r}"
        buf += chunk
    head, _, rest = bytes(buf).partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.lower(): v.strip() for k, _, v in (ln.partition(":") for ln in lines[1:])}
    size = int(headers["content-length"])
    while len(rest) < size:
        chunk = s.recv(65536)
        assert chunk, "the connection closed inside a response body"
        rest += chunk
    buf[:] = rest[size:]
    return Answer(status, headers, rest[:size])


def request(path: str, body: bytes, headers: list[tuple[str, str]] | None = None) -> bytes:
    lines = [f"POST {path} HTTP/1.1", "host: gw", f"content-length: {len(body)}",
             "content-type: application/json"]  # fmt: skip
    for k, v in [("authorization", f"Bearer {KEY}")] if headers is None else headers:
        lines.append(f"{k}: {v}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


def exchange(gw: GatewayServer, data: bytes) -> Answer:
    with connect(gw) as s:
        s.sendall(data)
        return read_answer(s, bytearray())


def check_error(fe: str, a: Answer, status: int, where: str | None = None) -> str:
    """The API's own error shape (``where``: the field named in message and param)."""
    assert a.status == status, a
    body = a.json()
    if fe == "anthropic":
        assert body["type"] == "error" and set(body["error"]) == {"type", "message"}, a
    else:
        assert set(body["error"]) >= {"message", "type", "param", "code"}, a
        if where is not None:
            assert body["error"]["param"] == where, a
    message = str(body["error"]["message"])
    assert "Traceback" not in message
    if where is not None:
        assert where in message, message
    return message


# --------------------------------------------------------------------------- auth first


def test_a_keyless_request_is_answered_before_its_body_is_sent(gateway: GatewayServer) -> None:
    # Only the head of a 30 MB request is sent: the 401 comes without its body.
    with connect(gateway) as s:
        s.sendall(request(PATHS["chat"], b"", headers=[("x-pad", "1")]).replace(
            b"content-length: 0", b"content-length: 30000000"))  # fmt: skip
        a = read_answer(s, bytearray())
    check_error("chat", a, 401)


class Counting(Gateway):
    """The gateway, counting the body bytes it takes from the server (``receive``)."""

    taken = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        async def counted() -> Any:
            message = await receive()
            self.taken += len(message.get("body", b""))
            return message

        await super().__call__(scope, counted, send)


def test_keyless_bodies_are_dropped_not_held(backend: MockServer) -> None:
    # Eight clients without a key at once, each with a body under the default limit:
    # the gateway takes none of it from the server (which drops it as it comes), so
    # none is held; what it took before answering was the whole of every body.
    gw = Counting(load_config(config(backend.origin + "/v1")))
    body = b'{"model": "smart", "zzz": "' + b"x" * (DRAIN_BYTES - 4096) + b'"}'
    data = request(PATHS["responses"], body, headers=[])
    answers: list[Answer] = []

    def client(server: GatewayServer) -> None:
        with connect(server) as s:
            s.sendall(data)
            answers.append(read_answer(s, bytearray()))

    with GatewayServer(gw) as server:
        threads = [threading.Thread(target=client, args=(server,)) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(GUARD)
    assert [a.status for a in answers] == [401] * 8
    assert gw.taken == 0


def test_a_connection_answered_early_drops_the_body_and_serves_the_next(
    gateway: GatewayServer,
) -> None:
    body = json.dumps(good("chat")).encode()
    padded = json.dumps({**good("chat"), "zzz": "x" * 100_000}).encode()
    with connect(gateway) as s:
        s.sendall(request(PATHS["chat"], padded, headers=[]) + request(PATHS["chat"], body))
        buf = bytearray()
        check_error("chat", read_answer(s, buf), 401)
        assert read_answer(s, buf).status == 200


def test_a_body_sent_on_after_an_early_answer_is_cut_off(gateway: GatewayServer) -> None:
    # After its 401 a client may stream on, but not for ever: past DRAIN_BYTES the
    # gateway closes the connection, long before the body it declared.
    sent = 0
    with connect(gateway) as s:
        s.sendall(request(PATHS["chat"], b"", headers=[]).replace(
            b"content-length: 0", b"content-length: %d" % CAP))  # fmt: skip
        check_error("chat", read_answer(s, bytearray()), 401)
        chunk = b"x" * 65536
        with pytest.raises(OSError):
            while sent < CAP:
                s.sendall(chunk)
                sent += len(chunk)
    assert sent < CAP


# --------------------------------------------------------------------------- the head


@pytest.mark.parametrize(
    ("head", "status"),
    [
        ([("x-long", "a" * (MAX_FIELD_LINE + 1))], 431),
        ([(f"x-h{i}", "a" * 1000) for i in range(MAX_HEAD // 1000 + 1)], 431),
        ([("x-fine", "a" * (MAX_FIELD_LINE - 100))], 200),
        ([(f"x-h{i}", "a" * 1000) for i in range(MAX_HEAD // 1000 - 8)], 200),
    ],
)
def test_a_head_past_its_limits_is_431(
    gateway: GatewayServer, head: list[tuple[str, str]], status: int
) -> None:
    body = json.dumps(good("chat")).encode()
    a = exchange(gateway, request(PATHS["chat"], body, [("authorization", f"Bearer {KEY}"), *head]))
    assert a.status == status, a
    if status == 431:
        assert "limit" in a.json()["error"]["message"]
        assert a.headers["connection"] == "close"


def test_a_request_target_past_the_limit_is_414(gateway: GatewayServer) -> None:
    a = exchange(gateway, request("/v1/" + "a" * (MAX_HEAD + 1), b"{}"))
    assert a.status == 414, a


def test_a_header_line_that_never_ends_is_431_while_others_are_served(
    gateway: GatewayServer,
) -> None:
    slow = connect(gateway)
    with slow:
        slow.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nhost: gw\r\nx-endless: ")
        slow.sendall(b"a" * 4096)
        # Another client, meanwhile: served.
        ok = exchange(gateway, request(PATHS["chat"], json.dumps(good("chat")).encode()))
        assert ok.status == 200, ok
        # Sent on until the gateway answers (readable), or a cap a gateway without a
        # limit would reach (it reads on, and the test then fails on the answer).
        sent = 0
        try:
            while sent < CAP and not select.select([slow], [], [], 0)[0]:
                slow.sendall(b"a" * 4096)
                sent += 4096
        except OSError:
            pass  # closed after its answer, which is still to read
        refused = read_answer(slow, bytearray())
    assert refused.status == 431, refused


def test_the_asgi_app_bounds_the_head_too(backend: MockServer) -> None:
    # For an ASGI server that does not: the app itself answers 431 in the API's shape.
    gw = app(config(backend.origin + "/v1"))
    big = [(b"authorization", f"Bearer {KEY}".encode()), (b"x-long", b"a" * MAX_FIELD_LINE)]
    many = [(b"authorization", f"Bearer {KEY}".encode())] + [
        (f"x-h{i}".encode(), b"a" * 1000) for i in range(MAX_HEAD // 1000 + 1)
    ]
    body = json.dumps(good("anthropic")).encode()
    answers = run(gw, call(gw, PATHS["anthropic"], body, headers=big),
                  call(gw, PATHS["anthropic"], body, headers=many))  # fmt: skip
    for a in answers:
        assert a.status == 431, a
        assert json.loads(a.body)["error"]["type"] == "invalid_request_error"


# --------------------------------------------------------------------------- keys twice


@pytest.mark.parametrize("fe", list(PATHS))
@pytest.mark.parametrize(
    "headers",
    [
        [("authorization", "Bearer sk-wrong"), ("authorization", f"Bearer {KEY}")],
        [("x-api-key", "sk-wrong"), ("x-api-key", KEY)],
        [("authorization", f"Bearer {KEY}"), ("Authorization", f"Bearer {OTHER}")],
        [("x-api-key", KEY), ("X-Api-Key", KEY)],
    ],
)
def test_a_credential_header_sent_twice_is_400_never_the_last_one(
    gateway: GatewayServer, fe: str, headers: list[tuple[str, str]]
) -> None:
    a = exchange(gateway, request(PATHS[fe], json.dumps(good(fe)).encode(), headers))
    assert "more than once" in check_error(fe, a, 400)
    assert KEY not in a.body.decode() and OTHER not in a.body.decode()


def test_models_refuses_a_key_sent_twice(gateway: GatewayServer) -> None:
    head = b"GET /v1/models HTTP/1.1\r\nhost: gw\r\nx-api-key: x\r\nx-api-key: %s\r\n\r\n"
    a = exchange(gateway, head % KEY.encode())
    assert a.status == 400, a


# --------------------------------------------------------------------------- UTF-8


BAD = "\udcff"  # stands for the byte 0xff in the bodies below (surrogateescape)


@pytest.mark.parametrize(
    ("fe", "body", "where"),
    [
        ("chat", {"model": "smart", "messages": [{"role": "user", "content": "a" + BAD}]},
         "messages[0].content"),
        ("chat", {**good("chat"), "metadata": {"k": BAD}}, "metadata.k"),
        ("chat", {**good("chat"), "user": 'q"\\' + BAD}, "user"),
        ("chat", {**good("chat"), "metadata": {"k" + BAD: "v"}}, "metadata"),
        ("responses", {"model": "smart", "input": BAD}, "input"),
        ("responses", {**good("responses"), "instructions": "be " + BAD}, "instructions"),
        ("responses", {"model": "smart", "input": [
            {"role": "user", "content": [{"type": "input_text", "text": BAD}]}]},
         "input[0].content[0].text"),
        ("responses", {**good("responses"), "metadata": {"k": BAD}}, "metadata.k"),
        ("anthropic", {**good("anthropic"), "system": BAD}, "system"),
        ("anthropic", {**good("anthropic"), "metadata": {"user_id": BAD}}, "metadata.user_id"),
        ("anthropic", {"model": "smart", "max_tokens": 5, "messages": [
            {"role": "user", "content": [{"type": "text", "text": "x"},
                                         {"type": "text", "text": BAD}]}]},
         "messages[0].content[1].text"),
    ],
)  # fmt: skip
def test_text_that_is_not_utf8_is_400_naming_its_field(
    gateway: GatewayServer, fe: str, body: dict[str, Any], where: str
) -> None:
    raw = json.dumps(body, ensure_ascii=False).encode("utf-8", "surrogateescape")
    assert b"\xff" in raw
    a = exchange(gateway, request(PATHS[fe], raw))
    assert "UTF-8" in check_error(fe, a, 400, where), a


@pytest.mark.parametrize("fe", list(PATHS))
@pytest.mark.parametrize("encoding", ["utf-16", "latin-1"])
def test_a_body_that_is_not_utf8_json_is_400(
    gateway: GatewayServer, fe: str, encoding: str
) -> None:
    raw = json.dumps({**good(fe), "metadata": {"k": "café"}}, ensure_ascii=False)
    a = exchange(gateway, request(PATHS[fe], raw.encode(encoding)))
    check_error(fe, a, 400)


# --------------------------------------------------------------------------- 413


@pytest.mark.parametrize("fe", list(PATHS))
@pytest.mark.parametrize("declared", [True, False])
def test_413_is_each_apis_own_error(gateway: GatewayServer, fe: str, declared: bool) -> None:
    big = json.dumps({**good(fe), "zzz": "x" * 300_000}).encode()
    data = request(PATHS[fe], big)
    if not declared:  # chunked: no content-length to refuse up front
        head, _, _ = data.partition(b"\r\n\r\n")
        head = re.sub(rb"content-length: \d+", b"transfer-encoding: chunked", head)
        data = head + b"\r\n\r\n" + b"%x\r\n%s\r\n0\r\n\r\n" % (len(big), big)
    a = exchange(gateway, data)
    check_error(fe, a, 413)
    error = a.json()["error"]
    if fe == "anthropic":
        assert error["type"] == "request_too_large"  # https://docs.anthropic.com/en/api/errors
    else:
        assert error["type"] == "invalid_request_error" and error["param"] is None
