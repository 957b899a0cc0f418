"""``--schema`` / ``--schema-multi`` on ``chat``, ``prompt`` and ``run``: the concise
syntax, inline and file JSON Schemas, the validated value on stdout, the typed error
for an answer that does not match, usage errors before anything is sent, and the
schema in the log. Each test runs ``python -m modelwire`` against a loopback MockServer.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from modelwire._client import _log
from modelwire._client._log import _schema
from modelwire.testing import MockServer
from test_cli import _local, assert_one_line_error, cli
from test_cli_conventions import _data_env, _in_a_terminal


def _sent_schema(srv: MockServer, n: int = 0) -> dict[str, object]:
    schema: dict[str, object] = srv.requests[n].json()["response_format"]["json_schema"]["schema"]
    return schema


def test_the_concise_syntax_is_sent_and_the_value_printed(tmp_path: Path) -> None:
    with MockServer(['{"name": "Ada", "age": 36, "bio": "mathematician"}']) as srv:
        proc = cli("chat", *_local(srv), "--schema", "name, age int, bio: their bio", "a person",
                   env=_data_env(tmp_path))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    # A pipe gets one line, the value alone.
    assert proc.stdout == '{"name": "Ada", "age": 36, "bio": "mathematician"}\n'
    assert proc.stderr == ""
    schema = _sent_schema(srv)
    assert schema["properties"] == {
        "name": {"type": "string"}, "age": {"type": "integer"},
        "bio": {"type": "string", "description": "their bio"},
    }  # fmt: skip
    assert schema["required"] == ["name", "age", "bio"]


def test_newlines_separate_fields_and_every_type_maps(tmp_path: Path) -> None:
    concise = "title: a title, with a comma\nscore float\ndone bool\ncount int"
    reply = '{"title": "t", "score": 0.5, "done": true, "count": 2}'
    with MockServer([reply]) as srv:
        proc = cli("prompt", *_local(srv), "--schema", concise, "go", env=_data_env(tmp_path))
    assert proc.returncode == 0, proc.stderr
    props = _sent_schema(srv)["properties"]
    assert props == {
        "title": {"type": "string", "description": "a title, with a comma"},
        "score": {"type": "number"}, "done": {"type": "boolean"}, "count": {"type": "integer"},
    }  # fmt: skip
    assert json.loads(proc.stdout) == json.loads(reply)


def test_schema_multi_asks_for_items(tmp_path: Path) -> None:
    reply = '{"items": [{"name": "Oslo"}, {"name": "Bergen"}]}'
    with MockServer([reply]) as srv:
        proc = cli("chat", *_local(srv), "--schema-multi", "name", "two cities",
                   env=_data_env(tmp_path))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    schema = _sent_schema(srv)
    assert schema["required"] == ["items"]
    items = schema["properties"]["items"]  # type: ignore[index]
    assert items["type"] == "array" and items["items"]["properties"] == {"name": {"type": "string"}}
    assert json.loads(proc.stdout) == {"items": [{"name": "Oslo"}, {"name": "Bergen"}]}


def test_inline_and_file_json_schemas(tmp_path: Path) -> None:
    schema = {"type": "object", "properties": {"n": {"type": "integer", "minimum": 1}},
              "required": ["n"]}  # fmt: skip
    path = tmp_path / "n.json"
    path.write_text(json.dumps(schema), encoding="utf-8")
    env = _data_env(tmp_path)
    with MockServer(['{"n": 3}', '{"n": 4}']) as srv:
        inline = cli("chat", *_local(srv), "--schema", json.dumps(schema), "a number", env=env)
        from_file = cli("chat", *_local(srv), "--schema", str(path), "a number", env=env)
    assert (inline.stdout, from_file.stdout) == ('{"n": 3}\n', '{"n": 4}\n'), inline.stderr
    assert _sent_schema(srv, 0)["properties"] == _sent_schema(srv, 1)["properties"] == {
        "n": {"type": "integer", "minimum": 1}}  # fmt: skip


def test_an_answer_that_does_not_match_is_the_typed_error(tmp_path: Path) -> None:
    with MockServer(['{"name": "Ada", "age": "old"}', "not json at all"]) as srv:
        wrong = cli("chat", *_local(srv), "--schema", "name, age int", "x", env=_data_env(tmp_path))
        prose = cli("chat", *_local(srv), "--schema", "name", "x", env=_data_env(tmp_path))
    assert_one_line_error(wrong, "output_invalid", "$.age")
    assert_one_line_error(prose, "output_invalid", "not valid JSON")
    assert wrong.returncode == prose.returncode == 1
    assert wrong.stdout == prose.stdout == ""


@pytest.mark.parametrize(
    ("schema", "needles"),
    [
        ("name, age integer", ["--schema 'name, age integer'", "'integer'", "str, int, float, bool"]),
        ("first name str", ["field 'first name str'", "commas"]),
        ("first name", ["field 'first' has type 'name'"]),
        ("a, a int", ["'a' appears twice"]),
        (" , ", ["names no field"]),
        ("missing.json", ["cannot read the schema file 'missing.json'"]),
        ('{"type": ', ["not valid JSON"]),
        ("[1, 2]", ["must be a JSON object", "list"]),
        ('{"type": "objekt"}', ["not a valid JSON Schema", "$.type"]),
    ],
)  # fmt: skip
def test_a_bad_schema_is_a_usage_error_before_anything_is_sent(
    schema: str, needles: list[str], tmp_path: Path
) -> None:
    with MockServer(["never"]) as srv:
        proc = cli("chat", *_local(srv), "--schema", schema, "x", env=_data_env(tmp_path))
    assert_one_line_error(proc, "usage", *needles)
    assert proc.returncode == 2 and srv.requests == []


def test_an_unreadable_file_and_both_flags_are_usage_errors(tmp_path: Path) -> None:
    folder = tmp_path / "dir.json"
    folder.mkdir()
    not_object = tmp_path / "list.json"
    not_object.write_text("[1]", encoding="utf-8")
    env = _data_env(tmp_path)
    with MockServer(["never"]) as srv:
        unreadable = cli("chat", *_local(srv), "--schema", str(folder), "x", env=env)
        a_list = cli("chat", *_local(srv), "--schema", str(not_object), "x", env=env)
        both = cli("chat", *_local(srv), "--schema", "a", "--schema-multi", "b", "x", env=env)
    assert_one_line_error(unreadable, "usage", "cannot read the schema file")
    assert_one_line_error(a_list, "usage", "must be a JSON object", "list")
    assert_one_line_error(both, "usage", "not allowed with argument")
    assert srv.requests == []


def test_json_flag_is_one_line_and_a_terminal_gets_it_indented(tmp_path: Path) -> None:
    env = _data_env(tmp_path)
    with MockServer(['{"a": 1, "b": [2]}'], repeat_last=True) as srv:
        as_json = cli("chat", *_local(srv), "--schema", "a int", "--json", "x", env=env)
        shown = _in_a_terminal(["chat", *_local(srv), "--schema", "a int", "--no-log", "x"],
                               {**env, "NO_COLOR": "1"})  # fmt: skip
    assert as_json.returncode == 0, as_json.stderr
    assert as_json.stdout == '{"a": 1, "b": [2]}\n'  # the value, not the events
    lines = shown.replace("\r\n", "\n").strip().splitlines()
    assert lines == ["{", '  "a": 1,', '  "b": [', "    2", "  ]", "}"], shown


def test_the_schema_is_logged_and_shown_by_logs_json(tmp_path: Path) -> None:
    env = _data_env(tmp_path)
    with MockServer(['{"city": "Oslo"}', "plain"]) as srv:
        assert cli("chat", *_local(srv), "--schema", "city", "x", env=env).returncode == 0
        assert cli("chat", *_local(srv), "no schema", env=env).returncode == 0
    proc = cli("logs", "--json", "-n", "0", env=env)
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [r["schema"] for r in rows] == [
        {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
        None,
    ]


def test_a_log_from_before_the_schema_column_is_migrated(tmp_path: Path) -> None:
    db = tmp_path / "data" / "modelwire" / "logs.db"
    db.parent.mkdir(parents=True)
    old = _schema._MIGRATIONS[:-1]  # every step but the schema column
    conn = sqlite3.connect(db, isolation_level=None)
    for step in old:
        for statement in step:
            conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {len(old)}")
    conn.execute(
        "INSERT INTO responses (conversation_id, started, api, provider, model, prompt, "
        "messages_json, response) VALUES ('c0', 1, 'openai-chat', 'local', 'm', 'old q', '[]', "
        "'old a')"
    )
    conn.close()
    env = _data_env(tmp_path)
    with MockServer(['{"x": 1}']) as srv:
        assert cli("chat", *_local(srv), "--schema", "x int", "new q", env=env).returncode == 0
    proc = cli("logs", "--json", "-n", "0", env=env)
    assert proc.returncode == 0, proc.stderr
    rows = [json.loads(line) for line in proc.stdout.splitlines()]
    assert [(r["prompt"], r["schema"] is None) for r in rows] == [("old q", True), ("new q", False)]
    version = sqlite3.connect(db).execute("PRAGMA user_version").fetchone()[0]
    assert version == _log.SCHEMA_VERSION == len(old) + 1


def test_run_prints_the_value_and_shows_the_run_on_stderr(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hello", encoding="utf-8")
    with MockServer(['{"files": 1}']) as srv:
        proc = cli("run", *_local(srv), "--root", str(tmp_path), "--schema", "files int",
                   "count the files", env=_data_env(tmp_path))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == '{"files": 1}\n'
    assert "count the files" in proc.stderr
    assert _sent_schema(srv)["properties"] == {"files": {"type": "integer"}}


def test_the_library_logs_the_schema_of_output(tmp_path: Path) -> None:
    import modelwire as mw

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    path = tmp_path / "calls.db"
    with MockServer(['{"n": 2}']) as srv:
        message = mw.complete_sync(srv.model(), "a number", output=schema, log=path)
    assert message.parsed == {"n": 2}
    (row,) = _log.CallLog(path).rows()
    assert row.schema == schema
