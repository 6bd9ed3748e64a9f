"""The repeat check (in code, no model call): an answer that repeats an earlier answer of the
conversation, as a small model copying its last reply does, whatever the new question."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from shared.turn_request import Message
from worker.pipeline.overlap import ordered_share, words

# Share of the answer's words that one earlier answer has in the same order (in runs of two
# words or more) that makes it a repeat.
SIMILAR = 0.8
# Fewer words than this are never a repeat: "I do not know." may rightly come twice.
MIN_WORDS = 4


@dataclass(frozen=True)
class RepeatCheck:
    """The earlier answer the new one repeats (1 = the first of the conversation), if any."""

    earlier: int | None
    similarity: float

    @property
    def valid(self) -> bool:
        """True when the answer repeats no earlier answer."""
        return self.earlier is None


def check_repeat(answer: str, message: str, history: Sequence[Message]) -> RepeatCheck:
    """The most similar earlier assistant answer with the same figures, flagged at SIMILAR or
    more; asking the same question again is no reason to flag the same answer."""
    seq = words(answer)
    asked = words(message)
    if len(seq) < MIN_WORDS or any(m.role == "user" and words(m.content) == asked
                                   for m in history):
        return RepeatCheck(None, 0.0)
    best, best_at = 0.0, None
    answers = [m for m in history if m.role == "assistant"]
    figures = {w for w in seq if any(ch.isdigit() for ch in w)}
    for k, m in enumerate(answers, start=1):
        other = words(m.content)
        # A figure the earlier answer lacks is something new said ("the value is 43", then
        # "the value is 0.1"): a copy carries the same figures.
        if not figures <= set(other):
            continue
        share = ordered_share(seq, other)
        if share > best:
            best, best_at = share, k
    return RepeatCheck(best_at if best >= SIMILAR else None, round(best, 3))
