"""Input blocks beyond text for the OpenAI APIs: the checks both encoders share.

References: Chat ``input_audio`` parts take ``format`` ``wav`` or ``mp3``
(https://platform.openai.com/docs/guides/audio, "Add audio to your existing
application"); Chat ``file`` parts and Responses ``input_file`` items take a file id
or base64 ``file_data`` with a ``filename`` (https://platform.openai.com/docs/guides/pdf-files).
"""

from __future__ import annotations

from ...errors import ConfigurationError
from ...types import AudioContent, Context, DocumentContent, Model, UserMessage

__all__ = ["audio_format", "check_input", "data_url", "filename"]

_AUDIO_FORMATS = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/vnd.wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
}

# Images are checked where a conversation is handed to a model (``modelwire._handoffs``,
# which owns the rule for images); documents and audio here, before any request.
_KIND: dict[type, str] = {DocumentContent: "document", AudioContent: "audio"}

_EXTENSIONS = {"application/pdf": "pdf", "text/plain": "txt", "text/markdown": "md",
               "text/csv": "csv", "text/html": "html", "application/json": "json"}  # fmt: skip


def check_input(model: Model, context: Context) -> None:
    """Every document and audio block is of a kind ``model.input`` names;
    otherwise a ``ConfigurationError`` naming the model, the block and the fix."""
    for i, msg in enumerate(context.messages):
        if msg.role == "assistant" or (
            isinstance(msg, UserMessage) and isinstance(msg.content, str)
        ):
            continue
        for j, block in enumerate(msg.content):
            kind = _KIND.get(type(block))
            if kind is not None and kind not in model.input:
                raise ConfigurationError(
                    f"messages[{i}].content[{j}] is a {kind} block, but model {model.id!r} "
                    f"does not declare {kind} input (Model.input={list(model.input)!r}); "
                    f"if it accepts {kind}s, declare it: Model(..., input=[..., {kind!r}])"
                )


def audio_format(block: AudioContent, where: str) -> str:
    """The ``format`` OpenAI names for the block's MIME type (``wav``, ``mp3``)."""
    fmt = _AUDIO_FORMATS.get(block.mime_type.lower())
    if fmt is None:
        raise ConfigurationError(
            f"{where}: OpenAI audio input takes wav or mp3 (audio/wav, audio/mpeg), "
            f"got {block.mime_type!r}: convert the audio first"
        )
    return fmt


def data_url(mime_type: str, data: str) -> str:
    return f"data:{mime_type};base64,{data}"


def filename(block: DocumentContent) -> str:
    """The ``filename`` OpenAI requires with ``file_data``: the title, else one
    named after the MIME type (``document.pdf``)."""
    if block.title:
        return block.title
    return f"document.{_EXTENSIONS.get(block.mime_type.lower(), 'bin')}"
