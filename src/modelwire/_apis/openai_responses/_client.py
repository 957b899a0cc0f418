"""Output items the client executes: shell, local shell, apply_patch, custom tools,
MCP approvals and client tool search (the Responses API reference, "Output items").

OpenAI runs built-in tools such as web search itself; these items instead ask the
*client* to act, and the next request must carry the item back (byte for byte,
like a reasoning item) followed by its answer — ``shell_call_output``,
``local_shell_call_output``,
``apply_patch_call_output``, ``custom_tool_call_output``, ``mcp_approval_response``
or ``tool_search_output``. Each surfaces as a :class:`~modelwire.types.ToolCall`
so an agent answers it like any call (the mapping is on :data:`CLIENT_ITEMS`).
"""

from __future__ import annotations

from typing import Any

import msgspec

from ...errors import ConfigurationError, MalformedChunkError
from ...types import ToolResultMessage
from .._common import dumps

__all__ = [
    "CLIENT_ITEMS",
    "ClientItem",
    "client_call",
    "client_item",
    "client_item_type",
    "client_output",
    "is_client",
]


class ClientItem(msgspec.Struct, gc=False):
    # An output item the client executes (see ``CLIENT_ITEMS``), fields as in the
    # API reference's output item types.
    type: str
    id: str | None = None
    call_id: str | None = None
    name: str | None = None  # custom_tool_call; mcp_approval_request: the MCP tool
    input: str | None = None  # custom_tool_call: free-form text
    action: msgspec.Raw = msgspec.Raw()  # local_shell_call: {"type": "exec", "command": [...]};
    # shell_call: {"commands": [...], "timeout_ms", "max_output_length"}
    operation: msgspec.Raw = msgspec.Raw()  # apply_patch_call: {"type": "update_file", ...}
    arguments: msgspec.Raw = msgspec.Raw()  # tool_search_call: object; mcp_approval_request: str
    server_label: str | None = None  # mcp_approval_request
    execution: str | None = None  # tool_search_call: "client" or "server"
    environment: msgspec.Raw = msgspec.Raw()  # shell_call: {"type": "local"} or a container


client_item = msgspec.json.Decoder(ClientItem)


#: Output items the *client* executes, by item type → the ``ToolCall.name`` they
#: get ("" = the item's own ``name``). Each becomes a ToolCall an agent answers:
#:
#: * ``shell_call`` (the shell tool, successor of ``local_shell``) → ``shell``,
#:   arguments = the ``action`` object (``commands``, ``timeout_ms``,
#:   ``max_output_length``) — when its ``environment`` is local or not given: "your
#:   integration executes them and returns the outputs"
#:   (https://platform.openai.com/docs/guides/tools-shell); a hosted container's call
#:   is OpenAI's to run;
#: * ``local_shell_call`` → ``local_shell``, arguments = the ``action`` object;
#: * ``apply_patch_call`` → ``apply_patch``, arguments = the ``operation`` object;
#: * ``custom_tool_call`` → its ``name``, arguments = ``{"input": <the free-form text>}``;
#: * ``mcp_approval_request`` → ``mcp_approval_request``, ``ToolCall.id`` = the item
#:   ``id``, arguments = ``{"server_label", "name", "arguments"}`` of the request;
#: * ``tool_search_call`` with ``execution: "client"`` → ``tool_search``, arguments =
#:   its ``arguments`` object (server-executed searches are not surfaced).
#:
#: ``ToolCall.signature`` holds the item exactly as received in
#: ``response.output_item.done``; the next request replays it byte for byte and
#: answers it with the matching output item (``_encode``).
CLIENT_ITEMS: dict[str, str] = {
    "shell_call": "shell",
    "local_shell_call": "local_shell",
    "apply_patch_call": "apply_patch",
    "custom_tool_call": "",
    "mcp_approval_request": "mcp_approval_request",
    "tool_search_call": "tool_search",
}


_LOCAL = msgspec.json.Decoder(dict[str, Any])


def is_client(item: ClientItem) -> bool:
    if item.type == "shell_call":
        return _local_environment(item.environment)
    return item.type in CLIENT_ITEMS and (
        item.type != "tool_search_call" or item.execution == "client"
    )


def _local_environment(raw: msgspec.Raw) -> bool:
    """Whether a shell call's ``environment`` is the caller's own machine: ``local``,
    or none given (the shell tool before hosted containers)."""
    text = bytes(raw).strip() if raw else b""
    if not text or text == b"null":
        return True
    try:
        env = _LOCAL.decode(text)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return False
    return env.get("type") == "local"


def _object_text(raw: msgspec.Raw, where: str, etype: str) -> str:
    """An object field kept verbatim (``{}`` when absent or null)."""
    text = bytes(raw).decode() if raw else ""
    stripped = text.strip()
    if not stripped or stripped == "null":
        return "{}"
    if not stripped.startswith("{"):
        raise MalformedChunkError(f"malformed {etype} event: item.{where} must be an object")
    return text


def client_call(item: ClientItem, etype: str) -> tuple[str | None, str | None, str | None]:
    """``(ToolCall.id, ToolCall.name, arguments text)`` of a client-executed item;
    the arguments are ``None`` while the item does not carry them yet (``.added``)."""
    t = item.type
    call_id = item.call_id or item.id
    if t == "custom_tool_call":
        args = None if item.input is None else dumps({"input": item.input}).decode()
        return call_id, item.name, args
    if t == "mcp_approval_request":
        # The approval answers the request item itself: its id is the call id.
        raw = bytes(item.arguments) if item.arguments else b'""'
        try:
            text = msgspec.json.decode(raw)
        except msgspec.DecodeError:
            text = None
        if not isinstance(text, str):
            raise MalformedChunkError(f"malformed {etype} event: item.arguments must be a string")
        args = dumps(
            {"server_label": item.server_label, "name": item.name, "arguments": text}
        ).decode()
        return item.id, CLIENT_ITEMS[t], args
    field = {"shell_call": "action", "local_shell_call": "action",
             "apply_patch_call": "operation"}.get(t, "arguments")  # fmt: skip
    raw_field: msgspec.Raw = getattr(item, field)
    args = _object_text(raw_field, field, etype) if raw_field else None
    return call_id, CLIENT_ITEMS[t], args


# --------------------------------------------------------------------------- outbound


class _Head(msgspec.Struct):
    type: str


_head = msgspec.json.Decoder(_Head)


def client_item_type(signature: str | None) -> str | None:
    """The item type when ``ToolCall.signature`` holds a client-executed item
    (``None`` for a plain ``fc_…`` id or no signature)."""
    if not signature or not signature.startswith("{"):
        return None
    try:
        kind = _head.decode(signature).type
    except (msgspec.ValidationError, msgspec.DecodeError):
        return None
    return kind if kind in CLIENT_ITEMS else None


_APPROVE = frozenset({"true", "yes", "approve", "approved"})
_DENY = frozenset({"false", "no", "deny", "denied", "reject", "rejected"})


def _approval(msg: ToolResultMessage, where: str) -> tuple[bool, str | None]:
    """Whether the result approves the MCP call, and the reason given."""
    text = msg.text.strip()
    if msg.is_error:
        return False, text or None
    word = text.lower()
    if word in _APPROVE or word in _DENY:
        return word in _APPROVE, None
    try:
        value = msgspec.json.decode(text)
    except msgspec.DecodeError:
        value = None
    if isinstance(value, dict) and isinstance(value.get("approve"), bool):
        reason = value.get("reason")
        return value["approve"], reason if isinstance(reason, str) else None
    raise ConfigurationError(
        f"{where} answers an mcp_approval_request: its content must say approve or deny "
        f'("approve"/"deny", true/false, or {{"approve": true, "reason": "..."}}), '
        f"got {text[:80]!r}"
    )


def _tools(msg: ToolResultMessage, where: str) -> list[Any]:
    try:
        value = msgspec.json.decode(msg.text)
    except msgspec.DecodeError:
        value = None
    if isinstance(value, dict):
        value = value.get("tools")
    if not isinstance(value, list):
        raise ConfigurationError(
            f"{where} answers a client tool_search_call: its content must be a JSON array "
            'of tool definitions (or {"tools": [...]}) to load'
        )
    return value


def _shell_output(msg: ToolResultMessage, item: str) -> dict[str, Any]:
    """The ``shell_call_output`` answering a shell call: the result's own list of
    ``{stdout, stderr, outcome}`` chunks when it gives one (as JSON), else its text as
    one command's output — stdout, or stderr with exit code 1 for an error result —
    and the call's ``max_output_length``, which "should be passed back with the raw
    output" (https://platform.openai.com/docs/guides/tools-shell)."""
    text = msg.text
    try:
        value = msgspec.json.decode(text) if text.lstrip().startswith(("[", "{")) else None
    except msgspec.DecodeError:
        value = None
    if isinstance(value, dict):
        value = value.get("output")
    if not (
        isinstance(value, list)
        and value
        and all(isinstance(c, dict) and isinstance(c.get("outcome"), dict) for c in value)
    ):
        stdout, stderr = ("", text) if msg.is_error else (text, "")
        value = [{"stdout": stdout, "stderr": stderr,
                  "outcome": {"type": "exit", "exit_code": 1 if msg.is_error else 0}}]  # fmt: skip
    out: dict[str, Any] = {"type": "shell_call_output", "call_id": msg.tool_call_id,
                           "output": value}  # fmt: skip
    try:
        action = _LOCAL.decode(item).get("action")
    except (msgspec.DecodeError, msgspec.ValidationError):
        action = None
    limit = action.get("max_output_length") if isinstance(action, dict) else None
    if type(limit) is int:
        out["max_output_length"] = limit
    return out


def client_output(
    msg: ToolResultMessage,
    kind: str,
    output: str | list[dict[str, Any]],
    where: str,
    received: str = "{}",
) -> dict[str, Any]:
    """The input item answering a client-executed item of type ``kind`` (``received``:
    that item as received).

    ``output`` is the result as a ``function_call_output`` would carry it (a
    string, or input_text/input_image parts).
    """
    call_id = msg.tool_call_id
    if kind == "shell_call":
        return _shell_output(msg, received)
    if kind == "custom_tool_call":
        return {"type": "custom_tool_call_output", "call_id": call_id, "output": output}
    if kind == "local_shell_call":
        # LocalShellCallOutput.id: "the unique ID of the local shell tool call
        # generated by the model", i.e. the call's call_id.
        return {"type": "local_shell_call_output", "id": call_id, "output": msg.text}
    if kind == "apply_patch_call":
        status = "failed" if msg.is_error else "completed"
        return {"type": "apply_patch_call_output", "call_id": call_id, "status": status,
                "output": msg.text}  # fmt: skip
    if kind == "mcp_approval_request":
        approve, reason = _approval(msg, where)
        item: dict[str, Any] = {"type": "mcp_approval_response",
                                "approval_request_id": call_id, "approve": approve}  # fmt: skip
        if reason:
            item["reason"] = reason
        return item
    # tool_search_call (execution "client"): the tools to load.
    return {"type": "tool_search_output", "call_id": call_id, "execution": "client",
            "tools": _tools(msg, where)}  # fmt: skip
