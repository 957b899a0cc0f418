#!/usr/bin/env python3
"""Validate and normalise the model catalog, offline.

The catalog is ``src/modelwire/data/models.json``, edited by hand from the
providers' own documentation pages (each provider's ``docs`` field names the
page; an entry whose numbers are estimates says so in ``notes``). This script
fetches nothing: it decodes the file with the schema in ``modelwire._catalog``,
runs every check of ``validate_catalog`` (known API, https/loopback base URLs,
positive limits, non-negative prices, reasoning levels, unique ids per provider,
unique provider names and aliases, provider records whose APIs are known, whose
patterns compile and whose error kinds exist) and rewrites the file in its
canonical form (keys in schema order, two-space indentation, defaults omitted).

Usage::

    python scripts/regenerate_catalog.py            # validate, then rewrite in place
    python scripts/regenerate_catalog.py --check    # validate; exit 1 if not canonical
    python scripts/regenerate_catalog.py --summary  # also print one line per provider

Updating prices: edit the JSON (keep ``notes`` honest about what was verified and
where), run this script, then ``pytest tests/test_catalog.py``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "src" / "modelwire" / "data" / "models.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="do not write; fail if not canonical")
    parser.add_argument("--summary", action="store_true", help="print models per provider")
    parser.add_argument("--path", type=Path, default=DATA, help="catalog file (default: packaged)")
    args = parser.parse_args(argv)

    sys.path.insert(0, str(ROOT / "src"))
    from modelwire._catalog import dump_catalog, validate_catalog
    from modelwire.errors import ConfigurationError

    raw = args.path.read_bytes()
    try:
        catalog = validate_catalog(raw)
    except ConfigurationError as exc:
        print(f"{args.path}: {exc}", file=sys.stderr)
        return 1
    canonical = dump_catalog(catalog)
    if args.summary:
        for p in catalog.providers:
            print(f"{p.id:12} {len(p.models):3} models  {p.docs}")
        print(f"{'total':12} {sum(len(p.models) for p in catalog.providers):3} models")
    if raw == canonical:
        print(f"{args.path}: valid and canonical")
        return 0
    if args.check:
        print(f"{args.path}: valid but not canonical; run without --check", file=sys.stderr)
        return 1
    args.path.write_bytes(canonical)
    print(f"{args.path}: valid; rewritten in canonical form")
    return 0


if __name__ == "__main__":
    sys.exit(main())
