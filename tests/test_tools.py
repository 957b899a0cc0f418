"""Tools: ``Tool`` construction and JSON Schema validation, ``ToolFailure`` texts, and
the read-only file tools (``read``/``ls``/``grep``) — path safety, caps, versions.

Expectations are derived here from the files the tests write (their bytes, their
``os.stat``), never from the tools' own output. The agent loop over a loopback
server is in ``test_agent.py``.
"""

from __future__ import annotations

import hashlib
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import modelwire as mw
from modelwire.tools import FAILURE_HINTS, FileTools, ToolContext, ToolFailure, ToolOutput
from modelwire.tools import _grep as grep_mod
from modelwire.tools import _paths as paths_mod
from modelwire.tools import files as files_mod

SECRET = "TOP-SECRET-7f3a91"
REQUIRED_KINDS = {
    "not_found", "permission_denied", "invalid_arguments", "too_large", "not_text",
    "stale_version", "timeout_unknown", "unknown_tool", "execution_failed",
}  # fmt: skip


def ctx() -> ToolContext:
    return ToolContext.for_test()


def expected_version(path: Path) -> str:
    st_ = path.stat()
    key = f"{st_.st_dev}:{st_.st_ino}:{st_.st_ctime_ns}:{st_.st_mtime_ns}:{st_.st_size}"
    return hashlib.sha256(key.encode()).hexdigest()[:16]


def numbered(lines: list[str], start: int = 1) -> list[str]:
    return [f"{n:>6}\t{line}" for n, line in enumerate(lines, start)]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """root/ with text, binary and nested files; outside/ holds the secret."""
    root = tmp_path / "root"
    (root / "docs" / "deep").mkdir(parents=True)
    (root / "README.md").write_text("# modelwire\n读取 README.md\nthird line\n", encoding="utf-8")
    (root / "docs" / "guide.md").write_text("intro\nTODO: write more\n", encoding="utf-8")
    (root / "docs" / "deep" / "notes.py").write_text("x = 1  # TODO\n", encoding="utf-8")
    (root / "image.bin").write_bytes(b"\x89PNG\x00\x00TODO")
    (root / "latin1.txt").write_bytes("caf\xe9 TODO\n".encode("latin-1"))
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("TODO in git\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(f"{SECRET}\nTODO\n")
    (root / "link-out").symlink_to(outside / "secret.txt")
    (root / "dir-out").symlink_to(outside, target_is_directory=True)
    (root / "link-in").symlink_to(root / "README.md")
    return root


def tools(root: Path, **kw: Any) -> dict[str, mw.Tool]:
    return {t.name: t for t in mw.tools.read_only(root, **kw)}


def call(tool: mw.Tool, **args: Any) -> ToolOutput:
    assert tool.validate(args) == [], tool.validate(args)
    out = tool.execute(args, ctx())
    assert isinstance(out, ToolOutput)
    return out


def failure(tool: mw.Tool, **args: Any) -> ToolFailure:
    with pytest.raises(ToolFailure) as info:
        tool.execute(args, ctx())
    return info.value


# --------------------------------------------------------------------------- Tool


def echo(args: dict[str, Any], c: ToolContext) -> str:
    return str(args)


SCHEMA = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "n": {"type": "integer", "minimum": 1},
        "items": {"type": "array", "items": {"type": "string"}},
    },
    "required": ["path"],
    "additionalProperties": False,
}


def test_validate_lists_each_failing_path() -> None:
    tool = mw.Tool("t", "d", SCHEMA, echo)
    errors = tool.validate({"n": 0, "items": ["a", 3], "extra": True})
    paths = {e.split(":", 1)[0] for e in errors}
    # Constructed above: a missing required key and an extra key (both at $), n below
    # its minimum, items[1] not a string.
    assert paths == {"$", "$.n", "$.items[1]"}
    assert len(errors) == 4
    assert any("'path' is a required property" in e for e in errors)
    assert any("'extra' was unexpected" in e for e in errors)
    assert tool.validate({"path": "a", "n": 2, "items": []}) == []


def test_validate_reports_the_closest_alternative_of_any_of() -> None:
    schema = {
        "type": "object",
        "properties": {"v": {"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 2}]}},
    }
    tool = mw.Tool("t", "d", schema, echo)
    (line,) = tool.validate({"v": "long"})
    assert line.startswith("$.v: ")
    assert "closest" in line


def test_draft_2020_12_keywords_are_enforced() -> None:
    # prefixItems exists only since Draft 2020-12; an older validator ignores it.
    schema = {
        "type": "object",
        "properties": {"pair": {"type": "array", "prefixItems": [{"type": "string"}]}},
    }
    tool = mw.Tool("t", "d", schema, echo)
    assert tool.validate({"pair": [1]}) and tool.validate({"pair": ["a"]}) == []


@pytest.mark.parametrize("name", ["", "has space", "x" * 65, "dots.are.bad", 3])
def test_tool_name_must_be_provider_safe(name: Any) -> None:
    with pytest.raises(mw.ConfigurationError):
        mw.Tool(name, "d", SCHEMA, echo)


def test_bad_schemas_raise_at_construction() -> None:
    with pytest.raises(mw.ConfigurationError, match="object schema"):
        mw.Tool("t", "d", {"type": "string"}, echo)
    with pytest.raises(mw.ConfigurationError, match=r"properties\.a\.type"):
        mw.Tool("t", "d", {"type": "object", "properties": {"a": {"type": "nope"}}}, echo)
    with pytest.raises(mw.ConfigurationError):
        mw.Tool("t", "d", "not a schema", echo)  # type: ignore[arg-type]
    with pytest.raises(mw.ConfigurationError):
        mw.Tool("t", "d", SCHEMA, "not callable")  # type: ignore[arg-type]
    with pytest.raises(mw.ConfigurationError):
        mw.Tool("t", "d", SCHEMA, echo, timeout=0)


@pytest.mark.parametrize(
    ("ref", "why"),
    [
        ("#/$defs/missing", "JSON Pointer"),
        ("https://example.com/schemas/path.json", "remote URL"),
        ("other.json#/x", "another document"),
        ("#no-such-anchor", "$anchor"),
    ],
)
def test_unresolvable_ref_raises_when_the_tool_is_made(ref: str, why: str) -> None:
    # jsonschema only resolves a $ref when validation reaches it, so this
    # used to crash the agent mid-turn (_WrappedReferencingError) after the model
    # was paid.
    schema = {
        "type": "object",
        "$defs": {"path": {"type": "string"}},
        "properties": {"items": {"type": "array", "items": {"$ref": ref}}},
    }
    for make in (
        lambda: mw.Tool("lookup", "d", schema, echo),
        lambda: mw.ToolDefinition(name="lookup", description="d", parameters=schema),
    ):
        with pytest.raises(mw.ConfigurationError) as info:
            make()
        message = str(info.value)
        assert "'lookup'" in message and repr(ref) in message and why in message
        assert "$.properties.items.items.$ref" in message and "$defs" in message


def test_resolvable_refs_are_accepted_and_validate() -> None:
    schema = {
        "type": "object",
        "$defs": {
            "path": {"type": "string", "minLength": 1},
            "a/b": {"$anchor": "count", "type": "integer"},
            "item": {"$id": "https://example.com/item.json", "$defs": {"n": {"type": "null"}}},
        },
        "properties": {
            "p": {"$ref": "#/$defs/path"},
            "c": {"$ref": "#count"},
            "e": {"$ref": "#/$defs/a~1b"},
            "n": {"$ref": "https://example.com/item.json#/$defs/n"},
            "self": {"$ref": "#"},
            "meta": {"$ref": "https://json-schema.org/draft/2020-12/schema"},
            "const": {"const": {"$ref": "#/not/a/ref/just/data"}},
        },
    }
    tool = mw.Tool("t", "d", schema, echo)
    mw.ToolDefinition(name="t", description="d", parameters=schema)
    assert tool.validate({"p": "x", "c": 1, "e": 2, "n": None}) == []
    assert [e.split(":")[0] for e in tool.validate({"p": "", "c": "x", "n": 0})] == [
        "$.c", "$.n", "$.p"
    ]  # fmt: skip


def two_args(args: dict[str, Any], ctx: ToolContext) -> str:
    return "ok"


class Callable2:
    def __call__(self, args: dict[str, Any], ctx: ToolContext) -> str:
        return "ok"


async def async_two(args: dict[str, Any], ctx: ToolContext, *, extra: int = 0) -> str:
    return "ok"


@pytest.mark.parametrize(
    "execute",
    [two_args, Callable2(), async_two, lambda *a: "ok", lambda args, ctx=None, more=1: "ok"],
)
def test_execute_that_takes_args_and_ctx_is_accepted(execute: Any) -> None:
    mw.Tool("t", "d", SCHEMA, execute)


@pytest.mark.parametrize(
    "execute",
    [lambda args: "ok", lambda: "ok", lambda args, ctx, more: "ok", lambda *, args, ctx: "ok"],
)
def test_execute_that_cannot_take_args_and_ctx_is_refused(execute: Any) -> None:
    # Refused here: otherwise it would reach the model as a TypeError tool result.
    with pytest.raises(mw.ConfigurationError, match=r"'t'.*execute\(args, ctx\)"):
        mw.Tool("t", "d", SCHEMA, execute)


def test_pydantic_model_as_parameters() -> None:
    pydantic = pytest.importorskip("pydantic")

    class Args(pydantic.BaseModel):  # type: ignore[misc, name-defined]
        path: str
        limit: int = 10

    tool = mw.Tool("t", "d", Args, echo)
    assert tool.parameters == Args.model_json_schema()
    assert tool.definition.parameters["required"] == ["path"]
    assert tool.validate({"path": "a"}) == []
    assert [e.split(":")[0] for e in tool.validate({"limit": "x"})] == ["$", "$.limit"]


def test_import_modelwire_does_not_import_jsonschema() -> None:
    import subprocess
    import sys

    code = "import modelwire, sys; print('jsonschema' in sys.modules, 'modelwire.tools' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


# --------------------------------------------------------------------------- failures


def test_every_required_kind_has_a_hint_and_the_text_names_it() -> None:
    assert set(FAILURE_HINTS) >= REQUIRED_KINDS
    for kind in REQUIRED_KINDS:
        text = ToolFailure(kind, "what happened").text
        assert text.startswith(f"Error [{kind}]: what happened\nWhat to do: ")
        assert text.endswith(FAILURE_HINTS[kind])
    assert "read it again" in ToolFailure("stale_version", "x").text
    custom = ToolFailure("quota", "over quota", hint="Wait a minute.")
    assert custom.text == "Error [quota]: over quota\nWhat to do: Wait a minute."
    with pytest.raises(mw.ConfigurationError):
        ToolFailure("", "empty kind")


def test_tool_output_checks_content() -> None:
    assert ToolOutput("x").text == "x"
    blocks = ToolOutput([mw.TextContent(text="a"), mw.TextContent(text="b")], {"k": 1})
    assert blocks.content == (mw.TextContent(text="a"), mw.TextContent(text="b"))
    assert blocks.text == "ab"
    with pytest.raises(mw.ConfigurationError):
        ToolOutput([1])  # type: ignore[list-item]  # the runtime check is the test


# --------------------------------------------------------------------------- read


def test_read_whole_file(tree: Path) -> None:
    out = call(tools(tree)["read"], path="README.md")
    raw = (tree / "README.md").read_bytes()
    lines = raw.decode().splitlines()
    header, *body = out.text.split("\n")
    assert body == numbered(lines)
    version = expected_version(tree / "README.md")
    assert (
        header
        == f"README.md · lines 1-{len(lines)} of {len(lines)} · {len(raw)} bytes · version {version}"
    )
    assert out.details == {
        "path": "README.md", "size": len(raw), "version": version, "start_line": 1,
        "end_line": len(lines), "total_lines": len(lines), "truncated": False, "next_offset": None,
    }  # fmt: skip


def test_read_range_and_continuation(tree: Path) -> None:
    lines = [f"line {i} ✓" for i in range(1, 31)]
    (tree / "many.txt").write_text("\n".join(lines) + "\n")
    out = call(tools(tree)["read"], path="many.txt", offset=5, limit=3)
    assert out.text.split("\n")[1:4] == numbered(lines[4:7], 5)
    assert out.details["next_offset"] == 8
    assert out.text.endswith("[more lines follow: continue with offset=8]")
    tail = call(tools(tree)["read"], path="many.txt", offset=29)
    assert tail.text.split("\n")[1:] == numbered(lines[28:], 29)
    assert tail.details["total_lines"] == 30 and tail.details["next_offset"] is None
    err = failure(tools(tree)["read"], path="many.txt", offset=31)
    assert err.kind == "invalid_arguments" and "30 lines" in err.message


def test_read_file_without_final_newline_and_with_bom(tree: Path) -> None:
    (tree / "bom.txt").write_bytes("\ufeffalpha\nbeta".encode())
    out = call(tools(tree)["read"], path="bom.txt")
    assert out.text.split("\n")[1:] == numbered(["alpha", "beta"])
    assert out.details["total_lines"] == 2


def test_empty_file(tree: Path) -> None:
    (tree / "empty").write_bytes(b"")
    out = call(tools(tree)["read"], path="empty")
    assert "empty file" in out.text and out.details["size"] == 0


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(
        st.text(st.characters(blacklist_categories=("Cs", "Cc", "Zl", "Zp")), max_size=12),
        min_size=1,
        max_size=40,
    ),
    cap=st.integers(min_value=60, max_value=400),
)
def test_following_next_offset_reads_every_line_once(
    tmp_path: Path, lines: list[str], cap: int
) -> None:
    # Lines at most 12 characters (≤ 48 bytes) always fit the cap: reading from 1 and
    # following next_offset must give back exactly the file's lines.
    path = tmp_path / "f.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    read = tools(tmp_path, max_read_bytes=cap)["read"]
    got: list[str] = []
    offset: int | None = 1
    while offset is not None:
        out = call(read, path="f.txt", offset=offset, limit=10_000)
        body = out.text.split("\n")[1:]
        if body and body[-1].startswith("["):
            body.pop()
        for row in body:
            n, _, text = row.partition("\t")
            assert int(n) == len(got) + 1  # numbered from where we asked, no gap
            got.append(text)
        # What was shown of the file fits the cap (the numbering is extra).
        assert sum(len(r.partition("\t")[2].encode()) + 1 for r in body) <= cap
        offset = out.details["next_offset"]
    assert got == "\n".join(lines).split("\n")


def test_cap_cuts_at_a_whole_line_and_says_where_to_continue(tmp_path: Path) -> None:
    lines = [f"{i:03d}" + "x" * 20 for i in range(50)]  # 24 bytes + newline each
    (tmp_path / "f.txt").write_text("\n".join(lines) + "\n")
    out = call(tools(tmp_path, max_read_bytes=100)["read"], path="f.txt", offset=1, limit=50)
    # 100 bytes hold 4 whole lines of 25 bytes.
    assert out.text.split("\n")[1:-1] == numbered(lines[:4])
    assert out.details["truncated"] is True and out.details["next_offset"] == 5
    assert out.text.endswith("continue with offset=5]")


def test_a_line_longer_than_the_cap(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("y" * 500 + "\nshort\n")
    out = call(tools(tmp_path, max_read_bytes=100)["read"], path="f.txt", offset=1)
    assert out.text.split("\n")[1] == numbered(["y" * 100])[0]
    assert out.details["next_offset"] == 2 and "longer than" in out.text


def test_file_over_the_cap_is_refused_with_size_and_how_to_read_a_range(tree: Path) -> None:
    big = tree / "big.log"
    with open(big, "wb") as f:  # sparse: 50 MB of size, nothing written
        f.truncate(50 * 1024 * 1024)
    size = big.stat().st_size
    err = failure(tools(tree)["read"], path="big.log")
    assert err.kind == "too_large"
    assert str(size) in err.message and "262144" in err.message
    assert "offset" in err.text and "limit" in err.text
    assert err.details == {"path": "big.log", "size": size, "max_read_bytes": 256 * 1024}
    # With a range the sparse zeros are found to be binary, still without content.
    assert failure(tools(tree)["read"], path="big.log", offset=1, limit=5).kind == "not_text"


def test_text_over_the_cap_can_be_read_in_ranges(tmp_path: Path) -> None:
    lines = [f"row {i}" for i in range(40_000)]  # ~400 KB of text
    (tmp_path / "big.txt").write_text("\n".join(lines) + "\n")
    read = tools(tmp_path)["read"]
    assert failure(read, path="big.txt").kind == "too_large"
    out = call(read, path="big.txt", offset=39_998, limit=5)
    assert out.text.split("\n")[1:] == numbered(lines[39_997:], 39_998)


def test_binary_and_undecodable_files_are_not_text(tree: Path) -> None:
    read = tools(tree)["read"]
    assert failure(read, path="image.bin").kind == "not_text"
    err = failure(read, path="latin1.txt")
    assert err.kind == "not_text" and "UTF-8" in err.message
    assert "caf" not in err.text


def test_directory_and_missing_paths(tree: Path) -> None:
    read = tools(tree)["read"]
    err = failure(read, path="docs")
    assert err.kind == "invalid_arguments" and "ls" in err.text
    assert failure(read, path="nope.md").kind == "not_found"
    assert failure(read, path="docs/nope/deeper.md").kind == "not_found"


def test_a_fifo_is_refused_without_blocking(tree: Path) -> None:
    if not hasattr(os, "mkfifo"):
        pytest.skip("no FIFOs here")
    os.mkfifo(tree / "pipe")
    assert failure(tools(tree)["read"], path="pipe").kind == "not_text"


def test_version_and_stale_check(tree: Path) -> None:
    ft = FileTools(tree)
    out = call(tools(tree)["read"], path="README.md")
    version = out.details["version"]
    assert f"version {version}" in out.text
    assert version == expected_version(tree / "README.md") == ft.version_of("README.md")
    ft.check_version("README.md", version)
    path = tree / "README.md"
    path.write_text("changed\n")
    st_ = path.stat()
    os.utime(path, ns=(st_.st_atime_ns, st_.st_mtime_ns + 1_000_000))
    with pytest.raises(ToolFailure) as info:
        ft.check_version("README.md", version)
    assert info.value.kind == "stale_version"
    assert "read it again" in info.value.text
    assert info.value.details["current"] == expected_version(path)


# --------------------------------------------------------------------------- escapes


ESCAPES = [
    "../outside/secret.txt",
    "docs/../../outside/secret.txt",
    "..",
    "link-out",
    "dir-out/secret.txt",
    "dir-out",
]


@pytest.mark.parametrize("path", ESCAPES)
def test_escapes_are_refused_without_content(tree: Path, path: str) -> None:
    for name in ("read", "ls", "grep"):
        tool = tools(tree)[name]
        args = {"path": path} if name != "grep" else {"pattern": "TOP", "path": path}
        err = failure(tool, **args)
        assert err.kind == "permission_denied", (name, err)
        assert SECRET not in err.text and "outside" in err.text
        assert str(tree.parent) not in err.text  # the real location is not revealed


def test_absolute_paths(tree: Path) -> None:
    read = tools(tree)["read"]
    err = failure(read, path=str(tree.parent / "outside" / "secret.txt"))
    assert err.kind == "permission_denied" and SECRET not in err.text
    # An absolute path outside the root is refused even when nothing is there: no probing.
    assert failure(read, path="/definitely/not/here").kind == "permission_denied"
    assert failure(read, path="/etc/passwd").kind == "permission_denied"
    inside = call(read, path=str(tree / "README.md"))
    assert inside.details["path"] == "README.md"


def test_symlink_inside_the_root_is_followed_and_shown_by_its_target(tree: Path) -> None:
    out = call(tools(tree)["read"], path="link-in")
    assert out.details["path"] == "README.md"


def test_dotdot_that_stays_inside_is_fine(tree: Path) -> None:
    out = call(tools(tree)["read"], path="docs/../README.md")
    assert out.details["path"] == "README.md"


def test_nul_in_path(tree: Path) -> None:
    assert failure(tools(tree)["read"], path="README.md\x00.txt").kind == "invalid_arguments"


@pytest.mark.skipif(not paths_mod._DIR_FD, reason="needs openat (dir_fd) support")
def test_a_directory_swapped_for_a_symlink_after_the_check_is_not_followed(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The race the resolve-then-check alone cannot close: docs/ passes the check,
    # then becomes a symlink to outside/ before the file is opened.
    (tree.parent / "outside" / "guide.md").write_text(SECRET)
    real_locate = FileTools.locate

    def locate_then_swap(self: FileTools, raw: object) -> Any:
        result = real_locate(self, raw)
        (tree / "docs").rename(tree / "docs-moved")
        (tree / "docs").symlink_to(tree.parent / "outside", target_is_directory=True)
        return result

    monkeypatch.setattr(FileTools, "locate", locate_then_swap)
    err = failure(tools(tree)["read"], path="docs/guide.md")
    assert err.kind == "permission_denied" and SECRET not in err.text


def test_root_must_exist(tmp_path: Path) -> None:
    with pytest.raises(mw.ConfigurationError):
        mw.tools.read_only(tmp_path / "missing")
    (tmp_path / "f").write_text("x")
    with pytest.raises(mw.ConfigurationError):
        mw.tools.read_only(tmp_path / "f")


# --------------------------------------------------------------------------- ls


def test_ls_lists_entries_with_type_and_size(tree: Path) -> None:
    out = call(tools(tree)["ls"])
    names = {e.name for e in os.scandir(tree)}
    assert {e["name"] for e in out.details["entries"]} == names
    by_name = {e["name"]: e for e in out.details["entries"]}
    assert by_name["README.md"] == {
        "name": "README.md",
        "type": "file",
        "size": (tree / "README.md").stat().st_size,
    }
    assert by_name["docs"]["type"] == "directory"
    assert by_name["link-out"] == {
        "name": "link-out",
        "type": "symlink",
        "target": "(outside the root)",
    }
    assert by_name["link-in"]["target"] == "README.md"
    assert "docs/" in out.text.split("\n")
    assert SECRET not in out.text and str(tree.parent) not in out.text
    sub = call(tools(tree)["ls"], path="docs")
    assert [e["name"] for e in sub.details["entries"]] == ["deep", "guide.md"]


def test_ls_is_capped(tmp_path: Path) -> None:
    for i in range(7):
        (tmp_path / f"f{i}").write_text("x")
    out = call(tools(tmp_path, max_entries=3)["ls"])
    assert out.details["truncated"] is True and out.details["total"] == 7
    assert len(out.details["entries"]) == 3
    assert "showing 3 of 7" in out.text
    assert call(tools(tmp_path)["ls"]).details["truncated"] is False


def test_ls_on_a_file(tree: Path) -> None:
    err = failure(tools(tree)["ls"], path="README.md")
    assert err.kind == "invalid_arguments" and "read" in err.text


# --------------------------------------------------------------------------- grep


def expected_matches(root: Path, pattern: str, files: list[str]) -> list[tuple[str, int]]:
    rx = re.compile(pattern)
    out = []
    for rel in files:
        for n, line in enumerate((root / rel).read_text().splitlines(), 1):
            if rx.search(line):
                out.append((rel, n))
    return out


def test_grep_finds_matches_in_text_files_only(tree: Path) -> None:
    out = call(tools(tree)["grep"], pattern="TODO")
    got = [(m["path"], m["line"]) for m in out.details["matches"]]
    # Text files under the root; image.bin (binary), latin1.txt (not UTF-8), .git/
    # (skipped directory) and both symlinks are left out.
    assert sorted(got) == sorted(
        expected_matches(tree, "TODO", ["docs/guide.md", "docs/deep/notes.py"])
    )
    assert SECRET not in out.text
    assert "docs/guide.md:2: TODO: write more" in out.text.split("\n")
    assert out.details["files_skipped"] >= 4


def test_grep_glob_path_and_case(tree: Path) -> None:
    grep = tools(tree)["grep"]
    py = call(grep, pattern="todo", glob="*.py", ignore_case=True)
    assert [(m["path"], m["line"]) for m in py.details["matches"]] == [("docs/deep/notes.py", 1)]
    assert call(grep, pattern="todo").details["matches"] == []
    one = call(grep, pattern="line", path="README.md")
    assert [m["line"] for m in one.details["matches"]] == [3]
    inside_git = call(grep, pattern="TODO", path=".git")
    assert [m["path"] for m in inside_git.details["matches"]] == [".git/config"]


def test_grep_no_match_is_a_normal_result(tree: Path) -> None:
    out = call(tools(tree)["grep"], pattern="zzz-none")
    assert out.text.startswith("No matches for /zzz-none/") and out.details["matches"] == []


def test_grep_regex_error_is_invalid_arguments(tree: Path) -> None:
    err = failure(tools(tree)["grep"], pattern="(unclosed")
    assert err.kind == "invalid_arguments" and "missing )" in err.message


def test_grep_is_capped(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hit\n" * 30)
    out = call(tools(tmp_path, max_matches=5)["grep"], pattern="hit")
    assert len(out.details["matches"]) == 5 and out.details["truncated"] is True
    assert "[truncated" in out.text


def test_grep_snippet_is_short_and_centred_on_the_match(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a" * 1000 + "NEEDLE" + "b" * 1000 + "\n")
    out = call(tools(tmp_path)["grep"], pattern="NEEDLE")
    text = out.details["matches"][0]["text"]
    assert "NEEDLE" in text and len(text) <= 202


def test_grep_over_its_time_budget_is_a_timeout_unknown_result(tmp_path: Path) -> None:
    # Over the budget grep answers timeout_unknown with a hint (it used
    # to return a partial list; the budget now also holds inside one file).
    for i in range(5):
        (tmp_path / f"f{i}.txt").write_text("x\n")
    err = failure(tools(tmp_path, grep_time_budget=-1.0)["grep"], pattern="x")
    assert err.kind == "timeout_unknown" and "time budget" in err.message
    assert "narrower path" in err.text and "read-only" in err.text


# --------------------------------------------------------------------------- grep never hangs


def run_bounded(fn: Any, seconds: float) -> Any:
    """Run ``fn`` in a thread; fail (instead of hanging the suite) if it runs too long."""
    box: list[Any] = []

    def target() -> None:
        try:
            box.append(fn())
        except BaseException as exc:  # handed to the test thread
            box.append(exc)

    t = threading.Thread(target=target, daemon=True)
    started = time.monotonic()
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"still running after {seconds} s"
    assert box, "no result"
    return box[0], time.monotonic() - started


def test_grep_catastrophic_pattern_returns_at_once(tmp_path: Path) -> None:
    # With Python's re, (a+)+$ on 34 "a" and a "!" backtracks for minutes.
    (tmp_path / "evil.txt").write_text("a" * 34 + "!\n" + "a" * 20 + "\n")
    grep = tools(tmp_path)["grep"]
    out, took = run_bounded(lambda: grep.execute({"pattern": "(a+)+$"}, ctx()), 5.0)
    assert isinstance(out, ToolOutput), out
    assert [(m["path"], m["line"]) for m in out.details["matches"]] == [("evil.txt", 2)]
    assert took < 2.0


def test_grep_catastrophic_pattern_on_a_big_file_stays_fast(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text(("a" * 34 + "!\n") * 50_000)  # 1.7 MiB
    grep = tools(tmp_path)["grep"]
    out, took = run_bounded(lambda: grep.execute({"pattern": "(a+)+$"}, ctx()), 10.0)
    assert isinstance(out, ToolOutput) and out.details["matches"] == [], out
    assert took < 3.0


NORMAL_PATTERNS = [
    "TODO", "^def ", r"\bfoo\b", r"\d+$", "a.c", "^$", "x|y", "[A-Z]{2,}", r"\s+$", "^",
    r"(ab)+", "é", r"^\s*#", "[^a]b", r"\.py", "Ab",
    # Unicode classes as Python's str patterns mean them (RE2's are ASCII).
    r"\w+", r"\W", r"[\w.]+$", r"\d", r"\D\d", r"\s", r"\S+", r"[\s_]", "读.",
]  # fmt: skip
LINE_TEXT = st.text(alphabet="abcxy fo#TODOdef.pyé123\t读取٣_\u00a0\u3000\x0b", max_size=30)


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    lines=st.lists(LINE_TEXT, max_size=12),
    ending=st.sampled_from(["\n", "\r\n", "\r"]),
    last_newline=st.booleans(),
    pattern=st.sampled_from(NORMAL_PATTERNS),
    ignore_case=st.booleans(),
)
def test_grep_matches_lines_exactly_as_python_re_does(
    tmp_path: Path, lines: list[str], ending: str, last_newline: bool, pattern: str,
    ignore_case: bool,
) -> None:  # fmt: skip
    body = ending.join(lines) + (ending if last_newline and lines else "")
    (tmp_path / "f.txt").write_bytes(body.encode())
    # Lines end at \n, \r\n or \r (as read counts them and editors show them;
    # not at \v, \f or U+2028, which str.splitlines would also split at).
    split = re.split(r"\r\n|\r|\n", body)
    if split and split[-1] == "":
        split.pop()
    rx = re.compile(pattern, re.IGNORECASE if ignore_case else 0)
    want = [n for n, line in enumerate(split, 1) if rx.search(line)]
    args = {"pattern": pattern, "path": "f.txt", "ignore_case": ignore_case}
    out = call(tools(tmp_path, max_matches=1000)["grep"], **args)
    assert [m["line"] for m in out.details["matches"]] == want
    for m in out.details["matches"]:
        assert m["text"] == split[m["line"] - 1].strip()


@pytest.mark.parametrize(
    ("pattern", "why"),
    [(r"(a)\1", "backreference"), ("foo(?=bar)", "lookahead"), ("(?<!x)y", "lookbehind"),
     (r"end\Z", r"\z")],
)  # fmt: skip
def test_grep_explains_syntax_re2_refuses(tree: Path, pattern: str, why: str) -> None:
    err = failure(tools(tree)["grep"], pattern=pattern)
    assert err.kind == "invalid_arguments" and "RE2" in err.message
    assert why in err.text and "call grep again" in err.text


class SlowPattern:
    """Wraps the compiled pattern: each search call is counted and takes ``delay``."""

    def __init__(self, real: Any, delay: float, on_call: Any = None) -> None:
        self.real, self.delay, self.on_call, self.calls = real, delay, on_call, 0

    def search(self, *args: Any) -> Any:
        self.calls += 1
        if self.on_call is not None:
            self.on_call()
        time.sleep(self.delay)
        return self.real.search(*args)


def test_grep_stops_promptly_when_cancelled_mid_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "big.txt").write_text("no match here\n" * 200_000)  # ~11 slices
    c = ctx()
    slow: list[SlowPattern] = []

    def compile_slow(text: str, ignore_case: bool) -> SlowPattern:
        slow.append(SlowPattern(grep_mod.compile_pattern(text, ignore_case), 0.0, c.cancel))
        return slow[0]

    monkeypatch.setattr(files_mod, "compile_pattern", compile_slow)
    with pytest.raises(ToolFailure) as info:
        tools(tmp_path)["grep"].execute({"pattern": "zzz"}, c)
    assert info.value.kind == "aborted"
    assert slow[0].calls == 1  # the cancel was seen before the second slice


def test_grep_budget_holds_inside_one_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "big.txt").write_text("no match here\n" * 200_000)
    slow: list[SlowPattern] = []

    def compile_slow(text: str, ignore_case: bool) -> SlowPattern:
        slow.append(SlowPattern(grep_mod.compile_pattern(text, ignore_case), 0.05))
        return slow[0]

    monkeypatch.setattr(files_mod, "compile_pattern", compile_slow)
    started = time.monotonic()
    err = failure(tools(tmp_path, grep_time_budget=0.1)["grep"], pattern="zzz")
    assert err.kind == "timeout_unknown"
    assert time.monotonic() - started < 0.5
    assert slow[0].calls < 5


def test_grep_results_carry_the_version_token(tree: Path) -> None:
    ft = FileTools(tree)
    out = call(tools(tree)["grep"], pattern="TODO")
    by_path = {m["path"]: m["version"] for m in out.details["matches"]}
    assert by_path == {
        "docs/guide.md": expected_version(tree / "docs/guide.md"),
        "docs/deep/notes.py": expected_version(tree / "docs/deep/notes.py"),
    }
    assert out.details["versions"] == by_path
    versions_line = out.text.split("\n")[-1]
    for path, version in by_path.items():
        assert f"{path} {version}" in versions_line
        ft.check_version(path, version)  # usable as is
    (tree / "docs/guide.md").write_text("intro\nTODO: write less\n")
    with pytest.raises(ToolFailure) as info:
        ft.check_version("docs/guide.md", by_path["docs/guide.md"])
    assert info.value.kind == "stale_version"


@pytest.mark.parametrize("how", ["rename", "in_place"])
def test_version_detects_same_size_replacement_with_preserved_mtime(tree: Path, how: str) -> None:
    # cp -p / rsync -t: same size, same mtime, other content.
    ft = FileTools(tree)
    path = tree / "README.md"
    before = path.stat()
    version = ft.version_of("README.md")
    replacement = path.read_bytes().replace(b"third", b"THIRD")
    assert len(replacement) == before.st_size
    if how == "rename":
        tmp = tree / ".README.md.tmp"
        tmp.write_bytes(replacement)
        os.utime(tmp, ns=(before.st_atime_ns, before.st_mtime_ns))
        os.replace(tmp, path)
    else:
        time.sleep(0.01)
        path.write_bytes(replacement)
        os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    with pytest.raises(ToolFailure) as info:
        ft.check_version("README.md", version)
    assert info.value.kind == "stale_version"


# --------------------------------------------------------------------------- file types


def test_read_only_file_types_allow_list(tree: Path) -> None:
    (tree / ".env").write_text(f"KEY={SECRET}\n")
    (tree / "notes.txt").symlink_to(tree / ".env")
    t = tools(tree, file_types=["*.md", ".PY"])
    assert "# modelwire" in call(t["read"], path="README.md").text
    assert call(t["read"], path="docs/deep/notes.py").details["total_lines"] == 1
    for path in (".env", "notes.txt", "latin1.txt"):
        err = failure(t["read"], path=path)
        assert err.kind == "permission_denied" and SECRET not in err.text
        assert "*.md, .PY" in err.text
    assert failure(t["grep"], pattern="KEY", path=".env").kind == "permission_denied"
    out = call(t["grep"], pattern="TODO|KEY|modelwire")
    assert {m["path"] for m in out.details["matches"]} == {
        "README.md",
        "docs/guide.md",
        "docs/deep/notes.py",
    }
    assert SECRET not in out.text
    # ls still lists every name (names are not content).
    assert ".env" in {e["name"] for e in call(t["ls"]).details["entries"]}
    # Without the list everything text is readable, as before.
    assert SECRET in call(tools(tree)["read"], path=".env").text


@pytest.mark.parametrize("bad", ["*.py", [], [""], [3]])
def test_file_types_must_be_a_list_of_patterns(tree: Path, bad: Any) -> None:
    with pytest.raises(mw.ConfigurationError, match="file_types"):
        mw.tools.read_only(tree, file_types=bad)
