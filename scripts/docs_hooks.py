"""MkDocs hooks (``mkdocs.yml``): README.md is the reference site's home page.

README.md stays the one source (``tests/test_docs.py`` runs its blocks); the site gets
a generated ``index.md`` from it. Links are written for GitHub, relative to the file
that holds them: the README's ``docs/guide.md`` is ``guide.md`` on the site, a guide's
``../README.md`` is the home page, and a link to a file of the repository the site
does not publish (``../src/...``, ``bench/RESULTS.md``) keeps its text and loses its
target. A link to a file that does not exist is left for MkDocs to report: broken on
GitHub too, it fails the strict build.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files, InclusionLevel
from mkdocs.structure.pages import Page

HOME = "index.md"
# An inline link or image: [text](target "title"); the text may span lines. Fenced
# blocks are left alone.
LINK = re.compile(
    r"(?P<bang>!?)\[(?P<text>[^\]]*)\]\((?P<target>[^)\s]+)(?P<title>\s+\"[^\"]*\")?\)"
)
FENCE = re.compile(r"^[ \t]*(```|~~~).*?^[ \t]*\1[ \t]*$", re.M | re.S)
EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|#|/)", re.I)


def _readme(config: MkDocsConfig) -> Path:
    return Path(config.config_file_path).parent / "README.md"


def on_files(files: Files, config: MkDocsConfig) -> Files:
    if files.get_file_from_path(HOME) is None:
        content = _readme(config).read_text(encoding="utf-8")
        files.append(File.generated(config, HOME, content=content))
    return files


def on_serve(server: Any, config: MkDocsConfig, builder: Any) -> Any:
    server.watch(str(_readme(config)))
    return server


def on_page_markdown(markdown: str, page: Page, config: MkDocsConfig, files: Files) -> str:
    # Where the page's source lives in the repository: README.md at the root, the
    # guides in docs/.
    home = page.file.src_uri == HOME
    source = "README.md" if home else f"docs/{page.file.src_uri}"
    repo = _readme(config).parent
    return relink(
        markdown,
        source,
        published=lambda uri: _included(files.get_file_from_path(uri)),
        exists=lambda path: (repo / path).exists(),
    )


def _included(file: File | None) -> bool:
    # exclude_docs (the example streams) leaves a file out of the site, not of Files.
    return file is not None and file.inclusion not in (
        InclusionLevel.EXCLUDED,
        InclusionLevel.DRAFT,
    )


def relink(
    markdown: str,
    source: str,
    *,
    published: Callable[[str], bool],
    exists: Callable[[str], bool],
) -> str:
    """``markdown`` (the repository's file ``source``) with its links made the site's.

    ``published(uri)`` tells whether the site has the file ``uri`` of docs/,
    ``exists(path)`` whether the repository has ``path``.
    """
    source_dir = posixpath.dirname(source)
    site_dir = "" if source == "README.md" else posixpath.dirname(source.removeprefix("docs/"))

    def one(match: re.Match[str]) -> str:
        target = match["target"]
        if EXTERNAL.match(target):
            return match[0]
        path, hash_, anchor = target.partition("#")
        in_repo = posixpath.normpath(posixpath.join(source_dir, path))
        if in_repo == "README.md":
            page = HOME
        elif in_repo.startswith("docs/") and published(in_repo.removeprefix("docs/")):
            page = in_repo.removeprefix("docs/")
        elif exists(in_repo):
            return match["text"]  # not on the site: the text alone
        else:
            return match[0]  # nowhere: MkDocs says so
        new = posixpath.relpath(page, site_dir or ".") + hash_ + anchor
        return f"{match['bang']}[{match['text']}]({new}{match['title'] or ''})"

    out, last = [], 0
    for block in FENCE.finditer(markdown):
        out.append(LINK.sub(one, markdown[last : block.start()]))
        out.append(block[0])
        last = block.end()
    out.append(LINK.sub(one, markdown[last:]))
    return "".join(out)
