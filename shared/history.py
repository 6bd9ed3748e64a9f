"""The conversation history a turn may carry (docs/spec/behaviour.md B-19), bounded on the server
as in the panel.

The one bounding: the web tier bounds what a client sent, the worker bounds again what reaches
a prompt (after it drops the [n] markers of earlier answers), both with `bound_history`.
"""

from __future__ import annotations

from collections.abc import Sequence

from shared.turn_request import Message

HISTORY_MESSAGES = 20
HISTORY_CHARS = 6000
# One entry longer than the whole window can never be sent by the panel: refused, not cut.
MAX_ENTRY_CHARS = HISTORY_CHARS


def bound_history(history: Sequence[Message]) -> list[Message]:
    """The last 20 messages within ~6,000 characters, oldest dropped first."""
    kept: list[Message] = []
    total = 0
    for m in reversed(history[-HISTORY_MESSAGES:]):
        if total + len(m.content) > HISTORY_CHARS:
            break
        kept.append(m)
        total += len(m.content)
    return list(reversed(kept))
