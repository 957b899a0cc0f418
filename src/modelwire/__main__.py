"""``python -m modelwire``: the same as the ``modelwire`` command."""

from __future__ import annotations

from ._cli import main

if __name__ == "__main__":
    raise SystemExit(main())
