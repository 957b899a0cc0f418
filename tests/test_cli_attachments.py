"""``-a/--attachment PATH|-`` and ``--at PATH MIMETYPE``: images, PDFs and audio sent
as content blocks, their type read from their first bytes (else the extension);
the bytes a provider receives are the file's, for Chat Completions, Anthropic and
Gemini alike; the log keeps each attachment once, by sha256. Each test runs
``python -m modelwire`` as a subprocess against a loopback MockServer."""

from __future__ import annotations

import base64
import hashlib
import json
import sqlite3
import subprocess
import sys
import zlib
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from modelwire.testing import MockServer
from test_cli import _env, _local, assert_one_line_error, cli
from test_cli_conventions import _data_env


def _png() -> bytes:
    """A valid 1x1 PNG."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return len(data).to_bytes(4, "big") + body + zlib.crc32(body).to_bytes(4, "big")

    header = (1).to_bytes(4, "big") * 2 + bytes([8, 2, 0, 0, 0])
    pixels = zlib.compress(b"\x00\xff\x00\x00")
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels)
            + chunk(b"IEND", b""))  # fmt: skip


PNG = _png()
PDF = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
WAV = (b"RIFF" + (36 + 4).to_bytes(4, "little") + b"WAVEfmt " + (16).to_bytes(4, "little")
       + bytes([1, 0, 1, 0]) + (8000).to_bytes(4, "little") + (8000).to_bytes(4, "little")
       + bytes([1, 0, 8, 0]) + b"data" + (4).to_bytes(4, "little") + b"\x80\x80\x80\x80")  # fmt: skip


def _files(tmp_path: Path) -> None:
    (tmp_path / "chart.png").write_bytes(PNG)
    (tmp_path / "report.pdf").write_bytes(PDF)
    (tmp_path / "voice.wav").write_bytes(WAV)


def _rows(tmp_path: Path) -> list[dict[str, Any]]:
    proc = cli("logs", "--json", "-n", "0", env=_data_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _received(api: str, body: dict[str, Any]) -> list[tuple[str, bytes]]:
    """(MIME type or format, decoded bytes) of every binary part of the first user
    message, in the provider's own request format."""
    out: list[tuple[str, bytes]] = []
    if api == "openai-chat":
        for part in body["messages"][0]["content"]:
            if part["type"] == "image_url":
                head, _, data = part["image_url"]["url"].partition(",")
                out.append((head, base64.b64decode(data)))
            elif part["type"] == "file":
                head, _, data = part["file"]["file_data"].partition(",")
                out.append((f"{head} {part['file']['filename']}", base64.b64decode(data)))
            elif part["type"] == "input_audio":
                audio = part["input_audio"]
                out.append((audio["format"], base64.b64decode(audio["data"])))
    elif api == "anthropic-messages":
        for block in body["messages"][0]["content"]:
            if block["type"] in ("image", "document"):
                src = block["source"]
                out.append((f"{block['type']} {src['media_type']}", base64.b64decode(src["data"])))
    else:
        for part in body["contents"][0]["parts"]:
            if "inlineData" in part:
                blob = part["inlineData"]
                out.append((blob["mimeType"], base64.b64decode(blob["data"])))
    return out


@pytest.mark.parametrize(
    ("api", "files", "expected"),
    [
        ("openai-chat", ["chart.png", "report.pdf", "voice.wav"],
         [("data:image/png;base64", PNG), ("data:application/pdf;base64 report.pdf", PDF),
          ("wav", WAV)]),
        ("anthropic-messages", ["chart.png", "report.pdf"],
         [("image image/png", PNG), ("document application/pdf", PDF)]),
        ("google-generative-ai", ["chart.png", "report.pdf", "voice.wav"],
         [("image/png", PNG), ("application/pdf", PDF), ("audio/wav", WAV)]),
    ],
)  # fmt: skip
def test_the_provider_receives_the_files_bytes(
    tmp_path: Path, api: str, files: list[str], expected: list[tuple[str, bytes]]
) -> None:
    _files(tmp_path)
    flags = [x for f in files for x in ("-a", f)]
    with MockServer(["I see them"]) as srv:
        proc = cli("chat", *_local(srv, api), *flags, "describe these", cwd=tmp_path,
                   env=_data_env(tmp_path))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "I see them\n"
    body = srv.requests[0].json()
    assert _received(api, body) == expected
    assert "describe these" in json.dumps(body)
    (row,) = _rows(tmp_path)
    assert row["prompt"] == "describe these"
    assert [(a["sha256"], a["bytes"], a["source"]) for a in row["attachments"]] == [
        (_sha(data), len(data), str(tmp_path / f))
        for f, (_, data) in zip(files, expected, strict=True)
    ]


def test_type_from_content_then_extension_then_at(tmp_path: Path) -> None:
    (tmp_path / "really_png.jpg").write_bytes(PNG)  # the content wins over the name
    (tmp_path / "truncated.pdf").write_bytes(b"not quite a pdf")  # the extension decides
    (tmp_path / "scan.bin").write_bytes(PNG[:8] + b"x")  # a broken PNG: named by --at
    (tmp_path / "data.bin").write_bytes(b"\x00\x01 mystery")
    env = _data_env(tmp_path)
    with MockServer(["ok", "ok"]) as srv:
        proc = cli("chat", *_local(srv, "google-generative-ai"), "-a", "really_png.jpg",
                   "-a", "truncated.pdf", "--at", "data.bin", "image/webp", "what?",
                   cwd=tmp_path, env=env)  # fmt: skip
        unknown = cli("chat", *_local(srv), "-a", "data.bin", "what?", cwd=tmp_path, env=env)
        stdin = subprocess.run(
            [sys.executable, "-m", "modelwire", "chat", *_local(srv, "google-generative-ai"),
             "-a", "-", "what is piped?"],
            input=WAV, capture_output=True, timeout=90, cwd=tmp_path, env={**_env(), **env},
        )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert _received("google-generative-ai", srv.requests[0].json()) == [
        ("image/png", PNG), ("application/pdf", b"not quite a pdf"),
        ("image/webp", b"\x00\x01 mystery")]  # fmt: skip
    assert_one_line_error(unknown, "usage", "'data.bin'", "--at data.bin MIMETYPE")
    assert unknown.returncode == 2
    assert stdin.returncode == 0, stdin.stderr
    assert _received("google-generative-ai", srv.requests[1].json()) == [("audio/wav", WAV)]
    assert len(srv.requests) == 2  # the unknown type sent nothing
    assert _rows(tmp_path)[-1]["attachments"][0]["source"] == "-"


def test_a_catalog_model_refuses_a_kind_it_does_not_take(tmp_path: Path) -> None:
    _files(tmp_path)
    env = _data_env(tmp_path)
    with MockServer(["fine"]) as srv:
        base = srv.model("openai-chat").base_url
        refused = cli("chat", "-m", "openai/gpt-4.1-mini", "--base-url", base, "--key", "sk-x",
                      "-a", "chart.png", "-a", "report.pdf", "summarise", cwd=tmp_path, env=env)  # fmt: skip
        no_images = cli("chat", "-m", "deepseek/deepseek-chat", "--base-url", base, "--key", "k",
                        "-a", "chart.png", "what?", cwd=tmp_path, env=env)  # fmt: skip
        assert srv.requests == []
        accepted = cli("chat", "-m", "openai/gpt-4.1-mini", "--base-url", base, "--key", "sk-x",
                       "-a", "chart.png", "what?", cwd=tmp_path, env=env)  # fmt: skip
    assert_one_line_error(refused, "usage", "openai/gpt-4.1-mini accepts text, image;",
                          "report.pdf is a PDF")  # fmt: skip
    assert refused.returncode == no_images.returncode == 2
    assert_one_line_error(no_images, "usage", "deepseek/deepseek-chat accepts text;",
                          "chart.png is a PNG image")  # fmt: skip
    assert accepted.returncode == 0, accepted.stderr
    assert _received("openai-chat", srv.requests[0].json()) == [("data:image/png;base64", PNG)]


def test_attachment_errors(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    (tmp_path / "empty.png").write_bytes(b"")
    huge = tmp_path / "huge.png"
    with huge.open("wb") as f:  # sparse: 20 MiB + 1 byte of nothing on disk
        f.write(PNG[:8])
        f.truncate(20 * 2**20 + 1)
    env = _data_env(tmp_path)
    with MockServer(["never"]) as srv:
        cases = [
            (["-a", "missing.png"], ("'missing.png'", "no such file")),
            (["-a", "dir"], ("'dir'", "is a directory")),
            (["-a", "empty.png"], ("'empty.png'", "is empty")),
            (["-a", "huge.png"], ("'huge.png'", "20.0 MiB", "over the 20 MiB")),
            (["-a", "https://example.com/cat.png"], ("download it first",)),
            (["--at", "dir/../empty.png", "application/zip"], ("application/zip",)),
            (["--at", "huge.png", "image/png", "-a", "-", "-f", "-"], ("stdin can be read once",)),
        ]  # fmt: skip
        for args, needles in cases:
            proc = cli("chat", *_local(srv), *args, "hi", cwd=tmp_path, env=env)
            assert proc.returncode == 2, (args, proc.stderr)
            assert_one_line_error(proc, "usage", *needles)
        assert srv.requests == []


def test_the_log_keeps_an_attachment_once_and_continuing_resends_it(tmp_path: Path) -> None:
    _files(tmp_path)
    env = _data_env(tmp_path)
    with MockServer(["a chart", "green", "a chart again"]) as srv:
        one = cli("chat", *_local(srv, "anthropic-messages"), "-a", "chart.png", "what is it?",
                  cwd=tmp_path, env=env)  # fmt: skip
        two = cli("chat", "-c", "which colour?", env=env)
        three = cli("chat", *_local(srv, "anthropic-messages"), "-a", "chart.png", "and now?",
                    cwd=tmp_path, env=env)  # fmt: skip
    assert one.returncode == two.returncode == three.returncode == 0, (one.stderr, two.stderr)
    first, second, third = (r.json()["messages"] for r in srv.requests)
    # The continued conversation sends the image again, byte for byte.
    assert _received("anthropic-messages", {"messages": second}) == [("image image/png", PNG)]
    assert second[0]["content"][0] == first[0]["content"][0]
    assert _received("anthropic-messages", {"messages": third}) == [("image image/png", PNG)]
    with closing(sqlite3.connect(tmp_path / "data" / "modelwire" / "logs.db")) as conn:
        assert conn.execute("SELECT count(*), sha256, size FROM attachments").fetchone() == (
            1, _sha(PNG), len(PNG))  # fmt: skip
        assert conn.execute("SELECT count(*) FROM response_attachments").fetchone()[0] == 3
        stored = "".join(r[0] for r in conn.execute("SELECT messages_json FROM responses"))
    assert base64.b64encode(PNG).decode() not in stored and _sha(PNG) in stored
    assert [[a["sha256"] for a in r["attachments"]] for r in _rows(tmp_path)] == [[_sha(PNG)]] * 3


def test_run_takes_attachments(tmp_path: Path) -> None:
    _files(tmp_path)
    with MockServer(["a small chart"]) as srv:
        proc = cli("run", *_local(srv, "google-generative-ai"), "--root", str(tmp_path),
                   "-a", "chart.png", "describe the image", cwd=tmp_path,
                   env=_data_env(tmp_path))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert _received("google-generative-ai", srv.requests[0].json()) == [("image/png", PNG)]


@pytest.mark.parametrize(
    ("head", "mime"),
    [
        (PNG, "image/png"), (b"\xff\xd8\xff\xe0\x00\x10JFIF", "image/jpeg"),
        (b"GIF89a\x01\x00", "image/gif"), (b"RIFF\x24\x00\x00\x00WEBPVP8 ", "image/webp"),
        (PDF, "application/pdf"), (WAV, "audio/wav"), (b"ID3\x04\x00", "audio/mpeg"),
        (b"\xff\xfb\x90\x64", "audio/mpeg"), (b"\xff\xf1\x50\x80", None),  # AAC: not MP3
        (b"plain text", None),
    ],
)  # fmt: skip
def test_sniff_reads_the_first_bytes(head: bytes, mime: str | None) -> None:
    from modelwire._cli.inputs import sniff

    assert sniff(head) == mime
