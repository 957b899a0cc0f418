"""Input blocks beyond text for the OpenAI APIs: what both encoders share.

Whether a model takes a block at all is checked once for every API, before any
request is built (``modelwire._apis._common.check_input``).

References: Chat ``input_audio`` parts take ``format`` ``wav`` or ``mp3``
(https://platform.openai.com/docs/guides/audio, "Add audio to your existing
application"); Chat ``file`` parts and Responses ``input_file`` items take a file id
or base64 ``file_data`` with a ``filename`` (https://platform.openai.com/docs/guides/pdf-files).
"""

from __future__ import annotations

from ...errors import ConfigurationError
from ...types import AudioContent, DocumentContent

__all__ = ["audio_format", "data_url", "filename"]

_AUDIO_FORMATS = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/vnd.wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
}
_EXTENSIONS = {"application/pdf": "pdf", "text/plain": "txt", "text/markdown": "md",
               "text/csv": "csv", "text/html": "html", "application/json": "json"}  # fmt: skip


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
