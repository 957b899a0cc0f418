"""The reference site as a reader meets it: built, served, searched in a real browser.

The site is built here with ``mkdocs build --strict`` into a temporary folder (never the
clone's ``site/``), served on loopback by ``http.server`` in a thread, and opened in
Debian's headless ``chromium``, driven by Playwright (the ``dev`` extra; it never
downloads a browser of its own here). Typing ``complete_sync`` in the search box must
offer a result that leads to its reference entry, and no page may log a console
error or throw. Without the browser these tests skip with one line;
``.ci/run`` installs it and sets ``MODELWIRE_REQUIRE_BROWSER=1``, which makes its
absence a failure.
"""

from __future__ import annotations

import fcntl
import functools
import http.server
import importlib
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import ConsoleMessage, Page, sync_playwright

ROOT = Path(__file__).resolve().parents[1]
REQUIRE_ENV = "MODELWIRE_REQUIRE_BROWSER"
CHROMIUM = shutil.which("chromium")
# Headless and quiet: no sandbox (CI runs as root), no GPU, and nothing the browser
# would fetch on its own (updates, sync, QUIC probes); any host but loopback is
# unresolvable, so a page that reaches out fails here instead of leaving the machine.
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
)
#: The modules docs/reference/ renders, and the page each is on.
PAGES = {
    "modelwire": "reference/modelwire/index.html",
    "modelwire.errors": "reference/errors/index.html",
    "modelwire.tools": "reference/tools/index.html",
    "modelwire.testing": "reference/testing/index.html",
    "modelwire.batching": "reference/batching/index.html",
    "modelwire.ext": "reference/ext/index.html",
    "modelwire.otel": "reference/otel/index.html",
    "modelwire.gateway": "reference/gateway/index.html",
}


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The site, built once per run: the xdist workers share the run's temporary root."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent
    out = root / "reference-site"
    # Written once the strict build passed: a failed build writes its pages too.
    built = root / "reference-site.built"
    with open(root / "reference-site.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not built.is_file():
            proc = subprocess.run(
                [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                cwd=ROOT,
                env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
                capture_output=True,
                text=True,
                timeout=110,
            )
            assert proc.returncode == 0, proc.stderr
            built.touch()
    return out


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    handler = functools.partial(Quiet, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


class Browser:
    """One headless Chromium page, and what it logged as an error (console, uncaught)."""

    def __init__(self, page: Page) -> None:
        self.page = page
        self.errors: list[str] = []
        page.on("console", self._console)
        page.on("pageerror", lambda error: self.errors.append(f"uncaught: {error}"))

    def _console(self, message: ConsoleMessage) -> None:
        if message.type == "error":
            self.errors.append(f"console: {message.text} ({message.location.get('url')})")


@pytest.fixture(scope="module")
def chromium() -> str:
    """The browser's path; the tests that open pages name it first, so that without it
    they skip before the site is built."""
    if CHROMIUM is None:
        reason = "chromium is not installed (apt-get install chromium): the site is not opened in a browser"
        if os.environ.get(REQUIRE_ENV):
            pytest.fail(f"{REQUIRE_ENV} is set but {reason}")
        pytest.skip(reason)
    return CHROMIUM


@pytest.fixture
def browser(chromium: str, tmp_path: Path) -> Iterator[Browser]:
    with sync_playwright() as playwright:
        # Debian's chromium, never a browser Playwright would download; a fresh profile.
        context = playwright.chromium.launch_persistent_context(
            tmp_path / "profile",
            executable_path=chromium,
            headless=True,
            args=list(FLAGS),
            viewport={"width": 1280, "height": 900},
        )
        try:
            yield Browser(context.pages[0] if context.pages else context.new_page())
        finally:
            context.close()


@pytest.mark.parametrize("module", PAGES)
def test_every_public_name_has_an_entry_on_its_page(site: Path, module: str) -> None:
    page = (site / PAGES[module]).read_text(encoding="utf-8")
    anchors = set(re.findall(r'id="([^"]+)"', page))
    names: list[str] = importlib.import_module(module).__all__
    # A public submodule (mw.errors) is an entry of its own page, not of its parent's.
    missing = [n for n in names if f"{module}.{n}" not in anchors | PAGES.keys()]
    assert not missing, f"{PAGES[module]} has no entry for {', '.join(missing)}"


def test_the_home_page_is_the_readme_with_links_to_the_guides(site: Path) -> None:
    home = (site / "index.html").read_text(encoding="utf-8")
    title = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()[0].lstrip("# ")
    assert f">{title}<" in home
    # README.md links docs/guide.md for GitHub; the site links its own page.
    assert 'href="guide/"' in home and "docs/guide.md" not in home


def test_search_leads_to_the_reference_and_no_page_logs_an_error(
    chromium: str, served: str, browser: Browser
) -> None:
    # One test, one browser: without chromium, one skip.
    page = browser.page
    page.goto(served)
    page.locator("input.md-search__input").fill("complete_sync")
    entry_link = page.locator('.md-search-result__item a[href$="#modelwire.complete_sync"]')
    entry_link.first.wait_for(timeout=20_000)
    # The result's link carries ?h=complete_sync (the words to highlight on arrival).
    wanted = re.compile(r"/reference/modelwire/\?h=complete_sync#modelwire\.complete_sync$")
    assert wanted.search(entry_link.first.get_attribute("href") or "")
    entry_link.first.click()
    page.wait_for_url(wanted, timeout=20_000)
    entry = page.locator("#modelwire\\.complete_sync")
    assert entry.is_visible()
    assert "complete_sync" in entry.inner_text()

    errors = {"search": list(browser.errors)} if browser.errors else {}
    browser.errors.clear()
    pages = ["", "guide/", "gateway/", *(p.removesuffix("index.html") for p in PAGES.values())]
    for path in pages:
        page.goto(served + path, wait_until="load")
        if browser.errors:
            errors[path or "home"] = list(browser.errors)
            browser.errors.clear()
    assert errors == {}
