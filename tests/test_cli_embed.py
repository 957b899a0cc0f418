"""``modelwire embed``: one vector per input in input order, ``-f`` files, ``--json``,
and the one-line errors of the CLI — against a MockServer on loopback."""

from __future__ import annotations

import json
from pathlib import Path

from modelwire.testing import MockServer, error_reply, mock_vector
from test_cli import assert_one_line_error, cli


def _close(got: list[float], want: list[float]) -> bool:
    return len(got) == len(want) and all(abs(a - b) < 1e-6 for a, b in zip(got, want, strict=True))


def test_texts_and_file_lines_are_embedded_in_order(tmp_path: Path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_text("from the file\n\nsecond line\n", encoding="utf-8")
    with MockServer() as server:
        proc = cli("embed", "-m", "local/emb", "--base-url", server.base_url, "a cat", "一只狗",
                   "-f", str(lines), "--dimensions", "8")  # fmt: skip
        body = server.last_request.json()
    assert proc.returncode == 0, proc.stderr
    texts = ["a cat", "一只狗", "from the file", "second line"]
    assert body["input"] == texts and body["dimensions"] == 8
    vectors = [json.loads(line) for line in proc.stdout.splitlines()]
    assert len(vectors) == 4
    assert all(_close(v, mock_vector(t, 8)) for v, t in zip(vectors, texts, strict=True))


def test_json_output_has_the_model_vectors_usage_and_cost() -> None:
    with MockServer() as server:
        proc = cli("embed", "-m", "local/emb", "--base-url", server.base_url, "--json",
                   "-f", "-", stdin="one two\nthree\n")  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["model"] == "emb" and doc["usage"] == {"input_tokens": 3, "estimated": False}
    assert _close(doc["embeddings"][1], mock_vector("three"))
    assert doc["cost"] == 0.0


def test_nothing_to_embed_and_a_failed_call_are_one_line_errors() -> None:
    assert_one_line_error(cli("embed", "-m", "local/emb", "--base-url", "http://127.0.0.1:9/v1"),
                          "usage", "nothing to embed")  # fmt: skip
    with MockServer([error_reply(401, "bad key")]) as server:
        proc = cli("embed", "-m", "local/emb", "--base-url", server.base_url, "x")
    assert proc.returncode == 1
    assert_one_line_error(proc, "authentication", "bad key")


def test_a_model_whose_api_does_not_embed_is_a_configuration_error() -> None:
    proc = cli("embed", "-m", "anthropic/claude-sonnet-4-5", "--key", "sk-x", "hello")
    assert proc.returncode == 2
    assert_one_line_error(proc, "configuration", "no embedding endpoint", "openai-chat")


def test_models_embeddings_lists_the_embedding_models_only() -> None:
    proc = cli("models", "--embeddings", "--plain")
    assert proc.returncode == 0, proc.stderr
    assert "text-embedding-3-small" in proc.stdout and "nomic-embed-text" in proc.stdout
    assert "gpt-4.1-mini" not in proc.stdout
    gemini = cli("models", "--embeddings", "gemini", "--json")  # an alias of google
    rows = [json.loads(line) for line in gemini.stdout.splitlines()]
    assert [(r["id"], r["dimensions"]) for r in rows] == [("gemini-embedding-001", 3072)]
    chat = cli("models", "openai", "--plain")
    assert "text-embedding-3-small" not in chat.stdout
    assert_one_line_error(cli("models", "--embeddings", "nobody"), "not_found", "nobody")


def test_each_request_is_a_row_of_the_log_unless_no_log(tmp_path: Path) -> None:
    from test_cli_conventions import _data_env

    env = _data_env(tmp_path)
    with MockServer() as srv:
        args = ["-m", "local/m", "--base-url", srv.model().base_url]
        assert cli("embed", *args, "a cat", "a dog", env=env).returncode == 0
        assert cli("embed", *args, "--no-log", "not kept", env=env).returncode == 0
    proc = cli("logs", "--json", env=env)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["prompt"] for r in rows] == ["a cat\na dog"]
    assert rows[0]["input_tokens"] > 0
