"""The conversation history a turn may carry (B-19), bounded on the server as in the panel."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

HISTORY_MESSAGES = 20
HISTORY_CHARS = 6000
# One entry longer than the whole window can never be sent by the panel: refused, not cut.
MAX_ENTRY_CHARS = HISTORY_CHARS


def bound_history(history: Sequence[Mapping[str, str]]) -> list[dict[str, str]]:
    """The last 20 messages within ~6,000 characters, oldest dropped first."""
    kept: list[dict[str, str]] = []
    total = 0
    for m in reversed(history[-HISTORY_MESSAGES:]):
        if total + len(m["content"]) > HISTORY_CHARS:
            break
        kept.append({"role": m["role"], "content": m["content"]})
        total += len(m["content"])
    return list(reversed(kept))
