"""A raw HTTP/1.1 server on loopback for the transport tests, and the bodies they send.

Not ``MockServer``: these tests need byte-level control (a cut inside a UTF-8
character, a stall mid-event, each piece written as one chunk) and must see when the
client closes each connection. A :class:`Plan` is one response; :func:`serving` runs a
server that answers each request with the next plan.

The bodies at the end (:func:`frames`, :func:`ok`, :func:`stall_after_two`) are what
``modelwire.testing`` renders for one fixed text: good for checking HTTP handling (pools,
deadlines, chunking, provider URLs). What the client makes of the bytes providers really
send is checked over recordings (``tests/test_faults.py``, ``tests/test_recorded_fidelity.py``).
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import modelwire as mw
from modelwire._apis import get_server
from modelwire.testing._render import render_reply

#: A distinctive key: error bodies echo it, and no output may show any piece of it.
KEY = "sk-FAULTMATRIX-7c1d3f9a2b5e"
CTX = mw.Context(messages=[mw.UserMessage(content="hi")])


@dataclass
class Plan:
    """One response: status line, headers, body pieces (each sent as one chunk),
    then ``end``: ``finish`` (the chunked body completes, keep-alive), ``cut``
    (the connection is shut down mid-body) or ``stall`` (nothing more is sent until
    the client hangs up; before that, the ``late`` pieces, one write each)."""

    status: int = 200
    body: list[bytes] = field(default_factory=list)
    content_type: str = "text/event-stream"
    headers: dict[str, str] = field(default_factory=dict)
    end: str = "finish"
    late: list[bytes] = field(default_factory=list)  # a stall's pieces after the first write


class RawServer:
    """HTTP/1.1 on loopback, one thread per connection; records every request and
    whether the client closed each connection."""

    def __init__(self, plans: list[Plan]) -> None:
        self.plans = plans
        self.requests: list[bytes] = []
        self.targets: list[str] = []  # the request targets (path and query)
        self.agents: list[str] = []  # the User-Agent of each request
        self.heads: list[bytes] = []  # each request's line and headers
        self.connections: list[threading.Event] = []
        self._lock = threading.Lock()
        self._sock = socket.create_server(("127.0.0.1", 0))
        self.port = self._sock.getsockname()[1]
        self._stop = threading.Event()
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._stop.set()
        self._sock.close()

    def _accept(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except OSError:
                return
            closed = threading.Event()
            with self._lock:
                self.connections.append(closed)
            threading.Thread(target=self._serve, args=(conn, closed), daemon=True).start()

    def _next_plan(self, body: bytes) -> Plan:
        with self._lock:
            self.requests.append(body)
            return self.plans.pop(0) if len(self.plans) > 1 else self.plans[0]

    @staticmethod
    def read_request(conn: socket.socket, buf: bytes) -> tuple[bytes, bytes, bytes] | None:
        """The next request on ``conn`` (``buf``: bytes already read): its head, its
        body, and what was read past it; ``None`` once the client closed."""
        while b"\r\n\r\n" not in buf:
            data = conn.recv(65536)
            if not data:
                return None  # the client closed the connection
            buf += data
        head, buf = buf.split(b"\r\n\r\n", 1)
        length = 0
        for line in head.split(b"\r\n")[1:]:
            name, _, value = line.partition(b":")
            if name.strip().lower() == b"content-length":
                length = int(value)
        while len(buf) < length:
            data = conn.recv(65536)
            if not data:
                return None
            buf += data
        return head, buf[:length], buf[length:]

    def _serve(self, conn: socket.socket, closed: threading.Event) -> None:
        buf = b""
        try:
            while True:
                got = self.read_request(conn, buf)
                if got is None:
                    return
                head, body, buf = got
                self.heads.append(head)
                for line in head.split(b"\r\n")[1:]:
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"user-agent":
                        self.agents.append(value.strip().decode())
                self.targets.append(head.split(b" ", 2)[1].decode())
                plan = self._next_plan(body)
                if plan.status == 0:  # hang up without a response (a transport error)
                    conn.shutdown(socket.SHUT_RDWR)
                    return
                lines = [f"HTTP/1.1 {plan.status} X", f"Content-Type: {plan.content_type}",
                         "Transfer-Encoding: chunked"]  # fmt: skip
                lines += [f"{k}: {v}" for k, v in plan.headers.items()]
                head_bytes = ("\r\n".join(lines) + "\r\n\r\n").encode()
                chunks = [b"%x\r\n%s\r\n" % (len(p), p) for p in plan.body]
                if plan.end == "stall":
                    # One write with the head: the content is in the client's socket buffer
                    # when it sees the status, so a stall case's deadline (idle or total)
                    # can only fire after that content was read, however loaded the machine.
                    conn.sendall(head_bytes + b"".join(chunks))
                    for piece in plan.late:  # each a socket read of its own, later
                        time.sleep(0.05)
                        conn.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))
                else:
                    conn.sendall(head_bytes)
                    for chunk in chunks:
                        conn.sendall(chunk)
                        time.sleep(0.002)  # one read per piece, as a provider flushes them
                if plan.end == "finish":
                    conn.sendall(b"0\r\n\r\n")
                    continue
                if plan.end == "cut":
                    conn.shutdown(socket.SHUT_RDWR)
                    return
                conn.settimeout(30)  # stall: wait for the client to hang up
                while conn.recv(65536):
                    pass
                return
        except OSError:
            return
        finally:
            conn.close()
            closed.set()

    def all_closed(self) -> bool:
        with self._lock:
            return all(c.is_set() for c in self.connections)

    def wait_closed(self, seconds: float = 3.0) -> bool:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            if self.all_closed():
                return True
            time.sleep(0.005)
        return self.all_closed()


@contextlib.contextmanager
def serving(plans: list[Plan]) -> Iterator[RawServer]:
    server = RawServer(plans)
    try:
        yield server
    finally:
        server.close()


def model_for(api: str, port: int, provider: str = "mock", base: str | None = None) -> mw.Model:
    segment = get_server(api).version_segment  # /v1, /v1beta, or the server root
    url = f"http://127.0.0.1:{port}" + (segment if base is None else base)
    return mw.Model(id="mock-model", api=api, provider=provider, base_url=url)


def streamed(api: str, body: list[bytes], end: str = "finish") -> Plan:
    """A 200 response with the API's own media type (text/event-stream, x-ndjson)."""
    return Plan(body=body, end=end, content_type=get_server(api).content_type)


def error_json(status: int, headers: dict[str, str] | None = None) -> Plan:
    # Providers echo (part of) a bad key; the client must redact it everywhere.
    body = json.dumps({"error": {"message": f"status {status} for key {KEY}", "type": "x"}})
    return Plan(status=status, body=[body.encode()], content_type="application/json",
                headers=headers or {})  # fmt: skip


# piece_chars=4 streams it as "Hell", "o wö", "rld ", "你好".

# piece_chars=4 streams it as "Hell", "o wö", "rld ", "你好".
TEXT = "Hello wörld 你好"


def frames(api: str) -> list[bytes]:
    return list(render_reply(TEXT, api, piece_chars=4).pieces)


def at(api: str, piece: bytes) -> tuple[list[bytes], bytes]:
    """The frames before the first one carrying ``piece``, and that frame."""
    fr = frames(api)
    i = next(i for i, f in enumerate(fr) if piece in f)
    return fr[:i], fr[i]


def ok(api: str) -> Plan:
    return streamed(api, frames(api))


def stall_after_two(api: str) -> Plan:
    before, _ = at(api, b'rld "')
    return streamed(api, before, end="stall")
