"""The Chat Completions request body as typed msgspec values (the parser's input).

Reference: https://platform.openai.com/docs/api-reference/chat/create ("Request
body": ``messages`` by ``role``, content parts by ``type``). Only what the gateway
translates is typed; the top level is read as raw slices first, so a field modelwire
does not model is passed through unchanged. Unknown fields *inside* a message or a
part are ignored: a client that sends back the SDK's whole message object
(``annotations``, ``parsed``, ``audio: null``) must not be refused for it.
"""

from __future__ import annotations

from typing import Any, Literal

import msgspec

__all__ = [
    "Assistant",
    "AudioPart",
    "Detail",
    "Developer",
    "FilePart",
    "FunctionMessage",
    "ImagePart",
    "Message",
    "NamedToolChoice",
    "RefusalPart",
    "ResponseFormat",
    "StreamOptions",
    "System",
    "TextPart",
    "Tool",
    "ToolCallIn",
    "ToolMessage",
    "User",
]


class _Part(msgspec.Struct, tag_field="type", frozen=True):
    pass


class TextPart(_Part, tag="text", frozen=True):
    text: str


class RefusalPart(_Part, tag="refusal", frozen=True):
    refusal: str


class _ImageURL(msgspec.Struct, frozen=True):
    url: str
    detail: str | None = None


class ImagePart(_Part, tag="image_url", frozen=True):
    image_url: _ImageURL


class _AudioData(msgspec.Struct, frozen=True):
    data: str
    format: str


class AudioPart(_Part, tag="input_audio", frozen=True):
    input_audio: _AudioData


class _FileData(msgspec.Struct, frozen=True):
    file_id: str | None = None
    file_data: str | None = None
    filename: str | None = None


class FilePart(_Part, tag="file", frozen=True):
    file: _FileData


class Detail(msgspec.Struct, frozen=True):
    """One ``reasoning_details`` entry (OpenRouter's form, also what the gateway seals
    thinking origins in: https://openrouter.ai/docs/use-cases/reasoning-tokens)."""

    type: str
    text: str | None = None
    signature: str | None = None
    data: str | None = None
    format: str | None = None
    index: int | None = None


class _Carried(msgspec.Struct, frozen=True):
    reasoning_details: list[Detail] | None = None
    signature: str | None = None


class _Extra(msgspec.Struct, frozen=True):
    modelwire: _Carried | None = None


class _Function(msgspec.Struct, frozen=True):
    name: str
    arguments: str


class ToolCallIn(msgspec.Struct, frozen=True):
    id: str
    function: _Function
    type: Literal["function"] = "function"
    extra_content: _Extra | None = None


class _Message(msgspec.Struct, tag_field="role", frozen=True):
    pass


class System(_Message, tag="system", frozen=True):
    content: str | list[TextPart]


class Developer(_Message, tag="developer", frozen=True):
    content: str | list[TextPart]


class User(_Message, tag="user", frozen=True):
    content: str | list[TextPart | ImagePart | AudioPart | FilePart]


class Assistant(_Message, tag="assistant", frozen=True):
    content: str | list[TextPart | RefusalPart] | None = None
    refusal: str | None = None
    tool_calls: list[ToolCallIn] | None = None
    # Reasoning as DeepSeek (``reasoning_content``) and OpenRouter/vLLM (``reasoning``,
    # ``reasoning_details``) send it back; not in OpenAI's own reference.
    reasoning_content: str | None = None
    reasoning: str | None = None
    reasoning_details: list[Detail] | None = None
    audio: dict[str, Any] | None = None
    function_call: dict[str, Any] | None = None


class ToolMessage(_Message, tag="tool", frozen=True):
    tool_call_id: str
    content: str | list[TextPart]
    name: str | None = None


class FunctionMessage(_Message, tag="function", frozen=True):
    name: str
    content: str | None = None


Message = System | Developer | User | Assistant | ToolMessage | FunctionMessage


class _FunctionDef(msgspec.Struct, frozen=True):
    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None


class Tool(msgspec.Struct, frozen=True):
    function: _FunctionDef
    type: Literal["function"] = "function"


class _NamedFunction(msgspec.Struct, frozen=True):
    name: str


class NamedToolChoice(msgspec.Struct, frozen=True):
    function: _NamedFunction
    type: Literal["function"] = "function"


class _JsonSchema(msgspec.Struct, frozen=True):
    name: str
    schema: dict[str, Any] | None = None
    strict: bool | None = None
    description: str | None = None


class ResponseFormat(msgspec.Struct, frozen=True):
    type: Literal["text", "json_schema", "json_object"]
    json_schema: _JsonSchema | None = None


class StreamOptions(msgspec.Struct, frozen=True):
    include_usage: bool | None = None
    include_obfuscation: bool | None = None
