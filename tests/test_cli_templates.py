"""Templates: ``--save NAME`` writes the flags of a call, ``-t NAME`` fills them back (a flag
given wins), ``-p KEY VALUE`` fills ``$KEY``; ``modelwire templates list|show|edit|path``.
Every command runs as a subprocess against a loopback MockServer; expected values come
from the inputs written here."""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path

from modelwire.testing import MockServer
from test_cli import assert_one_line_error, cli
from test_cli_conventions import _data_env


def _env(tmp_path: Path, srv: MockServer | None = None) -> dict[str, str]:
    env = _data_env(tmp_path)
    if srv is not None:
        env["OPENAI_BASE_URL"] = srv.model().base_url  # local/<id> is served there
    return env


def _folder(tmp_path: Path) -> Path:
    return tmp_path / "config" / "modelwire" / "templates"


def _write(tmp_path: Path, name: str, data: object) -> Path:
    path = _folder(tmp_path) / f"{name}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def _system_and_user(body: dict[str, object]) -> tuple[str | None, str]:
    messages = body["messages"]
    assert isinstance(messages, list)
    system = next((m["content"] for m in messages if m["role"] == "system"), None)
    return system, messages[-1]["content"]


def test_save_writes_the_flags_and_calls_no_model_then_t_fills_them(tmp_path: Path) -> None:
    with MockServer(["a haiku"]) as srv:
        env = _env(tmp_path, srv)
        saved = cli("chat", "Summarise in $style: $input", "--system", "You write $style.",
                    "-m", "local/tpl-model", "-o", "temperature", "0.2", "-p", "style", "haiku",
                    "--key", "sk-never-saved", "--save", "summarize", env=env)  # fmt: skip
        assert saved.returncode == 0, saved.stderr
        assert srv.requests == []  # --save calls no model
        path = _folder(tmp_path) / "summarize.json"
        assert saved.stdout == f"{path}\n"
        assert "sk-never-saved" not in path.read_text(encoding="utf-8")
        assert json.loads(path.read_text(encoding="utf-8")) == {
            "prompt": "Summarise in $style: $input", "system": "You write $style.",
            "model": "local/tpl-model", "options": {"temperature": 0.2},
            "defaults": {"style": "haiku"},
        }  # fmt: skip
        used = cli("chat", "-t", "summarize", "the meeting notes", env=env)
    assert used.returncode == 0, used.stderr
    assert used.stdout == "a haiku\n"
    body = srv.requests[0].json()
    assert body["model"] == "tpl-model" and body["temperature"] == 0.2
    assert _system_and_user(body) == ("You write haiku.", "Summarise in haiku: the meeting notes")


def test_flags_given_with_t_win_over_the_template(tmp_path: Path) -> None:
    _write(tmp_path, "t", {"prompt": "In $lang: $input", "system": "sys from template",
                           "model": "local/from-template", "defaults": {"lang": "French"},
                           "options": {"temperature": 0.2, "max_tokens": 50}})  # fmt: skip
    with MockServer(["ok"]) as srv:
        proc = cli("prompt", "-t", "t", "-m", "local/from-flag", "--system", "sys from flag",
                   "-o", "temperature", "0.9", "--max-tokens", "7", "-p", "lang", "Latin", "hi",
                   env=_env(tmp_path, srv))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    body = srv.requests[0].json()
    assert body["model"] == "from-flag"
    assert body["temperature"] == 0.9
    assert body.get("max_tokens", body.get("max_completion_tokens")) == 7
    assert _system_and_user(body) == ("sys from flag", "In Latin: hi")


def test_input_comes_from_stdin_and_is_appended_without_input(tmp_path: Path) -> None:
    _write(tmp_path, "with-input", {"prompt": "<<$input>>", "model": "local/m"})
    _write(tmp_path, "without", {"prompt": "Translate to German:", "model": "local/m"})
    _write(tmp_path, "system-only", {"system": "Answer as a pirate.", "model": "local/m"})
    with MockServer(["a", "b", "c"]) as srv:
        env = _env(tmp_path, srv)
        piped = cli("chat", "-t", "with-input", stdin="from stdin\n", env=env)
        appended = cli("chat", "-t", "without", "good morning", env=env)
        system_only = cli("chat", "-t", "system-only", "where is the gold?", env=env)
    assert piped.returncode == appended.returncode == system_only.returncode == 0, piped.stderr
    users = [_system_and_user(r.json()) for r in srv.requests]
    assert users == [
        (None, "<<from stdin>>"),
        (None, "Translate to German:\n\ngood morning"),
        ("Answer as a pirate.", "where is the gold?"),
    ]


def test_a_missing_parameter_names_it_and_how_to_pass_it(tmp_path: Path) -> None:
    _write(tmp_path, "voice", {"system": "Speak as $voice.", "model": "local/m"})
    with MockServer(["never"]) as srv:
        env = _env(tmp_path, srv)
        missing = cli("chat", "-t", "voice", "hi", env=env)
        typo = cli("chat", "-t", "voice", "-p", "vocie", "x", "hi", env=env)
        as_input = cli("chat", "-t", "voice", "-p", "input", "x", "hi", env=env)
        without_t = cli("chat", "-m", "local/m", "-p", "voice", "x", "hi", env=env)
    assert srv.requests == []
    assert_one_line_error(missing, "usage", "$voice", "-p voice VALUE")
    assert missing.returncode == 2
    assert_one_line_error(typo, "usage", "no parameter $vocie", "did you mean voice?")
    assert_one_line_error(as_input, "usage", "$input is the prompt")
    assert_one_line_error(without_t, "usage", "-p KEY VALUE", "-t NAME")


def test_an_unknown_or_unsafe_template_name_is_refused(tmp_path: Path) -> None:
    env = _env(tmp_path)
    none_yet = cli("chat", "-t", "summarize", "hi", env=env)
    _write(tmp_path, "summarize", {"prompt": "$input"})
    _write(tmp_path, "translate", {"prompt": "$input"})
    typo = cli("chat", "-t", "sumarize", "hi", env=env)
    assert_one_line_error(none_yet, "not_found", "no template 'summarize'", "none yet")
    assert_one_line_error(typo, "not_found", "did you mean summarize?",
                          "the templates are summarize, translate")  # fmt: skip
    for bad in ("../evil", "a/b", ".hidden", "x..y"):
        for argv in (["chat", "-t", bad, "hi"], ["chat", "hi", "--save", bad],
                     ["templates", "show", bad], ["templates", "edit", bad]):  # fmt: skip
            assert_one_line_error(cli(*argv, env=env), "usage", "is not allowed")
    assert sorted(p.name for p in (tmp_path / "config").rglob("*")
                  if p.is_file()) == ["summarize.json", "translate.json"]  # fmt: skip


def test_a_template_file_is_checked_on_load(tmp_path: Path) -> None:
    env = _env(tmp_path)
    path = _write(tmp_path, "bad", {"sytem": "x"})
    unknown = cli("chat", "-t", "bad", "hi", env=env)
    assert_one_line_error(unknown, "configuration", str(path), "unknown key 'sytem'",
                          "did you mean system?")  # fmt: skip
    _write(tmp_path, "bad", {"tool_names": "read"})
    wrong_type = cli("chat", "-t", "bad", "hi", env=env)
    assert_one_line_error(wrong_type, "configuration", "'tool_names' must be a list of strings")
    path.write_text("{not json", encoding="utf-8")
    assert_one_line_error(cli("templates", "show", "bad", env=env), "configuration", str(path))
    stray = cli("chat", "costs 5$ per $input", "--save", "price", env=env)
    assert_one_line_error(stray, "usage", "write $$ for a literal $")


def test_save_stores_schema_functions_and_tools_for_any_folder(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "tools.py").write_text("def shout(text: str) -> str:\n    return text.upper()\n")
    env = _env(tmp_path)
    saved = cli("chat", "--schema", "name, age int", "--functions", "tools.py", "-T", "shout",
                "--save", "people", cwd=work, env=env)  # fmt: skip
    assert saved.returncode == 0, saved.stderr
    data = json.loads((_folder(tmp_path) / "people.json").read_text(encoding="utf-8"))
    assert data["functions"] == [str(work / "tools.py")]
    assert data["tool_names"] == ["shout"]
    assert data["schema"]["properties"] == {"name": {"type": "string"},
                                            "age": {"type": "integer"}}  # fmt: skip
    # -t applies them from another folder: the schema reaches the request.
    with MockServer(['{"name": "Ada", "age": 36}']) as srv:
        used = cli("chat", "-t", "people", "-m", "local/m", "--ta", "Ada, 36",
                   cwd=tmp_path, env=_env(tmp_path, srv))  # fmt: skip
    assert used.returncode == 0, used.stderr
    assert json.loads(used.stdout) == {"name": "Ada", "age": 36}
    body = srv.requests[0].json()
    assert body["response_format"]["json_schema"]["schema"]["properties"]["age"] == {
        "type": "integer"
    }
    assert [t["function"]["name"] for t in body["tools"]] == ["shout"]


def test_run_takes_a_template_too(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x", encoding="utf-8")
    _write(tmp_path, "review", {"system": "You review $what.", "prompt": "Review: $input",
                                "model": "local/agent", "defaults": {"what": "code"}})  # fmt: skip
    with MockServer(["looks fine"]) as srv:
        proc = cli("run", "-t", "review", "--root", str(tmp_path), "notes.txt",
                   env=_env(tmp_path, srv))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert _system_and_user(srv.requests[0].json()) == ("You review code.", "Review: notes.txt")


def test_templates_list_show_path(tmp_path: Path) -> None:
    env = {**_env(tmp_path), "NO_COLOR": "1"}
    empty = cli("templates", env=env)
    assert empty.returncode == 0 and "no templates yet" in empty.stdout
    _write(tmp_path, "fr", {"system": "Réponds en français.", "model": "openai/gpt-4.1-mini"})
    _write(tmp_path, "sum", {"prompt": "Summarise: $input"})
    listed = cli("templates", "list", env=env)
    assert listed.returncode == 0, listed.stderr
    rows = [line.split() for line in listed.stdout.splitlines()]
    assert rows[0] == ["template", "model", "prompt"]
    assert rows[1][:3] == ["fr", "openai/gpt-4.1-mini", "system:"]
    assert rows[2] == ["sum", "Summarise:", "$input"]
    (_folder(tmp_path) / "zz.json").write_text("{broken", encoding="utf-8")
    broken = cli("templates", "list", env=env)
    assert broken.returncode == 0 and broken.stdout.startswith(listed.stdout)
    assert broken.stdout.splitlines()[-1].split()[:2] == ["zz", "(cannot"]
    shown = cli("templates", "show", "fr", env=env)
    assert json.loads(shown.stdout) == {"system": "Réponds en français.",
                                        "model": "openai/gpt-4.1-mini"}  # fmt: skip
    assert cli("templates", "path", env=env).stdout == f"{_folder(tmp_path)}\n"


def _editor(tmp_path: Path, code: str) -> str:
    script = tmp_path / "editor.py"
    script.write_text("import json, sys\npath = sys.argv[1]\n" + code, encoding="utf-8")
    return f"{shlex.quote(sys.executable)} {shlex.quote(str(script))}"


def test_edit_opens_the_editor_on_a_new_or_existing_template(tmp_path: Path) -> None:
    editor = _editor(tmp_path, "data = json.load(open(path))\n"
                     "data['system'] = 'from the editor'\n"
                     "json.dump(data, open(path, 'w'))\n")  # fmt: skip
    env = {**_env(tmp_path), "EDITOR": editor}
    env.pop("VISUAL", None)
    created = cli("templates", "edit", "fresh", env=env)
    assert created.returncode == 0, created.stderr
    path = _folder(tmp_path) / "fresh.json"
    assert json.loads(path.read_text(encoding="utf-8")) == {
        "prompt": "$input", "system": "from the editor"
    }  # fmt: skip
    # $VISUAL comes before $EDITOR; a key the editor got wrong is reported, naming it.
    visual = _editor(tmp_path, "json.dump({'promt': 'x'}, open(path, 'w'))\n")
    broken = cli("templates", "edit", "fresh", env={**env, "VISUAL": visual})
    assert_one_line_error(broken, "configuration", "unknown key 'promt'", "did you mean prompt?")
    failing = _editor(tmp_path, "sys.exit(3)\n")
    assert_one_line_error(cli("templates", "edit", "fresh", env={**env, "EDITOR": failing}),
                          "editor", "exited with 3")  # fmt: skip


def test_save_from_a_template_and_nothing_to_save(tmp_path: Path) -> None:
    env = _env(tmp_path)
    _write(tmp_path, "base", {"prompt": "Q: $input", "model": "local/a"})
    copied = cli("chat", "-t", "base", "-m", "local/b", "--save", "copy", env=env)
    assert copied.returncode == 0, copied.stderr
    data = json.loads((_folder(tmp_path) / "copy.json").read_text(encoding="utf-8"))
    assert data == {"prompt": "Q: $input", "model": "local/b"}
    assert_one_line_error(cli("chat", "--save", "empty", env=env), "usage", "nothing to save")
