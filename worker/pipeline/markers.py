"""Removing [n] markers from streamed text when sources are off (B-30), split markers included."""

from __future__ import annotations

import re

MARKER = re.compile(r"\[\d{1,3}\]")
# A tail that could still turn into a marker once more text arrives (and inner markers go):
# an opening bracket followed only by brackets and digits.
PARTIAL = re.compile(r"\[[\[\d]*$")


def strip_markers(text: str) -> str:
    """Text without [n] markers (repeated, so removing one cannot leave a new one behind)."""
    while True:
        stripped = MARKER.sub("", text)
        if stripped == text:
            return text
        text = stripped


class MarkerStripper:
    """Feeds streamed pieces through, holding back only a tail that may still become [n]."""

    def __init__(self) -> None:
        self._pending = ""

    def feed(self, piece: str) -> str:
        """What can be sent now of pending + piece."""
        out = strip_markers(self._pending + piece)
        m = PARTIAL.search(out)
        if m:
            self._pending, out = out[m.start():], out[:m.start()]
        else:
            self._pending = ""
        return out

    def flush(self) -> str:
        """Whatever was held back, at the end of the stream (it was not a marker)."""
        rest, self._pending = self._pending, ""
        return rest
