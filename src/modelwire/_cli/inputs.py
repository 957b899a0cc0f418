"""``-f/--fragment`` and ``-a/--attachment`` / ``--at``: files added to a prompt.

A fragment is a UTF-8 text file (or ``-``, stdin) whose text goes before the
prompt, in the order given, each once however often it is named (as ``llm``
does). An attachment is an image (PNG, JPEG, GIF, WebP), a PDF or audio (WAV,
MP3) sent as the library's content block; its type comes from the file's first
bytes, else its extension, or from ``--at PATH MIMETYPE``. Both are files only: a
URL is refused with the command that downloads it, since fetching it here would
send a request the user did not see.

The user message is ``[attachments…, fragments…, prompt]``. Each fragment is a
text block of its own ending in a newline, so an API that joins text blocks
(Chat Completions) reads ``fragment\\nprompt`` as ``llm`` sends it. The log
(:mod:`modelwire._client._log`) stores each fragment and attachment once, by the
sha256 of its content, and ``chat -c`` puts them back as they were sent.

A model the catalog lists takes the input kinds its entry says (``Model.input``);
an attachment of another kind is a usage error before anything is sent. A model
the catalog does not know (``local/…``, an unlisted id at ``--base-url``) is taken
to accept what it is given: its server decides.
"""

from __future__ import annotations

import base64
import hashlib
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import msgspec

from .common import CLIError

if TYPE_CHECKING:
    import argparse

    from ..types import Context, Model, UserContent, UserMessage

__all__ = ["MAX_ATTACHMENT_BYTES", "Inputs", "add_arguments", "read_inputs", "sniff"]

#: The largest attachment sent (20 MiB): Gemini's limit for a whole request with
#: inline data, and above what Anthropic (5 MB an image) and OpenAI take.
MAX_ATTACHMENT_BYTES = 20 * 1024 * 1024

_EXTENSIONS = {
    ".png": "image/png", ".jpg": "image/jpeg", ".jpeg": "image/jpeg", ".gif": "image/gif",
    ".webp": "image/webp", ".pdf": "application/pdf", ".wav": "audio/wav",
    ".mp3": "audio/mpeg",
}  # fmt: skip
_NAMES = {
    "image/png": "a PNG image", "image/jpeg": "a JPEG image", "image/gif": "a GIF image",
    "image/webp": "a WebP image", "application/pdf": "a PDF", "audio/wav": "WAV audio",
    "audio/mpeg": "MP3 audio",
}  # fmt: skip
_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """``-f``, ``-a`` and ``--at`` for ``chat`` / ``prompt`` and ``run``."""
    p.add_argument("-f", "--fragment", dest="fragments", action="append", metavar="FILE",
                   help="a text file ('-': stdin) whose text goes before the prompt; "
                   "repeatable, each sent once; logged once however often used")  # fmt: skip
    p.add_argument("-a", "--attachment", dest="attachments", action="append", metavar="PATH",
                   help="an image (png, jpeg, gif, webp), PDF or audio (wav, mp3) file "
                   "('-': stdin), its type read from its content; repeatable; at most "
                   f"{MAX_ATTACHMENT_BYTES // 2**20} MiB")  # fmt: skip
    p.add_argument("--at", "--attachment-type", dest="attachment_types", nargs=2,
                   action="append", metavar=("PATH", "MIMETYPE"),
                   help="an attachment of the given type, e.g. --at scan.bin image/png")  # fmt: skip


def sniff(data: bytes) -> str | None:
    """The MIME type of ``data`` from its first bytes (the formats attachments take)."""
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if data.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "audio/wav"
    if data.startswith(b"%PDF-"):
        return "application/pdf"
    # MP3: an ID3 tag, or an MPEG audio frame header (11 sync bits, layer III).
    if data.startswith(b"ID3"):
        return "audio/mpeg"
    if len(data) > 1 and data[0] == 0xFF and data[1] & 0xE6 == 0xE2 and data[1] & 0x18 != 0x08:
        return "audio/mpeg"
    return None


def _kind(mime: str) -> str | None:
    """The content-block kind (``Model.input``) of a MIME type."""
    top = mime.partition("/")[0]
    if top in ("image", "audio"):
        return top
    if mime == "application/pdf" or top == "text":
        return "document"
    return None


@dataclass
class _Attachment:
    label: str  # as the user named it: the path, or "stdin"
    mime: str
    kind: str
    block: UserContent


@dataclass
class Inputs:
    """What ``-f`` / ``-a`` / ``--at`` read, ready to go into the first user message."""

    fragments: dict[str, str] = field(default_factory=dict)
    """Each fragment's text, once, in order, to its source (a path or ``-``)."""
    attachments: list[_Attachment] = field(default_factory=list)
    sources: dict[str, str] = field(default_factory=dict)
    """Each attachment's sha256 to its source, for the log."""
    stdin_used: bool = False
    _sent: bool = False

    def __bool__(self) -> bool:
        return bool(self.fragments or self.attachments)

    def message(self, text: str) -> UserMessage:
        """The user message for ``text``: the first one carries the attachments and the
        fragments before the text (a chat's later messages are the text alone)."""
        from ..types import TextContent, UserMessage

        if self._sent or not self:
            return UserMessage(content=text)
        self._sent = True
        blocks: list[UserContent] = [a.block for a in self.attachments]
        blocks += [TextContent(text=f if f.endswith("\n") else f + "\n") for f in self.fragments]
        if text:
            blocks.append(TextContent(text=text))
        return UserMessage(content=blocks)

    def log_args(self) -> dict[str, Any]:
        """The ``fragments`` and ``attachments`` arguments of the log's recorder."""
        return {"fragments": dict(self.fragments), "attachments": dict(self.sources)}

    def fit(self, model: Model, ctx: Context | None = None) -> Model:
        """``model``, checked to take every attachment (and every block of ``ctx``, a
        continued conversation): a catalog model's input kinds are what its entry says;
        a model outside the catalog is widened to take what it is given."""
        from .. import _catalog as catalog

        listed = (model.provider, model.id) in catalog._load().by_key
        if listed:
            for a in self.attachments:
                if a.kind not in model.input:
                    what = _NAMES.get(a.mime, f"{a.mime} ({a.kind})")
                    raise CLIError(
                        "usage",
                        f"{model.provider}/{model.id} accepts {', '.join(model.input)}; "
                        f"{a.label} is {what}: choose a model that takes {a.kind} input "
                        "(modelwire models --json shows each model's input)",
                    )
            return model
        wanted = [a.kind for a in self.attachments] + _kinds(ctx)
        missing = tuple(dict.fromkeys(k for k in wanted if k not in model.input))
        return msgspec.structs.replace(model, input=model.input + missing) if missing else model


def _kinds(ctx: Context | None) -> list[str]:
    from ..types import UserMessage

    if ctx is None:
        return []
    return [b.type for m in ctx.messages if isinstance(m, UserMessage)
            and not isinstance(m.content, str) for b in m.content if b.type != "text"]  # fmt: skip


def read_inputs(args: argparse.Namespace, words: list[str] | None, *, repl: bool = False) -> Inputs:
    """Read every ``-f`` / ``-a`` / ``--at`` file; ``words`` are the prompt's arguments
    (stdin is read once: by ``-`` in one of these flags, or as the prompt; ``repl``:
    the chat will read its messages from stdin)."""
    specs = [("-f", s, None) for s in getattr(args, "fragments", None) or ()]
    specs += [("-a", s, None) for s in getattr(args, "attachments", None) or ()]
    specs += [("--at", s, m) for s, m in getattr(args, "attachment_types", None) or ()]
    inputs = Inputs()
    on_stdin = [f"{flag} -" for flag, s, _ in specs if s == "-"]
    if len(on_stdin) > 1 or (on_stdin and "-" in (words or ())):
        uses = on_stdin + (["the prompt '-'"] if "-" in (words or ()) else [])
        raise CLIError("usage", f"stdin can be read once, but {' and '.join(uses)} both "
                       "ask for it: save one of them to a file")  # fmt: skip
    if on_stdin and repl:
        raise CLIError("usage", f"{on_stdin[0]} reads stdin, where the chat reads its "
                       "messages: give a file, or a prompt to answer once")  # fmt: skip
    for flag, spec, mime in specs:
        if _URL.match(spec):
            raise CLIError("usage", f"{flag} {spec}: modelwire reads files, not URLs; download "
                           f"it first (curl -sSLo FILE '{spec}') and pass {flag} FILE")  # fmt: skip
        inputs.stdin_used |= spec == "-"
        if flag == "-f":
            text, source = _fragment(spec)
            if text:
                inputs.fragments.setdefault(text, source)
        else:
            _attach(inputs, flag, spec, mime)
    return inputs


def _read(flag: str, spec: str, limit: int | None = None) -> tuple[bytes, str]:
    """The bytes of ``spec`` (``-``: stdin), and its source as the log records it."""
    if spec == "-":
        stream = getattr(sys.stdin, "buffer", None)
        if stream is None:  # a replaced sys.stdin without bytes
            return sys.stdin.read().encode("utf-8"), "-"
        return (stream.read() if limit is None else stream.read(limit + 1)), "-"
    path = Path(spec).expanduser()
    if path.is_dir():
        raise CLIError("usage", f"{flag} {spec!r} is a directory: give one file (or '-' for stdin)")
    try:
        if limit is not None and path.stat().st_size > limit:
            raise CLIError("usage", _too_big(flag, spec, path.stat().st_size))
        return path.read_bytes(), str(path.resolve())
    except FileNotFoundError:
        raise CLIError("usage", f"{flag} {spec!r}: no such file") from None
    except OSError as exc:
        raise CLIError("usage", f"{flag} {spec!r}: cannot read it: {exc.strerror}") from None


def _too_big(flag: str, spec: str, size: int) -> str:
    return (f"{flag} {spec!r} is {size / 2**20:.1f} MiB, over the {MAX_ATTACHMENT_BYTES // 2**20} "
            "MiB an attachment may be: make it smaller (fewer pages, a lower resolution)")  # fmt: skip


def _fragment(spec: str) -> tuple[str, str]:
    data, source = _read("-f", spec)
    try:
        return data.decode("utf-8"), source
    except UnicodeDecodeError:
        raise CLIError("usage", f"-f {spec!r} is not UTF-8 text (a binary file?): a fragment is "
                       "text; attach an image, PDF or audio file with -a instead") from None  # fmt: skip


def _checked_kind(spec: str, mime: str) -> tuple[str, str]:
    mime = mime.strip().lower()
    kind = _kind(mime)
    if kind is None:
        raise CLIError("usage", f"--at {spec} {mime}: an attachment's type is image/..., "
                       "audio/..., application/pdf or text/... (e.g. image/png)")  # fmt: skip
    return mime, kind


def _attach(inputs: Inputs, flag: str, spec: str, mime: str | None) -> None:
    from ..types import AudioContent, DocumentContent, ImageContent

    if mime is not None:
        _checked_kind(spec, mime)  # before reading: a wrong type is the first thing to say
    data, source = _read(flag, spec, MAX_ATTACHMENT_BYTES)
    if len(data) > MAX_ATTACHMENT_BYTES:
        raise CLIError("usage", _too_big(flag, spec, len(data)))
    label = "stdin" if spec == "-" else spec
    if not data:
        raise CLIError("usage", f"{flag} {spec!r} is empty")
    if mime is None:
        mime = sniff(data) or _EXTENSIONS.get(Path(spec).suffix.lower())
        if mime is None:
            raise CLIError("usage", f"cannot tell what kind of file {label!r} is: -a takes "
                           "PNG, JPEG, GIF, WebP, PDF, WAV and MP3 files, known by their "
                           f"content or extension; name its type with --at {spec} MIMETYPE "
                           f"(e.g. --at {spec} image/png)")  # fmt: skip
    mime, kind = _checked_kind(spec, mime)
    encoded = base64.b64encode(data).decode("ascii")
    block: UserContent
    if kind == "image":
        block = ImageContent(data=encoded, mime_type=mime)
    elif kind == "audio":
        block = AudioContent(data=encoded, mime_type=mime)
    else:
        block = DocumentContent(mime_type=mime, data=encoded,
                                title=None if spec == "-" else Path(spec).name)  # fmt: skip
    sha = hashlib.sha256(data).hexdigest()
    if sha in inputs.sources:
        return  # the same file twice is sent once
    inputs.sources[sha] = source
    inputs.attachments.append(_Attachment(label, mime, kind, block))
