"""Tools for ``modelwire chat --functions docs/examples/functions.py`` (README, "Tools")."""

from pathlib import Path

import modelwire as mw


@mw.tool(read_only=True)  # it only reads: runs without asking
def word_count(text: str) -> int:
    """Count the words of a text.

    Args:
        text: the text to count
    """
    return len(text.split())


def save_note(path: str, text: str) -> str:
    """Write a note to a file; the user is asked first, as it changes things."""
    Path(path).write_text(text, encoding="utf-8")
    return f"saved {len(text)} characters to {path}"
