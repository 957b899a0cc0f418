"""A small front-end for the gateway core's tests: the real three are tested by their
own modules. Request ``{"model", "prompt", "stream", ...extra}``; every key but those
three is a passthrough field. Stream: one ``data: {"type", ...}`` line per event,
``data: [DONE]`` at a normal end, ``data: {"error": ...}`` (and no ``[DONE]``) after a
failure. Errors: ``{"error": {"kind", "message", "param"}}`` with the status of the
request error, or of the modelwire error kind."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from modelwire.errors import ModelwireError
from modelwire.events import Event
from modelwire.gateway import GatewayRequest, RequestError
from modelwire.types import AssistantMessage, Context, ImageContent, TextContent, UserMessage

STATUS = {"authentication": 401, "permission": 403, "not_found": 404, "rate_limit": 429,
          "overloaded": 503, "invalid_request": 400, "context_overflow": 400}  # fmt: skip


class FakeRenderer:
    def __init__(self, response_id: str) -> None:
        self.response_id = response_id

    def feed(self, event: Event) -> bytes:
        if event.type == "start":
            return _line({"type": "start", "id": self.response_id})
        if event.type in ("text_delta", "thinking_delta", "tool_call_delta"):
            return _line({"type": event.type, "delta": getattr(event, "delta", "")})
        if event.type == "done":
            u = event.message.usage
            return _line({"type": "done", "usage": [u.input, u.output]}) + b"data: [DONE]\n\n"
        if event.type == "error":
            err = event.message.error
            assert err is not None
            return _line({"error": {"kind": err.kind, "message": err.message}})
        return b""


class FakeFrontend:
    api = "openai-chat"
    paths = ("/v1/fake", "/fake")
    id_prefix = "gw-"  # no API of its own: a neutral id

    def parse(self, body: bytes, headers: Mapping[str, str]) -> GatewayRequest:
        try:
            data = json.loads(body)
        except ValueError:
            raise RequestError("the body is not JSON") from None
        if not isinstance(data, dict):
            raise RequestError("the body must be a JSON object")
        if not isinstance(data.get("model"), str):
            raise RequestError("model must be a string", param="model")
        if not isinstance(data.get("prompt"), str):
            raise RequestError("prompt must be a string", param="prompt")
        extra = {k: v for k, v in data.items() if k not in ("model", "prompt", "stream", "image")}
        content: Any = data["prompt"]
        if "image" in data:  # base64 PNG data
            content = (
                TextContent(text=content),
                ImageContent(data=data["image"], mime_type="image/png"),
            )
        return GatewayRequest(
            model=data["model"],
            context=Context(messages=(UserMessage(content=content),)),
            options={},
            stream=bool(data.get("stream", False)),
            passthrough=extra,
        )

    def renderer(self, request: GatewayRequest, response_id: str) -> FakeRenderer:
        return FakeRenderer(response_id)

    def message(
        self, request: GatewayRequest, message: AssistantMessage, response_id: str
    ) -> bytes:
        u = message.usage
        return json.dumps({"id": response_id, "text": message.text,
                           "usage": [u.input, u.output]}).encode()  # fmt: skip

    def error(self, error: RequestError | BaseException) -> tuple[int, dict[str, str], bytes]:
        headers: dict[str, str] = {}
        if isinstance(error, RequestError):
            status, kind, message, param = error.status, error.kind, error.message, error.param
        elif isinstance(error, ModelwireError):
            kind, message, param = error.kind, error.message, None
            status = STATUS.get(kind, 502)
            retry = getattr(error, "retry_after", None)
            if retry is not None:
                headers["retry-after"] = str(retry)
        else:
            status, kind, message, param = 500, "server", str(error), None
        body = {"error": {"kind": kind, "message": message, "param": param}}
        return status, headers, json.dumps(body).encode()


def _line(obj: Any) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


FRONTEND = FakeFrontend()
