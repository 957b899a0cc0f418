"""Background responses (OpenAI Responses ``"background": true``): the requests that
read a stored response again and cancel it.

OpenAI API reference, "Background mode": a background response is stored
(``store`` must be true); ``GET /v1/responses/{id}?stream=true&starting_after=N``
streams its events whose ``sequence_number`` is greater than ``N``;
``POST /v1/responses/{id}/cancel`` cancels it (status ``cancelled``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import msgspec

from ..._wire.deltas import ResponseMeta
from ..._wire.request import HTTPRequest
from .decode import ResponsesDecoder

if TYPE_CHECKING:
    from ..._wire.deltas import Delta
    from ..._wire.pipeline import Decoding
    from ..._wire.sse import Frame
    from ...types import Model

__all__ = [
    "BACKGROUND",
    "Background",
    "BackgroundDecoder",
    "BackgroundDecoding",
    "cancel_request",
    "response_url",
    "resume_request",
]


class _SeqId(msgspec.Struct):
    id: str | None = None


class _Seq(msgspec.Struct):
    sequence_number: int | None = None
    response: _SeqId | None = None


_seq = msgspec.json.Decoder(_Seq)


class BackgroundDecoder(ResponsesDecoder):
    """:class:`ResponsesDecoder` that reads every event's ``sequence_number``: an event
    at or below the last one decoded (a server resending what was delivered, on a
    stream picked up again) is dropped, so no event is delivered twice."""

    __slots__ = ("_announce", "after", "response_id")

    def __init__(self, after: int = -1) -> None:
        super().__init__()
        #: The last ``sequence_number`` decoded (``-1``: none yet); events ``<=`` it are dropped.
        self.after = after
        #: The response's id, from ``response.created`` (or a later event's ``response``).
        self.response_id: str | None = None
        self._announce = False

    def picked_up(self, response_id: str) -> None:
        """Picked up by id (:func:`modelwire.resume_stream`): a stream starting after
        ``response.created`` still gives the message its ``response_id``."""
        self.response_id = response_id
        self._announce = True

    def _seen(self, data: bytes) -> bool:
        try:
            seq = _seq.decode(data)
        except (msgspec.ValidationError, msgspec.DecodeError):
            return False  # the handler decodes it again and names what is wrong
        n = seq.sequence_number
        if n is not None:
            if n <= self.after:
                return True
            self.after = n
        if self.response_id is None and seq.response is not None and seq.response.id:
            self.response_id = seq.response.id
        return False

    def decode(self, frame: Frame) -> list[Delta]:
        if frame.data.startswith(b"{") and self._seen(frame.data):
            return []
        if self._announce:
            self._announce = False
            assert self.response_id is not None
            return [ResponseMeta(response_id=self.response_id, model=None), *super().decode(frame)]
        return super().decode(frame)

    def decode_batch(self, frames: list[Frame], out: list[Delta]) -> None:
        decode = self.decode
        for frame in frames:
            out += decode(frame)


class BackgroundDecoding:
    """The Responses codec's framing with a :class:`BackgroundDecoder`: what the
    pipeline of a ``background=True`` call, or of :func:`modelwire.resume_stream`,
    decodes with (``after``: the sequence number to pick up after)."""

    __slots__ = ("after", "response_id", "wire")

    def __init__(self, wire: Decoding, after: int = -1, response_id: str | None = None) -> None:
        self.wire = wire
        self.after = after
        self.response_id = response_id

    @property
    def name(self) -> str:
        return self.wire.name

    def framing(self, max_event_bytes: int) -> Any:
        return self.wire.framing(max_event_bytes)

    def new_decoder(self, model: Model | None) -> BackgroundDecoder:
        decoder = BackgroundDecoder(self.after)
        if self.response_id is not None:
            decoder.picked_up(self.response_id)
        return decoder


def response_url(sent: HTTPRequest, response_id: str, suffix: str = "") -> tuple[str, str]:
    """``{base_url}/responses/{id}{suffix}`` from the request that created the response
    (or from a ``GET`` of it), and its query string (Azure's ``api-version``) to keep."""
    url, _, query = sent.url.partition("?")
    url = url.rstrip("/")
    if sent.method == "GET":  # …/responses/{id} already
        url = url.rsplit("/", 1)[0]
    kept = "&".join(p for p in query.split("&") if p and p.split("=", 1)[0] not in _OURS)
    return f"{url}/{quote(response_id, safe='')}{suffix}", kept


_OURS = frozenset({"stream", "starting_after"})


def resume_request(sent: HTTPRequest, response_id: str, after: int | None) -> HTTPRequest:
    """``GET …/responses/{id}?stream=true[&starting_after=N]`` with the headers of
    ``sent`` (its credentials): the events after ``after`` (all of them for ``None``)."""
    url, query = response_url(sent, response_id)
    params = "stream=true" if after is None or after < 0 else f"stream=true&starting_after={after}"
    if query:
        params = f"{params}&{query}"
    headers = {k: v for k, v in sent.headers.items() if k.lower() != "content-type"}
    return HTTPRequest(url=f"{url}?{params}", headers=headers, body=b"", secrets=sent.secrets,
                       authorizer=sent.authorizer, method="GET")  # fmt: skip


def cancel_request(sent: HTTPRequest, response_id: str) -> HTTPRequest:
    """``POST …/responses/{id}/cancel`` with the headers of ``sent``."""
    url, query = response_url(sent, response_id, "/cancel")
    headers = {k: v for k, v in sent.headers.items() if k.lower() not in ("accept", "content-type")}
    headers["Accept"] = "application/json"
    headers["Content-Type"] = "application/json"
    return HTTPRequest(url=f"{url}?{query}" if query else url, headers=headers, body=b"{}",
                       secrets=sent.secrets, authorizer=sent.authorizer)  # fmt: skip


class Background:
    """The Responses API's background facet (``codec.background``, found by
    :func:`modelwire._apis.background_facet`): how a stored response is streamed
    again and cancelled, and the decoding that picks a broken stream up."""

    __slots__ = ()

    def decoding(
        self, wire: Decoding, after: int = -1, response_id: str | None = None
    ) -> BackgroundDecoding:
        """``wire``'s framing with a decoder that reads sequence numbers."""
        return BackgroundDecoding(wire, after, response_id)

    def resume_request(self, sent: HTTPRequest, response_id: str, after: int | None) -> HTTPRequest:
        """:func:`resume_request`."""
        return resume_request(sent, response_id, after)

    def cancel_request(self, sent: HTTPRequest, response_id: str) -> HTTPRequest:
        """:func:`cancel_request`."""
        return cancel_request(sent, response_id)


BACKGROUND = Background()
