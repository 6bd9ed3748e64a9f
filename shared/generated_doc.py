"""Write a document generated from declarations, or with --check say whether it is current."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path


def write_or_check(doc: Path, render: Callable[[], str], module: str,
                   argv: list[str] | None = None) -> int:
    """Write `doc` from `render()`; with --check, 1 (and how to mend it) when it differs."""
    args = sys.argv[1:] if argv is None else argv
    text = render()
    if "--check" in args:
        current = doc.read_text(encoding="utf-8") if doc.exists() else ""
        if current != text:
            print(f"{doc} is out of date: run python -m {module}", file=sys.stderr)
            return 1
        return 0
    doc.write_text(text, encoding="utf-8")
    print(f"wrote {doc}")
    return 0
