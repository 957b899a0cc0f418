"""The API reference (``mkdocs.yml``, ``docs/reference/``) has something to say for every
public name, and says it in a shape the site renders.

Read statically by Griffe, as mkdocstrings reads it for the site: every name in the
``__all__`` of the public modules the reference renders has a docstring; the entry
points a program starts from document every parameter (``Args``), what they return,
what they raise and show an example; every public docstring parses as Google style
without a warning, and its Sphinx cross-reference roles name something
(``scripts/docs_griffe.py``). The links the site's home page and guides keep from
GitHub are rewritten by ``scripts/docs_hooks.py``, checked here too. ``make docs``
builds the site with ``--strict``; ``tests/test_site.py`` opens it in a browser.
"""

from __future__ import annotations

import importlib
import logging
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import griffe
import pytest
from griffe import DocstringSectionKind as Kind

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
try:
    import docs_griffe
    import docs_hooks
finally:
    sys.path.pop(0)

#: The modules the reference renders, each on its page of docs/reference/.
MODULES = (
    "modelwire",
    "modelwire.errors",
    "modelwire.tools",
    "modelwire.testing",
    "modelwire.mcp",
    "modelwire.batching",
    "modelwire.ext",
    "modelwire.otel",
    "modelwire.gateway",
)

#: Where a program starts: each documents its parameters, result, errors, an example.
ENTRY_POINTS = (
    "modelwire.complete",
    "modelwire.complete_sync",
    "modelwire.stream",
    "modelwire.stream_sync",
    "modelwire.resume_stream",
    "modelwire.resume_stream_sync",
    "modelwire.cancel_response",
    "modelwire.cancel_response_sync",
    "modelwire.embed",
    "modelwire.embed_sync",
    "modelwire.Agent",
    "modelwire.Agent.run",
    "modelwire.Agent.run_sync",
    "modelwire.Agent.stream",
    "modelwire.Agent.stream_sync",
    "modelwire.Agent.continue_",
    "modelwire.Agent.continue_sync",
    "modelwire.Agent.resume",
    "modelwire.Agent.resume_sync",
    "modelwire.Agent.resume_stream",
    "modelwire.tool",
    "modelwire.mcp.stdio",
    "modelwire.mcp.http",
    "modelwire.mcp.in_process",
    "modelwire.replay",
    "modelwire.batch",
    "modelwire.testing.MockServer",
    "modelwire.gateway.app",
    "modelwire.gateway.serve",
)


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture(scope="module")
def loaded() -> tuple[griffe.Module, list[str]]:
    """The package as the site reads it, and the warnings Griffe logged reading it."""
    caught = _Warnings()
    logger = logging.getLogger("griffe")
    logger.addHandler(caught)
    try:
        package = griffe.load(
            "modelwire",
            search_paths=[str(ROOT / "src")],
            docstring_parser=griffe.Parser.google,
            extensions=griffe.load_extensions(docs_griffe.SphinxRoles),
        )
        assert isinstance(package, griffe.Module)
        return package, caught.messages
    finally:
        logger.removeHandler(caught)


@pytest.fixture(scope="module")
def package(loaded: tuple[griffe.Module, list[str]]) -> griffe.Module:
    return loaded[0]


def _public_names(module: str) -> list[str]:
    names: list[str] = importlib.import_module(module).__all__
    return names


def _find(package: griffe.Module, path: str) -> griffe.Object | None:
    try:
        found = package.modules_collection[path]
        target = found.final_target if found.is_alias else found
    except (KeyError, griffe.AliasResolutionError, griffe.CyclicAliasError):
        return None
    assert isinstance(target, griffe.Object)
    return target


def _sections(obj: griffe.Object) -> Iterator[griffe.DocstringSection]:
    if obj.docstring is not None:
        yield from obj.docstring.parse(griffe.Parser.google, warnings=False)


def _is_example(section: griffe.DocstringSection) -> bool:
    # ``Examples:`` is a section of its own; ``Example:`` an admonition titled so.
    return section.kind is Kind.examples or (
        section.kind is Kind.admonition and (section.title or "").lower() in ("example", "examples")
    )


def test_the_reference_pages_render_each_module() -> None:
    directives = {
        m.group(1)
        for page in (ROOT / "docs" / "reference").glob("*.md")
        for m in re.finditer(r"^::: ([\w.]+)\s*$", page.read_text(encoding="utf-8"), re.M)
    }
    assert sorted(directives) == sorted(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_every_public_name_has_a_docstring(package: griffe.Module, module: str) -> None:
    missing = []
    for name in _public_names(module):
        obj = _find(package, f"{module}.{name}")
        if obj is None:
            missing.append(f"{name} (not found by reading the source: defined dynamically?)")
        elif obj.docstring is None or not obj.docstring.value.strip():
            missing.append(name)
    assert not missing, f"{module}: public names without a docstring: {', '.join(missing)}"


@pytest.mark.parametrize("path", ENTRY_POINTS)
def test_entry_points_document_args_returns_raises_and_an_example(
    package: griffe.Module, path: str
) -> None:
    obj = _find(package, path)
    assert obj is not None, path
    sections = list(_sections(obj))
    init = obj.members.get("__init__") if obj.is_class else None
    signature = init if isinstance(init, griffe.Function) else obj
    if obj.is_class and isinstance(init, griffe.Function):
        # merge_init_into_class: the constructor's Args may be in either docstring.
        sections += _sections(init)
    kinds = {s.kind for s in sections}
    lacking = []
    assert isinstance(signature, griffe.Function | griffe.Class)
    parameters = [
        p.name
        for p in (signature.parameters if isinstance(signature, griffe.Function) else ())
        if p.name not in ("self", "cls")
    ]
    documented = {
        p.name.lstrip("*") for s in sections if s.kind is Kind.parameters for p in s.value
    }
    undocumented = [p for p in parameters if p not in documented]
    if undocumented:
        lacking.append(f"Args for {', '.join(undocumented)}")
    if obj.is_function:
        assert isinstance(obj, griffe.Function)
        if str(obj.returns) not in ("None", "") and not kinds & {Kind.returns, Kind.yields}:
            lacking.append("Returns")
        if Kind.raises not in kinds:
            lacking.append("Raises")
    # A method's example may be its class's, which shows the methods in use.
    owner = obj.parent if obj.is_function and obj.parent is not None else None
    shown = owner is not None and owner.is_class and any(_is_example(s) for s in _sections(owner))
    if not shown and not any(_is_example(s) for s in sections):
        lacking.append("an Example")
    assert not lacking, f"{path} lacks {', '.join(lacking)}"


def test_public_docstrings_parse_without_warnings(
    loaded: tuple[griffe.Module, list[str]],
) -> None:
    package, load_warnings = loaded
    # Loading: a cross-reference role naming nothing in modelwire (docs_griffe).
    problems = list(load_warnings)
    seen: set[str] = set()
    for module in MODULES:
        for name in _public_names(module):
            obj = _find(package, f"{module}.{name}")
            if obj is None or obj.is_module:
                continue
            for each in docs_griffe.walk(obj):
                if (each is obj or each.is_public) and each.path not in seen:
                    seen.add(each.path)
                    problems += _parse_warnings(each)
    assert problems == []


def _parse_warnings(obj: griffe.Object) -> list[str]:
    if obj.docstring is None:
        return []
    caught = _Warnings()
    logger = logging.getLogger("griffe")
    logger.addHandler(caught)
    try:
        obj.docstring.parse(griffe.Parser.google)
    finally:
        logger.removeHandler(caught)
    return [f"{obj.path}: {message}" for message in caught.messages]


# --------------------------------------------------------------------------- the roles


def test_roles_become_links_resolved_where_the_docstring_lives(package: griffe.Module) -> None:
    client = package["_client"]
    assert isinstance(client, griffe.Module)
    text = docs_griffe.rewrite(
        client,
        "See :func:`stream`, :class:`~modelwire.types.Model`, :meth:`.Fallback.first`, "
        ":class:`asyncio.Task` and :func:`the options <stream>`.",
        strict=True,
    )
    assert text == (
        'See <autoref identifier="modelwire._client.stream" optional><code>stream()</code></autoref>, '
        '<autoref identifier="modelwire.types.Model" optional><code>Model</code></autoref>, '
        '<autoref identifier="modelwire._call._fallback.Fallback.first" optional><code>Fallback.first()</code></autoref>, '
        "`asyncio.Task` and "
        '<autoref identifier="modelwire._client.stream" optional><code>the options</code></autoref>.'
    )


def test_a_role_naming_nothing_is_a_warning_where_the_site_shows_it(
    package: griffe.Module, caplog: pytest.LogCaptureFixture
) -> None:
    errors = package["errors"]
    assert isinstance(errors, griffe.Module)
    with caplog.at_level(logging.WARNING, logger="griffe"):
        shown = docs_griffe.rewrite(errors, "A :class:`NoSuchError`.", strict=True)
        docs_griffe.rewrite(errors, "A :class:`NoSuchError`.", strict=False)
    assert shown == "A `NoSuchError`."
    assert [r.getMessage().split(": ", 1)[1] for r in caplog.records] == [
        "modelwire.errors: cross-reference :class:`NoSuchError` names nothing in modelwire"
    ]


# --------------------------------------------------------------------------- the links


def _relink(markdown: str, source: str) -> str:
    return docs_hooks.relink(
        markdown,
        source,
        published=lambda uri: (ROOT / "docs" / uri).is_file() and not uri.startswith("examples/"),
        exists=lambda path: (ROOT / path).exists(),
    )


def test_readme_links_into_docs_become_the_site_pages() -> None:
    readme = "See [the guide](docs/guide.md#layers) and [Install](#install).\n"
    assert _relink(readme, "README.md") == (
        "See [the guide](guide.md#layers) and [Install](#install).\n"
    )


def test_links_outside_the_site_keep_their_text_and_code_is_left_alone() -> None:
    guide = (
        "Back to [the README](../README.md#install); the code in [the\nclient]"
        "(../src/modelwire/_client/__init__.py) and [bench](../bench/RESULTS.md);\n"
        "[PyPI](https://pypi.org/project/modelwire/), [gateway](gateway.md).\n"
        "```markdown\n[kept](../README.md)\n```\n"
    )
    assert _relink(guide, "docs/guide.md") == (
        "Back to [the README](index.md#install); the code in the\nclient and bench;\n"
        "[PyPI](https://pypi.org/project/modelwire/), [gateway](gateway.md).\n"
        "```markdown\n[kept](../README.md)\n```\n"
    )


def test_a_link_to_no_file_is_left_for_mkdocs_to_report() -> None:
    # Broken on GitHub as well: the strict build fails on it instead of hiding it.
    guide = "[gone](nope.md), [gone too](../src/nope.py), [a sample](examples/call.sse)\n"
    assert _relink(guide, "docs/guide.md") == (
        "[gone](nope.md), [gone too](../src/nope.py), a sample\n"
    )
