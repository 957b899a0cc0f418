"""Where the recorded provider streams live, and a stand-in when they are absent.

The streams are recorded from live providers and are not part of the repository: CI keeps
them in ``../shared/fixtures`` beside the clone; ``MODELWIRE_FIXTURES=/path`` points
anywhere else (DESIGN §2b). A user's clone usually has neither. Then every test module
still imports — ``recorded_streams()`` returns a :class:`MissingFixtures` path whose
``glob`` yields one placeholder, so parametrized tests are collected — and
``tests/conftest.py`` skips each test that depends on the streams with one reason
(:data:`REASON`). ``MODELWIRE_REQUIRE_FIXTURES=1`` (set by ``.ci/run``) turns the missing
folder into a failure instead.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path, PosixPath
from typing import Any

ENV = "MODELWIRE_FIXTURES"
REQUIRE_ENV = "MODELWIRE_REQUIRE_FIXTURES"
DEFAULT = Path(__file__).resolve().parents[2] / "shared" / "fixtures"


def fixtures_root() -> Path:
    """``$MODELWIRE_FIXTURES`` if set, else ``../shared/fixtures`` beside the clone."""
    configured = os.environ.get(ENV, "").strip()
    return Path(configured).expanduser().resolve() if configured else DEFAULT


ROOT = fixtures_root()
PRESENT = ROOT.is_dir()
REQUIRED = os.environ.get(REQUIRE_ENV, "").strip() not in ("", "0", "false", "no")
REASON = (
    f"recorded provider streams not found at {ROOT}: set {ENV}=/path/to/fixtures to run these tests"
)
PLACEHOLDER = "MISSING-recorded-streams.sse"


class MissingFixtures(PosixPath):
    """A path under the absent fixture folder: globbing yields one placeholder file.

    Reading it raises ``FileNotFoundError`` as usual (conftest skips those tests before
    they run); ``stat`` reports an empty file so size filters at collection time work.
    """

    def glob(self, pattern: str, **_: Any) -> Iterator[Path]:  # type: ignore[override]
        depth = pattern.count("/")
        yield self.joinpath(*(["missing"] * depth), PLACEHOLDER)

    def rglob(self, pattern: str, **_: Any) -> Iterator[Path]:  # type: ignore[override]
        yield self / PLACEHOLDER

    def iterdir(self) -> Iterator[Path]:  # type: ignore[override]
        yield self / PLACEHOLDER

    def stat(self, **_: Any) -> os.stat_result:
        return os.stat_result((0,) * 10)

    def exists(self, **_: Any) -> bool:
        return False

    def is_dir(self) -> bool:
        return False

    def is_file(self) -> bool:
        return False


def recorded_streams(*parts: str) -> Path:
    """The fixture folder (or a sub-folder of it); a :class:`MissingFixtures` when absent."""
    if PRESENT:
        return ROOT.joinpath(*parts)
    return MissingFixtures(ROOT.joinpath(*parts))
